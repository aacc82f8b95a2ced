//! `locklab chaos` end to end: real containers (Docker and the Redis image are needed;
//! without them these tests fail with the message that says what to do, they never
//! skip), the exit status contract, and the reproduction line of a violation.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use locklab_harness::generator::{self, Steering};
use locklab_model::model::{Action, LockModel};
use locklab_model::scenario::{Property, Scenario};
use serde_json::Value;
use stateright::Model;

const BIN: &str = env!("CARGO_BIN_EXE_locklab");

fn scenario_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(format!("{name}.toml"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("locklab-chaos-test-{}-{name}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn require_environment() {
    if let Err(e) = locklab_cluster::preflight() {
        panic!("cannot run the chaos tests: {e}");
    }
}

fn chaos(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("chaos")
        .args(args)
        .output()
        .expect("the locklab binary runs")
}

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn assert_no_leftovers(report: &Value) {
    for run in report["runs"].as_array().unwrap() {
        let cluster = run["cluster"].as_str().unwrap();
        let (containers, networks) = locklab_cluster::remaining_resources(cluster).unwrap();
        assert!(
            containers.is_empty() && networks.is_empty(),
            "left behind by {cluster}: {containers:?} {networks:?}"
        );
    }
}

/// `locklab chaos PATH --seed SEED --runs 1 --json DIR/chaos.json`: its output and report.
fn one_run(path: &Path, seed: u64, dir: &Path) -> (Output, Value) {
    one_run_with(path, seed, dir, &[])
}

/// [`one_run`] with further arguments (its report `DIR/chaos<ARGS>.json`).
fn one_run_with(path: &Path, seed: u64, dir: &Path, extra: &[&str]) -> (Output, Value) {
    let json = dir.join(format!("chaos{}.json", extra.concat()));
    let seed = seed.to_string();
    let mut args = vec![
        path.to_str().unwrap(),
        "--seed",
        &seed,
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = chaos(&args);
    let report = fs::read_to_string(&json)
        .map(|text| serde_json::from_str(&text).unwrap())
        .unwrap_or(Value::Null);
    (out, report)
}

/// The properties a run's real history broke.
fn real_violations(run: &Value) -> Vec<&str> {
    run["real_violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["property"].as_str().unwrap())
        .collect()
}

#[test]
fn a_scenario_whose_properties_hold_passes_chaos_and_leaves_nothing_behind() {
    require_environment();
    let dir = temp_dir("holds");
    let json = dir.join("chaos.json");
    let scenario = scenario_path("reentrant-reentry");
    let out = chaos(&[
        scenario.to_str().unwrap(),
        "--seed",
        "7",
        "--runs",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let report: Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(run["seed"], 7 + i as u64);
        assert_eq!(run["unexpected"], false, "{run}");
        assert_eq!(run["inconclusive"], false, "{run}");
        // The whole schedule was carried out on real Redis, and it broke nothing, as
        // the model's walk of it.
        assert!(run["stopped"].is_null(), "{run}");
        assert_eq!(run["steps"], run["scheduled_steps"], "{run}");
        assert_eq!(run["agrees_with_model_walk"], true, "{run}");
        let commands = run["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| {
                e["event"]
                    .as_str()
                    .unwrap()
                    .contains("EVALSHA reentrant-lock")
            })
            .count();
        assert!(commands > 0, "no reentrant lock command was sent: {run}");
    }
    assert!(
        report["critical_sections"].as_u64().unwrap() > 0,
        "{report}"
    );
    assert_eq!(report["exit_code"], 0);
    assert_no_leftovers(&report);
    fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_violation_of_a_property_expected_to_hold_fails_with_the_command_that_reproduces_it() {
    require_environment();
    // The slow-holder scenario, but claiming that its properties hold (so without the
    // cause of a violation it no longer expects).
    let original: String = fs::read_to_string(scenario_path("lua-release-slow-holder"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("cause"))
        .map(|l| format!("{l}\n"))
        .collect();
    let claim = original.replace("= \"violated\"", "= \"holds\"").replace(
        "name = \"lua-release-slow-holder\"",
        "name = \"slow-holder-claimed-safe\"",
    );
    let dir = temp_dir("violation");
    let path = dir.join("slow-holder-claimed-safe.toml");
    fs::write(&path, claim).unwrap();
    // The generator is pure: find a seed whose schedule (what `chaos` runs) breaks
    // mutual exclusion in the model.
    let model = LockModel::new(&Scenario::load(&path).unwrap());
    let seed = (0..500u64)
        .find(|&s| {
            generator::schedule(&model, s, Steering::DEFAULT)
                .model_violations
                .contains(&Property::MutualExclusion)
        })
        .expect("some schedule lets the slow holder's lease run out");
    let (out, report) = one_run(&path, seed, &dir);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = format!(
        "reproduce with: locklab chaos {} --seed {seed} --runs 1",
        path.display()
    );
    assert!(stdout.contains(&line), "no `{line}` in {}", show(&out));
    assert!(stdout.contains("VIOLATION"), "{}", show(&out));
    let run = &report["runs"][0];
    assert_eq!(run["unexpected"], true, "{run}");
    assert!(real_violations(run).contains(&"mutual_exclusion"), "{run}");
    assert_no_leftovers(&report);
    fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_run_that_breaks_an_expected_violation_is_not_vacuous_though_nobody_finished() {
    require_environment();
    // A paused holder's lease runs out and a second client gets in; a horizon ends the
    // run before either writes (the scenario, checked for all time, is given one here).
    // Such a run exercised the lock: exit 0, not vacuous.
    let dir = temp_dir("unfinished");
    let text = fs::read_to_string(scenario_path("fencing-watchdog-pause")).unwrap();
    assert!(!text.contains("horizon"), "the scenario sets no horizon");
    let path = dir.join("fencing-watchdog-pause.toml");
    fs::write(
        &path,
        text.replace("[timing]\n", "[timing]\nhorizon = 12\n"),
    )
    .unwrap();
    let model = LockModel::new(&Scenario::load(&path).unwrap());
    assert_eq!(model.scenario.timing.horizon, Some(12));
    let seed = (1000..1500u64)
        .find(|&s| {
            let schedule = generator::schedule(&model, s, Steering::DEFAULT);
            schedule
                .model_violations
                .contains(&Property::MutualExclusion)
                && !schedule
                    .actions
                    .iter()
                    .any(|a| matches!(a, Action::Write(_)))
        })
        .expect("some schedule breaks mutual exclusion before any write");
    let (out, report) = one_run(&path, seed, &dir);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(report["critical_sections"], 0, "{report}");
    assert_eq!(report["vacuous"], false, "{report}");
    let run = &report["runs"][0];
    assert!(real_violations(run).contains(&"mutual_exclusion"), "{run}");
    assert_no_leftovers(&report);
    fs::remove_dir_all(&dir).ok();
}

#[test]
fn after_a_split_brain_a_request_left_on_the_old_masters_connection_times_out_as_in_the_model() {
    require_environment();
    // A client learns the new master while its request to the old one (still up) is on
    // its way: the model says that request never runs and times out. Find such a
    // schedule with the pure generator, run it, and the real run goes as its model walk.
    let path = scenario_path("lua-release-split-brain-wait");
    let model = LockModel::new(&Scenario::load(&path).unwrap());
    let left_behind = |s: &locklab_model::state::State, a: &Action| {
        let Action::Timeout(c, m) = *a else {
            return false;
        };
        let client = &s.clients[usize::from(c)];
        let flight = client.core.flights[usize::from(m)].as_ref();
        s.split.as_ref().is_some_and(|split| {
            split.moved & (1 << c) != 0
                && flight.is_some_and(|f| f.node == split.old && f.held.is_none())
        })
    };
    let seed = (1000..3000u64)
        .find(|&seed| {
            let schedule = generator::schedule(&model, seed, Steering::DEFAULT);
            let mut state = model.init_states().remove(0);
            // ...and in which a client completes its critical section (a run without one
            // is vacuous).
            let writes = schedule
                .actions
                .iter()
                .any(|a| matches!(a, Action::Write(_)));
            writes
                && schedule.actions.iter().any(|a| {
                    let hit = left_behind(&state, a);
                    state = model.next_state(&state, *a).unwrap();
                    hit
                })
        })
        .expect("some schedule leaves a request on the old master's connection");
    let dir = temp_dir("split-timeout");
    let (out, report) = one_run(&path, seed, &dir);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let run = &report["runs"][0];
    assert!(run["stopped"].is_null(), "seed {seed}: {run}");
    assert_eq!(run["agrees_with_model_walk"], true, "seed {seed}: {run}");
    let dropped = run["timeline"].as_array().unwrap().iter().any(|e| {
        e["event"]
            .as_str()
            .unwrap()
            .contains("dropped with the old connection")
    });
    assert!(dropped, "seed {seed}: {run}");
    assert_no_leftovers(&report);
    fs::remove_dir_all(&dir).ok();
}

#[test]
fn without_a_docker_engine_chaos_exits_2_and_says_what_is_missing() {
    let scenario = scenario_path("lua-release-no-faults");
    let out = Command::new(BIN)
        .args([
            "chaos",
            scenario.to_str().unwrap(),
            "--seed",
            "1",
            "--runs",
            "1",
        ])
        .env("DOCKER_HOST", "unix:///nonexistent/locklab/docker.sock")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(stderr.contains("docker"), "{}", show(&out));
}

#[test]
fn bad_arguments_exit_2() {
    let scenario = scenario_path("lua-release-no-faults");
    let out = chaos(&[scenario.to_str().unwrap(), "--seed", "1", "--runs", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let out = chaos(&["no-such-scenario", "--seed", "1", "--runs", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-scenario"));
}

#[test]
fn a_steered_run_carries_out_a_walk_that_breaks_and_real_redis_breaks_it_too() {
    require_environment();
    // A seed whose own walk breaks nothing: `chaos` draws further walks from it and
    // carries out the first that breaks what the scenario expects broken; `--blind`
    // carries out the seed's own.
    let path = scenario_path("lua-release-pause");
    let model = LockModel::new(&Scenario::load(&path).unwrap());
    let seed = (1000..1100u64)
        .find(|&s| {
            let own = generator::generate(&model, s);
            // ...and completes a critical section (a blind run without one is vacuous),
            own.model_violations.is_empty()
                && own.actions.iter().any(|a| matches!(a, Action::Write(_)))
                // while the steered walk breaks mutual exclusion.
                && generator::schedule(&model, s, Steering::DEFAULT)
                    .model_violations
                    .contains(&Property::MutualExclusion)
        })
        .expect("some seed's own walk breaks nothing");
    let steered = generator::schedule(&model, seed, Steering::DEFAULT);
    assert!(steered.draw > 0, "seed {seed}");
    let dir = temp_dir("steered");
    let (out, report) = one_run(&path, seed, &dir);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("schedules: steered"),
        "{}",
        show(&out)
    );
    assert_eq!(report["schedules"]["steering"], "steered", "{report}");
    let run = &report["runs"][0];
    assert_eq!(run["walk"], steered.draw, "{run}");
    assert_eq!(
        run["walk_seed"],
        generator::draw_seed(seed, steered.draw),
        "{run}"
    );
    let model_broke: Vec<&str> = run["model_violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(model_broke.contains(&"mutual_exclusion"), "{run}");
    // Not judged from the model: the real history broke it.
    assert!(real_violations(run).contains(&"mutual_exclusion"), "{run}");
    assert_eq!(run["agrees_with_model_walk"], true, "{run}");
    assert_eq!(report["runs_breaking_expected_violations"], 1, "{report}");
    assert_no_leftovers(&report);

    let (out, report) = one_run_with(&path, seed, &dir, &["--blind"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(report["schedules"]["steering"], "blind", "{report}");
    let run = &report["runs"][0];
    assert_eq!(run["walk"], 0, "{run}");
    assert_eq!(
        run["model_violations"].as_array().unwrap().len(),
        0,
        "{run}"
    );
    assert!(
        run["reproduce"]
            .as_str()
            .unwrap()
            .ends_with("--runs 1 --blind"),
        "{run}"
    );
    assert_no_leftovers(&report);
    fs::remove_dir_all(&dir).ok();
}
