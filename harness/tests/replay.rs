//! `locklab replay` and the run engine on real Redis containers (the tests start them;
//! without a Docker engine and the image they fail, they never skip).

use std::path::{Path, PathBuf};
use std::process::Command;

use locklab_cluster::remaining_resources;
use locklab_harness::run::{checker, Run, RunOptions};
use locklab_model::model::Action;
use locklab_model::scenario::{Property, Scenario};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_locklab");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scenario(name: &str) -> Scenario {
    Scenario::load(repo().join("scenarios").join(format!("{name}.toml"))).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("locklab-replay-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `locklab replay ARGS...` in the repository, which must exit 0; its stdout.
fn replay_ok(args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(BIN)
        .current_dir(repo())
        .arg("replay")
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn assert_no_leftovers(cluster: &str) {
    let (containers, networks) = remaining_resources(cluster).unwrap();
    assert!(
        containers.is_empty(),
        "{cluster}: containers left: {containers:?}"
    );
    assert!(
        networks.is_empty(),
        "{cluster}: networks left: {networks:?}"
    );
}

#[test]
fn lua_release_pause_reproduces_on_real_redis() {
    let dir = temp_dir("pause");
    let json = dir.join("out.json");
    let stdout = replay_ok(&[
        "scenarios/lua-release-pause.toml".as_ref(),
        "--reports".as_ref(),
        dir.as_os_str(),
        "--json".as_ref(),
        json.as_os_str(),
    ]);
    assert!(stdout.contains("FAULT stop-the-world pause"), "{stdout}");
    for property in ["mutual_exclusion", "resource_safety"] {
        let path = dir
            .join("replays")
            .join(format!("lua-release-pause.{property}.json"));
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(r["scenario"], "lua-release-pause");
        assert_eq!(r["property"], property);
        assert_eq!(r["reproduced"], true, "{r:#}");
        assert_eq!(r["model_violations"], r["real_violations"]);
        assert!(r["real_violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == property));
        assert_eq!(r["tick_ms"], 100);
        let timeline = r["timeline"].as_array().unwrap();
        // The pause outlasts the 500 ms lease in real time.
        assert!(timeline.last().unwrap()["ms"].as_f64().unwrap() >= 500.0);
        assert!(timeline.iter().any(|e| e["event"]
            .as_str()
            .unwrap()
            .starts_with("SET lock t1 NX PX 500")));
        assert_no_leftovers(r["cluster"].as_str().unwrap());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn replay_of_a_bad_target_exits_2_naming_it() {
    let out = Command::new(BIN)
        .current_dir(repo())
        .args(["replay", "no-such-scenario"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-scenario"));
    let dir = temp_dir("bad-trace");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{ \"scenario\": 1 }").unwrap();
    let out = Command::new(BIN)
        .args(["replay"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.json"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The engine driven by hand: a crash leaves a lock without expiry (naive SETNX), the
/// checker sees the orphan, and the containers are gone after `finish`.
#[test]
fn a_crash_after_setnx_orphans_the_lock_for_real() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = scenario("naive-setnx-crash");
    let (history, cluster) = rt.block_on(async {
        let mut run = Run::start(&s, RunOptions::of(&s)).await.unwrap();
        let cluster = run.cluster_id();
        for a in [Action::Acquire(0), Action::Deliver(0, 0), Action::Crash(0)] {
            run.step(a).await.unwrap();
        }
        let (history, _) = run.finish().await.unwrap();
        (history, cluster)
    });
    let verdicts = checker::check(&history);
    assert_eq!(
        verdicts
            .violations
            .iter()
            .map(|v| v.property)
            .collect::<Vec<_>>(),
        vec![Property::NoOrphanedLock]
    );
    assert_no_leftovers(&cluster);
}

/// A cut link: the request gets no answer and the acquire fails, but the request was
/// already written to the socket: after the heal it runs on Redis (TCP delivers it) and
/// takes the lock for nobody, so the client's next acquire is refused.
#[test]
fn a_partitioned_link_gives_no_answer_and_delivers_the_request_after_the_heal() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = scenario("lua-release-pause");
    let (history, cluster) = rt.block_on(async {
        let mut run = Run::start(&s, RunOptions::of(&s)).await.unwrap();
        let cluster = run.cluster_id();
        for a in [
            Action::Partition(0, 0),
            Action::Acquire(0),
            Action::Timeout(0, 0),
            Action::Heal(0, 0),
            // The request given up on arrives late.
            Action::DeliverLate(0, 0),
            Action::Acquire(0),
            Action::Deliver(0, 0),
            // The reply travels on its own leg.
            Action::Receive(0, 0),
        ] {
            run.step(a).await.unwrap();
        }
        let (history, _) = run.finish().await.unwrap();
        (history, cluster)
    });
    use locklab_harness::run::history::Event;
    let commands: Vec<(&str, Option<&str>)> = history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Command { command, reply, .. } => Some((command.as_str(), reply.as_deref())),
            _ => None,
        })
        .collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
    // The first acquire's SET ran after the heal and took the lock.
    assert!(
        commands[0].0.starts_with("SET lock t1 NX") && commands[0].1 == Some("OK"),
        "{commands:?}"
    );
    // The second found it taken.
    assert!(
        commands[1].0.starts_with("SET lock t2 NX") && commands[1].1 != Some("OK"),
        "{commands:?}"
    );
    let failed = history
        .entries
        .iter()
        .filter(|e| matches!(e.event, Event::AcquireFailed { client: 0, .. }))
        .count();
    assert_eq!(failed, 2, "{:?}", history.entries);
    assert!(!history
        .entries
        .iter()
        .any(|e| matches!(e.event, Event::Acquired { client: 0, .. })));
    assert_no_leftovers(&cluster);
}

/// A panic in the middle of a run removes its containers and network.
#[test]
fn a_panicking_run_leaves_no_container() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = scenario("lua-release-failover");
    let (tx, rx) = std::sync::mpsc::channel();
    let joined = rt.block_on(async move {
        tokio::spawn(async move {
            let mut run = Run::start(&s, RunOptions::of(&s)).await.unwrap();
            tx.send(run.cluster_id()).unwrap();
            run.step(Action::Acquire(0)).await.unwrap();
            run.step(Action::Deliver(0, 0)).await.unwrap();
            panic!("a failure in the middle of a run");
        })
        .await
    });
    assert!(joined.unwrap_err().is_panic());
    let cluster = rx.recv().unwrap();
    assert_no_leftovers(&cluster);
}

/// The failover pitfall with real Redis Sentinel (`[topology] sentinels = 3`): the
/// replay kills the master, the sentinels promote the replica that missed the lock
/// key, and the second client takes the lock: the counterexample reproduces.
#[test]
fn a_failover_reproduces_with_real_sentinel() {
    let dir = temp_dir("sentinel");
    let text = std::fs::read_to_string(repo().join("scenarios/lua-release-failover.toml"))
        .unwrap()
        .replace("replicas = 1\n", "replicas = 1\nsentinels = 3\n");
    assert!(text.contains("sentinels = 3"));
    let file = dir.join("lua-release-failover.toml");
    std::fs::write(&file, text).unwrap();
    let stdout = replay_ok(&[file.as_os_str(), "--reports".as_ref(), dir.as_os_str()]);
    assert!(
        stdout.contains("Sentinel (3 sentinels) promoted node2"),
        "{stdout}"
    );
    let path = dir
        .join("replays")
        .join("lua-release-failover.mutual_exclusion.json");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(r["reproduced"], true, "{r:#}");
    assert_no_leftovers(r["cluster"].as_str().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}
