//! `locklab replay SCENARIO|TRACE.json`: run the model's shortest counterexamples on real
//! Redis containers, step by step, and check the real history for the same properties.
//!
//! For a scenario, each violated property's trace is read from
//! `<reports>/traces/<scenario>.<property>.json` (written by `locklab check`), or
//! computed with the model when absent or stale (and then written there). Each model
//! step becomes its real command or fault through the run engine
//! ([`locklab_harness::run`]); a tick is `tick_ms` of real time. The outcome of each
//! replay goes to `<reports>/replays/<scenario>.<property>.json`:
//!
//! ```json
//! { "scenario": "lua-release-pause", "property": "mutual_exclusion",
//!   "trace": "reports/traces/lua-release-pause.mutual_exclusion.json", "tick_ms": 100,
//!   "reproduced": true, "model_violations": ["mutual_exclusion"],
//!   "real_violations": ["mutual_exclusion"], "emulations": [],
//!   "timeline": [ { "ms": 0.4, "actor": "client1", "event": "acquire (token t1)", "reply": null }, ... ],
//!   "diverged": [ { "step": 7, "action": "...", "model": "OK", "real": "(nil)" } ],
//!   "cluster": "locklab-...", "seconds": 2.1 }
//! ```
//!
//! A replay reproduces when the real run shows exactly the model trace's violations.
//! Exit status: 0 when every replay reproduced, 1 when one did not, 2 for bad input or
//! no Docker engine / image (nothing is started then).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use locklab_harness::run::history::Event;
use locklab_harness::run::{checker, Run, RunError, RunOptions, TimelineEntry};
use locklab_model::model::{Action, LockModel};
use locklab_model::scenario::{Expectation, Property, Scenario};
use locklab_model::search::{replay as model_replay, SearchOptions};
use locklab_model::trace::{self, Trace};
use serde_json::{json, Value};

use crate::cli::ReplayArgs;
use crate::files::{trace_path, write_file};
use crate::scenario_args::{is_trace, load_trace, resolve};
use crate::search::{cpus, Reporter, SearchRun};
use crate::Failure;

/// A counterexample to run: where it came from and what the model says it breaks.
struct Job {
    scenario: Scenario,
    property: Property,
    trace: Trace,
    path: PathBuf,
}

/// A model step's reply that the real run did not give.
#[derive(Debug, Clone, serde::Serialize)]
struct Divergence {
    step: usize,
    action: String,
    model: Option<String>,
    real: Option<String>,
}

/// The outcome of one replay.
struct Outcome {
    job_scenario: String,
    property: Property,
    trace_path: PathBuf,
    tick_ms: u64,
    model_violations: Vec<String>,
    real: checker::Verdicts,
    emulations: Vec<String>,
    timeline: Vec<TimelineEntry>,
    diverged: Vec<Divergence>,
    cluster: String,
    seconds: f64,
    /// Why the run stopped before the trace's end (a step that no longer applied).
    stopped: Option<String>,
}

impl Outcome {
    fn reproduced(&self) -> bool {
        if self.stopped.is_some() {
            return false;
        }
        let model: BTreeSet<&str> = self.model_violations.iter().map(String::as_str).collect();
        let real = self.real.names();
        let real: BTreeSet<&str> = real.iter().map(String::as_str).collect();
        model == real
    }

    fn json(&self) -> Value {
        json!({
            "scenario": self.job_scenario,
            "property": self.property.as_str(),
            "trace": self.trace_path.display().to_string(),
            "tick_ms": self.tick_ms,
            "reproduced": self.reproduced(),
            "model_violations": self.model_violations,
            "real_violations": self.real.names(),
            "emulations": self.emulations,
            "timeline": self.timeline,
            "diverged": self.diverged,
            "violations": self.real.violations.iter().map(|v| json!({
                "property": v.property.as_str(), "ms": v.ms, "detail": v.detail,
            })).collect::<Vec<_>>(),
            "stopped": self.stopped,
            "cluster": self.cluster,
            "seconds": self.seconds,
        })
    }
}

/// The properties a trace's steps broke, in report order.
fn model_violations(trace: &Trace) -> Vec<String> {
    let broken: BTreeSet<Property> = trace
        .steps
        .iter()
        .flat_map(|s| s.broken.iter().copied())
        .collect();
    Property::ALL
        .into_iter()
        .filter(|p| broken.contains(p))
        .map(|p| p.as_str().to_string())
        .collect()
}

/// Whether a stored trace still is a counterexample of `scenario` (the scenario may
/// have changed since `check` wrote it).
fn still_valid(scenario: &Scenario, trace: &Trace, property: Property) -> bool {
    let model = LockModel::new(scenario);
    trace.scenario.name == scenario.name
        && model_replay(&model, &trace.actions)
            .and_then(|states| states.last().cloned())
            .is_some_and(|last| !model.holds(property, &last))
}

/// The model's search for counterexamples, as `locklab check` runs it.
fn search_counterexamples(scenario: &Scenario) -> Result<SearchRun, Failure> {
    let options = SearchOptions {
        threads: cpus(),
        ..SearchOptions::default()
    };
    Reporter::new().search(None, scenario, &options)
}

/// The counterexamples of a scenario: stored traces, or the model's.
fn jobs_for_scenario(scenario: &Scenario, reports: &Path) -> Result<Vec<Job>, Failure> {
    let mut jobs = Vec::new();
    let mut missing = false;
    for property in Property::ALL {
        let path = trace_path(reports, &scenario.name, property);
        let stored = path
            .exists()
            .then(|| trace::load(&path).ok())
            .flatten()
            .filter(|t| still_valid(scenario, t, property));
        match stored {
            Some(trace) => jobs.push(Job {
                scenario: scenario.clone(),
                property,
                trace,
                path,
            }),
            None => missing |= scenario.expect.get(property) == Expectation::Violated,
        }
    }
    if jobs.is_empty() || missing {
        eprintln!(
            "{}: computing counterexamples with the model (no stored trace for every violated property)",
            scenario.name
        );
        let searched = search_counterexamples(scenario)?;
        for property in Property::ALL {
            if jobs.iter().any(|j| j.property == property) {
                continue;
            }
            let Some(c) = searched.result.counterexample(property) else {
                continue;
            };
            let t = trace::build(&searched.model, property, c);
            let path = trace_path(reports, &scenario.name, property);
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir).map_err(|e| Failure::io(dir, "cannot create", e))?;
            }
            write_file(&path, &(t.to_json_pretty() + "\n"))?;
            jobs.push(Job {
                scenario: scenario.clone(),
                property,
                trace: t,
                path,
            });
        }
        jobs.sort_by_key(|j| Property::ALL.iter().position(|p| *p == j.property));
    }
    Ok(jobs)
}

fn jobs(args: &ReplayArgs) -> Result<Vec<Job>, Failure> {
    let target = PathBuf::from(&args.target);
    if is_trace(&target) {
        let trace = load_trace(&target)?;
        return Ok(vec![Job {
            scenario: trace.scenario.clone(),
            property: trace.property,
            trace,
            path: target,
        }]);
    }
    let scenario = resolve(&args.target)?;
    let jobs = jobs_for_scenario(&scenario, &args.reports)?;
    if jobs.is_empty() {
        return Err(Failure::BadInput(format!(
            "{}: the model finds no violated property: there is no counterexample to replay",
            scenario.path.display()
        )));
    }
    Ok(jobs)
}

/// Runs one trace on real Redis. The containers are removed on every path out.
async fn replay_one(job: &Job, tick_ms: u64) -> Result<Outcome, Failure> {
    let started = Instant::now();
    let actions = &job.trace.actions;
    let mut run = Run::start(&job.scenario, RunOptions { tick_ms })
        .await
        .map_err(|e| Failure::Environment(e.to_string()))?;
    let cluster = run.cluster_id();
    let mut diverged = Vec::new();
    let mut stopped = None;
    for (i, action) in actions.iter().enumerate() {
        let before = run.history().entries.len();
        match run.step(*action).await {
            Ok(()) => {}
            Err(e @ RunError::Inapplicable { .. }) => {
                // The real run went another way than the model's: judge what happened.
                stopped = Some(e.to_string());
                break;
            }
            // On error the run is dropped here, which removes its containers.
            Err(e) => return Err(Failure::Environment(format!("{}: {e}", job.path.display()))),
        }
        let answered = job
            .trace
            .steps
            .get(i)
            .map_or(&[][..], |s| s.waits_answered.as_slice());
        if !answered.is_empty() {
            // WAITs that blocked and that the model answers at this step: Redis must
            // have answered them by its end, the same.
            let real: Vec<Option<String>> = run.history().entries[before..]
                .iter()
                .filter_map(|e| match &e.event {
                    Event::Command { command, reply, .. } if command.starts_with("WAIT ") => {
                        Some(reply.clone())
                    }
                    _ => None,
                })
                .collect();
            for (k, w) in answered.iter().enumerate() {
                let real = real.get(k).cloned().flatten();
                if real.as_deref() != Some(w.reply.as_str()) {
                    diverged.push(Divergence {
                        step: i + 1,
                        action: format!("{action}: {}'s {}", w.client, w.command),
                        model: Some(w.reply.clone()),
                        real,
                    });
                }
            }
        }
        if let Action::Deliver(..) | Action::Timeout(..) = action {
            let real = run.history().entries[before..]
                .iter()
                .find_map(|e| match &e.event {
                    Event::Command { reply, .. } => Some(reply.clone()),
                    _ => None,
                });
            let model = job.trace.steps.get(i).and_then(|s| s.reply.clone());
            if let Some(real) = real {
                if !same_reply(model.as_deref(), real.as_deref(), tick_ms) {
                    diverged.push(Divergence {
                        step: i + 1,
                        action: action.to_string(),
                        model,
                        real,
                    });
                }
            }
        }
    }
    let emulations = run.emulations().to_vec();
    let (history, timeline) = run
        .finish()
        .await
        .map_err(|e| Failure::Environment(e.to_string()))?;
    Ok(Outcome {
        job_scenario: job.scenario.name.clone(),
        property: job.property,
        trace_path: job.path.clone(),
        tick_ms,
        model_violations: model_violations(&job.trace),
        real: checker::check(&history),
        emulations,
        timeline,
        diverged,
        cluster,
        seconds: started.elapsed().as_secs_f64(),
        stopped,
    })
}

/// Whether a real reply is the model's: equal, or the same timestamp in ms where the
/// model counts ticks (getset-timestamp stores clock readings).
fn same_reply(model: Option<&str>, real: Option<&str>, tick_ms: u64) -> bool {
    if model == real {
        return true;
    }
    let number = |s: Option<&str>| s?.trim_matches('"').parse::<i64>().ok();
    match (number(model), number(real)) {
        (Some(m), Some(r)) => {
            i64::try_from(tick_ms).is_ok_and(|t| m.checked_mul(t) == Some(r))
                && model.map(|s| s.starts_with('"')) == real.map(|s| s.starts_with('"'))
        }
        _ => false,
    }
}

fn print(o: &Outcome) {
    println!(
        "{} / {} (trace {}, tick {} ms)",
        o.job_scenario,
        o.property,
        o.trace_path.display(),
        o.tick_ms
    );
    for e in &o.timeline {
        match &e.reply {
            Some(r) => println!("  {:>9.1} ms  {:<8} {}  -> {}", e.ms, e.actor, e.event, r),
            None => println!("  {:>9.1} ms  {:<8} {}", e.ms, e.actor, e.event),
        }
    }
    for e in &o.emulations {
        println!("  emulation: {e}");
    }
    for d in &o.diverged {
        println!(
            "  note: step {} ({}): the model replied {}, Redis replied {}",
            d.step,
            d.action,
            d.model.as_deref().unwrap_or("nothing"),
            d.real.as_deref().unwrap_or("nothing")
        );
    }
    if let Some(why) = &o.stopped {
        println!("  stopped before the trace's end: {why}");
    }
    for v in &o.real.violations {
        println!(
            "  real violation at {:.1} ms: {}: {}",
            v.ms, v.property, v.detail
        );
    }
    let length = o.timeline.last().map_or(0.0, |e| e.ms);
    println!(
        "  model violations: [{}]; real violations: [{}]; timeline {:.1} ms: {}",
        o.model_violations.join(", "),
        o.real.names().join(", "),
        length,
        if o.reproduced() {
            "REPRODUCED"
        } else {
            "NOT REPRODUCED"
        }
    );
}

/// `locklab replay`: returns the exit status.
pub fn run(args: &ReplayArgs) -> Result<i32, Failure> {
    let jobs = jobs(args)?;
    locklab_cluster::preflight().map_err(|e| Failure::Environment(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Environment(format!("cannot start the async runtime: {e}")))?;
    let dir = args.reports.join("replays");
    let mut outcomes = Vec::new();
    for job in &jobs {
        let tick_ms = args.tick_ms.unwrap_or(job.scenario.timing.tick_ms);
        let outcome = runtime.block_on(replay_one(job, tick_ms))?;
        print(&outcome);
        fs::create_dir_all(&dir).map_err(|e| Failure::io(&dir, "cannot create", e))?;
        let path = dir.join(format!(
            "{}.{}.json",
            outcome.job_scenario,
            outcome.property.as_str()
        ));
        let text = serde_json::to_string_pretty(&outcome.json()).expect("JSON serializes");
        write_file(&path, &(text + "\n"))?;
        outcomes.push(outcome);
    }
    let all = outcomes.iter().all(Outcome::reproduced);
    let code = if all { 0 } else { 1 };
    if let Some(path) = &args.json {
        let value = json!({
            "exit_code": code,
            "replays": outcomes.iter().map(Outcome::json).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&value).expect("JSON serializes");
        write_file(path, &(text + "\n"))?;
    }
    Ok(code)
}
