//! `locklab check`: model-check scenarios and compare the verdicts with their `expect`.

use std::fs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use locklab_model::model::{Action, LockModel};
use locklab_model::scenario::{load_paths, Expectation, Property, Scenario, ScenarioError};
use locklab_model::search::{search, SearchOptions};
use locklab_model::trace::{self, Trace};

use crate::cli::{CheckArgs, SearchArgs};
use crate::{junit, output, table, Failure};

/// What the search found for one property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// No counterexample within the bound.
    Holds,
    /// A shortest counterexample of this many steps.
    Violated { steps: usize },
    /// No counterexample, but no client ever completed its critical section either:
    /// the "holds" would mean nothing (the vacuity guard).
    Vacuous,
}

/// The verdict on one property of one scenario.
#[derive(Clone, Debug)]
pub struct PropertyOutcome {
    pub property: Property,
    pub expected: Expectation,
    pub found: Found,
    /// The search stopped at `--max-depth` with states left: "holds" is only within
    /// that many steps.
    pub bound: Option<usize>,
    /// The trace, if violated.
    pub trace: Option<Trace>,
    /// Where the trace was written.
    pub trace_path: Option<PathBuf>,
}

/// Whether a verdict matches its expectation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Match,
    Mismatch,
    Error,
}

impl PropertyOutcome {
    pub fn status(&self) -> Status {
        match (&self.found, self.expected) {
            (Found::Vacuous, _) => Status::Error,
            (Found::Holds, Expectation::Holds) => Status::Match,
            (Found::Violated { .. }, Expectation::Violated) => Status::Match,
            _ => Status::Mismatch,
        }
    }

    /// `"holds"`, `"violated"` or `"error"`.
    pub fn verdict(&self) -> &'static str {
        match self.found {
            Found::Holds => "holds",
            Found::Violated { .. } => "violated",
            Found::Vacuous => "error",
        }
    }

    /// The verdict as the table shows it.
    pub fn found_text(&self) -> String {
        match (&self.found, self.bound) {
            (Found::Holds, None) => "holds".to_string(),
            (Found::Holds, Some(n)) => format!("holds (within {n} steps)"),
            (Found::Violated { .. }, _) => "violated".to_string(),
            (Found::Vacuous, _) => "error: vacuous".to_string(),
        }
    }

    pub fn steps(&self) -> Option<usize> {
        match self.found {
            Found::Violated { steps } => Some(steps),
            _ => None,
        }
    }
}

/// The check of one scenario.
#[derive(Clone, Debug)]
pub struct ScenarioOutcome {
    pub scenario: Scenario,
    pub properties: Vec<PropertyOutcome>,
    pub purchased: bool,
    pub complete: bool,
    pub depth: usize,
    pub max_depth: Option<usize>,
    pub states: u64,
    pub unique_states: u64,
    pub seconds: f64,
    pub first_counterexample_seconds: Option<f64>,
}

impl ScenarioOutcome {
    /// A scenario-level error (the vacuity guard), as a sentence.
    pub fn error(&self) -> Option<String> {
        (!self.purchased).then(|| {
            let within = match (self.complete, self.max_depth) {
                (false, Some(n)) => format!(" within {n} steps"),
                _ => String::new(),
            };
            format!(
                "no client ever completed its critical section{within}, so a \"holds\" verdict \
                 would mean nothing: check the scenario's timing, attempts and horizon"
            )
        })
    }

    /// A note when the search was cut short by `--max-depth`.
    pub fn note(&self) -> Option<String> {
        (!self.complete).then(|| {
            format!(
                "search stopped at depth {} with states left (--max-depth): its \"holds\" \
                 verdicts are bounded",
                self.depth
            )
        })
    }

    pub fn name(&self) -> &str {
        &self.scenario.name
    }
}

/// The search options from the command line.
pub fn search_options(args: &SearchArgs) -> SearchOptions {
    let threads = match args.threads {
        Some(n) => n as usize,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    SearchOptions {
        symmetry: !args.no_symmetry,
        threads,
        max_depth: args.max_depth,
        time_limit: None,
    }
}

/// Progress on stderr: an animated line per scenario on a terminal, else one plain line
/// per scenario when it finishes.
pub struct Reporter {
    terminal: bool,
}

impl Reporter {
    pub fn new() -> Self {
        Reporter {
            terminal: std::io::stderr().is_terminal(),
        }
    }

    /// Runs the search of one scenario with progress.
    pub fn run(&self, scenario: &Scenario, options: &SearchOptions) -> Run {
        let model = LockModel::new(scenario);
        let bar = self.terminal.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                .with_style(
                    ProgressStyle::with_template("{spinner} {prefix}: {msg} [{elapsed}]")
                        .expect("a valid template"),
                )
                .with_prefix(scenario.name.clone())
                .with_message("depth 0");
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        let result = search(&model, options, |p| {
            if let Some(bar) = &bar {
                bar.set_message(format!(
                    "depth {}, {} unique states, {} at the next depth",
                    p.depth, p.unique, p.frontier
                ));
            }
        });
        let violated = result
            .counterexamples
            .iter()
            .filter(|(_, c)| c.is_some())
            .count();
        let line = format!(
            "{}: {} unique states ({} generated), depth {}, {} violated, {:.2} s{}",
            scenario.name,
            result.unique_states,
            result.states,
            result.depth,
            violated,
            result.seconds,
            if result.purchased {
                ""
            } else {
                ", VACUOUS (no purchase)"
            }
        );
        match bar {
            Some(bar) => {
                bar.set_style(ProgressStyle::with_template("{msg}").expect("a valid template"));
                bar.finish_with_message(format!("checked {line}"));
            }
            None => eprintln!("checked {line}"),
        }
        Run { model, result }
    }
}

/// A finished search.
pub struct Run {
    pub model: LockModel,
    pub result: locklab_model::search::SearchResult,
}

/// The verdicts of one scenario, traces built (not yet written).
pub fn outcome(scenario: &Scenario, run: &Run, options: &SearchOptions) -> ScenarioOutcome {
    let r = &run.result;
    let bound = if r.complete { None } else { options.max_depth };
    let properties = scenario
        .expect
        .iter()
        .map(|(property, expected)| {
            let counterexample = r.counterexample(property).map(<[Action]>::to_vec);
            let found = match &counterexample {
                Some(c) => Found::Violated { steps: c.len() },
                None if !r.purchased => Found::Vacuous,
                None => Found::Holds,
            };
            let trace = counterexample
                .as_ref()
                .map(|c| trace::build(&run.model, property, c));
            PropertyOutcome {
                property,
                expected,
                found,
                bound,
                trace,
                trace_path: None,
            }
        })
        .collect();
    ScenarioOutcome {
        scenario: scenario.clone(),
        properties,
        purchased: r.purchased,
        complete: r.complete,
        depth: r.depth,
        max_depth: options.max_depth,
        states: r.states,
        unique_states: r.unique_states,
        seconds: r.seconds,
        first_counterexample_seconds: r.first_counterexample_seconds,
    }
}

/// `reports/traces/<scenario>.<property>.json`.
pub fn trace_path(reports: &Path, scenario: &str, property: Property) -> PathBuf {
    reports
        .join("traces")
        .join(format!("{scenario}.{}.json", property.as_str()))
}

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

/// Loads scenarios, reporting a bad file as bad input.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Scenario>, Failure> {
    load_paths(paths).map_err(|e: ScenarioError| Failure::BadInput(e.to_string()))
}

/// `locklab check`: returns the exit status.
pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    let scenarios = load(&args.paths)?;
    let options = search_options(&args.search);
    let outcomes = check_all(&scenarios, &options, &args.reports)?;
    print!("{}", table::render(&outcomes));
    let code = exit_code(&outcomes);
    if let Some(path) = &args.json {
        let json = output::json(&outcomes, code);
        write_file(
            path,
            &(serde_json::to_string_pretty(&json).expect("JSON") + "\n"),
        )?;
    }
    if let Some(path) = &args.junit {
        write_file(path, &junit::render(&outcomes))?;
    }
    Ok(code)
}

/// Checks each scenario with progress on stderr and writes its traces to
/// `reports/traces/` (shared by `check` and `report`).
pub fn check_all(
    scenarios: &[Scenario],
    options: &SearchOptions,
    reports: &Path,
) -> Result<Vec<ScenarioOutcome>, Failure> {
    let reporter = Reporter::new();
    let mut outcomes = Vec::with_capacity(scenarios.len());
    for scenario in scenarios {
        let run = reporter.run(scenario, options);
        let mut o = outcome(scenario, &run, options);
        write_traces(&mut o, reports)?;
        outcomes.push(o);
    }
    Ok(outcomes)
}

/// 0 when every verdict matches, else 1.
pub fn exit_code(outcomes: &[ScenarioOutcome]) -> i32 {
    let all_match = outcomes
        .iter()
        .all(|o| o.error().is_none() && o.properties.iter().all(|p| p.status() == Status::Match));
    if all_match {
        0
    } else {
        1
    }
}

/// Writes a report file, creating its directory.
pub fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| Failure::io(dir, "cannot create", e))?;
    }
    fs::write(path, text).map_err(|e| Failure::io(path, "cannot write", e))
}
