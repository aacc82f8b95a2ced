//! The model search as the commands run it: its options from the command line, a run
//! with progress on stderr, and the check of a set of scenarios into verdicts, causes
//! and trace files (`check` and `report` share it), several scenarios at once.

use std::fs;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use locklab_model::cause::{self, Without};
use locklab_model::model::LockModel;
use locklab_model::scenario::{Property, Scenario};
use locklab_model::search::{search, Reduction, SearchOptions, Strategy};
use locklab_model::walk::{random_walks, WalkOptions};

use crate::cli::SearchArgs;
use crate::files::trace_path;
use crate::verdict::{attach_causes, outcome, violated, Found, ScenarioOutcome};
use crate::Failure;

/// The CPUs of this machine (1 when they cannot be read).
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The search options from the command line.
pub fn search_options(args: &SearchArgs) -> SearchOptions {
    let threads = args.threads.map_or_else(cpus, usize::from);
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
            compact: args.compact,
            ..base
        },
        |options, (_, r)| options.without(r),
    )
}

/// How `check` and `report` share the CPUs among the scenarios they check: (scenarios
/// searched at once, threads of each search), from `--jobs` and `--threads` and the
/// machine's `cpus`. Without either, one search per CPU on one thread each: a
/// breadth-first level gains less from a second thread than a second scenario does.
/// With one of them, the other fills the CPUs; never more searches than scenarios.
pub fn share_cpus(
    cpus: usize,
    threads: Option<u16>,
    jobs: Option<u16>,
    scenarios: usize,
) -> (usize, usize) {
    let cpus = cpus.max(1);
    let jobs = match (jobs, threads) {
        (Some(j), _) => usize::from(j),
        (None, Some(t)) => cpus / usize::from(t).max(1),
        (None, None) => cpus,
    }
    .clamp(1, scenarios.max(1));
    let threads = threads.map_or((cpus / jobs).max(1), usize::from);
    (jobs, threads)
}

/// [`share_cpus`] on this machine, and the search options with those threads.
pub fn shared_search(
    args: &SearchArgs,
    jobs: Option<u16>,
    scenarios: usize,
) -> (usize, SearchOptions) {
    let (jobs, threads) = share_cpus(cpus(), args.threads, jobs, scenarios);
    let options = SearchOptions {
        threads,
        ..search_options(args)
    };
    (jobs, options)
}

/// The heaviest searches: the five-master Redlock files, with the distinct states and
/// the seconds `locklab check` took on this project's two-core machine on one thread
/// (two files searched at once, as `check` runs them) and on two (each alone)
/// (2026-12-02; README, "Redlock on five masters"). A test keeps every such file of
/// `scenarios/` here.
const HEAVY: [(&str, f64, u32, u32); 4] = [
    ("redlock5-no-faults", 0.1, 1, 1),
    ("redlock5-gc-pause", 1.0, 7, 4),
    ("redlock5-clock-jump", 0.8, 6, 4),
    ("redlock5-restart", 0.8, 6, 4),
];

/// Masters from which a search counts as heavy (named so before it starts).
const HEAVY_MASTERS: u32 = 5;

/// `redlock5-gc-pause: five masters, 1.0 million states, about 8 s on one thread`,
/// printed before a heavy search on `threads` threads starts, so that a long wait is
/// expected rather than taken for a hang.
fn heavy_notice(scenario: &Scenario, threads: usize) -> Option<String> {
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
        Some((_, millions, one, two)) => {
            let (seconds, on) = match threads {
                1 => (one, "one thread"),
                _ => (two, "two threads"),
            };
            format!("{millions:.1} million states, about {seconds} s on {on} (more with --cause)")
        }
        None => "among the heaviest searches: minutes".to_string(),
    };
    Some(format!("{}: {count} masters, {time}", scenario.name))
}

/// A scenario's place in a run of several: the `k`-th (from 1) of `n`, in the order of
/// the files; `None` for a run of one.
pub type Place = Option<(usize, usize)>;

/// `[k/N] ` in a run of several scenarios, else nothing.
fn place_prefix(place: Place) -> String {
    match place {
        Some((k, n)) if n > 1 => format!("[{k}/{n}] "),
        _ => String::new(),
    }
}

/// Progress on stderr: an animated line per running search on a terminal (one per
/// scenario searched at once), else one plain line per scenario when it finishes.
pub struct Reporter {
    terminal: bool,
    /// Random walks instead of the exhaustive search.
    pub walks: Option<WalkOptions>,
    /// The animated lines, on a terminal; finished lines are printed above them.
    bars: MultiProgress,
}

impl Reporter {
    pub fn new() -> Self {
        Reporter {
            terminal: std::io::stderr().is_terminal(),
            walks: None,
            bars: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
        }
    }

    /// A line on stderr, above the animated ones.
    fn say(&self, line: &str) {
        if self.terminal {
            let _ = self.bars.println(line);
        } else {
            eprintln!("{line}");
        }
    }

    /// Runs `f` (which prints to stdout) with the animated lines out of its way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bars.suspend(f)
    }

    /// An animated line `prefix: message [elapsed]`, on a terminal.
    fn bar(&self, prefix: String) -> Option<ProgressBar> {
        self.terminal.then(|| {
            let bar = self.bars.add(
                ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
                    .with_style(
                        ProgressStyle::with_template("{spinner} {prefix}: {msg} [{elapsed}]")
                            .expect("a valid template"),
                    )
                    .with_prefix(prefix),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        })
    }

    /// Ends an animated line (if any) with the line that stays.
    fn finish(&self, bar: Option<ProgressBar>, line: &str) {
        if let Some(bar) = bar {
            bar.finish_and_clear();
            self.bars.remove(&bar);
        }
        self.say(line);
    }

    /// Runs the search of one scenario with progress. A custom lock whose step failed
    /// at run time on some explored path ([`LockModel::run_fault`]) is bad input: the
    /// error names the file, the step, the script line, the reply and the success reply
    /// the lock table wrote.
    pub fn search(
        &self,
        place: Place,
        scenario: &Scenario,
        options: &SearchOptions,
    ) -> Result<SearchRun, Failure> {
        let model = LockModel::new(scenario);
        let prefix = place_prefix(place);
        if self.walks.is_none() {
            if let Some(line) = heavy_notice(scenario, options.threads) {
                self.say(&format!("{prefix}{line}"));
            }
        }
        let bar = self.bar(format!("{prefix}{}", scenario.name));
        if let Some(bar) = &bar {
            bar.set_message("depth 0");
        }
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
            "{prefix}checked {}: {}, depth {}, {} violated, {:.2} s, {}{}",
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
        self.finish(bar, &line);
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
        place: Place,
        scenario: &Scenario,
        violated: &[Property],
        options: &SearchOptions,
    ) -> Vec<Without> {
        if violated.is_empty() {
            return Vec::new();
        }
        let prefix = place_prefix(place);
        let bar = self.bar(format!("{prefix}cause of {}", scenario.name));
        let without = cause::searches(scenario, violated, options, |i| {
            if let Some(bar) = &bar {
                bar.set_message(format!("searching without {i}"));
            }
        });
        let line = format!(
            "{prefix}cause of {}: {} search{} without one of {}, {} unique states, {:.2} s",
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
        self.finish(bar, &line);
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

/// Checks each scenario with progress on stderr, `jobs` at a time, computes the cause
/// of each violation and writes the traces to `reports/traces/` (shared by `check` and
/// `report`).
pub fn check_all(
    scenarios: &[Scenario],
    options: &SearchOptions,
    jobs: usize,
    reports: &Path,
) -> Result<Vec<ScenarioOutcome>, Failure> {
    check_with(
        &Reporter::new(),
        scenarios,
        options,
        jobs,
        reports,
        true,
        &mut |_| {},
    )
}

/// The order in which `jobs` workers take the scenarios: the files' order for one, else
/// the likely longest searches first (more masters, then more replicas), so that no
/// long search starts last while the other workers stand idle.
fn start_order(scenarios: &[Scenario], jobs: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scenarios.len()).collect();
    if jobs > 1 {
        order.sort_by_key(|&k| {
            let t = &scenarios[k].topology;
            std::cmp::Reverse((t.masters, t.replicas))
        });
    }
    order
}

/// [`check_all`] with a given reporter (which may run random walks instead), the
/// causes computed only when `causes` is set (a search per ingredient of each scenario
/// with a violation). `jobs` scenarios are searched at once, each with `options`; `done`
/// sees each scenario's outcome in the order of `scenarios`, as soon as it and every
/// one before it have finished. The outcomes, and so the table, JSON and traces, are the
/// same for any `jobs`. On a failure no further scenario is started; the first failure
/// in the order of `scenarios` is returned once the running searches end.
pub fn check_with(
    reporter: &Reporter,
    scenarios: &[Scenario],
    options: &SearchOptions,
    jobs: usize,
    reports: &Path,
    causes: bool,
    done: &mut dyn FnMut(&ScenarioOutcome),
) -> Result<Vec<ScenarioOutcome>, Failure> {
    let n = scenarios.len();
    let check_one = |k: usize| -> Result<ScenarioOutcome, Failure> {
        let (scenario, place) = (&scenarios[k], Some((k + 1, n)));
        let searched = reporter.search(place, scenario, options)?;
        let mut o = outcome(scenario, &searched.model, &searched.result, options);
        if causes {
            let without = reporter.cause_searches(place, scenario, &violated(&o), options);
            attach_causes(&mut o, &searched.model, &without);
        }
        write_traces(&mut o, reports)?;
        Ok(o)
    };
    let jobs = jobs.clamp(1, n.max(1));
    let order = start_order(scenarios, jobs);
    let (next, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
    let mut results: Vec<Option<Result<ScenarioOutcome, Failure>>> = (0..n).map(|_| None).collect();
    let mut shown = 0;
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        for _ in 0..jobs {
            let tx = tx.clone();
            let (check_one, order, next, stop) = (&check_one, &order, &next, &stop);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(&k) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let result = check_one(k);
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    if tx.send((k, result)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (k, result) in rx {
            results[k] = Some(result);
            while let Some(Some(Ok(o))) = results.get(shown) {
                done(o);
                shown += 1;
            }
        }
    });
    let mut outcomes = Vec::with_capacity(n);
    for result in results {
        match result {
            Some(Ok(o)) => outcomes.push(o),
            Some(Err(e)) => return Err(e),
            None => {}
        }
    }
    assert_eq!(outcomes.len(), n, "every scenario checked when none failed");
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

    /// Without --jobs or --threads, one search per CPU on one thread each; either one
    /// alone fills the CPUs with the other; never more searches than scenarios.
    #[test]
    fn the_cpus_are_shared_among_the_searches() {
        assert_eq!(share_cpus(2, None, None, 42), (2, 1));
        assert_eq!(share_cpus(8, None, None, 3), (3, 2));
        assert_eq!(share_cpus(2, None, None, 1), (1, 2));
        assert_eq!(share_cpus(2, Some(2), None, 42), (1, 2));
        assert_eq!(share_cpus(8, Some(3), None, 42), (2, 3));
        assert_eq!(share_cpus(2, Some(4), None, 42), (1, 4));
        assert_eq!(share_cpus(8, None, Some(3), 42), (3, 2));
        assert_eq!(share_cpus(2, None, Some(4), 42), (4, 1));
        assert_eq!(share_cpus(2, Some(3), Some(5), 2), (2, 3));
        assert_eq!(share_cpus(0, None, None, 0), (1, 1));
    }

    /// With several workers the five-master files start first, then the three-master
    /// ones, then the rest in the files' order; with one, the files' order.
    #[test]
    fn the_longest_searches_start_first() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let scenarios = load_paths(&[dir]).expect("the gallery's scenarios load");
        let one = start_order(&scenarios, 1);
        assert_eq!(one, (0..scenarios.len()).collect::<Vec<_>>());
        let two = start_order(&scenarios, 2);
        let masters: Vec<u32> = two.iter().map(|&k| scenarios[k].topology.masters).collect();
        assert!(masters.windows(2).all(|w| w[0] >= w[1]), "{masters:?}");
        assert_eq!(masters[0], 5);
        let mut sorted = two.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, one, "each scenario once");
        let single: Vec<usize> = two
            .iter()
            .copied()
            .filter(|&k| scenarios[k].topology == scenarios[*one.last().unwrap()].topology)
            .collect();
        assert!(
            single.windows(2).all(|w| w[0] < w[1]),
            "ties keep the files' order"
        );
    }

    /// Every heavy file of the gallery has its measured time, and every entry is a file.
    #[test]
    fn every_heavy_scenario_has_its_seconds() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let scenarios = load_paths(&[dir]).expect("the gallery's scenarios load");
        let heavy: Vec<&Scenario> = scenarios
            .iter()
            .filter(|s| heavy_notice(s, 1).is_some())
            .collect();
        assert!(!heavy.is_empty());
        for s in &heavy {
            let start = format!("{}: five masters, ", s.name);
            for (threads, on) in [(1, " s on one thread"), (2, " s on two threads")] {
                let line = heavy_notice(s, threads).expect("heavy");
                assert!(line.starts_with(&start) && line.contains(on), "{line}");
            }
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
        assert_eq!(heavy_notice(light, 1), None);
    }
}
