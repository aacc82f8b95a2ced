//! The `locklab` binary on small scenario files written here (independent of the
//! scenario set in `scenarios/`, which is being tuned).

mod common;

use std::fs;
use std::path::Path;

use common::*;
use locklab_model::ids::{Actor, ClientId};
use locklab_model::model::{Action, LockModel};
use locklab_model::scenario::{Expectation, Property, Scenario};
use locklab_model::search::replay;
use locklab_model::trace::{self, Trace, TraceStep};

/// The steps of `t` at which a request was executed.
fn deliveries(t: &Trace) -> impl Iterator<Item = &TraceStep> {
    t.steps
        .iter()
        .zip(&t.actions)
        .filter(|(_, a)| matches!(a, Action::Deliver(..)))
        .map(|(s, _)| s)
}

#[test]
fn bad_file_exits_2_naming_file_key_and_line() {
    let dir = temp_dir("bad-file");
    let text =
        with_expect(&slow_holder_body("bad"), |_| Expectation::Holds).replace("ttl = 3", "ttl = 0");
    let line = text.lines().position(|l| l == "ttl = 0").unwrap() + 1;
    write(&dir, "bad", &text);
    let out = locklab(&dir, &["check", "bad.toml"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!("bad.toml:{line}: key `timing.ttl`: ")),
        "{err}"
    );
    assert!(stdout(&out).is_empty(), "no table for bad input");
}

#[test]
fn unknown_design_exits_2() {
    let dir = temp_dir("unknown-design");
    let text = with_expect(&slow_holder_body("odd"), |_| Expectation::Holds)
        .replace("lua-release", "redlok");
    write(&dir, "odd", &text);
    let out = locklab(&dir, &["check", "odd.toml"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(err.contains("odd.toml:2: key `design`"), "{err}");
    assert!(err.contains("unknown design `redlok`"), "{err}");
}

#[test]
fn missing_path_exits_2() {
    let dir = temp_dir("missing");
    let out = locklab(&dir, &["check", "nope.toml"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("nope.toml"), "{}", stderr(&out));
}

#[test]
fn matching_verdicts_exit_0() {
    let dir = temp_dir("match");
    write(&dir, "slow", &slow_holder("slow").text);
    write(&dir, "crash", &naive_crash("crash").text);
    let out = locklab(&dir, &["check", "slow.toml", "crash.toml"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let table = stdout(&out);
    assert!(table.starts_with("RESULT"), "{table}");
    assert!(!table.contains("MISMATCH"), "{table}");
    assert!(
        table.contains("2 scenarios, 8 verdicts: 8 match, 0 mismatch, 0 scenario errors"),
        "{table}"
    );
    // Not a terminal: where the traces go (not the gallery's reports/: these files are
    // not in scenarios/), then one plain line per scenario with its place in the run
    // (in the order they finish: they may be searched at once), no control characters.
    let err = stderr(&out);
    let mut lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].starts_with("traces go to "), "{err}");
    assert!(!dir.join("reports").exists(), "{err}");
    lines[1..].sort_unstable();
    assert!(lines[1].starts_with("[1/2] checked slow: "), "{err}");
    assert!(lines[2].starts_with("[2/2] checked crash: "), "{err}");
    assert!(!err.chars().any(|c| c.is_control() && c != '\n'), "{err:?}");
}

/// Scenarios searched at once (`--jobs 3`) give what one at a time gives: the same exit
/// status, the same JSON but for the seconds, the same trace files, the table's rows in
/// the order of the files, one progress line per scenario. So do compact levels
/// (`--compact`).
#[test]
fn scenarios_checked_at_once_give_what_one_at_a_time_gives() {
    let dir = temp_dir("jobs");
    write(&dir, "slow", &slow_holder("slow").text);
    write(&dir, "crash", &naive_crash("crash").text);
    let wrong = slow_holder("wrong");
    write(
        &dir,
        "wrong",
        &wrong.flipped(&slow_holder_body("wrong"), Property::MutualExclusion),
    );
    let files = ["slow.toml", "crash.toml", "wrong.toml"];
    let run = |jobs: &str, extra: &[&str]| {
        let tag = format!("{jobs}{}", extra.concat());
        let (json, reports) = (format!("{tag}.json"), format!("r{tag}"));
        let mut args = vec!["check", "--jobs", jobs, "--threads", "1"];
        args.extend(["--json", &json, "--reports", &reports]);
        args.extend(extra);
        args.extend(files);
        let out = locklab(&dir, &args);
        // The JSON with its wall times blanked and the trace folder's name left out.
        let text = fs::read_to_string(dir.join(&json)).expect("the JSON is written");
        let text = text.replace(&format!("{reports}/"), "R/");
        let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
        timeless_json(&mut value);
        (out, value)
    };
    let (one, one_json) = run("1", &[]);
    let (three, three_json) = run("3", &[]);
    let (compact, compact_json) = run("1", &["--compact"]);
    assert_eq!(code(&one), 1, "{}", stderr(&one));
    assert_eq!(code(&three), code(&one), "{}", stderr(&three));
    assert_eq!(code(&compact), code(&one), "{}", stderr(&compact));
    assert_eq!(three_json, one_json);
    assert_eq!(compact_json, one_json);
    let traces = |reports: &str| {
        let mut files: Vec<(String, String)> = fs::read_dir(dir.join(reports).join("traces"))
            .unwrap()
            .map(|e| {
                let path = e.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, fs::read_to_string(&path).unwrap())
            })
            .collect();
        files.sort();
        files
    };
    assert!(!traces("r1").is_empty());
    assert_eq!(traces("r3"), traces("r1"));
    assert_eq!(traces("r1--compact"), traces("r1"));
    // Each row's result, scenario and property, in the files' order.
    let rows = |out: &std::process::Output| {
        stdout(out)
            .lines()
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&three), rows(&one));
    assert_eq!(rows(&compact), rows(&one));
    let names: Vec<String> = rows(&three)
        .iter()
        .filter_map(|r| r.split(' ').nth(1).map(str::to_string))
        .filter(|n| ["slow", "crash", "wrong"].contains(&n.as_str()))
        .collect();
    let mut firsts = names.clone();
    firsts.dedup();
    assert_eq!(firsts, ["slow", "crash", "wrong"], "{}", stdout(&three));
    let err = stderr(&three);
    for (k, name) in ["slow", "crash", "wrong"].iter().enumerate() {
        let line = format!("[{}/3] checked {name}: ", k + 1);
        assert_eq!(err.matches(&line).count(), 1, "{err}");
    }
}

#[test]
fn wrong_expectation_exits_1_and_is_marked() {
    let dir = temp_dir("mismatch");
    let c = slow_holder("wrong");
    let text = c.flipped(&slow_holder_body("wrong"), Property::MutualExclusion);
    write(&dir, "wrong", &text);
    let out = locklab(&dir, &["check", "wrong.toml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let table = stdout(&out);
    let row = table
        .lines()
        .find(|l| l.contains("mutual_exclusion"))
        .unwrap();
    assert!(row.starts_with("MISMATCH"), "{table}");
    assert!(
        table.contains("MISMATCH wrong: mutual_exclusion expected holds, found violated in "),
        "{table}"
    );
    assert!(
        table.contains("1 scenario, 4 verdicts: 3 match, 1 mismatch"),
        "{table}"
    );
}

#[test]
fn json_report_has_the_documented_fields() {
    let dir = temp_dir("json");
    let c = slow_holder("slow");
    write(&dir, "slow", &c.text);
    let (out, json) = check_json(&dir, &["slow.toml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json["exit_code"], 0);
    let s = &json["scenarios"][0];
    assert_eq!(s["name"], "slow");
    assert_eq!(s["design"], "lua-release");
    for key in ["states", "unique_states"] {
        assert!(s[key].as_u64().unwrap() > 0, "{key}: {s}");
    }
    assert!(s["seconds"].as_f64().unwrap() >= 0.0);
    assert_eq!(s["purchased"], true);
    assert_eq!(s["complete"], true);
    assert!(s["error"].is_null());
    for p in Property::ALL {
        let v = property(&json, 0, p.as_str());
        for key in ["verdict", "expected", "steps", "trace"] {
            assert!(v.get(key).is_some(), "{p} lacks {key}: {v}");
        }
        assert_eq!(v["match"], true);
    }
    let me = property(&json, 0, "mutual_exclusion");
    assert_eq!(me["verdict"], "violated");
    assert_eq!(me["expected"], "violated");
    assert!(me["steps"].as_u64().unwrap() > 0);
    let trace = me["trace"].as_str().unwrap();
    assert!(
        trace.ends_with("traces/slow.mutual_exclusion.json"),
        "{trace}"
    );
    assert!(dir.join(trace).exists(), "{trace}");
    let holds = Property::ALL
        .into_iter()
        .find(|p| !c.violated.contains(p))
        .expect("a property that holds");
    let held = property(&json, 0, holds.as_str());
    assert_eq!(held["verdict"], "holds");
    assert!(held["steps"].is_null());
    assert!(held["trace"].is_null());
    assert!(held["within_steps"].is_null());
}

#[test]
fn traces_load_decode_and_replay_to_the_violation() {
    let dir = temp_dir("trace");
    let (slow_c, crash_c) = (slow_holder("slow"), naive_crash("crash"));
    let slow = write(&dir, "slow", &slow_c.text);
    let crash = write(&dir, "crash", &crash_c.text);
    let out = locklab(
        &dir,
        &["check", "slow.toml", "crash.toml", "--reports", "reports"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let cases = slow_c
        .violated
        .iter()
        .map(|&p| (&slow, "slow", p))
        .chain(crash_c.violated.iter().map(|&p| (&crash, "crash", p)));
    for (file, name, property) in cases {
        let path = dir
            .join("reports/traces")
            .join(format!("{name}.{property}.json"));
        let t = trace::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.property, property);
        assert_eq!(t.scenario.name, name);
        // The embedded scenario is the file's.
        let embedded = t.scenario.clone();
        let mut scenario = Scenario::load(file).unwrap();
        scenario.path = embedded.path.clone();
        assert_eq!(embedded, scenario);
        // The decoded actions replay and break the property in the last state only.
        let model = LockModel::new(&embedded);
        let actions = &t.actions;
        assert_eq!(actions.len(), t.steps.len());
        let states = replay(&model, actions).expect("the trace replays");
        let last = states.last().unwrap();
        assert!(!model.holds(property, last), "{name}.{property}");
        assert!(states[..states.len() - 1]
            .iter()
            .all(|s| model.holds(property, s)));
        let last_step = t.steps.last().unwrap();
        assert!(last_step.broken.contains(&property));
        for (k, step) in t.steps.iter().enumerate() {
            assert_eq!(step.step, k + 1);
            assert_eq!(step.action, actions[k].to_string());
            assert_eq!(step.after.clock, states[k + 1].now as i64);
        }
        // A command and a reply are recorded for executed requests.
        let delivered = deliveries(&t).next().unwrap();
        assert!(delivered.command.is_some() && delivered.reply.is_some());
        assert!(matches!(delivered.actor, Actor::Node(_)));
    }
    // naive-setnx: SETNX, executed with reply 1, then the holder crashes.
    let t = trace::load(dir.join("reports/traces/crash.no_orphaned_lock.json")).unwrap();
    let acquire = deliveries(&t).next().unwrap();
    assert!(acquire
        .command
        .as_deref()
        .unwrap()
        .starts_with("SETNX lock t"));
    assert_eq!(acquire.reply.as_deref(), Some("(integer) 1"));
    assert_eq!(t.steps.last().unwrap().actor, Actor::Nemesis);
    let key = t.steps.last().unwrap().after.keys[0].as_ref().unwrap();
    assert_eq!(key.ttl, None);
    assert_eq!(key.owner, Some(ClientId::at(0)));
}

#[test]
fn max_depth_below_the_counterexample_makes_the_property_hold() {
    let dir = temp_dir("max-depth");
    write(&dir, "slow", &slow_holder("slow").text);
    let (_, json) = check_json(&dir, &["slow.toml"]);
    let steps = property(&json, 0, "mutual_exclusion")["steps"]
        .as_u64()
        .unwrap();
    let bound = (steps - 1).to_string();
    let (out, json) = check_json(&dir, &["slow.toml", "--max-depth", &bound]);
    assert_eq!(
        code(&out),
        1,
        "expected violated, now holds within the bound"
    );
    let me = property(&json, 0, "mutual_exclusion");
    assert_eq!(me["verdict"], "holds");
    assert_eq!(me["within_steps"], steps - 1);
    assert!(me["steps"].is_null() && me["trace"].is_null());
    assert_eq!(json["scenarios"][0]["complete"], false);
    let table = stdout(&out);
    assert!(
        table.contains(&format!("holds (within {} steps)", steps - 1)),
        "{table}"
    );
    assert!(
        table.contains("note slow: search stopped at depth"),
        "{table}"
    );
    // At the counterexample's length it is found again.
    let (out, json) = check_json(&dir, &["slow.toml", "--max-depth", &steps.to_string()]);
    assert_eq!(property(&json, 0, "mutual_exclusion")["steps"], steps);
    assert!(stdout(&out).contains("violated"));
}

#[test]
fn every_holds_row_says_what_struck_a_hold() {
    let dir = temp_dir("coverage");
    let c = naive_crash("crash");
    write(&dir, "crash", &c.text);
    let (out, json) = check_json(&dir, &["crash.toml", "--junit", "junit.xml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let table = stdout(&out);
    let header = table.lines().next().unwrap();
    assert!(header.trim_end().ends_with("COVERAGE"), "{table}");
    for p in Property::ALL {
        let row = table
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some(p.as_str()))
            .unwrap_or_else(|| panic!("{p}: {table}"));
        // The holder's crash is in every behaviour's reach: each "holds" says so, and a
        // violated row leaves the column empty (its trace tells the story).
        assert_eq!(
            row.contains("struck a hold: crashes"),
            !c.violated.contains(&p),
            "{p}: {row}"
        );
    }
    assert_eq!(
        json["scenarios"][0]["coverage"]["faults_struck_a_hold"],
        serde_json::json!(["crashes"])
    );
    let xml = fs::read_to_string(dir.join("junit.xml")).unwrap();
    let doc = parse_xml(&xml);
    let struck: Vec<&str> = doc
        .all("property")
        .into_iter()
        .filter(|e| e.attr("name") == "faults_struck_a_hold")
        .map(|e| e.attr("value"))
        .collect();
    assert_eq!(struck, ["crashes"], "{xml}");
}

/// `idle.toml`, whose critical section is longer than its horizon: nobody ever finishes.
fn write_idle(dir: &Path) {
    let text = with_expect(&slow_holder_body("idle"), |_| Expectation::Holds)
        .replace("work = 1", "work = 5")
        .replace("horizon = 8", "horizon = 2");
    write(dir, "idle", &text);
}

#[test]
fn a_scenario_where_nobody_completes_is_an_error() {
    let dir = temp_dir("vacuous");
    write_idle(&dir);
    let (out, json) = check_json(&dir, &["idle.toml", "--junit", "junit.xml"]);
    assert_eq!(code(&out), 1);
    let table = stdout(&out);
    assert!(!table.contains(" ok "), "{table}");
    assert!(
        table.contains("ERROR idle: no client ever completed"),
        "{table}"
    );
    assert_eq!(json["scenarios"][0]["purchased"], false);
    assert!(json["scenarios"][0]["error"].is_string());
    for p in Property::ALL {
        assert_eq!(property(&json, 0, p.as_str())["verdict"], "error");
    }
    let xml = fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(parse_xml(&xml).all("error").len(), 4);
}

#[test]
fn explain_narrates_each_violated_property() {
    let dir = temp_dir("explain");
    let c = slow_holder("slow");
    write(&dir, "slow", &c.text);
    let out = locklab(&dir, &["explain", "slow.toml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    for p in Property::ALL {
        let line = if c.violated.contains(&p) {
            format!("slow violates {p} in ")
        } else {
            format!("slow: {p} holds")
        };
        assert!(text.contains(&line), "{line}\n{text}");
    }
    assert!(text.contains("node1: lock = \"t"), "{text}");
    assert!(text.contains("ttl 3)"), "{text}");
    assert!(text.contains("step 1    t=0  client1 acquire"), "{text}");
    // The sequence diagram and the fix follow the narration.
    assert!(text.contains("lock key: node1 t1 client1 ttl 3"), "{text}");
    assert!(text.contains("✖ BROKEN: mutual_exclusion"), "{text}");
    assert!(text.contains("The fix for mutual_exclusion: "), "{text}");
    let out = locklab(
        &dir,
        &["explain", "slow.toml", "--property", "mutual_exclusion"],
    );
    assert!(!stdout(&out).contains("no_orphaned_lock"));
    let out = locklab(&dir, &["explain", "no-such-scenario"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("no-such-scenario"));
    // A JSON file that is not a trace: bad input naming it.
    fs::write(dir.join("slow.mutual_exclusion.json"), "{}").unwrap();
    let out = locklab(&dir, &["explain", "slow.mutual_exclusion.json"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains("slow.mutual_exclusion.json: not a locklab trace"),
        "{err}"
    );
}

/// The explain command in `check`'s table and on the gallery's pages runs as printed,
/// from the folder it was printed in: a path to the file, not a bare name (which only
/// finds files in scenarios/), and relative when the file was named by an absolute path.
#[test]
fn suggested_explain_commands_run_as_printed() {
    let dir = temp_dir("explain-commands");
    let c = slow_holder("slow");
    fs::create_dir_all(dir.join("mine")).unwrap();
    // Every property flipped: each violated one is a MISMATCH whose line suggests explain.
    let flipped = with_expect(&slow_holder_body("slow"), |p| {
        expectation(!c.violated.contains(&p))
    });
    let file = write(&dir.join("mine"), "slow", &flipped);
    let absolute = file.to_str().unwrap();
    let run_suggestion = |line: &str| {
        let start = line.find("locklab explain ").expect("an explain command") + 8;
        let end = start
            + line[start..]
                .find(['`', '<', ')'])
                .expect("the command ends");
        let args: Vec<&str> = line[start..end].split_whitespace().collect();
        assert_eq!(args[1], "mine/slow.toml", "{line}");
        let out = locklab(&dir, &args);
        assert_eq!(code(&out), 0, "{line}: {}", stderr(&out));
        (args[3].to_string(), stdout(&out))
    };
    let out = locklab(
        &dir,
        &["check", absolute, "--reports", "r", "--threads", "1"],
    );
    assert_eq!(code(&out), 1);
    let table = stdout(&out);
    let suggested: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("MISMATCH slow:") && l.contains("locklab explain"))
        .collect();
    assert_eq!(suggested.len(), c.violated.len(), "{table}");
    for line in suggested {
        let (property, story) = run_suggestion(line);
        assert!(
            story.starts_with(&format!("slow violates {property} in ")),
            "{story}"
        );
    }
    let out = locklab(&dir, &["report", "mine/slow.toml", "--reports", "gallery"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    for page in ["slow.md", "slow.html"] {
        let text = fs::read_to_string(dir.join("gallery/scenarios").join(page)).unwrap();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("locklab explain"))
            .collect();
        assert_eq!(lines.len(), c.violated.len(), "{page}");
        for line in lines {
            run_suggestion(line);
        }
    }
}

/// `explain TRACE.json` tells the story `explain SCENARIO --property P` tells, from the
/// trace alone: no search (no progress line), the cause as the trace records it.
#[test]
fn explain_takes_a_trace_without_searching() {
    let dir = temp_dir("explain-trace");
    let c = slow_holder("slow");
    write(&dir, "slow", &c.text);
    let out = locklab(
        &dir,
        &[
            "check",
            "slow.toml",
            "--cause",
            "--reports",
            "r",
            "--threads",
            "1",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for p in &c.violated {
        let trace = format!("r/traces/slow.{p}.json");
        let from_trace = locklab(&dir, &["explain", &trace]);
        assert_eq!(code(&from_trace), 0, "{}", stderr(&from_trace));
        assert!(
            !stderr(&from_trace).contains("checked"),
            "searched again: {}",
            stderr(&from_trace)
        );
        let from_scenario = locklab(
            &dir,
            &[
                "explain",
                "slow.toml",
                "--property",
                p.as_str(),
                "--threads",
                "1",
            ],
        );
        let story = stdout(&from_scenario);
        assert!(story.contains("The violation needs"), "{story}");
        assert_eq!(stdout(&from_trace), story, "{p}");
        // The trace's own property, or bad input.
        let other = Property::ALL.into_iter().find(|o| o != p).unwrap();
        let out = locklab(&dir, &["explain", &trace, "--property", other.as_str()]);
        assert_eq!(code(&out), 2);
        assert!(
            stderr(&out).contains(&format!("a trace of {p}")),
            "{}",
            stderr(&out)
        );
    }
    // A trace written without --cause says where the cause is computed.
    let out = locklab(
        &dir,
        &["check", "slow.toml", "--reports", "plain", "--threads", "1"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let p = c.violated[0];
    let out = locklab(&dir, &["explain", &format!("plain/traces/slow.{p}.json")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("The violation needs"), "{text}");
    assert!(text.contains("locklab explain slow.toml"), "{text}");
    // Steps that do not apply to the embedded scenario: bad input naming the file.
    let trace = fs::read_to_string(dir.join(format!("plain/traces/slow.{p}.json"))).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&trace).unwrap();
    value["actions"].as_array_mut().unwrap().rotate_left(1);
    fs::write(dir.join("bad.json"), value.to_string()).unwrap();
    let out = locklab(&dir, &["explain", "bad.json"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("bad.json: actions: the steps do not apply"),
        "{}",
        stderr(&out)
    );
}

/// Random walks that reach no completed critical section blame the walks, not the
/// scenario: "not reached in N walks, try more walks", never "vacuous" nor "check the
/// scenario's timing".
#[test]
fn walks_that_reach_no_purchase_ask_for_more_walks() {
    let dir = temp_dir("walks-not-reached");
    write_idle(&dir);
    let (out, json) = check_json(
        &dir,
        &[
            "idle.toml",
            "--strategy",
            "random",
            "--walks",
            "20",
            "--junit",
            "junit.xml",
        ],
    );
    assert_eq!(code(&out), 1);
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        all.contains("ERROR idle: a client completing its critical section: not reached in 20 walks, try more walks"),
        "{all}"
    );
    assert!(all.contains("error: not reached in 20 walks"), "{all}");
    assert!(!all.to_lowercase().contains("vacuous"), "{all}");
    assert!(!all.contains("timing"), "{all}");
    assert!(json["scenarios"][0]["error"]
        .as_str()
        .unwrap()
        .contains("not reached in 20 walks"));
    let xml = fs::read_to_string(dir.join("junit.xml")).unwrap();
    let errors = parse_xml(&xml).all("error").len();
    assert_eq!(errors, 4, "{xml}");
    assert!(xml.contains("type=\"not-reached-in-walks\""), "{xml}");
    assert!(!xml.contains("timing"), "{xml}");
}

/// `report` writes where `--reports DIR` says, as `check` and `replay` do; `--out`, its
/// former name, still works and is not advertised.
#[test]
fn report_takes_reports_and_the_old_out() {
    let help = stdout(&locklab(Path::new("."), &["report", "--help"]));
    assert!(help.contains("--reports <DIR>"), "{help}");
    assert!(!help.contains("--out <"), "{help}");
    let dir = temp_dir("report-out");
    write(&dir, "crash", &naive_crash("crash").text);
    let out = locklab(
        &dir,
        &["report", "crash.toml", "--out", "old", "--threads", "1"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(dir.join("old/scenarios/crash.html").exists());
}

#[test]
fn help_lists_every_subcommand() {
    let dir = temp_dir("help");
    let out = locklab(&dir, &["--help"]);
    assert_eq!(code(&out), 0);
    let help = stdout(&out);
    for sub in [
        "check", "merge", "explain", "explore", "replay", "chaos", "soak", "report", "bench",
        "clean",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(sub)),
            "{sub} missing from\n{help}"
        );
    }
    // A usage error is bad input too.
    assert_eq!(code(&locklab(&dir, &["check", "--threads", "0"])), 2);
    // `bench` needs a subcommand.
    assert_eq!(code(&locklab(&dir, &["bench"])), 2);
}

#[test]
fn bench_checker_writes_a_row_per_configuration() {
    let dir = temp_dir("bench");
    let c = naive_crash("bench-me");
    let path = write(&dir, "bench-me", &c.text);
    let bench = || {
        let args = [
            "bench",
            "checker",
            path.to_str().unwrap(),
            "--out",
            "out/bench.md",
        ];
        locklab(&dir, &args)
    };
    let out = bench();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = fs::read_to_string(dir.join("out/bench.md")).unwrap();
    assert!(report.contains("locklab bench checker"), "{report}");
    assert!(report.contains("cores available"), "{report}");
    // One row per (reductions, threads), each with numbers, and the same rows printed.
    let rows: Vec<Vec<&str>> = report
        .lines()
        .filter(|l| l.starts_with("| bench-me "))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    let configs: Vec<(&str, &str)> = rows.iter().map(|r| (r[2], r[3])).collect();
    assert_eq!(
        configs,
        [("all", "1"), ("all", "2"), ("none", "1")],
        "{report}"
    );
    let unique = |r: &Vec<&str>| r[5].parse::<u64>().unwrap();
    for r in &rows {
        assert!(r[4].parse::<u64>().unwrap() >= unique(r), "{r:?}");
        assert!(r[8].parse::<f64>().unwrap() >= 0.0, "{r:?}");
        // The peak resident set of the child that searched, in MB: at least the binary.
        assert!(r[9].parse::<u64>().unwrap() > 0, "{r:?}");
    }
    // The counterexample is found in every configuration; the reductions merge states.
    assert!(rows.iter().all(|r| r[7] != "-"), "{report}");
    assert!(unique(&rows[0]) < unique(&rows[2]), "{report}");
    assert_eq!(unique(&rows[0]), unique(&rows[1]), "{report}");
    let printed = stdout(&out);
    assert_eq!(
        printed
            .lines()
            .filter(|l| l.starts_with("| bench-me "))
            .count(),
        3
    );
    assert!(
        stderr(&out).contains("benched bench-me"),
        "{}",
        stderr(&out)
    );
    // A section written by hand under the table is kept when the table is regenerated.
    let by_hand = "## Measured by hand\n\nA figure no run measures again.\n";
    fs::write(dir.join("out/bench.md"), format!("{report}{by_hand}")).unwrap();
    let again = bench();
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    let report = fs::read_to_string(dir.join("out/bench.md")).unwrap();
    assert!(report.ends_with(by_hand), "{report}");
    assert_eq!(report.matches(by_hand).count(), 1, "{report}");
    assert_eq!(
        report
            .lines()
            .filter(|l| l.starts_with("| bench-me "))
            .count(),
        3,
        "{report}"
    );
}

#[test]
fn bench_generator_counts_blind_and_steered_walks_that_break() {
    let dir = temp_dir("bench-generator");
    let c = naive_crash("gen-me");
    let path = write(&dir, "gen-me", &c.text);
    // A scenario whose properties all hold has no row: nothing to break.
    let holds = write(
        &dir,
        "gen-holds",
        &with_expect(
            &naive_crash_body("gen-holds").replace("crashes = 1", "crashes = 0"),
            |_| Expectation::Holds,
        ),
    );
    let out = locklab(
        &dir,
        &[
            "bench",
            "generator",
            path.to_str().unwrap(),
            holds.to_str().unwrap(),
            "--seeds",
            "20",
            "--out",
            "out/gen.md",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = fs::read_to_string(dir.join("out/gen.md")).unwrap();
    assert!(report.contains("locklab bench generator"), "{report}");
    assert!(!report.contains("| gen-holds "), "{report}");
    let row: Vec<&str> = report
        .lines()
        .find(|l| l.starts_with("| gen-me "))
        .unwrap_or_else(|| panic!("no row: {report}"))
        .split('|')
        .map(str::trim)
        .collect();
    // uniform, turns, laggard, swarm, steered: walks of 20 that break.
    let counts: Vec<u64> = row[3..8].iter().map(|n| n.parse().unwrap()).collect();
    assert!(counts.iter().all(|&n| n <= 20), "{row:?}");
    assert!(
        counts[4] >= counts[3],
        "steering never loses a break: {row:?}"
    );
    assert_eq!(counts[4], 20, "{row:?}");
    // Walks drawn: median and most, at least the seed's own.
    let drawn: Vec<u32> = row[8].split(", ").map(|n| n.parse().unwrap()).collect();
    assert!(drawn[0] >= 1 && drawn[0] <= drawn[1], "{row:?}");
}

#[test]
fn clean_removes_the_containers_of_gone_locklab_processes() {
    if let Err(e) = locklab_cluster::preflight() {
        panic!("cannot run the container tests: {e}");
    }
    let dir = temp_dir("clean");
    // This pid with another start time: a locklab process that is gone.
    let me = locklab_cluster::Owner::current().expect("Linux /proc");
    let gone = locklab_cluster::Owner {
        start: me.start + 1,
        ..me
    };
    let name = format!("locklab-clean-test-{}", std::process::id());
    let mut args = vec![
        "run".to_string(),
        "-d".into(),
        "--name".into(),
        name.clone(),
    ];
    for (k, v) in gone.labels() {
        args.extend(["--label".to_string(), format!("{k}={v}")]);
    }
    args.push(locklab_cluster::image().unwrap().to_string());
    let exists = |name: &str| {
        std::process::Command::new("docker")
            .args(["container", "inspect", name])
            .output()
            .expect("run the docker CLI")
            .status
            .success()
    };
    let run = std::process::Command::new("docker")
        .args(&args)
        .output()
        .expect("run the docker CLI");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(exists(&name));
    let out = locklab(&dir, &["clean"]);
    let removed = !exists(&name);
    if !removed {
        let _ = std::process::Command::new("docker")
            .args(["rm", "-f", &name])
            .output();
    }
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(removed, "locklab clean left {name}");
    assert!(
        stdout(&out).contains(&format!("removed container {name} (owner pid")),
        "{}",
        stdout(&out)
    );
}

#[test]
fn json_to_stdout_sends_the_table_to_stderr() {
    let dir = temp_dir("json-stdout");
    write(&dir, "slow", &slow_holder("slow").text);
    let out = locklab(&dir, &["check", "slow.toml", "--json", "-"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON on stdout");
    assert_eq!(json["summary"]["scenarios"], 1);
    assert!(!dir.join("-").exists());
    let err = stderr(&out);
    assert!(
        err.contains("1 scenario, 4 verdicts: 4 match, 0 mismatch"),
        "{err}"
    );
}

/// `check --cause` compares what each violation needs with the file's `[expect] cause`:
/// the slow holder's violations need the step delays only.
#[test]
fn cause_is_checked_against_the_stated_one() {
    let dir = temp_dir("cause");
    let text = slow_holder("slow").text;
    write(
        &dir,
        "right",
        &text
            .replace("\"slow\"", "\"right\"")
            .replace("[expect]", "[expect]\ncause = [\"step_delays\"]"),
    );
    write(
        &dir,
        "wrong",
        &text
            .replace("\"slow\"", "\"wrong\"")
            .replace("[expect]", "[expect]\ncause = []"),
    );
    let out = locklab(&dir, &["check", "right.toml", "--cause"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("mutual_exclusion: "),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("needs: only step delays"),
        "{}",
        stdout(&out)
    );
    // Without --cause the stated cause is not searched for.
    assert_eq!(code(&locklab(&dir, &["check", "wrong.toml"])), 0);
    let out = locklab(&dir, &["check", "wrong.toml", "--cause"]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(
        stdout(&out).contains(
            "MISMATCH wrong: mutual_exclusion: expected cause [], found needs: only step delays"
        ),
        "{}",
        stdout(&out)
    );
}
