//! `locklab soak` on real containers (Docker and the Redis image are needed; without
//! them these tests fail with the message that says what to do, they never skip):
//! a short soak of a known-broken design with a forced fault finds the violation, one
//! of a design that holds finds none, and neither leaves a container behind.
//!
//! `locklab soak --client`: redis-py's `Lock` through its adapter (adapters/redis-py;
//! adapters/.venv is needed, which `harness/redis-image/build.sh` installs) breaks under
//! a pause longer than its lease and holds under the same pauses with a long one;
//! adapters that exit, babble or hang stop the soak with an error naming the client and
//! the line, exit 2, and leave no process or container behind.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use locklab_harness::run::history::Event;
use locklab_harness::soak::adapter::AdapterCommand;
use locklab_harness::soak::{self, SoakFault, SoakOptions, SoakOutcome};
use locklab_model::fault::FaultKind;
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

/// Options for a soak of the scenario's declared faults alone (no slow clients), so
/// that a short soak certainly draws the fault under test.
fn declared_faults(sc: &Scenario, seconds: u64, seed: u64) -> SoakOptions {
    let mut options = SoakOptions::new(sc, seconds, seed);
    options.slow_steps = false;
    options
}

/// [`declared_faults`] with the first fault 300 ms in.
fn declared_faults_early(sc: &Scenario, seconds: u64, seed: u64) -> SoakOptions {
    let mut options = declared_faults(sc, seconds, seed);
    options.first_fault = Some(Duration::from_millis(300));
    options
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

/// What the faults of `kind` that struck as aimed did.
fn aimed<'a>(o: &'a SoakOutcome, kind: &str) -> Vec<&'a str> {
    o.faults
        .iter()
        .filter(|f| f.kind == kind && f.aimed)
        .map(|f| f.what.as_str())
        .collect()
}

/// The soak found two clients inside at once; `after` says after what, if not.
fn assert_overlap(o: &SoakOutcome, after: &str) {
    assert!(
        o.verdicts.violated(Property::MutualExclusion),
        "no overlap {after}: {:?} {:?}",
        o.faults,
        o.counts
    );
}

/// Shut a test's own cluster down and check that it left nothing behind.
async fn shut_down(nem: locklab_harness::run::nemesis::Nemesis) {
    let id = nem.cluster().id().to_string();
    nem.shutdown().await.unwrap();
    let (containers, networks) = locklab_cluster::remaining_resources(&id).unwrap();
    assert!(containers.is_empty() && networks.is_empty());
}

/// A soak whose pauses (the first early, every one `lengths` ttls long) strike holders:
/// it must break mutual exclusion, and a pause must lie in the stretch that shows it.
fn paused_holders_overlap(sc: &Scenario, mut options: SoakOptions) -> SoakOutcome {
    options.first_fault = Some(Duration::from_millis(300));
    options.fault_ttls = (2.0, 2.5);
    let o = run(sc, &options);
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
    o
}

#[test]
fn a_pause_longer_than_the_lease_breaks_lua_release_in_a_short_soak() {
    require_environment();
    let sc = scenario("lua-release-pause");
    let o = paused_holders_overlap(&sc, declared_faults(&sc, 4, 3));
    let svg = soak::timeline::svg(&o, "test");
    assert!(svg.starts_with("<svg") && svg.contains("mutual_exclusion"));
}

/// The redis-py adapter, run by the project's virtual environment.
fn redis_py() -> AdapterCommand {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join("adapters/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash harness/redis-image/build.sh` (it installs the adapters' libraries)",
        python.display()
    );
    let adapter = root.join("adapters/redis-py/adapter.py");
    AdapterCommand::new(format!("{} {}", python.display(), adapter.display()))
}

#[test]
fn redis_py_lock_breaks_under_a_pause_longer_than_its_lease_and_holds_under_a_long_one() {
    require_environment();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../adapters/redis-py/redis-py.toml");
    let sc = soak::one_fault(
        &Scenario::load(&path).unwrap(),
        SoakFault::Budget(FaultKind::Pause),
    )
    .unwrap();
    // A 500 ms lease, pauses of 1 to 1.25 s.
    let mut options = declared_faults(&sc, 4, 3);
    options.client = Some(redis_py());
    let o = paused_holders_overlap(&sc, options);
    let a = o.adapter.as_ref().expect("an adapter soak");
    assert!(a.library.starts_with("redis-py "), "{a:?}");
    // The same library and pauses against a 5 s lease: the holder resumes in time.
    let mut long = sc.clone();
    long.timing.ttl *= 10;
    let mut options = declared_faults_early(&long, 4, 3);
    options.fault_ttls = (0.2, 0.25);
    options.client = Some(redis_py());
    let o = run(&long, &options);
    let paused: Vec<_> = o
        .faults
        .iter()
        .filter(|f| f.kind == "pause" && f.aimed)
        .collect();
    assert!(
        !paused.is_empty() && paused.iter().all(|f| f.end_ms - f.start_ms >= 950.0),
        "no pause of a second struck a holder: {:?}",
        o.faults
    );
    assert!(o.counts.purchases > 5, "{:?}", o.counts);
    assert!(o.verdicts.violations.is_empty(), "{:?}", o.verdicts);
}

#[test]
fn a_design_that_holds_shows_no_violation_in_a_short_soak() {
    require_environment();
    // Pauses struck at holders, but the store checks fencing tokens on every access:
    // the resource stays safe although two clients are inside at once.
    let sc = scenario("fencing-pause");
    let mut options = declared_faults_early(&sc, 4, 5);
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
    let o = run(&sc, &declared_faults(&sc, 3, 1));
    assert!(o.faults.is_empty());
    // With nothing to inject, the clients still run the whole time.
    let last = o.history.entries.last().map_or(0.0, |e| e.ms);
    assert!(last > 2500.0, "the soak stopped at {last} ms");
    assert!(o.counts.purchases > 5, "{:?}", o.counts);
    assert!(o.verdicts.violations.is_empty(), "{:?}", o.verdicts);
}

#[test]
fn slow_steps_within_the_model_bound_break_a_short_lease_and_not_a_long_one() {
    require_environment();
    // lua-release-slow-holder: a 300 ms lease, 100 ms of work, steps of up to 100 ms.
    // A slow holder's reply, read and write at 85-90 ms each outlast the lease, and
    // the other client, retrying every 25-50 ms, gets in before the write.
    let sc = scenario("lua-release-slow-holder");
    let mut options = SoakOptions::new(&sc, 8, 1);
    options.first_fault = Some(Duration::from_millis(300));
    options.step_delays = (0.85, 0.9);
    let o = run(&sc, &options);
    assert!(
        o.faults.iter().all(|f| f.kind == "slow-steps") && o.faults.iter().any(|f| f.aimed),
        "{:?}",
        o.faults
    );
    assert!(
        o.verdicts.violated(Property::MutualExclusion),
        "no violation found; faults {:?}, counts {:?}",
        o.faults,
        o.counts
    );
    // lua-release-no-faults: the same slow steps under a 500 ms lease break nothing,
    // as the model says.
    let sc = scenario("lua-release-no-faults");
    let mut options = SoakOptions::new(&sc, 5, 1);
    options.first_fault = Some(Duration::from_millis(300));
    options.step_delays = (0.85, 0.9);
    let o = run(&sc, &options);
    assert!(
        o.faults.iter().any(|f| f.kind == "slow-steps" && f.aimed),
        "{:?}",
        o.faults
    );
    assert!(o.counts.purchases > 5, "{:?}", o.counts);
    assert!(o.verdicts.violations.is_empty(), "{:?}", o.verdicts);
}

#[test]
fn a_custom_lock_runs_its_own_renewal_in_a_soak() {
    require_environment();
    // examples/custom/correct.toml: a 700 ms critical section under a 600 ms lease,
    // kept by the team's compare-and-pexpire script. The driver runs those steps.
    let sc = custom("correct");
    let o = run(&sc, &declared_faults(&sc, 3, 1));
    assert!(o.counts.purchases > 1, "{:?}", o.counts);
    assert!(o.verdicts.violations.is_empty(), "{:?}", o.verdicts);
    // The same lock without its renewal step: the lease runs out inside the critical
    // section and the other client gets in.
    let mut bare = sc.clone();
    bare.lock.as_mut().unwrap().lock.renew = None;
    let o = run(&bare, &declared_faults(&bare, 3, 1));
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
    let mut options = declared_faults(&sc, 5, 1);
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

#[test]
fn a_lost_reply_is_a_command_done_whose_answer_never_arrives() {
    require_environment();
    use locklab_harness::run::nemesis::Nemesis;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let nem = Nemesis::start(1, 0, 0, 1, false).await.unwrap();
        let link = nem.link(0, 0);
        let through = redis::Client::open(link.url()).unwrap();
        let direct = redis::Client::open(format!("redis://{}", nem.addr(0))).unwrap();
        let mut direct = direct.get_multiplexed_async_connection().await.unwrap();
        let setnx = |conn: &mut redis::aio::MultiplexedConnection, key: &'static str| {
            let cmd = redis::cmd("SETNX").arg(key).arg("c0.1:0").clone();
            let mut conn = conn.clone();
            async move { cmd.query_async::<i64>(&mut conn).await }
        };
        // Connected first: the connection's own handshake is not the command armed for.
        let mut conn = through.get_multiplexed_async_connection().await.unwrap();
        // The next reply: the SETNX runs on the node, its answer is lost.
        link.lose_reply(1);
        assert!(setnx(&mut conn, "a").await.is_err(), "the reply arrived");
        assert_eq!(link.lost_reply().as_deref(), Some("SETNX"));
        let a: Option<String> = redis::cmd("GET")
            .arg("a")
            .query_async(&mut direct)
            .await
            .unwrap();
        assert_eq!(a.as_deref(), Some("c0.1:0"), "the command did not run");
        // The link is open again, and the second reply after arming is the one lost.
        let mut conn = through.get_multiplexed_async_connection().await.unwrap();
        assert_eq!(setnx(&mut conn, "b").await.unwrap(), 1);
        link.lose_reply(2);
        let pong: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
        assert_eq!(pong, "PONG");
        let lost = setnx(&mut conn, "c").await;
        assert!(lost.is_err(), "{lost:?}");
        assert_eq!(link.lost_reply().as_deref(), Some("SETNX"));
        let c: Option<String> = redis::cmd("GET")
            .arg("c")
            .query_async(&mut direct)
            .await
            .unwrap();
        assert_eq!(c.as_deref(), Some("c0.1:0"));
        shut_down(nem).await;
    });
}

#[test]
fn lost_replies_split_brains_and_client_clocks_strike_in_a_soak() {
    require_environment();
    // naive-setnx-lost-reply: the holder's link loses a reply; a lost SETNX reply leaves
    // a key without expiry that no client holds.
    let sc = scenario("naive-setnx-lost-reply");
    let o = run(&sc, &declared_faults_early(&sc, 6, 1));
    let lost: Vec<&str> = o
        .faults
        .iter()
        .filter(|f| f.kind == "lost-reply")
        .map(|f| f.what.as_str())
        .collect();
    assert!(
        lost.iter().any(|w| w.contains("lost its")),
        "no reply lost: {:?}",
        o.faults
    );
    assert!(o.not_injected.is_empty(), "{:?}", o.not_injected);
    // lua-release-split-brain: the holder keeps the old master, the other client
    // acquires on the promoted replica, which lacks the holder's entry.
    let sc = scenario("lua-release-split-brain");
    let mut options = declared_faults_early(&sc, 6, 1);
    options.fault_ttls = (1.5, 2.0);
    let o = run(&sc, &options);
    assert!(
        o.faults.iter().any(|f| f.kind == "split-brain" && f.aimed),
        "no aimed split brain: {:?}",
        o.faults
    );
    assert_overlap(&o, "in a split brain");
    // getset-timestamp-skew: a client's clock jumps ahead while the other holds.
    let sc = scenario("getset-timestamp-skew");
    let o = run(&sc, &declared_faults_early(&sc, 5, 1));
    assert!(
        o.faults
            .iter()
            .any(|f| f.kind == "clock-jump" && f.what.contains("ClockShift")),
        "no client clock jump: {:?}",
        o.faults
    );
    assert_overlap(&o, "after a client clock jump");
}

#[test]
fn node_clocks_drift_within_the_bound_and_aim_at_slow_holders() {
    require_environment();
    // redlock-drift-no-allowance: slow clients with uneven legs split the masters, so
    // that some slow holds rest on a bare majority, where the drift steps aim.
    let sc = scenario("redlock-drift-no-allowance");
    let seconds = 8;
    let o = run(&sc, &SoakOptions::new(&sc, seconds, 1));
    let drift: Vec<_> = o
        .faults
        .iter()
        .filter(|f| f.kind == "clock-drift")
        .collect();
    assert_eq!(drift.len(), 1, "{:?}", o.faults);
    // "... N steps, M of them aimed at a holder ...": never faster than the model's
    // bound, one tick per horizon / node_drift for each master.
    let number_before = |what: &str, word: &str| -> u64 {
        let at = what
            .find(word)
            .unwrap_or_else(|| panic!("{word} in {what}"));
        what[..at]
            .split_whitespace()
            .last()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("a number before {word} in {what}"))
    };
    let steps = number_before(&drift[0].what, " steps");
    let aimed = number_before(&drift[0].what, " of them aimed");
    let every_ms = u64::from(sc.timing.horizon.expect("a horizon")) * sc.timing.tick_ms
        / u64::from(sc.timing.node_drift);
    let masters = u64::from(sc.topology.masters);
    assert!(
        steps >= masters && steps <= masters * (seconds * 1000 / every_ms + 1),
        "{steps} steps in {seconds} s: {}",
        drift[0].what
    );
    let steps_aimed: Vec<_> = o.faults.iter().filter(|f| f.kind == "drift-step").collect();
    assert_eq!(steps_aimed.len() as u64, aimed, "{:?}", o.faults);
    eprintln!("{} aimed drift steps of {steps}", steps_aimed.len());
    for f in &steps_aimed {
        // A slow holder on two of the three masters: a bare majority.
        assert!(f.aimed && f.what.contains("holding master"), "{f:?}");
        assert_eq!(f.what.matches(", master").count() + 1, 2, "{f:?}");
        // Within a slow stretch (every client is slow until the slow one acquires).
        let stretch = o
            .faults
            .iter()
            .find(|s| s.kind == "slow-steps" && s.start_ms <= f.start_ms && f.start_ms <= s.end_ms);
        assert!(
            stretch.is_some(),
            "not at a slow holder: {f:?} {:?}",
            o.faults
        );
    }
    // Two aimed steps of one node lie at least a step's interval apart.
    for a in &steps_aimed {
        for b in &steps_aimed {
            let node = |f: &&soak::FaultRecord| f.what.split_whitespace().next().map(str::to_owned);
            if a.start_ms < b.start_ms && node(a) == node(b) {
                assert!(
                    b.start_ms - a.start_ms >= every_ms as f64 - 5.0,
                    "{a:?} then {b:?}"
                );
            }
        }
    }
    assert!(o.counts.purchases > 5, "{:?}", o.counts);
    for v in &o.verdicts.violations {
        assert_eq!(sc.expect.get(v.property), Expectation::Violated, "{v:?}");
    }
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
        assert!(out.status.success(), "docker {args:?}");
        found.extend(
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(str::to_string),
        );
    }
    found
}

#[test]
fn an_interrupted_soak_removes_its_containers_and_exits_130() {
    // Ctrl-C must not leave the run's containers for the next run to reap: the
    // command removes them itself and exits as a shell reports SIGINT.
    require_environment();
    let child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["soak", "lua-release-failover", "--seconds", "120"])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = std::time::Instant::now();
    while owned_by(pid).len() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the soak started no master and replica within 60 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    interrupt(child);
}

/// Ctrl-C to a running `locklab` command: it exits 130, saying so, and leaves none of
/// its containers. Returns its stderr.
fn interrupt(child: std::process::Child) -> String {
    let pid = child.id();
    let kill = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("SIGINT"), "{stderr}");
    assert_eq!(owned_by(pid), Vec::<String>::new(), "left behind: {stderr}");
    stderr
}

/// The processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let out = Command::new("pgrep").args(["-f", marker]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn adapters_that_exit_babble_or_hang_stop_the_soak_naming_the_client_and_the_line() {
    require_environment();
    let ready = r#"echo '{"ready": true, "library": "broken 1"}'"#;
    let cases = [
        (
            "exits",
            format!("read -r l; {ready}; read -r l; echo 'adapter dies here' >&2; exit 3"),
            [
                "the adapter exited (exit status: 3) before answering request 2",
                "adapter dies here",
            ],
        ),
        (
            "garbage",
            format!("read -r l; {ready}; read -r l; echo 'garbage'"),
            [
                "stdout line 2, the answer to `acquire`, is not JSON",
                "\"garbage\"",
            ],
        ),
        (
            "hangs",
            format!("read -r l; {ready}; read -r l; sleep 300"),
            ["no answer to request 2", "within 1 s"],
        ),
    ];
    for (name, script, expected) in cases {
        let marker = format!("locklab-test-adapter-{}-{name}", std::process::id());
        // `$0` carries the marker, so that the adapter's processes can be found.
        let command = format!("sh -c '{}' {marker}", script.replace('\'', r"'\''"));
        let child = Command::new(env!("CARGO_BIN_EXE_locklab"))
            .args(["soak", "adapters/redis-py/redis-py.toml", "--seconds", "20"])
            .args(["--client", &command, "--client-timeout", "1"])
            .arg("--no-slow-steps")
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
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
        let left = processes_with(&marker);
        assert!(left.is_empty(), "{name}: adapter processes left: {left:?}");
        assert_eq!(owned_by(pid), Vec::<String>::new(), "{name}: {stderr}");
    }
}

/// Process `pid`'s state letter and parent, from /proc (`None`: gone).
fn proc_stat(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) S ppid ...`: the command may hold spaces, the state follows its `)`.
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    Some((state, rest.next()?.parse().ok()?))
}

/// Every process below `pid`.
fn descendants(pid: u32) -> Vec<u32> {
    let all: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            all.iter()
                .filter(|&&p| proc_stat(p).is_some_and(|(_, pp)| pp == parent)),
        );
        i += 1;
    }
    found.remove(0);
    found
}

#[test]
fn an_interrupted_adapter_soak_kills_its_adapters_even_a_paused_one() {
    // A paused adapter is stopped (SIGSTOP): it would never see its stdin close.
    require_environment();
    let child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["soak", "adapters/redis-py/redis-py.toml", "--seconds", "60"])
        .args(["--fault", "pauses", "--client", &redis_py().command])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = std::time::Instant::now();
    let adapters = loop {
        let below = descendants(pid);
        if below
            .iter()
            .any(|&p| proc_stat(p).is_some_and(|(s, _)| s == 'T'))
        {
            break below;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no adapter was paused within 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = interrupt(child);
    std::thread::sleep(Duration::from_millis(500));
    let left: Vec<u32> = adapters
        .into_iter()
        .filter(|&p| proc_stat(p).is_some_and(|(s, _)| s != 'Z'))
        .collect();
    assert!(
        left.is_empty(),
        "adapter processes left: {left:?}\n{stderr}"
    );
}

#[test]
fn a_request_kept_back_past_its_timeout_still_runs_when_delivered() {
    require_environment();
    use locklab_harness::run::nemesis::Nemesis;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let nem = Nemesis::start(1, 0, 0, 1, false).await.unwrap();
        let link = nem.link(0, 0);
        let direct = redis::Client::open(format!("redis://{}", nem.addr(0))).unwrap();
        let mut direct = direct.get_multiplexed_async_connection().await.unwrap();
        let config = redis::AsyncConnectionConfig::new()
            .set_response_timeout(Some(Duration::from_millis(100)));
        let through = redis::Client::open(link.url()).unwrap();
        let mut conn = through
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .unwrap();
        let get = |conn: &mut redis::aio::MultiplexedConnection| {
            let mut conn = conn.clone();
            async move {
                redis::cmd("GET")
                    .arg("k")
                    .query_async::<Option<String>>(&mut conn)
                    .await
                    .unwrap()
            }
        };
        // The next request is kept, its connection silent past the client's timeout.
        link.keep_next_request(Duration::from_millis(300));
        let sent = redis::cmd("SET")
            .arg("k")
            .arg("late")
            .query_async::<String>(&mut conn)
            .await;
        assert!(
            sent.is_err_and(|e| e.is_timeout()),
            "the client did not time out"
        );
        assert_eq!(link.kept_request().as_deref(), Some("SET"));
        assert_eq!(get(&mut direct).await, None, "the kept request ran early");
        // The client goes on over a new connection while the request stays kept.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut conn = through.get_multiplexed_async_connection().await.unwrap();
        let _: () = redis::cmd("SET")
            .arg("k")
            .arg("now")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(get(&mut direct).await.as_deref(), Some("now"));
        // Delivered at last: the request its client gave up on overwrites the value.
        let kept = link.take_kept().expect("a request kept");
        kept.deliver(Duration::from_secs(2)).await.unwrap();
        assert_eq!(get(&mut direct).await.as_deref(), Some("late"));
        assert!(link.take_kept().is_none());
        shut_down(nem).await;
    });
}

#[test]
fn a_release_given_up_on_lands_under_the_next_holder_in_a_soak() {
    require_environment();
    // set-px-del-late-release: the holder's blind DEL is kept on its link past the
    // command timeout; delivered under a later hold (another client's, or the sender's
    // own when it got the lock back first), it deletes that lock and a client gets in
    // beside the holder.
    let sc = scenario("set-px-del-late-release");
    let o = run(&sc, &declared_faults_early(&sc, 8, 1));
    assert!(
        aimed(&o, "late-request")
            .iter()
            .any(|w| w.contains("kept DEL")
                && (w.contains("delivered under another holder") || w.contains("own next hold"))),
        "no late release landed: {:?}",
        o.faults
    );
    assert_overlap(&o, "after a late release");
}

#[test]
fn a_split_brain_with_replicas_on_both_sides_acknowledges_wait_on_both() {
    require_environment();
    // lua-release-split-brain-wait-both-sides: WAIT 1, three replicas, most-advanced.
    // The replica in sync stays with the old master and acknowledges the holder's
    // WAIT; the sentinels promote a lagging one and the third follows it and
    // acknowledges the other client's: both hold.
    let sc = scenario("lua-release-split-brain-wait-both-sides");
    let mut options = declared_faults_early(&sc, 15, 1);
    options.fault_ttls = (1.5, 2.0);
    let o = run(&sc, &options);
    assert!(
        aimed(&o, "split-brain")
            .iter()
            .any(|w| w.contains("still follow")),
        "no split brain with replicas on both sides: {:?}",
        o.faults
    );
    assert_overlap(&o, "in a split brain");
}

#[test]
fn a_renewal_kept_on_the_link_lands_after_the_release_and_breaks_nothing() {
    require_environment();
    // watchdog-long-work with a partition: a renewal due before the holder's release is
    // kept on the link, the driver gives up on it and releases, and the renewal lands
    // after the release. The watchdog's renewal checks the owner: it extends nothing.
    let sc = soak::one_fault(
        &scenario("watchdog-long-work"),
        SoakFault::Budget(FaultKind::Partition),
    )
    .unwrap();
    let o = run(&sc, &declared_faults_early(&sc, 8, RENEWAL_RACE_SEED));
    let race = o
        .faults
        .iter()
        .find(|f| f.kind == "renewal-race" && f.aimed)
        .unwrap_or_else(|| panic!("no renewal raced the release: {:?}", o.faults));
    assert!(
        race.what
            .contains("kept EVALSHA (sent in its critical section)")
            && race.what.contains("delivered after client"),
        "{}",
        race.what
    );
    // The release returned before the renewal was delivered, and after it was kept.
    let c = race.client.unwrap();
    assert!(
        o.history.entries.iter().any(|e| e.ms > race.start_ms
            && e.ms < race.end_ms
            && matches!(e.event, Event::Done { client } if client == c)),
        "{race:?}"
    );
    assert!(o.counts.purchases > 3, "{:?}", o.counts);
    assert!(
        !o.verdicts.violated(Property::MutualExclusion),
        "{:?}",
        o.verdicts
    );
}

/// A seed whose schedule draws a renewal race first in
/// `a_renewal_kept_on_the_link_lands_after_the_release_and_breaks_nothing`.
const RENEWAL_RACE_SEED: u64 = 1;
