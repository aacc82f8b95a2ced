//! The CI gate outputs: `check --junit` read by a conforming XML parser, and the
//! example scenario a team gates its lock settings with.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use common::*;
use locklab_model::scenario::Property;

#[test]
fn junit_report_is_valid_xml_with_one_testcase_per_scenario_and_property() {
    let dir = temp_dir("junit");
    // `wrong` expects mutual exclusion to hold, but the model breaks it (a failure with
    // a counterexample); `lost` expects it broken where it holds (a failure without).
    let c = slow_holder("wrong");
    write(
        &dir,
        "wrong",
        &c.flipped(&slow_holder_body("wrong"), Property::MutualExclusion),
    );
    let crash = naive_crash("lost");
    assert!(!crash.violated.contains(&Property::MutualExclusion));
    write(
        &dir,
        "lost",
        &crash.flipped(&naive_crash_body("lost"), Property::MutualExclusion),
    );
    write(&dir, "crash", &naive_crash("crash").text);
    let out = locklab(
        &dir,
        &[
            "check",
            "wrong.toml",
            "lost.toml",
            "crash.toml",
            "--junit",
            "out/junit.xml",
        ],
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let xml = fs::read_to_string(dir.join("out/junit.xml")).unwrap();
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
    let root = parse_xml(&xml);
    assert_eq!(root.name, "testsuites");

    let suites = root.children("testsuite");
    let names: Vec<&str> = suites.iter().map(|s| s.attr("name")).collect();
    assert_eq!(names, ["wrong", "lost", "crash"]);
    let all: BTreeSet<String> = Property::ALL.iter().map(|p| p.to_string()).collect();
    let mut failures_total = 0;
    for suite in &suites {
        let cases = suite.children("testcase");
        assert_eq!(suite.attr("tests"), cases.len().to_string());
        let names: BTreeSet<String> = cases.iter().map(|c| c.attr("name").to_string()).collect();
        assert_eq!(names, all, "one testcase per property");
        for case in &cases {
            assert_eq!(
                case.attr("classname"),
                format!("locklab.{}", suite.attr("name"))
            );
        }
        let failures: usize = cases.iter().map(|c| c.children("failure").len()).sum();
        assert_eq!(suite.attr("failures"), failures.to_string());
        assert_eq!(suite.attr("errors"), "0");
        failures_total += failures;
        let props = suite.children("properties");
        assert_eq!(props.len(), 1);
        let design = props[0]
            .children("property")
            .into_iter()
            .find(|p| p.attr("name") == "design")
            .expect("a design property");
        assert!(!design.attr("value").is_empty());
    }
    assert_eq!(failures_total, 2);
    assert_eq!(root.attr("tests"), "12");
    assert_eq!(root.attr("failures"), "2");
    assert_eq!(root.attr("errors"), "0");

    // The violated-but-expected-to-hold failure carries the counterexample.
    let wrong = suites[0]
        .children("testcase")
        .into_iter()
        .find(|c| c.attr("name") == "mutual_exclusion")
        .unwrap();
    let failure = &wrong.children("failure")[0];
    assert_eq!(failure.attr("type"), "verdict-mismatch");
    assert!(
        failure
            .attr("message")
            .starts_with("expected holds, found violated in "),
        "{}",
        failure.attr("message")
    );
    let text = &failure.text;
    for expected in [
        "wrong violates mutual_exclusion in ",
        "client1 acquire",
        "NX PX 3 -> OK",
        "BROKEN: mutual_exclusion",
    ] {
        assert!(text.contains(expected), "{expected:?} not in\n{text}");
    }
    let trace = text
        .lines()
        .find_map(|l| l.strip_prefix("trace: "))
        .expect("the trace path");
    assert!(dir.join(trace).exists(), "{trace}");

    // The expected-violated-but-holds failure says that no counterexample exists.
    let lost = suites[1]
        .children("testcase")
        .into_iter()
        .find(|c| c.attr("name") == "mutual_exclusion")
        .unwrap();
    let failure = &lost.children("failure")[0];
    assert_eq!(
        failure.attr("message"),
        "expected violated, found holds (to tick 6)"
    );
    assert!(failure
        .text
        .contains("no counterexample to mutual_exclusion"));
    // Passing cases are empty elements.
    let passing = suites[2].children("testcase");
    assert!(passing.iter().all(|c| c.children.is_empty()));
}

/// The example a team copies: its scenario passes the gate it documents.
#[test]
fn the_example_ci_scenario_passes_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let example = root.join("examples/ci/my-lock.toml");
    let workflow = fs::read_to_string(root.join("examples/ci/github-workflow.yml")).unwrap();
    assert!(workflow.contains("locklab check ci/locks/"), "{workflow}");
    assert!(workflow.contains("--junit"), "{workflow}");
    let dir = temp_dir("example");
    let out = locklab(
        &dir,
        &["check", example.to_str().unwrap(), "--junit", "junit.xml"],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let junit = parse_xml(&fs::read_to_string(dir.join("junit.xml")).unwrap());
    assert_eq!(junit.attr("tests"), "4");
    assert_eq!(junit.attr("failures"), "0");
}

/// The sharded example: its matrix lists every shard of the split its command names,
/// and a gate job joins them with `locklab merge`.
#[test]
fn the_sharded_example_runs_every_shard_and_merges_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let workflow =
        fs::read_to_string(root.join("examples/ci/github-workflow-sharded.yml")).unwrap();
    let shards: usize = workflow
        .lines()
        .find_map(|l| l.trim().strip_prefix("SHARDS: "))
        .expect("SHARDS in env")
        .parse()
        .unwrap();
    let matrix = workflow
        .lines()
        .find_map(|l| l.trim().strip_prefix("shard: ["))
        .expect("a shard matrix");
    let listed: Vec<usize> = matrix
        .trim_end_matches(']')
        .split(',')
        .map(|k| k.trim().parse().unwrap())
        .collect();
    assert_eq!(listed, (1..=shards).collect::<Vec<_>>(), "{workflow}");
    assert!(
        workflow.contains("--shard ${{ matrix.shard }}/$SHARDS"),
        "{workflow}"
    );
    assert!(workflow.contains("locklab merge shards/shard-*.json shards/shard-*.xml"));
}
