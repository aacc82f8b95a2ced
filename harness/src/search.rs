//! The model search as the commands run it: its options from the command line, and a
//! run with progress on stderr.

use std::cell::Cell;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use locklab_model::cause::{self, Without};
use locklab_model::model::LockModel;
use locklab_model::scenario::{Property, Scenario};
use locklab_model::search::{search, Reduction, SearchOptions, Strategy};
use locklab_model::walk::{random_walks, WalkOptions};

use crate::cli::SearchArgs;
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
