//! The model search as the commands run it: its options from the command line, a run
//! with progress on stderr, and the check of a set of scenarios into verdicts, causes
//! and trace files (`check` and `report` share it).

use std::cell::Cell;
use std::fs;
use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use locklab_model::cause::{self, Without};
use locklab_model::model::LockModel;
use locklab_model::scenario::{Property, Scenario};
use locklab_model::search::{search, Reduction, SearchOptions, Strategy};
use locklab_model::walk::{random_walks, WalkOptions};

use crate::cli::SearchArgs;
use crate::files::trace_path;
use crate::verdict::{attach_causes, outcome, violated, Found, ScenarioOutcome};
use crate::Failure;

/// The search options from the command line.
pub fn search_options(args: &SearchArgs) -> SearchOptions {
    let threads = match args.threads {
        Some(n) => n as usize,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let base = if args.plain {
        SearchOptions::plain()
    } else {
        SearchOptions::default()
    };
    let switched_off = [
        (args.no_symmetry, Reduction::Symmetry),
        (args.no_partial_order, Reduction::PartialOrder),
        (args.no_pause_placement, Reduction::PausePlacement),
    ];
    switched_off.into_iter().filter(|(off, _)| *off).fold(
        SearchOptions {
            threads,
            max_depth: args.max_depth,
            ..base
        },
        |options, (_, r)| options.without(r),
    )
}

/// The searches that take a minute or more: the five-master Redlock files, with the
/// distinct states and the seconds `locklab check FILE --threads 2` took on this project's
/// two-core machine, shared with another build (2026-11-27; README, "Redlock on five
/// masters"). A test keeps every such file of `scenarios/` here.
const HEAVY: [(&str, f64, u32); 4] = [
    ("redlock5-no-faults", 0.4, 5),
    ("redlock5-gc-pause", 4.4, 40),
    ("redlock5-clock-jump", 3.7, 30),
    ("redlock5-restart", 1.9, 16),
];

/// Masters from which a search counts as heavy (named so before it starts).
const HEAVY_MASTERS: u32 = 5;

/// `redlock5-gc-pause: five masters, 4.4 million states, about 40 s on two cores`,
/// printed before a heavy search starts, so that a long wait is expected rather than
/// taken for a hang.
fn heavy_notice(scenario: &Scenario) -> Option<String> {
    let masters = scenario.topology.masters;
    if masters < HEAVY_MASTERS {
        return None;
    }
    let count = match masters {
        5 => "five".to_string(),
        6 => "six".to_string(),
        7 => "seven".to_string(),
        n => n.to_string(),
    };
    let time = match HEAVY.iter().find(|(name, ..)| *name == scenario.name) {
        Some((_, millions, seconds)) => format!(
            "{millions:.1} million states, about {seconds} s on two cores (more with --cause)"
        ),
        None => "among the heaviest searches: minutes".to_string(),
    };
    Some(format!("{}: {count} masters, {time}", scenario.name))
}

/// Progress on stderr: an animated line per scenario on a terminal, else one plain line
/// per scenario when it finishes.
pub struct Reporter {
    terminal: bool,
    /// Random walks instead of the exhaustive search.
    pub walks: Option<WalkOptions>,
    /// The scenario's place in a run of several (`[k/N]` before its lines).
    place: Cell<Option<(usize, usize)>>,
}

impl Reporter {
    pub fn new() -> Self {
        Reporter {
            terminal: std::io::stderr().is_terminal(),
            walks: None,
            place: Cell::new(None),
        }
    }

    /// The next scenario is the `k`-th (from 1) of `n`.
    pub fn set_place(&self, k: usize, n: usize) {
        self.place.set(Some((k, n)));
    }

    /// `[k/N] ` in a run of several scenarios, else nothing.
    fn place(&self) -> String {
        match self.place.get() {
            Some((k, n)) if n > 1 => format!("[{k}/{n}] "),
            _ => String::new(),
        }
    }

    /// Runs the search of one scenario with progress. A custom lock whose step failed
    /// at run time on some explored path ([`LockModel::run_fault`]) is bad input: the
    /// error names the file, the step, the script line, the reply and the success reply
    /// the lock table wrote.
    pub fn search(
        &self,
        scenario: &Scenario,
        options: &SearchOptions,
    ) -> Result<SearchRun, Failure> {
        let model = LockModel::new(scenario);
        if self.walks.is_none() {
            if let Some(line) = heavy_notice(scenario) {
                eprintln!("{}{line}", self.place());
            }
        }
        let bar = self.terminal.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                .with_style(
                    ProgressStyle::with_template("{spinner} {prefix}: {msg} [{elapsed}]")
                        .expect("a valid template"),
                )
                .with_prefix(format!("{}{}", self.place(), scenario.name))
                .with_message("depth 0");
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        let result = match &self.walks {
            Some(walks) => random_walks(&model, walks),
            None => search(&model, options, |p| {
                if let Some(bar) = &bar {
                    bar.set_message(format!(
                        "depth {}, {} unique states, {} at the next depth",
                        p.depth, p.unique, p.frontier
                    ));
                }
            }),
        };
        let violated = result
            .counterexamples
            .iter()
            .filter(|(_, c)| c.is_some())
            .count();
        let line = format!(
            "{}checked {}: {}, depth {}, {} violated, {:.2} s, {}{}",
            self.place(),
            scenario.name,
            match result.strategy {
                Strategy::Exhaustive => format!(
                    "{} unique states ({} generated)",
                    result.unique_states, result.states
                ),
                Strategy::Random { .. } => format!("{} steps walked", result.states),
            },
            result.depth,
            violated,
            result.seconds,
            match result.strategy {
                Strategy::Exhaustive => format!(
                    "fingerprint collision probability <= {:.1e}",
                    result.collision_probability()
                ),
                Strategy::Random { walks, seed } => format!("{walks} random walks, seed {seed}"),
            },
            match (result.purchased, result.strategy) {
                (true, _) => String::new(),
                (false, Strategy::Random { walks, .. }) => format!(
                    ", no critical section completed: not reached in {walks} walks, try more walks"
                ),
                (false, Strategy::Exhaustive) => ", VACUOUS (no purchase)".to_string(),
            }
        );
        match bar {
            Some(bar) => {
                bar.set_style(ProgressStyle::with_template("{msg}").expect("a valid template"));
                bar.finish_with_message(line);
            }
            None => eprintln!("{line}"),
        }
        if let Some(fault) = model.run_fault() {
            return Err(Failure::BadInput(format!(
                "{}: {fault}; no verdict: the model would check a lock other than the one Redis runs",
                scenario.path.display()
            )));
        }
        Ok(SearchRun { model, result })
    }
}

impl Reporter {
    /// The searches of `scenario` without each of its ingredients, for the cause of
    /// each property in `violated` (none without one), with one line on stderr.
    pub fn cause_searches(
        &self,
        scenario: &Scenario,
        violated: &[Property],
        options: &SearchOptions,
    ) -> Vec<Without> {
        if violated.is_empty() {
            return Vec::new();
        }
        let bar = self.terminal.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                .with_style(
                    ProgressStyle::with_template("{spinner} {prefix}: {msg} [{elapsed}]")
                        .expect("a valid template"),
                )
                .with_prefix(format!("{}cause of {}", self.place(), scenario.name));
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        let without = cause::searches(scenario, violated, options, |i| {
            if let Some(bar) = &bar {
                bar.set_message(format!("searching without {i}"));
            }
        });
        let line = format!(
            "{}cause of {}: {} search{} without one of {}, {} unique states, {:.2} s",
            self.place(),
            scenario.name,
            without.len(),
            if without.len() == 1 { "" } else { "es" },
            without
                .iter()
                .map(|w| w.ingredient.key())
                .collect::<Vec<_>>()
                .join(", "),
            without.iter().map(|w| w.result.unique_states).sum::<u64>(),
            without.iter().map(|w| w.result.seconds).sum::<f64>(),
        );
        match bar {
            Some(bar) => {
                bar.set_style(ProgressStyle::with_template("{msg}").expect("a valid template"));
                bar.finish_with_message(line);
            }
            None => eprintln!("{line}"),
        }
        without
    }
}

/// A finished model search of one scenario (not a run on real Redis, which is
/// `locklab_harness::run::Run`).
pub struct SearchRun {
    pub model: LockModel,
    pub result: locklab_model::search::SearchResult,
}

/// Writes the trace of every violated property; removes a stale trace of a property
/// that now holds (exhaustively). A trace written without its cause (`check` without
/// `--cause`) leaves a file that is the same trace with a cause as it is, so that
/// checking the gallery's scenarios does not undo what `report` wrote.
fn write_traces(outcome: &mut ScenarioOutcome, reports: &Path) -> Result<(), Failure> {
    let dir = reports.join("traces");
    for p in &mut outcome.properties {
        let path = trace_path(reports, &outcome.scenario.name, p.property);
        match &p.trace {
            Some(t) => {
                let text = t.to_json_pretty() + "\n";
                if !(t.cause.is_none() && same_but_cause(&path, &text)) {
                    fs::create_dir_all(&dir).map_err(|e| Failure::io(&dir, "cannot create", e))?;
                    fs::write(&path, text).map_err(|e| Failure::io(&path, "cannot write", e))?;
                }
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

/// Whether the trace file at `path` holds the trace `text` (JSON without a cause) and
/// a cause besides.
fn same_but_cause(path: &Path, text: &str) -> bool {
    let read = |t: &str| serde_json::from_str::<serde_json::Value>(t).ok();
    let Some(serde_json::Value::Object(mut old)) =
        fs::read_to_string(path).ok().and_then(|t| read(&t))
    else {
        return false;
    };
    old.remove("cause").is_some() && read(text) == Some(serde_json::Value::Object(old))
}

/// Checks each scenario with progress on stderr, computes the cause of each violation
/// and writes the traces to `reports/traces/` (shared by `check` and `report`).
pub fn check_all(
    scenarios: &[Scenario],
    options: &SearchOptions,
    reports: &Path,
) -> Result<Vec<ScenarioOutcome>, Failure> {
    check_with(
        &Reporter::new(),
        scenarios,
        options,
        reports,
        true,
        &mut |_| {},
    )
}

/// [`check_all`] with a given reporter (which may run random walks instead), the
/// causes computed only when `causes` is set (a search per ingredient of each scenario
/// with a violation); `done` sees each scenario's outcome as it finishes.
pub fn check_with(
    reporter: &Reporter,
    scenarios: &[Scenario],
    options: &SearchOptions,
    reports: &Path,
    causes: bool,
    done: &mut dyn FnMut(&ScenarioOutcome),
) -> Result<Vec<ScenarioOutcome>, Failure> {
    let mut outcomes = Vec::with_capacity(scenarios.len());
    for (k, scenario) in scenarios.iter().enumerate() {
        reporter.set_place(k + 1, scenarios.len());
        let searched = reporter.search(scenario, options)?;
        let mut o = outcome(scenario, &searched.model, &searched.result, options);
        if causes {
            let without = reporter.cause_searches(scenario, &violated(&o), options);
            attach_causes(&mut o, &searched.model, &without);
        }
        write_traces(&mut o, reports)?;
        done(&o);
        outcomes.push(o);
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_model::scenario::load_paths;

    /// A trace written without its cause leaves the same trace with a cause as it is,
    /// and only that.
    #[test]
    fn a_trace_without_its_cause_keeps_the_file_that_has_one() {
        let dir = std::env::temp_dir().join(format!("locklab-cause-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json");
        fs::write(&path, "{\"steps\": [1, 2], \"cause\": {\"needs\": []}}\n").unwrap();
        assert!(same_but_cause(&path, "{\"steps\": [1, 2]}"));
        assert!(!same_but_cause(&path, "{\"steps\": [1, 3]}"));
        fs::write(&path, "{\"steps\": [1, 2]}\n").unwrap();
        assert!(!same_but_cause(&path, "{\"steps\": [1, 2]}"));
        assert!(!same_but_cause(&dir.join("missing.json"), "{}"));
        fs::remove_dir_all(&dir).ok();
    }

    /// Every heavy file of the gallery has its measured time, and every entry is a file.
    #[test]
    fn every_heavy_scenario_has_its_seconds() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let scenarios = load_paths(&[dir]).expect("the gallery's scenarios load");
        let heavy: Vec<&Scenario> = scenarios
            .iter()
            .filter(|s| heavy_notice(s).is_some())
            .collect();
        assert!(!heavy.is_empty());
        for s in &heavy {
            let line = heavy_notice(s).expect("heavy");
            let start = format!("{}: five masters, ", s.name);
            assert!(
                line.starts_with(&start) && line.contains(" s on two cores"),
                "{line}"
            );
        }
        for (name, ..) in HEAVY {
            assert!(
                heavy.iter().any(|s| s.name == name),
                "{name} is not a heavy scenario"
            );
        }
        let light = scenarios
            .iter()
            .find(|s| s.topology.masters == 3)
            .expect("a Redlock file");
        assert_eq!(heavy_notice(light), None);
    }
}
