//! `locklab soak SCENARIO --seconds N [--clients C] [--seed S] [--client CMD] [--fault
//! KIND] [--json FILE]`: the production driver's clients (or a third-party library's,
//! through an adapter: `--client`) run freely against real Redis for N seconds while a
//! seeded nemesis injects the scenario's fault kinds, aimed at the holder; the history
//! is judged by the run engine's checker ([`locklab_harness::soak`]). With `--fault`
//! the soak and the model both take one fault kind only, and the model's verdicts,
//! searched here, are printed beside the soak's and are what it is judged against.
//!
//! Exit status (the CLI contract: 0 when verdicts match expectations):
//! - 1 when a property expected to hold (by the scenario's `[expect]`, or with `--fault`
//!   proven by the model) is violated, or when no client completed a critical section
//!   (nothing was tested);
//! - 0 otherwise: violations of properties expected violated are reported as found, not
//!   as failures;
//! - 2 for bad input (an adapter that breaks the protocol included), or no Docker
//!   engine / image.

use std::path::Path;
use std::time::Duration;

use locklab_harness::run::history::{Entry, Event};
use locklab_harness::run::RunError;
use locklab_harness::soak::adapter::AdapterCommand;
use locklab_harness::soak::{self, SoakFault, SoakOptions, SoakOutcome};
use locklab_model::ids::{ClientId, NodeId};
use locklab_model::model::LockModel;
use locklab_model::scenario::{Expectation, Property, Scenario};
use locklab_model::search::{search, SearchOptions};
use serde_json::{json, Value};

use crate::cli::SoakArgs;
use crate::files::{shell_word, write_file};
use crate::scenario_args::resolve;
use crate::Failure;

/// The command line that runs this soak again (same schedule seed; real timing varies).
fn reproduce(args: &SoakArgs, clients: usize) -> String {
    let mut line = format!(
        "locklab soak {} --seconds {} --clients {clients} --seed {}",
        shell_word(&args.scenario),
        args.seconds,
        args.seed,
    );
    if let Some(cmd) = &args.client {
        line.push_str(&format!(" --client {}", shell_word(cmd)));
    }
    if let Some(t) = args.client_timeout {
        line.push_str(&format!(" --client-timeout {t}"));
    }
    if let Some(kind) = args.fault {
        line.push_str(&format!(" --fault {}", kind.as_str()));
    }
    if args.no_slow_steps {
        line.push_str(" --no-slow-steps");
    }
    line
}

/// The model's verdict on one property of the scenario a `--fault` soak runs.
#[derive(Clone, Debug)]
struct ModelVerdict {
    property: Property,
    /// Steps of its shortest counterexample, when violated.
    counterexample: Option<usize>,
    /// Whether the search finished (a property without a counterexample then holds).
    complete: bool,
}

impl ModelVerdict {
    fn expectation(&self) -> Expectation {
        match (self.counterexample, self.complete) {
            (None, true) => Expectation::Holds,
            // Not proven: a soak that breaks it contradicts no proof.
            _ => Expectation::Violated,
        }
    }

    fn describe(&self) -> String {
        match (self.counterexample, self.complete) {
            (Some(n), _) => format!("violated ({n} steps)"),
            (None, true) => "holds".into(),
            (None, false) => "not proven (the search stopped first)".into(),
        }
    }
}

/// The model's search of `scenario`: its verdicts, and a line about the search.
fn model_verdicts(scenario: &Scenario, limit: Duration) -> (Vec<ModelVerdict>, String) {
    let model = LockModel::new(scenario);
    let options = SearchOptions {
        threads: crate::search::cpus(),
        time_limit: Some(limit),
        ..SearchOptions::default()
    };
    let result = search(&model, &options, |_| {});
    let verdicts = Property::ALL
        .iter()
        .map(|&p| ModelVerdict {
            property: p,
            counterexample: result.counterexample(p).map(<[_]>::len),
            complete: result.complete,
        })
        .collect();
    let line = format!(
        "{} unique states, depth {}, {:.1} s{}{}",
        result.unique_states,
        result.depth,
        result.seconds,
        if result.complete {
            ""
        } else {
            ", stopped by --model-time-limit"
        },
        if result.purchased {
            ""
        } else {
            ", VACUOUS (no purchase)"
        }
    );
    (verdicts, line)
}

/// What the soak is judged against: the scenario's `[expect]`, or with `--fault` the
/// model's verdicts on the scenario with that fault only.
struct Expected<'a> {
    scenario: &'a Scenario,
    model: Option<&'a [ModelVerdict]>,
}

impl Expected<'_> {
    fn get(&self, p: Property) -> Expectation {
        match self.model {
            Some(verdicts) => verdicts
                .iter()
                .find(|v| v.property == p)
                .map_or(Expectation::Violated, ModelVerdict::expectation),
            None => self.scenario.expect.get(p),
        }
    }

    fn by(&self) -> &'static str {
        if self.model.is_some() {
            "by the model"
        } else {
            "by the scenario"
        }
    }
}

fn client(c: usize) -> String {
    ClientId::at(c).to_string()
}

/// One history entry as a timeline line: who, what. `None` for entries not shown.
fn describe(e: &Entry) -> Option<(String, String)> {
    let line = match &e.event {
        Event::AcquireStart { client: c, token } => {
            (client(*c), format!("acquire (token {token})"))
        }
        Event::Acquired { client: c, fence } => (
            client(*c),
            match fence {
                Some(f) => format!("acquired (fencing token {f}): enters critical section"),
                None => "acquired: enters critical section".into(),
            },
        ),
        Event::AcquireFailed { client: c, outcome } => {
            (client(*c), format!("acquire failed: {outcome}"))
        }
        Event::Leave { client: c } => (client(*c), "leaves critical section".into()),
        Event::ReleaseStart { client: c } => (client(*c), "releases".into()),
        Event::Done { client: c } => (client(*c), "release returned".into()),
        Event::Crash { client: c } => (client(*c), "FAULT crashes".into()),
        Event::Pause { client: c } => (client(*c), "FAULT stop-the-world pause".into()),
        Event::Resume { client: c } => (client(*c), "resumes".into()),
        Event::StockRead {
            client: c, value, ..
        } => (
            client(*c),
            match value {
                Some(v) => format!("reads stock: {v}"),
                None => "reads stock: rejected (stale token)".into(),
            },
        ),
        Event::StockWrite {
            client: c,
            value,
            accepted,
            stock,
            ..
        } => (
            client(*c),
            if *accepted {
                format!("writes stock {value}: accepted, stock {stock}")
            } else {
                format!("writes stock {value}: rejected (stale token), stock {stock}")
            },
        ),
        Event::KeyObserved {
            node,
            owner,
            pttl_ms,
        } => (
            NodeId::at(*node).to_string(),
            format!(
                "lock key of {}, PTTL {pttl_ms} ms",
                owner.map(client).unwrap_or_else(|| "nobody known".into())
            ),
        ),
        Event::Fault { what } => ("nemesis".into(), what.clone()),
        Event::Tick { .. }
        | Event::Command { .. }
        | Event::Receive { .. }
        | Event::Displaced { .. } => return None,
    };
    Some(line)
}

/// The indexes of the attempts that found the lock held: their start and their failure.
fn busy_attempts(entries: &[&Entry]) -> std::collections::BTreeSet<usize> {
    let mut hidden = std::collections::BTreeSet::new();
    let mut started: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        match &e.event {
            Event::AcquireStart { client, .. } => {
                started.insert(*client, i);
            }
            Event::AcquireFailed { client, outcome } if outcome == "busy" => {
                if let Some(s) = started.remove(client) {
                    hidden.insert(s);
                    hidden.insert(i);
                }
            }
            Event::AcquireFailed { client, .. } | Event::Acquired { client, .. } => {
                started.remove(client);
            }
            _ => {}
        }
    }
    hidden
}

fn expected(expect: &Expected, o: &SoakOutcome) -> (Vec<String>, Vec<String>) {
    let mut found = Vec::new();
    let mut unexpected = Vec::new();
    for v in &o.verdicts.violations {
        match expect.get(v.property) {
            Expectation::Holds => unexpected.push(v.property.as_str().to_string()),
            Expectation::Violated => found.push(v.property.as_str().to_string()),
        }
    }
    (found, unexpected)
}

/// Per property: the model's verdict beside what the soak found, and whether they agree.
fn agreement(
    verdicts: &[ModelVerdict],
    o: &SoakOutcome,
) -> Vec<(Property, String, String, &'static str)> {
    verdicts
        .iter()
        .map(|m| {
            let found = o
                .verdicts
                .violations
                .iter()
                .find(|v| v.property == m.property);
            let unjudged = o.unjudged.iter().any(|(p, _)| *p == m.property);
            let soak = match (found, unjudged) {
                (_, true) => "not judged".to_string(),
                (Some(v), _) => format!("violated at {:.1} s", v.ms / 1000.0),
                (None, _) => format!("none in {} critical sections", o.counts.critical_sections),
            };
            let verdict = match (unjudged, m.counterexample, m.complete, found.is_some()) {
                (true, ..) => "-",
                (_, Some(_), _, true) | (_, None, true, false) => "agree",
                (_, Some(_), _, false) => "not found by the soak",
                (_, None, true, true) => "DISAGREE: the model proves it holds",
                (_, None, false, true) => "found; the model's search had stopped",
                (_, None, false, false) => "-",
            };
            (m.property, m.describe(), soak, verdict)
        })
        .collect()
}

fn print(expect: &Expected, args: &SoakArgs, o: &SoakOutcome) {
    let c = &o.counts;
    println!(
        "operations: {} acquire attempts ({} acquired), {} releases",
        c.acquire_attempts, c.acquired, c.releases
    );
    println!(
        "critical sections: {} ({} purchases, {} accesses rejected for a stale token, \
         {} grants while another client was inside)",
        c.critical_sections, c.purchases, c.rejected, c.overlapping_grants
    );
    let aimed = o.faults.iter().filter(|f| f.aimed).count();
    println!(
        "faults: {} ({aimed} aimed at the holder; {} followed within a ttl by an \
         overlapping grant or a lost update, {} lost updates in all)",
        o.faults.len(),
        c.faults_followed_by_breach,
        c.lost_updates
    );
    for f in &o.faults {
        println!(
            "  {:>9.1} - {:>9.1} ms  {:<15} {}{}",
            f.start_ms,
            f.end_ms,
            f.kind,
            f.what,
            if f.aimed { " (aimed)" } else { "" }
        );
    }
    for n in &o.not_injected {
        println!("not injected: {n}");
    }
    for (p, why) in &o.unjudged {
        println!("not judged: {p}: {why}");
    }
    if let Some(a) = &o.adapter {
        let answers: Vec<String> = a
            .answers
            .iter()
            .map(|((op, outcome), n)| format!("{op} {outcome}: {n}"))
            .collect();
        println!("library answers ({}): {}", a.library, answers.join("; "));
    }
    if o.verdicts.violations.is_empty() {
        println!("violations: none");
    }
    for v in &o.verdicts.violations {
        let (a, b) = o.interval(v);
        println!(
            "violation: {} at {:.1} ms: {} ({})",
            v.property,
            v.ms,
            v.detail,
            match expect.get(v.property) {
                Expectation::Holds => format!("expected to hold {}", expect.by()),
                Expectation::Violated => format!("expected violated {}", expect.by()),
            }
        );
        println!("  history {a:.1} - {b:.1} ms:");
        let shown: Vec<&Entry> = o
            .history
            .entries
            .iter()
            .filter(|e| e.ms >= a && e.ms <= b)
            .collect();
        let hidden = busy_attempts(&shown);
        for (i, e) in shown.iter().enumerate() {
            if hidden.contains(&i) {
                continue;
            }
            if let Some((who, what)) = describe(e) {
                println!("  {:>9.1} ms  {who:<8} {what}", e.ms);
            }
        }
        let busy = hidden.len() / 2;
        if busy > 0 {
            println!("  ({busy} attempts that found the lock held are left out)");
        }
    }
    if !o.verdicts.violations.is_empty() {
        println!("run it again with: {}", reproduce(args, o.clients));
    }
}

fn to_json(expect: &Expected, args: &SoakArgs, o: &SoakOutcome, code: i32) -> Value {
    let scenario = expect.scenario;
    let (found, unexpected) = expected(expect, o);
    let model = expect.model.map(|verdicts| {
        agreement(verdicts, o)
            .into_iter()
            .map(|(p, model, soak, verdict)| {
                json!({"property": p.as_str(), "model": model, "soak": soak, "agreement": verdict})
            })
            .collect::<Vec<_>>()
    });
    json!({
        "scenario": scenario.name,
        "design": scenario.design.to_string(),
        "path": scenario.path.display().to_string(),
        "seconds": args.seconds,
        "clients": o.clients,
        "seed": args.seed,
        "ttl_ms": o.ttl_ms,
        "reproduce": reproduce(args, o.clients),
        "counts": o.counts,
        "faults": o.faults,
        "violations": o.verdicts.violations.iter().map(|v| {
            let (a, b) = o.interval(v);
            json!({
                "property": v.property.as_str(),
                "ms": v.ms,
                "detail": v.detail,
                "expected": expect.get(v.property).as_str(),
                "interval_ms": [a, b],
            })
        }).collect::<Vec<_>>(),
        "found_expected": found,
        "unexpected": unexpected,
        "not_judged": o.unjudged.iter().map(|(p, why)| json!({"property": p.as_str(), "why": why})).collect::<Vec<_>>(),
        "not_injected": o.not_injected,
        "fault": args.fault.map(SoakFault::as_str),
        "model": model,
        "adapter": o.adapter,
        "cluster": o.cluster,
        "elapsed_seconds": o.seconds,
        "exit_code": code,
        "history": o.history.entries,
    })
}

/// `locklab soak`: returns the exit status.
pub fn run(args: &SoakArgs) -> Result<i32, Failure> {
    let file = resolve(&args.scenario)?;
    let scenario = match args.fault {
        Some(kind) => {
            if kind == SoakFault::SlowSteps && args.no_slow_steps {
                return Err(Failure::BadInput(
                    "--fault slow_steps runs the slow clients alone; --no-slow-steps leaves them out"
                        .into(),
                ));
            }
            soak::one_fault(&file, kind).map_err(Failure::BadInput)?
        }
        None => file,
    };
    locklab_cluster::preflight().map_err(|e| Failure::Environment(e.to_string()))?;
    let model = args.fault.map(|kind| {
        let (verdicts, line) =
            model_verdicts(&scenario, Duration::from_secs(args.model_time_limit));
        let described: Vec<String> = verdicts
            .iter()
            .map(|v| format!("{} {}", v.property, v.describe()))
            .collect();
        println!(
            "model of {} with {} only: {}; {line}",
            scenario.name,
            kind.as_str(),
            described.join(", ")
        );
        verdicts
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Environment(format!("cannot start the async runtime: {e}")))?;
    let mut options = SoakOptions::new(&scenario, args.seconds, args.seed);
    if let Some(c) = args.clients {
        options.clients = usize::from(c);
    }
    options.slow_steps = match args.fault {
        Some(kind) => kind == SoakFault::SlowSteps,
        None => !args.no_slow_steps,
    };
    options.client = args.client.as_ref().map(|cmd| {
        let mut command = AdapterCommand::new(cmd.clone());
        if let Some(t) = args.client_timeout {
            command.answer_timeout = Duration::from_secs(t);
        }
        command
    });
    let kinds: Vec<&str> = soak::nemesis::kinds(&scenario, options.slow_steps)
        .iter()
        .map(|k| k.as_str())
        .collect();
    println!(
        "soak {} ({}), {} s, {} clients, seed {}, ttl {} ms, work {} ms, faults: {}",
        scenario.name,
        scenario.design,
        args.seconds,
        options.clients,
        args.seed,
        u64::from(scenario.timing.ttl) * scenario.timing.tick_ms,
        u64::from(scenario.timing.work) * scenario.timing.tick_ms,
        if kinds.is_empty() {
            "none".to_string()
        } else {
            kinds.join(", ")
        }
    );
    if let Some(cmd) = &args.client {
        println!(
            "clients: the adapter `{cmd}` (the scenario is the library's model){}",
            if options.slow_steps {
                format!("; {}", soak::adapter::ADAPTER_SLOW_STEPS)
            } else {
                String::new()
            }
        );
    }
    let progress = |line: &str| eprintln!("soak: {line}");
    let outcome = runtime
        .block_on(soak::soak(&scenario, &options, &progress))
        .map_err(|e| match e {
            // A broken adapter or a scenario it cannot run is bad input.
            RunError::Client(what) if options.client.is_some() => {
                Failure::BadInput(format!("soak {}: {what}", scenario.name))
            }
            e => Failure::Environment(format!("soak {}: {e}", scenario.name)),
        })?;
    if let Some(a) = &outcome.adapter {
        println!(
            "library: {} (key `{}`{})",
            a.library,
            a.key,
            if a.extends {
                ", extended by the harness while held"
            } else {
                ""
            }
        );
    }
    let expect = Expected {
        scenario: &scenario,
        model: model.as_deref(),
    };
    print(&expect, args, &outcome);
    if let Some(verdicts) = &model {
        println!("model beside soak:");
        for (p, model, soak, verdict) in agreement(verdicts, &outcome) {
            println!(
                "  {:<20} model {model:<40} soak {soak:<32} {verdict}",
                p.as_str()
            );
        }
    }
    let (found, unexpected) = expected(&expect, &outcome);
    let vacuous = outcome.counts.critical_sections == 0;
    let code = if unexpected.is_empty() && !vacuous {
        0
    } else {
        1
    };
    println!(
        "{}: {} s, {} clients, {} critical sections, {} faults: {}{}",
        scenario.name,
        args.seconds,
        outcome.clients,
        outcome.counts.critical_sections,
        outcome.faults.len(),
        match (found.is_empty(), unexpected.is_empty()) {
            (_, false) => format!(
                "VIOLATION of {} (expected to hold {})",
                unexpected.join(", "),
                expect.by()
            ),
            (false, true) => format!(
                "found {} (expected violated {})",
                found.join(", "),
                expect.by()
            ),
            (true, true) => "no violation".to_string(),
        },
        if vacuous {
            "; VACUOUS: no client completed a critical section"
        } else {
            ""
        }
    );
    if let Some(path) = &args.json {
        let value = to_json(&expect, args, &outcome, code);
        let text = serde_json::to_string_pretty(&value).expect("JSON serializes");
        write_file(Path::new(path), &(text + "\n"))?;
        let svg_path = path.with_extension("svg");
        let title = format!(
            "locklab soak {}: {} s, {} clients, seed {}",
            scenario.name, args.seconds, outcome.clients, args.seed
        );
        write_file(&svg_path, &soak::timeline::svg(&outcome, &title))?;
    }
    Ok(code)
}
