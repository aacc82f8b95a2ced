//! `locklab chaos` end to end: real containers (Docker and the Redis image are needed;
//! without them these tests fail with the message that says what to do, they never
//! skip), the exit status contract, and the reproduction line of a violation.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use locklab_harness::generator;
use locklab_model::model::LockModel;
use locklab_model::scenario::{Property, Scenario};
use serde_json::Value;

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
    // The slow-holder scenario, but claiming that its properties hold.
    let original = fs::read_to_string(scenario_path("lua-release-slow-holder")).unwrap();
    let claim = original.replace("= \"violated\"", "= \"holds\"").replace(
        "name = \"lua-release-slow-holder\"",
        "name = \"slow-holder-claimed-safe\"",
    );
    let dir = temp_dir("violation");
    let path = dir.join("slow-holder-claimed-safe.toml");
    fs::write(&path, claim).unwrap();
    // The generator is pure: find a seed whose model walk breaks mutual exclusion.
    let model = LockModel::new(&Scenario::load(&path).unwrap());
    let seed = (0..500u64)
        .find(|&s| {
            generator::generate(&model, s)
                .model_violations
                .contains(&Property::MutualExclusion)
        })
        .expect("some schedule lets the slow holder's lease run out");
    let json = dir.join("chaos.json");
    let seed_arg = seed.to_string();
    let out = chaos(&[
        path.to_str().unwrap(),
        "--seed",
        &seed_arg,
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = format!(
        "reproduce with: locklab chaos {} --seed {seed} --runs 1",
        path.display()
    );
    assert!(stdout.contains(&line), "no `{line}` in {}", show(&out));
    assert!(stdout.contains("VIOLATION"), "{}", show(&out));
    let report: Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let run = &report["runs"][0];
    assert_eq!(run["unexpected"], true, "{run}");
    let real: Vec<&str> = run["real_violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["property"].as_str().unwrap())
        .collect();
    assert!(real.contains(&"mutual_exclusion"), "{run}");
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
