//! `locklab soak` on real containers (Docker and the Redis image are needed; without
//! them these tests fail with the message that says what to do, they never skip):
//! a short soak of a known-broken design with a forced fault finds the violation, one
//! of a design that holds finds none, and neither leaves a container behind.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use locklab_harness::run::history::Event;
use locklab_harness::soak::{self, SoakOptions, SoakOutcome};
use locklab_model::scenario::{Expectation, Property, Scenario};

fn scenario(name: &str) -> Scenario {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(format!("{name}.toml"));
    Scenario::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A team's own lock from `examples/custom/`.
fn custom(name: &str) -> Scenario {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/custom")
        .join(format!("{name}.toml"));
    Scenario::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn require_environment() {
    if let Err(e) = locklab_cluster::preflight() {
        panic!("cannot run the soak tests: {e}");
    }
}

fn run(scenario: &Scenario, options: &SoakOptions) -> SoakOutcome {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcome = rt
        .block_on(soak::soak(scenario, options, &|line: &str| {
            eprintln!("soak: {line}")
        }))
        .unwrap_or_else(|e| panic!("{}: {e}", scenario.name));
    let (containers, networks) = locklab_cluster::remaining_resources(&outcome.cluster).unwrap();
    assert!(
        containers.is_empty() && networks.is_empty(),
        "left behind by {}: {containers:?} {networks:?}",
        outcome.cluster
    );
    outcome
}

#[test]
fn a_pause_longer_than_the_lease_breaks_lua_release_in_a_short_soak() {
    require_environment();
    let sc = scenario("lua-release-pause");
    let mut options = SoakOptions::new(&sc, 4, 3);
    // Forced: the first pause comes early and every pause outlasts the lease.
    options.first_fault = Some(Duration::from_millis(300));
    options.fault_ttls = (2.0, 2.5);
    let o = run(&sc, &options);
    assert!(
        o.faults.iter().any(|f| f.kind == "pause" && f.aimed),
        "no pause struck a holder: {:?}",
        o.faults
    );
    assert!(
        o.verdicts.violated(Property::MutualExclusion),
        "no violation found; faults {:?}, counts {:?}",
        o.faults,
        o.counts
    );
    // The violation is real in the history: a client acquired while another was
    // inside its critical section, and that other one had been paused.
    let v = &o.verdicts.violations[0];
    let (a, b) = o.interval(v);
    assert!(a < b && b == v.ms);
    assert!(o
        .history
        .entries
        .iter()
        .any(|e| e.ms >= a && e.ms <= b && matches!(e.event, Event::Pause { .. })));
    let svg = soak::timeline::svg(&o, "test");
    assert!(svg.starts_with("<svg") && svg.contains("mutual_exclusion"));
}

#[test]
fn a_design_that_holds_shows_no_violation_in_a_short_soak() {
    require_environment();
    // Pauses struck at holders, but the store checks fencing tokens on every access:
    // the resource stays safe although two clients are inside at once.
    let sc = scenario("fencing-pause");
    let mut options = SoakOptions::new(&sc, 4, 5);
    options.first_fault = Some(Duration::from_millis(300));
    options.fault_ttls = (2.0, 2.5);
    let o = run(&sc, &options);
    assert!(o.counts.purchases > 0, "{:?}", o.counts);
    assert!(!o.faults.is_empty());
    for v in &o.verdicts.violations {
        assert_eq!(
            sc.expect.get(v.property),
            Expectation::Violated,
            "{} at {} ms: {}",
            v.property,
            v.ms,
            v.detail
        );
    }
    // And without faults the plain design holds every property.
    let sc = scenario("lua-release-no-faults");
    let o = run(&sc, &SoakOptions::new(&sc, 3, 1));
    assert!(o.faults.is_empty());
    // With nothing to inject, the clients still run the whole time.
    let last = o.history.entries.last().map_or(0.0, |e| e.ms);
    assert!(last > 2500.0, "the soak stopped at {last} ms");
    assert!(o.counts.purchases > 5, "{:?}", o.counts);
    assert!(o.verdicts.violations.is_empty(), "{:?}", o.verdicts);
}

#[test]
fn a_custom_lock_runs_its_own_renewal_in_a_soak() {
    require_environment();
    // examples/custom/correct.toml: a 700 ms critical section under a 600 ms lease,
    // kept by the team's compare-and-pexpire script. The driver runs those steps.
    let sc = custom("correct");
    let o = run(&sc, &SoakOptions::new(&sc, 3, 1));
    assert!(o.counts.purchases > 1, "{:?}", o.counts);
    assert!(o.verdicts.violations.is_empty(), "{:?}", o.verdicts);
    // The same lock without its renewal step: the lease runs out inside the critical
    // section and the other client gets in.
    let mut bare = sc.clone();
    bare.lock.as_mut().unwrap().lock.renew = None;
    let o = run(&bare, &SoakOptions::new(&bare, 3, 1));
    assert!(
        o.verdicts.violated(Property::MutualExclusion),
        "no overlap without renewal: {:?}",
        o.counts
    );
}

#[test]
fn acquires_that_wait_for_a_replica_get_it_and_survive_a_failover() {
    require_environment();
    // WAIT 1 with one replica: the replica replicates continuously, so acquires are
    // acknowledged, and the replica promoted right after an acquire has the entry.
    let sc = scenario("lua-release-failover-wait");
    let mut options = SoakOptions::new(&sc, 5, 1);
    options.first_fault = Some(Duration::from_millis(500));
    let o = run(&sc, &options);
    assert!(
        o.faults.iter().any(|f| f.kind == "failover"),
        "no failover: {:?}",
        o.faults
    );
    // A replica kept off the network acknowledged nothing: 1 critical section in 185
    // attempts over 5 s.
    assert!(o.counts.purchases > 10, "{:?}", o.counts);
    assert!(o.verdicts.violations.is_empty(), "{:?}", o.verdicts);
}

#[test]
fn the_soak_command_writes_the_history_and_the_timeline() {
    require_environment();
    let dir = std::env::temp_dir().join(format!("locklab-soak-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("soak.json");
    let out = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["soak", "lua-release-no-faults", "--seconds", "2", "--json"])
        .arg(&json)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("no violation"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(report["history"].as_array().unwrap().len() > 10);
    assert!(report["counts"]["critical_sections"].as_u64().unwrap() > 0);
    let svg = std::fs::read_to_string(json.with_extension("svg")).unwrap();
    assert!(svg.contains("client1") && svg.contains("client2"));
    std::fs::remove_dir_all(&dir).unwrap();
}
