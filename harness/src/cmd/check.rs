//! `locklab check`: model-check scenarios and compare the verdicts with their `expect`.

use std::fs;
use std::path::Path;

use locklab_model::scenario::Scenario;
use locklab_model::search::SearchOptions;

use crate::cli::CheckArgs;
use crate::files::{trace_path, write_file};
use crate::scenario_args::load;
use crate::search::{search_options, Reporter};
use crate::shard::select;
use crate::verdict::{
    attach_causes, exit_code_allowing, outcome, violated, Found, ScenarioOutcome,
};
use crate::{junit, output, table, Failure};

/// Writes the trace of every violated property; removes a stale trace of a property
/// that now holds (exhaustively).
fn write_traces(outcome: &mut ScenarioOutcome, reports: &Path) -> Result<(), Failure> {
    let dir = reports.join("traces");
    for p in &mut outcome.properties {
        let path = trace_path(reports, &outcome.scenario.name, p.property);
        match &p.trace {
            Some(t) => {
                fs::create_dir_all(&dir).map_err(|e| Failure::io(&dir, "cannot create", e))?;
                fs::write(&path, t.to_json_pretty() + "\n")
                    .map_err(|e| Failure::io(&path, "cannot write", e))?;
                p.trace_path = Some(path);
            }
            None if p.found == Found::Holds && p.bound.is_none() && path.exists() => {
                fs::remove_file(&path).map_err(|e| Failure::io(&path, "cannot remove", e))?;
            }
            None => {}
        }
    }
    Ok(())
}

/// `locklab check`: returns the exit status.
pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    let scenarios = load(&args.paths)?;
    let (scenarios, part) = match args.shard {
        Some(shard) => {
            let (chosen, part) = select(scenarios, shard);
            eprintln!(
                "shard {shard}: {} of the {} scenarios",
                chosen.len(),
                part.total
            );
            (chosen, Some(part))
        }
        None => (scenarios, None),
    };
    let options = SearchOptions {
        time_limit: args.strategy.time_limit(),
        ..search_options(&args.search)
    };
    let mut reporter = Reporter::new();
    reporter.walks = args.strategy.walks()?;
    if args.cause && reporter.walks.is_some() {
        return Err(Failure::BadInput(
            "--cause searches each scenario exhaustively without each of its faults; it \
             does not go with random walks"
                .to_string(),
        ));
    }
    let outcomes = check_with(&reporter, &scenarios, &options, &args.reports, args.cause)?;
    print!("{}", table::render(&outcomes));
    let code = exit_code_allowing(&outcomes, args.strategy.allow_unproven);
    if let Some(path) = &args.json {
        let json = output::json(&outcomes, code, part.as_ref());
        write_file(
            path,
            &(serde_json::to_string_pretty(&json).expect("JSON") + "\n"),
        )?;
    }
    if let Some(path) = &args.junit {
        write_file(path, &junit::render(&outcomes, part.as_ref()))?;
    }
    Ok(code)
}

/// Checks each scenario with progress on stderr, computes the cause of each violation
/// and writes the traces to `reports/traces/` (shared by `check` and `report`).
pub fn check_all(
    scenarios: &[Scenario],
    options: &SearchOptions,
    reports: &Path,
) -> Result<Vec<ScenarioOutcome>, Failure> {
    check_with(&Reporter::new(), scenarios, options, reports, true)
}

/// [`check_all`] with a given reporter (which may run random walks instead), the
/// causes computed only when `causes` is set (a search per ingredient of each scenario
/// with a violation).
pub fn check_with(
    reporter: &Reporter,
    scenarios: &[Scenario],
    options: &SearchOptions,
    reports: &Path,
    causes: bool,
) -> Result<Vec<ScenarioOutcome>, Failure> {
    let mut outcomes = Vec::with_capacity(scenarios.len());
    for scenario in scenarios {
        let searched = reporter.search(scenario, options);
        let mut o = outcome(scenario, &searched.model, &searched.result, options);
        if causes {
            let without = reporter.cause_searches(scenario, &violated(&o), options);
            attach_causes(&mut o, &searched.model, &without);
        }
        write_traces(&mut o, reports)?;
        outcomes.push(o);
    }
    Ok(outcomes)
}
