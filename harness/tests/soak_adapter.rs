//! `locklab soak --client`: a third-party lock library through an adapter, on real
//! containers (Docker, the Redis image and adapters/.venv are needed; without them
//! these tests fail with the message that says what to do, they never skip).
//!
//! redis-py's `Lock` (adapters/redis-py): a paused holder breaks mutual exclusion under
//! a short lease, and the same pauses against a long lease break nothing. Adapters that
//! break the protocol (an exit, a garbage line, a hang) stop the soak with an error
//! naming the client and the line, exit 2, and leave no process or container behind.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use locklab_harness::run::history::Event;
use locklab_harness::soak::adapter::AdapterCommand;
use locklab_harness::soak::{self, FaultKind, SoakOptions, SoakOutcome};
use locklab_model::scenario::{Property, Scenario};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn require_environment() {
    if let Err(e) = locklab_cluster::preflight() {
        panic!("cannot run the adapter soak tests: {e}");
    }
}

/// The redis-py adapter, run by the project's virtual environment.
fn redis_py() -> AdapterCommand {
    let python = root().join("adapters/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash harness/redis-image/build.sh` (it installs the adapters' libraries)",
        python.display()
    );
    let adapter = root().join("adapters/redis-py/adapter.py");
    AdapterCommand::new(format!("{} {}", python.display(), adapter.display()))
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
        "left behind: {containers:?} {networks:?}"
    );
    outcome
}

#[test]
fn redis_py_lock_breaks_under_a_pause_longer_than_its_lease_and_holds_under_a_long_one() {
    require_environment();
    let file = Scenario::load(&root().join("adapters/redis-py/redis-py.toml")).unwrap();
    let sc = soak::one_fault(&file, FaultKind::Pauses).unwrap();
    // A 500 ms lease; the first pause comes early and every pause lasts 1 to 1.25 s.
    let mut options = SoakOptions::new(&sc, 4, 3);
    options.slow_steps = false;
    options.first_fault = Some(Duration::from_millis(300));
    options.fault_ttls = (2.0, 2.5);
    options.client = Some(redis_py());
    let o = run(&sc, &options);
    let a = o.adapter.as_ref().expect("an adapter soak");
    assert!(a.library.starts_with("redis-py "), "{a:?}");
    assert!(
        o.faults.iter().any(|f| f.kind == "pause" && f.aimed),
        "no pause struck a holder: {:?}",
        o.faults
    );
    assert!(
        o.verdicts.violated(Property::MutualExclusion),
        "no overlap; faults {:?}, counts {:?}",
        o.faults,
        o.counts
    );
    // The overlap is the paused holder's: a pause lies in the stretch that shows it,
    // and the library granted the lock to the other client meanwhile.
    let v = &o.verdicts.violations[0];
    let (from, to) = o.interval(v);
    assert!(o
        .history
        .entries
        .iter()
        .any(|e| e.ms >= from && e.ms <= to && matches!(e.event, Event::Pause { .. })));
    // The same library and pauses against a 5 s lease: the holder resumes in time.
    let mut long = sc.clone();
    long.timing.ttl *= 10;
    let mut options = SoakOptions::new(&long, 4, 3);
    options.slow_steps = false;
    options.first_fault = Some(Duration::from_millis(300));
    options.fault_ttls = (0.2, 0.25);
    options.client = Some(redis_py());
    let o = run(&long, &options);
    let paused: Vec<_> = o
        .faults
        .iter()
        .filter(|f| f.kind == "pause" && f.aimed)
        .collect();
    assert!(!paused.is_empty(), "no pause struck a holder: {:?}", o.faults);
    assert!(
        paused.iter().all(|f| f.end_ms - f.start_ms >= 950.0),
        "{paused:?}"
    );
    assert!(o.counts.purchases > 5, "{:?}", o.counts);
    assert!(o.verdicts.violations.is_empty(), "{:?}", o.verdicts);
}

/// The processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let out = Command::new("pgrep").args(["-f", marker]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The containers and networks labelled with process `pid` as their owner.
fn owned_by(pid: u32) -> Vec<String> {
    let label = format!("label={}={pid}", locklab_cluster::OWNER_PID_LABEL);
    let mut found = Vec::new();
    for what in [["ps", "-aq"], ["network", "ls"]] {
        let mut args = vec![what[0], what[1], "--filter", &label];
        if what[0] == "network" {
            args.push("-q");
        }
        let out = Command::new("docker").args(&args).output().unwrap();
        found.extend(
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(str::to_string),
        );
    }
    found
}

#[test]
fn adapters_that_exit_babble_or_hang_stop_the_soak_naming_the_client_and_the_line() {
    require_environment();
    let ready = r#"echo '{"ready": true, "library": "broken 1"}'"#;
    let cases = [
        (
            "exits",
            format!("read -r l; {ready}; read -r l; echo 'adapter dies here' >&2; exit 3"),
            vec!["the adapter exited (exit status: 3) before answering request 2", "adapter dies here"],
        ),
        (
            "garbage",
            format!("read -r l; {ready}; read -r l; echo 'garbage'"),
            vec!["stdout line 2, the answer to `acquire`, is not JSON", "\"garbage\""],
        ),
        (
            "hangs",
            format!("read -r l; {ready}; read -r l; sleep 300"),
            vec!["no answer to request 2", "within 1 s"],
        ),
    ];
    for (name, script, expected) in cases {
        let marker = format!("locklab-test-adapter-{}-{name}", std::process::id());
        // `$0` carries the marker, so that the adapter's processes can be found.
        let command = format!("sh -c '{}' {marker}", script.replace('\'', r"'\''"));
        let child = Command::new(env!("CARGO_BIN_EXE_locklab"))
            .args(["soak", "adapters/redis-py/redis-py.toml", "--seconds", "20"])
            .args(["--client", &command, "--client-timeout", "1", "--no-slow-steps"])
            .current_dir(root())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains("soak redis-py: client1 (adapter `sh -c")
                || stderr.contains("soak redis-py: client2 (adapter `sh -c"),
            "{name}: the client is not named: {stderr}"
        );
        for e in expected {
            assert!(stderr.contains(e), "{name}: `{e}` not in: {stderr}");
        }
        assert_eq!(processes_with(&marker), Vec::<String>::new(), "{name}: adapter left running");
        assert_eq!(owned_by(pid), Vec::<String>::new(), "{name}: containers left: {stderr}");
    }
}
