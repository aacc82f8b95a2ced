//! `locklab merge`: joins the `--json` and `--junit` files of the shards of one
//! `check --shard K/N` split into the files the unsharded run writes (the same
//! scenarios in the same order, the same summary; only wall times may differ in their
//! rounding). Every shard of the split must be there exactly once: a missing, doubled or
//! foreign shard is bad input (exit 2), so a CI job that lost a matrix leg cannot pass.
//! The exit status is the joined run's: the largest of the shards' `exit_code`s, or,
//! with JUnit files only, 1 when a testcase failed or errored.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cli::MergeArgs;
use crate::files::write_file;
use crate::junit;
use crate::Failure;

/// What every shard file says about its place in the split.
struct Place {
    file: PathBuf,
    index: usize,
    count: usize,
    total: usize,
    positions: Vec<usize>,
}

fn bad(file: &Path, message: impl std::fmt::Display) -> Failure {
    Failure::BadInput(format!("{}: {message}", file.display()))
}

/// Orders the items of the shards by their positions in the whole run, after checking
/// that the shards are those of one split, each once, and cover it.
fn join<T>(kind: &str, shards: Vec<(Place, Vec<T>)>) -> Result<Vec<T>, Failure> {
    let Some((first, _)) = shards.first() else {
        return Ok(Vec::new());
    };
    let (count, total, first) = (first.count, first.total, first.file.clone());
    let mut slots: Vec<Option<T>> = (0..total).map(|_| None).collect();
    let mut seen = vec![None::<PathBuf>; count];
    for (place, items) in shards {
        if place.count != count || place.total != total {
            return Err(bad(
                &place.file,
                format!(
                    "shard {}/{} of {} scenarios, but {} is a shard of {count} of {total}: \
                     not the same split",
                    place.index,
                    place.count,
                    place.total,
                    first.display()
                ),
            ));
        }
        if let Some(other) = &seen[place.index - 1] {
            return Err(bad(
                &place.file,
                format!(
                    "shard {}/{count} is also {}: each {kind} shard once",
                    place.index,
                    other.display()
                ),
            ));
        }
        seen[place.index - 1] = Some(place.file.clone());
        if place.positions.len() != items.len() {
            return Err(bad(
                &place.file,
                format!(
                    "lists {} positions for {} scenarios",
                    place.positions.len(),
                    items.len()
                ),
            ));
        }
        for (&p, item) in place.positions.iter().zip(items) {
            match slots.get_mut(p) {
                Some(slot @ None) => *slot = Some(item),
                _ => {
                    return Err(bad(
                        &place.file,
                        format!("position {p} is out of range or taken by another shard"),
                    ))
                }
            }
        }
    }
    let missing: Vec<String> = (1..=count)
        .filter(|k| seen[k - 1].is_none())
        .map(|k| format!("{k}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(Failure::BadInput(format!(
            "{kind} shard {} missing: merge needs every shard of the split",
            missing.join(", ")
        )));
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(p, s)| {
            s.ok_or_else(|| {
                Failure::BadInput(format!(
                    "no {kind} shard has the scenario at position {p} of {total}"
                ))
            })
        })
        .collect()
}

fn number(file: &Path, v: &Value, key: &str) -> Result<usize, Failure> {
    v.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| bad(file, format!("shard.{key}: expected a number")))
}

/// A shard's `--json` report: its place and its scenarios.
fn json_shard(file: &Path, text: &str) -> Result<(Place, Value), Failure> {
    let report: Value = serde_json::from_str(text).map_err(|e| bad(file, e))?;
    let shard = report.get("shard").ok_or_else(|| {
        bad(
            file,
            "no `shard`: not the --json of `locklab check --shard K/N`",
        )
    })?;
    let positions = shard
        .get("positions")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(file, "shard.positions: expected an array"))?
        .iter()
        .map(|p| {
            p.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| bad(file, "shard.positions: expected numbers"))
        })
        .collect::<Result<_, _>>()?;
    let place = Place {
        file: file.to_path_buf(),
        index: number(file, shard, "index")?,
        count: number(file, shard, "count")?,
        total: number(file, shard, "scenarios")?,
        positions,
    };
    if place.index == 0 || place.index > place.count {
        return Err(bad(file, "shard.index: expected 1 to shard.count"));
    }
    Ok((place, report))
}

/// The joined `--json` report and its exit code.
fn merge_json(shards: Vec<(Place, Value)>) -> Result<(Value, i32), Failure> {
    let mut exit_code = 0;
    let mut sums = [0u64; 6];
    const SUMMED: [&str; 6] = [
        "scenarios",
        "verdicts",
        "matched",
        "mismatched",
        "errors",
        "unproven",
    ];
    let mut template = None;
    let mut parts = Vec::new();
    for (place, mut report) in shards {
        let code = report["exit_code"]
            .as_i64()
            .and_then(|c| i32::try_from(c).ok())
            .ok_or_else(|| bad(&place.file, "exit_code: expected a number"))?;
        exit_code = exit_code.max(code);
        for (sum, key) in sums.iter_mut().zip(SUMMED) {
            *sum += report["summary"][key]
                .as_u64()
                .ok_or_else(|| bad(&place.file, format!("summary.{key}: expected a number")))?;
        }
        let scenarios = match report["scenarios"].take() {
            Value::Array(a) => a,
            _ => return Err(bad(&place.file, "scenarios: expected an array")),
        };
        template.get_or_insert(report);
        parts.push((place, scenarios));
    }
    let scenarios = join("JSON", parts)?;
    let mut report = template.unwrap_or_else(|| serde_json::json!({"summary": {}}));
    if let Some(o) = report.as_object_mut() {
        o.remove("shard");
    }
    report["exit_code"] = exit_code.into();
    for (sum, key) in sums.iter().zip(SUMMED) {
        report["summary"][key] = (*sum).into();
    }
    // Summed in the order of the whole run, as `check` sums it.
    report["summary"]["fingerprint_collision_probability"] = scenarios
        .iter()
        .filter_map(|s| s["fingerprint_collision_probability"].as_f64())
        .sum::<f64>()
        .min(1.0)
        .into();
    report["scenarios"] = Value::Array(scenarios);
    Ok((report, exit_code))
}

/// The attributes of the one start tag `tag` (as `junit` writes them: double quotes,
/// values escaped).
fn attributes(tag: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = tag;
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq].rsplit(' ').next().unwrap_or("");
        let after = &rest[eq + 2..];
        let Some(end) = after.find('"') else { break };
        out.push((name, &after[..end]));
        rest = &after[end + 1..];
    }
    out
}

/// Totals of a JUnit root.
#[derive(Default)]
struct Totals {
    tests: u64,
    failures: u64,
    errors: u64,
    time: f64,
}

/// A shard's `--junit` report: its place, its totals and its `<testsuite>` blocks.
fn junit_shard(file: &Path, text: &str) -> Result<(Place, Totals, Vec<String>), Failure> {
    let mut lines = text.lines();
    let root = lines
        .by_ref()
        .find(|l| l.starts_with("<testsuites"))
        .ok_or_else(|| bad(file, "no <testsuites>: not the --junit of `locklab check`"))?;
    let attrs = attributes(root);
    let get = |key: &str| {
        attrs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v).ok_or_else(|| {
            bad(
                file,
                format!("<testsuites> has no `{key}`: not the --junit of `locklab check --shard K/N`"),
            )
        })
    };
    let count = |key: &str| -> Result<u64, Failure> {
        get(key)?
            .parse()
            .map_err(|_| bad(file, format!("<testsuites {key}>: expected a number")))
    };
    let shard: crate::shard::Shard = get("shard")?
        .parse()
        .map_err(|e| bad(file, format!("<testsuites shard>: {e}")))?;
    let positions = match get("positions")? {
        "" => Vec::new(),
        list => list
            .split(',')
            .map(|p| p.parse())
            .collect::<Result<_, _>>()
            .map_err(|_| bad(file, "<testsuites positions>: expected numbers"))?,
    };
    let totals = Totals {
        tests: count("tests")?,
        failures: count("failures")?,
        errors: count("errors")?,
        time: get("time")?
            .parse()
            .map_err(|_| bad(file, "<testsuites time>: expected a number"))?,
    };
    let place = Place {
        file: file.to_path_buf(),
        index: shard.index,
        count: shard.count,
        total: usize::try_from(count("scenarios")?)
            .map_err(|_| bad(file, "<testsuites scenarios>: too large"))?,
        positions,
    };
    let mut suites: Vec<String> = Vec::new();
    let mut closed = false;
    for line in lines {
        if line == "</testsuites>" {
            closed = true;
            break;
        }
        if line.starts_with("  <testsuite ") {
            suites.push(String::new());
        }
        let suite = suites.last_mut().ok_or_else(|| {
            bad(
                file,
                format!("unexpected line before a <testsuite>: {line}"),
            )
        })?;
        suite.push_str(line);
        suite.push('\n');
    }
    if !closed {
        return Err(bad(file, "no </testsuites>: the file is cut short"));
    }
    Ok((place, totals, suites))
}

/// The joined `--junit` report and its totals.
fn merge_junit(shards: Vec<(Place, Totals, Vec<String>)>) -> Result<(String, Totals), Failure> {
    let totals = junit_totals(&shards);
    let parts = shards
        .into_iter()
        .map(|(place, _, suites)| (place, suites))
        .collect();
    let suites = join("JUnit", parts)?;
    let mut out = junit::header(
        totals.tests,
        totals.failures,
        totals.errors,
        totals.time,
        "",
    );
    for s in suites {
        out.push_str(&s);
    }
    out.push_str(junit::FOOTER);
    Ok((out, totals))
}

/// `locklab merge`: returns the exit status.
pub fn run(args: &MergeArgs) -> Result<i32, Failure> {
    let mut jsons = Vec::new();
    let mut junits = Vec::new();
    for file in &args.files {
        let text = fs::read_to_string(file).map_err(|e| Failure::io(file, "cannot read", e))?;
        match text.trim_start().chars().next() {
            Some('{') => jsons.push(json_shard(file, &text)?),
            Some('<') => junits.push(junit_shard(file, &text)?),
            _ => {
                return Err(bad(
                    file,
                    "neither JSON nor XML: give the --json and --junit files of `locklab check --shard`",
                ))
            }
        }
    }
    let need = |given: bool, what: &str, flag: &str| {
        if given {
            Ok(())
        } else {
            Err(Failure::BadInput(format!(
                "{flag} needs the shards' {what} files among the FILEs"
            )))
        }
    };
    if args.json.is_some() {
        need(!jsons.is_empty(), "JSON", "--json")?;
    }
    if args.junit.is_some() {
        need(!junits.is_empty(), "JUnit", "--junit")?;
    }
    let mut code = None;
    let mut summary = None;
    if !junits.is_empty() {
        let shards = junits.len();
        let (xml, totals) = merge_junit(junits)?;
        code = Some(i32::from(totals.failures + totals.errors > 0));
        summary = Some(format!(
            "merged {shards} JUnit shard{}: {} testcases, {} failed, {} in error",
            plural(shards),
            totals.tests,
            totals.failures,
            totals.errors
        ));
        if let Some(path) = &args.junit {
            write_file(path, &xml)?;
        }
    }
    if !jsons.is_empty() {
        let shards = jsons.len();
        let (report, exit_code) = merge_json(jsons)?;
        code = Some(exit_code);
        // The JSON says more (the verdicts themselves) than the JUnit totals.
        summary = Some(json_summary(&report, shards));
        if let Some(path) = &args.json {
            write_file(
                path,
                &(serde_json::to_string_pretty(&report).expect("JSON") + "\n"),
            )?;
        }
    }
    if let Some(line) = summary {
        println!("{line}; exit status {}", code.unwrap_or(0));
    }
    Ok(code.unwrap_or(0))
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The JUnit shards' totals, summed.
fn junit_totals(shards: &[(Place, Totals, Vec<String>)]) -> Totals {
    shards.iter().fold(Totals::default(), |mut sum, (_, t, _)| {
        sum.tests += t.tests;
        sum.failures += t.failures;
        sum.errors += t.errors;
        sum.time += t.time;
        sum
    })
}

/// `merged 4 shards: 49 scenarios, 196 verdicts: 70 violated, 126 holding; 196 match,
/// 0 mismatch, 0 scenario errors`, from the joined JSON report.
fn json_summary(report: &Value, shards: usize) -> String {
    let verdicts: Vec<&str> = report["scenarios"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["properties"].as_object())
        .flat_map(|p| p.values().filter_map(|v| v["verdict"].as_str()))
        .collect();
    let count = |v: &str| verdicts.iter().filter(|&&x| x == v).count();
    let summary = &report["summary"];
    let n = |key: &str| summary[key].as_u64().unwrap_or(0);
    let mut line = format!(
        "merged {shards} shard{}: {} scenarios, {} verdicts: {} violated, {} holding",
        plural(shards),
        n("scenarios"),
        verdicts.len(),
        count("violated"),
        count("holds")
    );
    for (verdict, words) in [("not_found", "not found by walks"), ("error", "in error")] {
        if count(verdict) > 0 {
            line.push_str(&format!(", {} {words}", count(verdict)));
        }
    }
    line.push_str(&format!(
        "; {} match, {} mismatch, {} scenario errors",
        n("matched"),
        n("mismatched"),
        n("errors")
    ));
    if n("unproven") > 0 {
        line.push_str(&format!(", {} unproven", n("unproven")));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_read_in_order() {
        let tag = r#"<testsuites name="locklab check" tests="8" shard="1/2" positions="0,3">"#;
        assert_eq!(
            attributes(tag),
            [
                ("name", "locklab check"),
                ("tests", "8"),
                ("shard", "1/2"),
                ("positions", "0,3")
            ]
        );
    }

    fn place(index: usize, positions: &[usize]) -> Place {
        Place {
            file: PathBuf::from(format!("s{index}.json")),
            index,
            count: 2,
            total: 3,
            positions: positions.to_vec(),
        }
    }

    #[test]
    fn shards_join_by_position_and_must_all_be_there() {
        let joined = join(
            "JSON",
            vec![
                (place(2, &[1]), vec!["b"]),
                (place(1, &[0, 2]), vec!["a", "c"]),
            ],
        );
        assert_eq!(joined.unwrap(), ["a", "b", "c"]);
        let missing = join("JSON", vec![(place(1, &[0, 2]), vec!["a", "c"])]);
        assert!(
            matches!(&missing, Err(Failure::BadInput(m)) if m.contains("shard 2/2 missing")),
            "{missing:?}"
        );
        let twice = join(
            "JSON",
            vec![
                (place(1, &[0, 2]), vec!["a", "c"]),
                (place(1, &[0, 2]), vec!["a", "c"]),
            ],
        );
        assert!(matches!(&twice, Err(Failure::BadInput(m)) if m.contains("each JSON shard once")));
        let mut other = place(2, &[1]);
        other.count = 3;
        let foreign = join(
            "JSON",
            vec![(place(1, &[0, 2]), vec!["a", "c"]), (other, vec!["b"])],
        );
        assert!(matches!(&foreign, Err(Failure::BadInput(m)) if m.contains("not the same split")));
    }
}
