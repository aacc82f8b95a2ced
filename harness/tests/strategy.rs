//! `locklab check --strategy random` and the fingerprint collision bound, on small
//! scenario files written here.

mod common;

use common::*;
use locklab_model::scenario::{Expectation, Property};

/// Random walks report the counterexamples they find (traces written) and "not found in
/// N walks" for the rest, never "holds"; an expected "holds" is then unproven: exit 1,
/// or 0 with --allow-unproven.
#[test]
fn random_walks_never_claim_holds() {
    let dir = temp_dir("random");
    let c = slow_holder("slow");
    write(&dir, "slow", &c.text);
    let args = [
        "slow.toml",
        "--strategy",
        "random",
        "--walks",
        "200",
        "--seed",
        "3",
    ];
    let (out, json) = check_json(&dir, &args);
    let s = &json["scenarios"][0];
    assert_eq!(s["strategy"], "random");
    assert_eq!(s["walks"], 200);
    assert_eq!(s["seed"], 3);
    let mut unproven = 0;
    for p in Property::ALL {
        let v = property(&json, 0, p.as_str());
        assert_eq!(v["strategy"], "random");
        if c.violated.contains(&p) {
            assert_eq!(v["verdict"], "violated", "{p}: 200 walks find it");
            let trace = v["trace"].as_str().expect("a trace path");
            assert!(dir.join(trace).exists(), "{trace}");
        } else {
            assert_eq!(v["verdict"], "not_found", "{p}");
            assert_eq!(v["match"], false, "{p}");
            unproven += 1;
        }
    }
    assert!(unproven > 0);
    assert_eq!(json["summary"]["unproven"], unproven);
    assert_eq!(json["exit_code"], 1);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let table = stdout(&out);
    assert!(table.contains("UNPROVEN"), "{table}");
    assert!(table.contains("not found in 200 walks"), "{table}");
    for row in table
        .lines()
        .filter(|l| l.starts_with("ok") || l.starts_with("UNPROVEN"))
    {
        let found = row.split_whitespace().nth(4);
        assert_ne!(found, Some("holds"), "{table}");
    }

    let mut allowed = vec!["check"];
    allowed.extend_from_slice(&args);
    allowed.push("--allow-unproven");
    let out = locklab(&dir, &allowed);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}

/// A documented counterexample the walks do not reproduce is a mismatch, whatever
/// --allow-unproven says: here "violated" is expected of properties that hold, so no
/// walk can find it.
#[test]
fn walks_that_miss_an_expected_violation_mismatch() {
    let dir = temp_dir("random-miss");
    let c = slow_holder("miss");
    // Expect every property violated: the ones that hold cannot be found by any walk.
    let text = with_expect(&slow_holder_body("miss"), |_| Expectation::Violated);
    write(&dir, "miss", &text);
    assert!(c.violated.len() < Property::ALL.len());
    let (out, json) = check_json(
        &dir,
        &[
            "miss.toml",
            "--strategy",
            "random",
            "--walks",
            "50",
            "--allow-unproven",
        ],
    );
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    let table = stdout(&out);
    assert!(table.contains("the walks did not reproduce it"), "{table}");
    assert!(!table.contains("no counterexample exists"), "{table}");
    assert!(json["summary"]["mismatched"].as_u64().unwrap() > 0);
    assert_eq!(json["summary"]["unproven"], 0);
}

#[test]
fn walk_options_need_the_random_strategy() {
    let dir = temp_dir("walks-alone");
    write(&dir, "slow", &slow_holder("slow").text);
    let out = locklab(&dir, &["check", "slow.toml", "--walks", "10"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("--strategy random"),
        "{}",
        stderr(&out)
    );
}

/// The exhaustive search names its strategy and bounds the chance of a fingerprint
/// collision, per scenario and for the run.
#[test]
fn exhaustive_reports_the_collision_bound() {
    let dir = temp_dir("collision");
    write(&dir, "slow", &slow_holder("slow").text);
    let (out, json) = check_json(&dir, &["slow.toml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let s = &json["scenarios"][0];
    assert_eq!(s["strategy"], "exhaustive");
    let n = s["unique_states"].as_f64().unwrap();
    let p = s["fingerprint_collision_probability"].as_f64().unwrap();
    assert!(n > 0.0 && p > 0.0);
    assert!(
        (p - n * n / 2f64.powi(65)).abs() <= p * 1e-9,
        "{p} for {n} states"
    );
    assert_eq!(json["summary"]["fingerprint_collision_probability"], p);
    assert_eq!(
        property(&json, 0, "mutual_exclusion")["strategy"],
        "exhaustive"
    );
    assert!(
        stdout(&out).contains("; fingerprint collision probability <= "),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("fingerprint collision probability"));
}
