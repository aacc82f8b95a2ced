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

/// A master that restarts is a new Redis process: the request its client had not yet
/// sent to it is lost with the connection (the model's `Flight::LOST`), and only the
/// client's timeout answers it. The run engine never sends it; the other two masters
/// still give the client its majority.
#[test]
fn a_request_on_its_way_to_a_restarted_master_is_never_sent() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = scenario("redlock-restart");
    let (history, cluster) = rt.block_on(async {
        let mut run = Run::start(&s, RunOptions::of(&s)).await.unwrap();
        let cluster = run.cluster_id();
        for a in [
            Action::Acquire(0),
            Action::Restart(0),
            Action::Timeout(0, 0),
            Action::Deliver(0, 1),
            Action::Receive(0, 1),
            Action::Deliver(0, 2),
            Action::Receive(0, 2),
        ] {
            run.step(a).await.unwrap();
        }
        // The model offers no delivery of the lost request, and nor does the engine.
        assert!(run.step(Action::Deliver(0, 0)).await.is_err());
        let (history, _) = run.finish().await.unwrap();
        (history, cluster)
    });
    use locklab_harness::run::history::Event;
    let nodes: Vec<(usize, &str)> = history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Command { node, command, .. } => Some((*node, command.as_str())),
            _ => None,
        })
        .collect();
    assert!(nodes.iter().all(|&(n, _)| n != 0), "{nodes:?}");
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    assert!(history
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

/// lua-release with `WAIT 1`, one replica and a one-tick WAIT timeout: `clients`
/// clients, a `ttl`-tick lease, `tick_ms` ticks.
fn blocking_wait(clients: u32, ttl: u32, tick_ms: u64) -> String {
    format!(
        r#"name = "wait-lease"
design = "lua-release"
summary = "WAIT 1 with a one-tick timeout: a replica that acknowledges just before the timeout delays the grant by a tick"
wait_replicas = 1

[topology]
masters = 1
replicas = 1

[clients]
count = {clients}

[timing]
ttl = {ttl}
work = 1
max_step_delay = 1
wait_timeout = 1
tick_ms = {tick_ms}

[expect]
mutual_exclusion = "violated"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "violated"
"#
    )
}

/// A WAIT that blocks on real Redis answers where the model's does. Sent while the
/// replica is off the network, it blocks; the run engine sends it with the timeout that
/// ends at the start of the tick at which the model's timeout answers it (the tick
/// after the last of its `wait_timeout` ticks). A replica that catches up in that last
/// tick is acknowledged in time (1); one that catches up a tick later is not: the WAIT
/// answered 0 at the tick, within a few milliseconds of its start.
#[test]
fn a_blocked_wait_answers_on_real_redis_where_the_model_does() {
    use locklab_harness::run::history::Event;
    use locklab_model::model::LockModel;
    let tick_ms = 500;
    let s = Scenario::parse(&blocking_wait(1, 7, tick_ms), "wait-lease.toml").unwrap();
    let model = LockModel::new(&s);
    use Action::*;
    let sent = [Acquire(0), Deliver(0, 0), Receive(0, 0), Deliver(0, 0)];
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (rest, answer_at, reply) in [
        (&[Tick, Replicate(1), Receive(0, 0)][..], 6, "(integer) 1"),
        (
            &[Tick, Tick, Replicate(1), Receive(0, 0)][..],
            6,
            "(integer) 0",
        ),
    ] {
        let actions = [&sent[..], rest].concat();
        // The model: the WAIT blocks at its delivery and is answered at `answer_at`.
        let trace = locklab_model::trace::build(&model, Property::MutualExclusion, &actions);
        assert_eq!(trace.steps.len(), actions.len(), "{actions:?}");
        assert!(trace.steps[3].blocks);
        let answered = &trace.steps[answer_at - 1].waits_answered;
        assert_eq!(answered.len(), 1, "{actions:?}");
        assert_eq!(answered[0].reply, reply);

        let (history, timeline, cluster) = rt.block_on(async {
            let mut run = Run::start(&s, RunOptions::of(&s)).await.unwrap();
            let cluster = run.cluster_id();
            let mut at = Vec::new();
            for &a in &actions {
                run.step(a).await.unwrap();
                at.push(run.history().entries.len());
            }
            let (history, timeline) = run.finish().await.unwrap();
            (history, timeline, (cluster, at))
        });
        let (cluster, at) = cluster;
        // Redis answered the WAIT by the end of the step the model answers it at.
        let wait = history.entries[..at[answer_at - 1]]
            .iter()
            .rev()
            .find_map(|e| match &e.event {
                Event::Command { command, reply, .. } if command.starts_with("WAIT 1 ") => {
                    Some((command.clone(), reply.clone()))
                }
                _ => None,
            })
            .expect("the WAIT's answer is recorded");
        assert_eq!(wait.1.as_deref(), Some(reply), "{timeline:#?}");
        // Its timeout ended at the start of tick 2: from early in tick 0, a little less
        // than two ticks.
        let ms: u64 = wait.0["WAIT 1 ".len()..].parse().unwrap();
        assert!(
            (tick_ms..=2 * tick_ms).contains(&ms),
            "{}: {timeline:#?}",
            wait.0
        );
        if reply == "(integer) 0" {
            let tick2 = timeline
                .iter()
                .find(|e| e.event == "tick 2")
                .expect("tick 2")
                .ms;
            let answered = timeline
                .iter()
                .find(|e| e.event.contains("answers (its timeout ran out)"))
                .expect("the timeout's answer")
                .ms;
            assert!(
                (0.0..50.0).contains(&(answered - tick2)),
                "answered {:.1} ms after tick 2 began: {timeline:#?}",
                answered - tick2
            );
        }
        let granted = history
            .entries
            .iter()
            .any(|e| matches!(e.event, Event::Acquired { client: 0, .. }));
        assert_eq!(granted, reply == "(integer) 1", "{timeline:#?}");
        assert_no_leftovers(&cluster);
    }
}

/// The counterexample that needs a WAIT that blocks: lua-release with `WAIT 1`, one
/// replica and a 7-tick lease holds when WAIT answers at its delivery; with a one-tick
/// timeout the WAIT blocks until the replica catches up a tick later, the grant comes a
/// tick later, and the second client takes the expired key while the first still
/// works. On real Redis: the WAIT really blocks (the replica is off the network until
/// the model's catch-up) and answers 1 at the catch-up; both violations reproduce.
#[test]
fn a_counterexample_that_needs_a_blocked_wait_reproduces() {
    let dir = temp_dir("blocked-wait");
    let file = dir.join("wait-lease.toml");
    std::fs::write(&file, blocking_wait(2, 7, 400)).unwrap();
    let stdout = replay_ok(&[file.as_os_str(), "--reports".as_ref(), dir.as_os_str()]);
    assert!(
        stdout.contains("(blocks: fewer replicas acknowledged"),
        "{stdout}"
    );
    assert!(stdout.contains("answers (a replica caught up)"), "{stdout}");
    for property in ["mutual_exclusion", "resource_safety"] {
        let path = dir
            .join("replays")
            .join(format!("wait-lease.{property}.json"));
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(r["reproduced"], true, "{r:#}");
        assert_eq!(r["diverged"], serde_json::json!([]), "{r:#}");
        assert_no_leftovers(r["cluster"].as_str().unwrap());
    }
    let trace = dir.join("traces").join("wait-lease.mutual_exclusion.json");
    let text = std::fs::read_to_string(trace).unwrap();
    assert!(text.contains("\"blocks\": true"), "{text}");
    assert!(text.contains("\"waits_answered\""), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
