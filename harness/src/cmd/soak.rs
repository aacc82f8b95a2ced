//! `locklab soak SCENARIO --seconds N [--clients C] [--seed S] [--json FILE]`: the
//! production driver's clients run freely against real Redis for N seconds while a
//! seeded nemesis injects the scenario's fault kinds, aimed at the holder; the history
//! is judged by the run engine's checker ([`locklab_harness::soak`]).
//!
//! Exit status (the CLI contract: 0 when verdicts match expectations):
//! - 1 when a property the scenario expects to hold is violated, or when no client
//!   completed a critical section (nothing was tested);
//! - 0 otherwise: violations of properties the scenario expects violated are reported
//!   as found, not as failures;
//! - 2 for bad input, or no Docker engine / image.

use std::path::Path;

use locklab_harness::run::history::{Entry, Event};
use locklab_harness::soak::{self, SoakOptions, SoakOutcome};
use locklab_model::scenario::{Expectation, Scenario};
use serde_json::{json, Value};

use super::chaos::shell_word;
use crate::cli::SoakArgs;
use crate::files::write_file;
use crate::scenario_args::resolve;
use crate::Failure;

/// The command line that runs this soak again (same schedule seed; real timing varies).
fn reproduce(args: &SoakArgs, clients: usize) -> String {
    format!(
        "locklab soak {} --seconds {} --clients {clients} --seed {}{}",
        shell_word(&args.scenario),
        args.seconds,
        args.seed,
        if args.no_slow_steps {
            " --no-slow-steps"
        } else {
            ""
        }
    )
}

fn client(c: usize) -> String {
    format!("client{}", c + 1)
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
            format!("node{}", node + 1),
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

fn expected(scenario: &Scenario, o: &SoakOutcome) -> (Vec<String>, Vec<String>) {
    let mut found = Vec::new();
    let mut unexpected = Vec::new();
    for v in &o.verdicts.violations {
        match scenario.expect.get(v.property) {
            Expectation::Holds => unexpected.push(v.property.as_str().to_string()),
            Expectation::Violated => found.push(v.property.as_str().to_string()),
        }
    }
    (found, unexpected)
}

fn print(scenario: &Scenario, args: &SoakArgs, o: &SoakOutcome) {
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
            match scenario.expect.get(v.property) {
                Expectation::Holds => "expected to hold",
                Expectation::Violated => "expected violated",
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

fn to_json(scenario: &Scenario, args: &SoakArgs, o: &SoakOutcome, code: i32) -> Value {
    let (found, unexpected) = expected(scenario, o);
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
                "expected": scenario.expect.get(v.property).as_str(),
                "interval_ms": [a, b],
            })
        }).collect::<Vec<_>>(),
        "found_expected": found,
        "unexpected": unexpected,
        "not_judged": o.unjudged.iter().map(|(p, why)| json!({"property": p.as_str(), "why": why})).collect::<Vec<_>>(),
        "not_injected": o.not_injected,
        "cluster": o.cluster,
        "elapsed_seconds": o.seconds,
        "exit_code": code,
        "history": o.history.entries,
    })
}

/// `locklab soak`: returns the exit status.
pub fn run(args: &SoakArgs) -> Result<i32, Failure> {
    let scenario = resolve(&args.scenario)?;
    locklab_cluster::preflight().map_err(|e| Failure::Environment(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Environment(format!("cannot start the async runtime: {e}")))?;
    let mut options = SoakOptions::new(&scenario, args.seconds, args.seed);
    if let Some(c) = args.clients {
        options.clients = usize::from(c);
    }
    options.slow_steps = !args.no_slow_steps;
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
    let progress = |line: &str| eprintln!("soak: {line}");
    let outcome = runtime
        .block_on(soak::soak(&scenario, &options, &progress))
        .map_err(|e| Failure::Environment(format!("soak {}: {e}", scenario.name)))?;
    print(&scenario, args, &outcome);
    let (found, unexpected) = expected(&scenario, &outcome);
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
            (_, false) => format!("VIOLATION of {} (expected to hold)", unexpected.join(", ")),
            (false, true) => format!("found {} (expected violated)", found.join(", ")),
            (true, true) => "no violation".to_string(),
        },
        if vacuous {
            "; VACUOUS: no client completed a critical section"
        } else {
            ""
        }
    );
    if let Some(path) = &args.json {
        let value = to_json(&scenario, args, &outcome, code);
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
