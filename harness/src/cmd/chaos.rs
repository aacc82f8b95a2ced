//! `locklab chaos SCENARIO --seed S --runs N [--json FILE]`: random schedules of
//! operations and faults, within the scenario's budget and timing, on real Redis.
//!
//! Run `i` (from 0) has the schedule of seed `S + i`, made by the
//! [generator] (a seeded random walk through the scenario's
//! model; steered unless `--blind`: the first walk drawn from the seed whose model walk
//! breaks what the scenario expects broken); the [run engine](locklab_harness::run) carries it out on fresh containers
//! (its nemesis does the faults) and the history
//! [checker] judges what really happened. So `--seed
//! S+i --runs 1` repeats run `i` alone, and a violation prints that command line.
//!
//! Exit status (the CLI contract: 0 when verdicts match expectations):
//! - 1 when a run violates a property the scenario expects to hold, or when no client
//!   completed a critical section in any run (nothing was tested);
//! - 0 otherwise: violations of properties the scenario expects violated are reported,
//!   not failures (a random schedule need not find them);
//! - 2 for bad input, or no Docker engine / image (nothing is started then).
//!
//! A run whose real history went another way than the schedule's model walk (a step
//! that no longer applies) is judged on what happened up to there, and reported.

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use locklab_harness::generator::{self, Schedule, Steering};
use locklab_harness::run::history::{Event, History};
use locklab_harness::run::{checker, Run, RunError, RunOptions, TimelineEntry};
use locklab_model::model::LockModel;
use locklab_model::scenario::{Expectation, Property, Scenario};
use serde_json::{json, Value};

use crate::cli::ChaosArgs;
use crate::files::{shell_word, write_file};
use crate::scenario_args::resolve;
use crate::Failure;

/// How often a run whose ticks ran over is tried (ticks doubled each time).
const TICK_ATTEMPTS: u32 = 4;

/// What one run did.
struct RunOutcome {
    index: u32,
    schedule: Schedule,
    verdicts: checker::Verdicts,
    timeline: Vec<TimelineEntry>,
    emulations: Vec<String>,
    /// Critical sections completed (stock writes done).
    completed: usize,
    /// Steps carried out.
    steps: usize,
    /// Why the run stopped before the schedule's end.
    stopped: Option<String>,
    /// Real milliseconds per tick of the attempt reported.
    tick_ms: u64,
    /// Attempts whose ticks ran over (see [`overrun`]), and why.
    overruns: Vec<String>,
    /// The last attempt ran over too: its verdicts judge nothing.
    inconclusive: bool,
    cluster: String,
    seconds: f64,
}

impl RunOutcome {
    /// Violations of properties the scenario expects to hold (none when inconclusive).
    fn unexpected<'a>(&'a self, scenario: &Scenario) -> Vec<&'a checker::Violation> {
        if self.inconclusive {
            return Vec::new();
        }
        self.verdicts
            .violations
            .iter()
            .filter(|v| scenario.expect.get(v.property) == Expectation::Holds)
            .collect()
    }
}

/// The command line that repeats one run alone.
fn reproduce(args: &ChaosArgs, seed: u64) -> String {
    format!(
        "locklab chaos {} --seed {seed} --runs 1{}",
        shell_word(&args.scenario),
        if args.blind { " --blind" } else { "" }
    )
}

fn completed(history: &History) -> usize {
    history
        .entries
        .iter()
        .filter(|e| matches!(e.event, Event::StockWrite { accepted: true, .. }))
        .count()
}

/// Where a run's real time left the model's: a step of tick `k` that ended more than
/// `tick_ms` after tick `k` began (a slow fault, such as a replica's resync, or a loaded
/// machine). Tick `k + 1` then starts late, every lease set before runs out earlier in
/// model time than the model says, and the run no longer carries out its schedule's
/// timing: its verdicts would judge the machine's load, not the lock.
fn overrun(timeline: &[TimelineEntry], tick_ms: u64) -> Option<(String, f64)> {
    let mut start = 0.0;
    let mut tick = 0;
    let mut worst: Option<(u32, f64)> = None;
    for e in timeline {
        if e.actor == "clock" {
            if let Some(k) = e.event.strip_prefix("tick ").and_then(|k| k.parse().ok()) {
                (tick, start) = (k, e.ms);
                continue;
            }
        }
        let late = e.ms - (start + tick_ms as f64);
        if late > 0.0 && worst.is_none_or(|(_, w)| late > w) {
            worst = Some((tick, late));
        }
    }
    worst.map(|(tick, late)| {
        let why = format!(
            "with {tick_ms} ms ticks, a step of tick {tick} ended {late:.0} ms after the tick"
        );
        (why, late)
    })
}

/// Carries out one schedule on fresh containers. The containers are removed on every
/// path out (the run tears its cluster down when dropped).
async fn attempt(
    scenario: &Scenario,
    index: u32,
    schedule: &Schedule,
    tick_ms: u64,
) -> Result<RunOutcome, Failure> {
    let started = Instant::now();
    let mut run = Run::start(scenario, RunOptions { tick_ms })
        .await
        .map_err(|e| Failure::Environment(e.to_string()))?;
    let cluster = run.cluster_id();
    let mut stopped = None;
    let mut steps = 0;
    for action in &schedule.actions {
        match run.step(*action).await {
            Ok(()) => steps += 1,
            Err(e @ RunError::Inapplicable { .. }) => {
                stopped = Some(e.to_string());
                break;
            }
            Err(e) => {
                return Err(Failure::Environment(format!(
                    "{} run {index} (seed {}): {e}",
                    scenario.name, schedule.seed
                )))
            }
        }
    }
    let emulations = run.emulations().to_vec();
    let (history, timeline) = run
        .finish()
        .await
        .map_err(|e| Failure::Environment(e.to_string()))?;
    Ok(RunOutcome {
        index,
        verdicts: checker::check(&history),
        completed: completed(&history),
        schedule: schedule.clone(),
        timeline,
        emulations,
        steps,
        stopped,
        tick_ms,
        overruns: Vec::new(),
        inconclusive: false,
        cluster,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Runs a schedule with the scenario's `tick_ms`; when its ticks ran over, runs it
/// again with longer ticks: at least twice as long, and long enough for the slowest tick
/// seen with a quarter to spare (at most [`TICK_ATTEMPTS`] tries in all).
async fn run_one(
    scenario: &Scenario,
    index: u32,
    schedule: Schedule,
    progress: &Progress,
) -> Result<RunOutcome, Failure> {
    let mut tick_ms = scenario.timing.tick_ms;
    let mut overruns = Vec::new();
    let mut seconds = 0.0;
    for n in 1..=TICK_ATTEMPTS {
        let mut o = attempt(scenario, index, &schedule, tick_ms).await?;
        seconds += o.seconds;
        let Some((why, late)) = overrun(&o.timeline, tick_ms) else {
            o.overruns = overruns;
            o.seconds = seconds;
            return Ok(o);
        };
        overruns.push(why.clone());
        if n == TICK_ATTEMPTS {
            progress.note(&format!(
                "run {index} (seed {}): {why}; inconclusive",
                schedule.seed
            ));
            o.inconclusive = true;
            o.overruns = overruns;
            o.seconds = seconds;
            return Ok(o);
        }
        let max = locklab_model::scenario::MAX_TICK_MS;
        let needed = ((tick_ms as f64 + late) * 1.25)
            .ceil()
            .clamp(1.0, max as f64);
        // Clamped to 1..=MAX_TICK_MS just above.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let needed = needed as u64;
        tick_ms = (tick_ms * 2).max(needed.div_ceil(100) * 100).min(max);
        progress.note(&format!(
            "run {index} (seed {}): {why}; running it again with {tick_ms} ms ticks",
            schedule.seed
        ));
    }
    unreachable!("the last attempt returns")
}

/// Progress on stderr: a bar on a terminal, one line per run otherwise.
struct Progress {
    bar: Option<ProgressBar>,
    runs: u32,
}

impl Progress {
    fn new(scenario: &str, runs: u32) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(runs as u64), ProgressDrawTarget::stderr())
                    .with_style(
                        ProgressStyle::with_template(
                            "{spinner} {prefix}: {pos}/{len} runs {msg} [{elapsed}]",
                        )
                        .expect("a valid template"),
                    )
                    .with_prefix(scenario.to_string());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress { bar, runs }
    }

    /// A line about a run in progress.
    fn note(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("chaos: {line}"),
        }
    }

    fn starting(&self, index: u32, seed: u64) {
        match &self.bar {
            Some(bar) => bar.set_message(format!("(seed {seed})")),
            None => eprintln!(
                "chaos: run {index} (seed {seed}) starts [{} of {}]",
                index + 1,
                self.runs
            ),
        }
    }

    fn done(&self, o: &RunOutcome) {
        match &self.bar {
            Some(bar) => bar.inc(1),
            None => eprintln!(
                "chaos: run {} (seed {}) done in {:.1} s [{} of {}]",
                o.index,
                o.schedule.seed,
                o.seconds,
                o.index + 1,
                self.runs
            ),
        }
    }

    /// Prints without tearing the bar.
    fn suspend(&self, f: impl FnOnce()) {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Whether the real run broke exactly the properties the model's walk broke.
fn agrees_with_model(o: &RunOutcome) -> bool {
    let real: Vec<Property> = o.verdicts.violations.iter().map(|v| v.property).collect();
    o.stopped.is_none() && real == o.schedule.model_violations
}

fn names(ps: &[Property]) -> String {
    let v: Vec<&str> = ps.iter().map(|p| p.as_str()).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

fn print_run(scenario: &Scenario, args: &ChaosArgs, o: &RunOutcome) {
    let faults: Vec<String> = o
        .schedule
        .faults()
        .iter()
        .map(|(tick, a)| format!("tick {tick}: {a}"))
        .collect();
    let real: Vec<Property> = o.verdicts.violations.iter().map(|v| v.property).collect();
    let unexpected = o.unexpected(scenario);
    let verdict = if o.inconclusive {
        "INCONCLUSIVE"
    } else if unexpected.is_empty() {
        "ok"
    } else {
        "VIOLATION"
    };
    println!(
        "run {} (seed {}{}): {}/{} steps, tick {} ms, {} critical sections, faults [{}], \
         model walk broke: {}, real violations: {}, {:.1} s: {verdict}",
        o.index,
        o.schedule.seed,
        match o.schedule.draw {
            0 => String::new(),
            d => format!(", walk {d}"),
        },
        o.steps,
        o.schedule.actions.len(),
        o.tick_ms,
        o.completed,
        faults.join("; "),
        names(&o.schedule.model_violations),
        names(&real),
        o.seconds,
    );
    for why in &o.overruns {
        println!("  time overrun: {why}");
    }
    if let Some(why) = &o.stopped {
        println!("  the real run went another way than the model's walk: {why}");
    }
    for e in &o.emulations {
        println!("  emulation: {e}");
    }
    for v in &o.verdicts.violations {
        let expected = scenario.expect.get(v.property);
        println!(
            "  {} at {:.1} ms: {} ({})",
            v.property,
            v.ms,
            v.detail,
            match expected {
                Expectation::Holds => "expected to hold",
                Expectation::Violated => "expected violated",
            }
        );
    }
    if !unexpected.is_empty() {
        println!("  real timeline:");
        for e in &o.timeline {
            match &e.reply {
                Some(r) => println!("  {:>9.1} ms  {:<8} {}  -> {}", e.ms, e.actor, e.event, r),
                None => println!("  {:>9.1} ms  {:<8} {}", e.ms, e.actor, e.event),
            }
        }
        println!(
            "  seed {}, run {}: reproduce with: {}",
            o.schedule.seed,
            o.index,
            reproduce(args, o.schedule.seed)
        );
    }
}

fn run_json(scenario: &Scenario, args: &ChaosArgs, o: &RunOutcome) -> Value {
    json!({
        "run": o.index,
        "seed": o.schedule.seed,
        "reproduce": reproduce(args, o.schedule.seed),
        "walk": o.schedule.draw,
        "walk_seed": generator::draw_seed(o.schedule.seed, o.schedule.draw),
        "steps": o.steps,
        "scheduled_steps": o.schedule.actions.len(),
        "schedule": o.schedule.actions.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
        "faults": o.schedule.faults().iter().map(|(t, a)| json!({"tick": t, "action": a.to_string()})).collect::<Vec<_>>(),
        "model_violations": o.schedule.model_violations.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
        "real_violations": o.verdicts.violations.iter().map(|v| json!({
            "property": v.property.as_str(),
            "ms": v.ms,
            "detail": v.detail,
            "expected": scenario.expect.get(v.property).as_str(),
        })).collect::<Vec<_>>(),
        "unexpected": !o.unexpected(scenario).is_empty(),
        "critical_sections": o.completed,
        "agrees_with_model_walk": agrees_with_model(o),
        "stopped": o.stopped,
        "tick_ms": o.tick_ms,
        "overruns": o.overruns,
        "inconclusive": o.inconclusive,
        "emulations": o.emulations,
        "timeline": o.timeline,
        "cluster": o.cluster,
        "seconds": o.seconds,
    })
}

/// How the runs' schedules are picked, for the first line of output.
fn steering_text(scenario: &Scenario, steering: Steering) -> String {
    let expected: Vec<&str> = Property::ALL
        .into_iter()
        .filter(|&p| scenario.expect.get(p) == Expectation::Violated)
        .map(Property::as_str)
        .collect();
    match steering {
        Steering::Blind => "blind (each seed's own random walk)".to_string(),
        Steering::Steered { .. } if expected.is_empty() => {
            "blind (each seed's own random walk: every property is expected to hold)".to_string()
        }
        Steering::Steered { draws } => format!(
            "steered (per run, the first of up to {draws} random walks from its seed whose \
             model walk breaks {}; --blind for each seed's own)",
            expected.join(" or ")
        ),
    }
}

/// `locklab chaos`: returns the exit status.
pub fn run(args: &ChaosArgs) -> Result<i32, Failure> {
    let scenario = resolve(&args.scenario)?;
    if args.runs == 0 {
        return Err(Failure::BadInput(
            "--runs 0: give at least one run".to_string(),
        ));
    }
    locklab_cluster::preflight().map_err(|e| Failure::Environment(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Environment(format!("cannot start the async runtime: {e}")))?;
    let model = LockModel::new(&scenario);
    let steering = if args.blind {
        Steering::Blind
    } else {
        Steering::DEFAULT
    };
    let started = Instant::now();
    let progress = Progress::new(&scenario.name, args.runs);
    println!(
        "chaos {} ({}), seed {}, {} runs, tick {} ms, schedules: {}",
        scenario.name,
        scenario.design,
        args.seed,
        args.runs,
        scenario.timing.tick_ms,
        steering_text(&scenario, steering)
    );
    let mut outcomes = Vec::new();
    for index in 0..args.runs {
        let seed = args.seed.wrapping_add(index as u64);
        let schedule = generator::schedule(&model, seed, steering);
        progress.starting(index, seed);
        let outcome = match runtime.block_on(run_one(&scenario, index, schedule, &progress)) {
            Ok(o) => o,
            Err(e) => {
                progress.finish();
                return Err(e);
            }
        };
        progress.done(&outcome);
        progress.suspend(|| print_run(&scenario, args, &outcome));
        outcomes.push(outcome);
    }
    progress.finish();
    let violating: Vec<&RunOutcome> = outcomes
        .iter()
        .filter(|o| !o.unexpected(&scenario).is_empty())
        .collect();
    let conclusive: Vec<&RunOutcome> = outcomes.iter().filter(|o| !o.inconclusive).collect();
    let completed: usize = conclusive.iter().map(|o| o.completed).sum();
    let disagree = conclusive.iter().filter(|o| !agrees_with_model(o)).count();
    // Runs whose real history broke what the scenario expects broken: detection power.
    let detected = conclusive
        .iter()
        .filter(|o| {
            o.verdicts
                .violations
                .iter()
                .any(|v| scenario.expect.get(v.property) == Expectation::Violated)
        })
        .count();
    // Runs prove nothing when no client got through its critical section; a run whose
    // real history broke a property did exercise the lock (its clients may have been
    // stopped by the horizon before they finished).
    let broke = conclusive.iter().any(|o| !o.verdicts.violations.is_empty());
    let vacuous = completed == 0 && !broke;
    let code = if violating.is_empty() && !vacuous {
        0
    } else {
        1
    };
    println!(
        "{}: {} runs ({} inconclusive), {} critical sections, {} breaking a property \
         expected violated, {} violating a property expected to hold, {} not as the \
         model's walk, {:.1} s{}",
        scenario.name,
        outcomes.len(),
        outcomes.len() - conclusive.len(),
        completed,
        detected,
        violating.len(),
        disagree,
        started.elapsed().as_secs_f64(),
        if vacuous {
            ": VACUOUS (no conclusive run in which a client completed a critical section \
             or broke a property)"
        } else {
            ""
        }
    );
    for o in &violating {
        println!(
            "violation in run {} (seed {}): reproduce with: {}",
            o.index,
            o.schedule.seed,
            reproduce(args, o.schedule.seed)
        );
    }
    if let Some(path) = &args.json {
        let value = json!({
            "scenario": scenario.name,
            "design": scenario.design.to_string(),
            "path": scenario.path.display().to_string(),
            "seed": args.seed,
            "schedules": match steering {
                Steering::Blind => json!({"steering": "blind"}),
                Steering::Steered { draws } => json!({"steering": "steered", "draws": draws}),
            },
            "runs": outcomes.iter().map(|o| run_json(&scenario, args, o)).collect::<Vec<_>>(),
            "violating_runs": violating.iter().map(|o| o.index).collect::<Vec<_>>(),
            "runs_breaking_expected_violations": detected,
            "critical_sections": completed,
            "inconclusive_runs": outcomes.iter().filter(|o| o.inconclusive).map(|o| o.index).collect::<Vec<_>>(),
            "runs_not_as_model_walk": disagree,
            "vacuous": vacuous,
            "seconds": started.elapsed().as_secs_f64(),
            "exit_code": code,
        });
        let text = serde_json::to_string_pretty(&value).expect("JSON serializes");
        write_file(Path::new(path), &(text + "\n"))?;
    }
    Ok(code)
}
