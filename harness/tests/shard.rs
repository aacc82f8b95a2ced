//! `check --shard K/N` and `locklab merge`: the shards partition the scenarios, and the
//! merged JSON and JUnit files equal those of the unsharded run but for wall times.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use common::*;
use locklab_model::scenario::Property;
use serde_json::Value;

/// Scenario files quick to check: three shipped ones and two calibrated here, one of
/// which expects the wrong verdict (a mismatch, so that a failure with its narrated
/// counterexample travels through the merge).
fn suite(dir: &Path) -> Vec<String> {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut names = Vec::new();
    for name in [
        "lua-release-no-faults",
        "lua-release-slow-holder",
        "getset-timestamp-skew",
    ] {
        fs::copy(
            shipped.join(format!("{name}.toml")),
            dir.join(format!("{name}.toml")),
        )
        .unwrap();
        names.push(name.to_string());
    }
    let wrong = slow_holder("wrong");
    write(
        dir,
        "wrong",
        &wrong.flipped(&slow_holder_body("wrong"), Property::MutualExclusion),
    );
    write(dir, "crash", &naive_crash("crash").text);
    names.extend(["wrong".to_string(), "crash".to_string()]);
    names
}

/// The XML with every `time="..."` attribute blanked.
fn timeless_xml(xml: &str) -> String {
    let mut out = String::new();
    let mut rest = xml;
    while let Some(at) = rest.find(" time=\"") {
        out.push_str(&rest[..at]);
        out.push_str(" time=\"\"");
        let after = &rest[at + 7..];
        rest = &after[after.find('"').expect("closing quote") + 1..];
    }
    out.push_str(rest);
    out
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn names(report: &Value) -> Vec<String> {
    report["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn shards_partition_the_suite_and_merge_into_the_unsharded_outputs() {
    let dir = temp_dir("shard");
    let all_names: BTreeSet<String> = suite(&dir).into_iter().collect();
    let out = check(&dir, &[], "all.json", "all.xml");
    assert_eq!(code(&out), 1, "one mismatch: {}", stderr(&out));
    let mut whole = read_json(&dir.join("all.json"));
    timeless_json(&mut whole);
    let whole_xml = timeless_xml(&fs::read_to_string(dir.join("all.xml")).unwrap());
    assert_eq!(whole["summary"]["mismatched"], 1);

    for count in [2, 3, 5, 7] {
        let mut taken = BTreeSet::new();
        let mut files = Vec::new();
        for index in 1..=count {
            let (json, xml) = (
                format!("{index}of{count}.json"),
                format!("{index}of{count}.xml"),
            );
            check_shard(&dir, index, count, &json, &xml);
            let shard = read_json(&dir.join(&json));
            assert_eq!(shard["shard"]["index"], index);
            assert_eq!(shard["shard"]["scenarios"], all_names.len());
            for name in names(&shard) {
                assert!(
                    taken.insert(name.clone()),
                    "{name} in two shards of {count}"
                );
            }
            // Reversed, and JUnit before JSON: the order of the files does not matter.
            files.insert(0, json);
            files.insert(0, xml);
        }
        assert_eq!(taken, all_names, "the {count} shards cover the suite");

        let mut args = vec!["merge", "--json", "merged.json", "--junit", "merged.xml"];
        args.extend(files.iter().map(String::as_str));
        let out = locklab(&dir, &args);
        assert_eq!(
            code(&out),
            1,
            "the merged run has the mismatch: {}",
            stderr(&out)
        );
        let mut merged = read_json(&dir.join("merged.json"));
        timeless_json(&mut merged);
        assert_eq!(merged, whole, "merged JSON of {count} shards");
        let merged_xml = fs::read_to_string(dir.join("merged.xml")).unwrap();
        assert_eq!(
            timeless_xml(&merged_xml),
            whole_xml,
            "merged JUnit of {count} shards"
        );
        parse_xml(&merged_xml);
        // One summary line, with the counts of the joined verdicts.
        let verdicts: Vec<&str> = merged["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["properties"].as_object().unwrap().values())
            .map(|p| p["verdict"].as_str().unwrap())
            .collect();
        let n = |v: &str| verdicts.iter().filter(|&&x| x == v).count();
        assert!(n("violated") > 0 && n("holds") > 0, "{verdicts:?}");
        let summary = format!(
            "merged {count} shards: {} scenarios, {} verdicts: {} violated, {} holding; {} \
             match, 1 mismatch, 0 scenario errors; exit status 1",
            all_names.len(),
            verdicts.len(),
            n("violated"),
            n("holds"),
            verdicts.len() - 1
        );
        assert_eq!(stdout(&out).trim_end(), summary);
        // JUnit files only: the testcase totals.
        let xmls: Vec<&str> = files
            .iter()
            .filter(|f| f.ends_with(".xml"))
            .map(String::as_str)
            .collect();
        let mut args = vec!["merge"];
        args.extend(&xmls);
        let out = locklab(&dir, &args);
        assert_eq!(
            stdout(&out).trim_end(),
            format!(
                "merged {count} JUnit shards: {} testcases, 1 failed, 0 in error; exit status 1",
                verdicts.len()
            )
        );

        // A missing shard is refused, naming it.
        let mut args = vec!["merge", "--json", "partial.json"];
        args.extend(files.iter().skip(2).map(String::as_str));
        let out = locklab(&dir, &args);
        assert_eq!(code(&out), 2);
        assert!(
            stderr(&out).contains(&format!("shard {count}/{count} missing")),
            "{}",
            stderr(&out)
        );
        assert!(!dir.join("partial.json").exists());
    }
}

/// `locklab check . --json JSON --junit XML` and `extra`, traces to `out/`.
fn check(dir: &Path, extra: &[&str], json: &str, xml: &str) -> std::process::Output {
    let mut args = vec![
        "check",
        ".",
        "--reports",
        "out",
        "--threads",
        "1",
        "--json",
        json,
        "--junit",
        xml,
    ];
    args.extend_from_slice(extra);
    locklab(dir, &args)
}

fn check_shard(dir: &Path, index: usize, count: usize, json: &str, xml: &str) {
    let spec = format!("{index}/{count}");
    let out = check(dir, &["--shard", &spec], json, xml);
    assert!(
        stderr(&out).contains(&format!("shard {spec}: ")),
        "{}",
        stderr(&out)
    );
    let report = read_json(&dir.join(json));
    // The shard fails exactly when it holds the scenario with the wrong expectation.
    let holds_wrong = names(&report).iter().any(|n| n == "wrong");
    assert_eq!(
        code(&out),
        i32::from(holds_wrong),
        "{spec}: {}",
        stderr(&out)
    );
}

#[test]
fn bad_shard_specs_and_unsharded_files_are_refused() {
    let dir = temp_dir("shard-bad");
    suite(&dir);
    for spec in ["0/2", "3/2", "1/0", "x"] {
        let out = locklab(&dir, &["check", ".", "--shard", spec]);
        assert_eq!(code(&out), 2, "{spec}");
        assert!(stderr(&out).contains("K/N"), "{spec}: {}", stderr(&out));
    }
    let out = locklab(
        &dir,
        &[
            "check",
            "crash.toml",
            "--threads",
            "1",
            "--json",
            "plain.json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = locklab(&dir, &["merge", "plain.json", "--json", "m.json"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("no `shard`"), "{}", stderr(&out));
}
