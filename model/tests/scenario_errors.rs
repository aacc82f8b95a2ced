//! The exact text of scenario errors: one representative file for each kind of mistake,
//! and the whole line the user sees for it, byte for byte (file, line, dotted key and
//! message). Editors jump to `file:line`, and the harness's tests grep these lines, so
//! any change to their wording must be deliberate and show up here.

use std::fs;
use std::path::PathBuf;

use locklab_model::scenario::{load_dir, load_paths, KeyErrorKind, Scenario, ScenarioError};

const FILE: &str = "scenarios/golden.toml";

/// A valid scenario; each case below changes one line of it.
const BASE: &str = r#"name = "golden"
design = "lua-release"
fencing = false

[topology]
replicas = 1

[clients]
count = 2

[timing]
ttl = 4
work = 1
max_step_delay = 1
horizon = 10

[faults]
pauses = 1

[expect]
mutual_exclusion = "holds"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "holds"
"#;

/// `BASE` with the first line starting with `from` replaced by `to` (several lines, or
/// none to delete it).
fn with(from: &str, to: &str) -> String {
    let mut done = false;
    let mut out = String::new();
    for line in BASE.lines() {
        if !done && line.starts_with(from) {
            done = true;
            if !to.is_empty() {
                out.push_str(to);
                out.push('\n');
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(done, "no line starts with {from:?}");
    out
}

fn error(text: &str) -> ScenarioError {
    Scenario::parse(text, FILE).expect_err("the file is wrong")
}

/// `work` = 1 followed by forty nines: beyond any integer type.
const DEEP: &str = "scenarios/golden.toml:13: key `timing.work`: \
                    `19999999999999999999999999999999999999999` is not an integer";

/// Each case: the edit, the kind of error, the whole message.
fn cases() -> Vec<(String, Option<KeyErrorKind>, &'static str)> {
    use KeyErrorKind::*;
    let deep = format!("work = 1{}", "9".repeat(40));
    vec![
        // Unknown keys, at the top and in a table.
        (
            with("fencing", "fencing = false\ncolour = \"red\""),
            Some(Unknown),
            "scenarios/golden.toml:4: key `colour`: unknown key; valid top-level keys: name, \
             design, summary, fencing, wait_replicas, watchdog, renewal_on_error, topology, clients, \
             timing, faults, expect, lock",
        ),
        (
            with("ttl", "tll = 4"),
            Some(Unknown),
            "scenarios/golden.toml:12: key `timing.tll`: unknown key; valid keys in [timing]: \
             ttl, work, max_step_delay, horizon, tick_ms, clock_jump, node_drift, drift_allowance, min_validity, \
             wait_timeout",
        ),
        // An unknown key anywhere beats a mistake earlier in the file.
        (
            with("ttl", "ttl = \"4\"").replace("resource_safety", "liveness"),
            Some(Unknown),
            "scenarios/golden.toml:24: key `expect.liveness`: unknown key; valid keys in \
             [expect]: mutual_exclusion, owner_only_release, no_orphaned_lock, resource_safety, cause",
        ),
        // Wrong types.
        (
            with("ttl", "ttl = \"4\""),
            Some(WrongType),
            "scenarios/golden.toml:12: key `timing.ttl`: expected an integer, found a string \
             (\"4\"); write ttl = 4 without quotes",
        ),
        (
            with("horizon", "horizon = 10.0"),
            Some(WrongType),
            "scenarios/golden.toml:15: key `timing.horizon`: expected an integer, found a float",
        ),
        (
            with("design", "design = 3"),
            Some(WrongType),
            "scenarios/golden.toml:2: key `design`: expected a string, found an integer",
        ),
        // A key earlier versions read: refused with its reason, whatever its value.
        (
            with("fencing", "fencing = false\nreduction = \"receive_first\""),
            Some(Unknown),
            "scenarios/golden.toml:4: key `reduction`: `reduction` is no longer read: the \
             search takes the answers a Redlock fan-out only records in one order by itself, \
             keeping every verdict (README, \"Reductions\"); \"receive_first\" was not \
             sound. Delete the line",
        ),
        (
            with("fencing", "fencing = 1"),
            Some(WrongType),
            "scenarios/golden.toml:3: key `fencing`: expected a boolean or a string (\"all\", \
             \"writes\", \"off\"), found an integer",
        ),
        (
            with("replicas", "replicas = 1\npromotion = [1]"),
            Some(WrongType),
            "scenarios/golden.toml:7: key `topology.promotion`: expected a string (\"any\" or \
             \"most-advanced\"), found an array",
        ),
        (
            with("mutual_exclusion", "mutual_exclusion = true"),
            Some(WrongType),
            "scenarios/golden.toml:21: key `expect.mutual_exclusion`: expected a string \
             (\"holds\" or \"violated\"), found a boolean",
        ),
        (
            with("[clients]", "")
                .replace("count = 2\n", "")
                .replace("fencing = false", "fencing = false\nclients = 2"),
            Some(WrongType),
            "scenarios/golden.toml:4: key `clients`: expected a table ([clients]), found an \
             integer",
        ),
        // Missing keys and tables.
        (
            with("ttl", ""),
            Some(Missing),
            "scenarios/golden.toml:11: key `timing.ttl`: required key is missing from [timing]",
        ),
        (
            with("name", ""),
            Some(Missing),
            "scenarios/golden.toml:1: key `name`: required key is missing",
        ),
        (
            with("owner_only_release", ""),
            Some(Missing),
            "scenarios/golden.toml:20: key `expect.owner_only_release`: required key is missing \
             from [expect]; state \"holds\" or \"violated\" for every property",
        ),
        (
            BASE.split("[expect]").next().unwrap().to_string(),
            Some(Missing),
            "scenarios/golden.toml:1: key `expect.mutual_exclusion`: required key is missing \
             (the file has no [expect] table); state \"holds\" or \"violated\" for every property",
        ),
        (
            BASE.replace("[clients]\ncount = 2\n", ""),
            Some(Missing),
            "scenarios/golden.toml:1: key `clients.count`: required key is missing (the file \
             has no [clients] table)",
        ),
        // Numbers out of range.
        (
            with("count", "count = 5"),
            Some(InvalidValue),
            "scenarios/golden.toml:9: key `clients.count`: must be at most 4 (got 5); the cap is \
             there to keep the model's state space finite and small enough to check",
        ),
        (
            with("ttl", "ttl = 0"),
            Some(InvalidValue),
            "scenarios/golden.toml:12: key `timing.ttl`: must be at least 1 (got 0)",
        ),
        (
            with("ttl", "ttl = -1"),
            Some(InvalidValue),
            "scenarios/golden.toml:12: key `timing.ttl`: must not be negative (got -1)",
        ),
        (
            with("work", "work = 5_000_000_000"),
            Some(InvalidValue),
            "scenarios/golden.toml:13: key `timing.work`: too large (got 5000000000)",
        ),
        (
            with("horizon", "horizon = 10\ntick_ms = 99999999999999999999"),
            Some(InvalidValue),
            "scenarios/golden.toml:16: key `timing.tick_ms`: too large (got \
             99999999999999999999)",
        ),
        (with("work", &deep), Some(InvalidValue), DEEP),
        (
            with("horizon", "horizon = 10\ntick_ms = 60001"),
            Some(InvalidValue),
            "scenarios/golden.toml:16: key `timing.tick_ms`: must be at most 60000 (got 60001); \
             accepted range 1..=60000",
        ),
        (
            with("pauses", "pauses = 256"),
            Some(InvalidValue),
            "scenarios/golden.toml:18: key `faults.pauses`: must be at most 255 (got 256); \
             accepted range 0..=255",
        ),
        (
            with("horizon", "horizon = 65"),
            Some(InvalidValue),
            "scenarios/golden.toml:15: key `timing.horizon`: must be at most 64 (got 65); the cap \
             is there to keep the model's state space finite and small enough to check",
        ),
        // Values that contradict the design or another key.
        (
            with("replicas", "masters = 2"),
            Some(InvalidValue),
            "scenarios/golden.toml:6: key `topology.masters`: design `lua-release` uses a single \
             master (got 2); only redlock uses several independent masters",
        ),
        (
            with("fencing", "fencing = false\nwait_replicas = 2"),
            Some(InvalidValue),
            "scenarios/golden.toml:4: key `wait_replicas`: cannot wait for 2 replicas when \
             topology.replicas = 1",
        ),
        (
            with("horizon", "horizon = 10\nwait_timeout = 2"),
            Some(InvalidValue),
            "scenarios/golden.toml:16: key `timing.wait_timeout`: a WAIT timeout of 2 ticks, \
             but wait_replicas = 0 sends no WAIT; set wait_replicas or remove wait_timeout",
        ),
        (
            with("fencing", "fencing = false\nwait_replicas = 1")
                .replace("horizon = 10", "horizon = 10\nwait_timeout = 256"),
            Some(InvalidValue),
            "scenarios/golden.toml:17: key `timing.wait_timeout`: must be at most 255 (got 256); \
             accepted range 0..=255 ticks",
        ),
        (
            with("horizon", "horizon = 10\ndrift_allowance = 1"),
            Some(InvalidValue),
            "scenarios/golden.toml:16: key `timing.drift_allowance`: only redlock takes a drift \
             allowance off its validity, not `lua-release`",
        ),
        (
            with("replicas", "replicas = 0").replace("pauses = 1", "failovers = 1"),
            Some(InvalidValue),
            "scenarios/golden.toml:18: key `faults.failovers`: a failover promotes a replica, but \
             topology.replicas = 0 (got failovers = 1); add a replica or set failovers = 0",
        ),
        (
            with("replicas", "replicas = 1\nsentinels = 3").replace("pauses = 1", "restarts = 1"),
            Some(InvalidValue),
            "scenarios/golden.toml:19: key `faults.restarts`: a replay scripts this fault without \
             Sentinel, but topology.sentinels = 3; set sentinels = 0 (scripted promotion) or \
             restarts = 0",
        ),
        (
            with("pauses", "split_brains = 2"),
            Some(InvalidValue),
            "scenarios/golden.toml:18: key `faults.split_brains`: must be 0 or 1 (got 2): a split \
             brain lasts to the horizon",
        ),
        // Words that are not one of the accepted ones.
        (
            with("design", "design = \"redlok\""),
            Some(UnknownDesign),
            "scenarios/golden.toml:2: key `design`: unknown design `redlok`; known designs: \
             naive-setnx, exists-set, setnx-expire, getset-timestamp, set-px-del, set-px-get-del, \
             get-expire-renewal, lua-release, watchdog, reentrant, redlock, custom",
        ),
        (
            with("fencing", "fencing = \"reads\""),
            Some(InvalidValue),
            "scenarios/golden.toml:3: key `fencing`: `reads` is not a fencing mode; use true, \
             false, \"all\", \"writes\" or \"off\"",
        ),
        (
            with("count", "count = 2\narrival = \"late\""),
            Some(InvalidValue),
            "scenarios/golden.toml:10: key `clients.arrival`: `late` is not an arrival; use \
             \"start\" or \"any\"",
        ),
        (
            with("replicas", "replicas = 1\npromotion = \"best\""),
            Some(InvalidValue),
            "scenarios/golden.toml:7: key `topology.promotion`: `best` is not a promotion rule; \
             use \"any\" or \"most-advanced\"",
        ),
        (
            with("resource_safety", "resource_safety = \"maybe\""),
            Some(InvalidValue),
            "scenarios/golden.toml:24: key `expect.resource_safety`: `maybe` is not a verdict; \
             use \"holds\" or \"violated\"",
        ),
        // The name.
        (
            with("name", "name = \"other\""),
            Some(NameMismatch),
            "scenarios/golden.toml:1: key `name`: must equal the file name without .toml, \
             `golden` (got `other`); rename the file or the scenario",
        ),
        (
            with("name", "name = \" \""),
            Some(InvalidValue),
            "scenarios/golden.toml:1: key `name`: must not be empty",
        ),
        // Not TOML at all: the parser's message, on one line, with line and column.
        (
            with("ttl", "ttl = = 4"),
            None,
            "scenarios/golden.toml:12:7: not valid TOML: extra `=`, expected nothing",
        ),
        (
            with("work", "work = 1\nwork = 2"),
            None,
            "scenarios/golden.toml:14:1: not valid TOML: duplicate key",
        ),
    ]
}

#[test]
fn every_kind_of_mistake_has_its_exact_message() {
    let mut wrong = Vec::new();
    for (text, kind, expected) in cases() {
        let err = error(&text);
        if err.to_string() != expected || err.kind() != kind {
            wrong.push(format!(
                "expected {kind:?} {expected}\n   found {:?} {err}",
                err.kind()
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// A valid custom lock; each case below changes one line of it.
const CUSTOM: &str = r#"name = "golden"
design = "custom"

[lock]
acquire = { command = ["SET", "{key}", "{token}", "NX", "PX", "{ttl}"], granted = "OK" }
release = { script = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
""", keys = ["{key}"], args = ["{token}"], released = 1 }
renew = { script = "return redis.call('pexpire', KEYS[1], ARGV[2])", keys = ["{key}"], args = ["{token}", "{ttl}"], renewed = 1, every = 2 }

[clients]
count = 2

[timing]
ttl = 4
work = 1
max_step_delay = 1
horizon = 10

[expect]
mutual_exclusion = "holds"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "holds"
"#;

/// `CUSTOM` with `from` replaced by `to` (the first occurrence, which must exist).
fn custom_with(from: &str, to: &str) -> String {
    assert!(CUSTOM.contains(from), "CUSTOM has no {from:?}");
    CUSTOM.replacen(from, to, 1)
}

fn custom_cases() -> Vec<(String, KeyErrorKind, &'static str)> {
    use KeyErrorKind::*;
    vec![
        // A command the abstract Redis does not implement, inside a script: the file
        // line of the script line that names it.
        (
            custom_with("redis.call('del', KEYS[1])", "redis.call('watch', KEYS[1])"),
            InvalidValue,
            "scenarios/golden.toml:8: key `lock.release.script`: line 2 of the script: command \
             `watch` is not implemented by the model's abstract Redis; it implements GET, SET, \
             SETNX, GETSET, GETDEL, DEL, UNLINK, EXISTS, INCR, INCRBY, DECR, DECRBY, EXPIRE, \
             PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, HSET, HGET, HGETALL, HLEN, HDEL, HEXISTS, \
             HINCRBY, LPUSH, RPUSH, LPOP, RPOP, LLEN, PUBLISH, TIME",
        ),
        // ... and as a command.
        (
            custom_with("[\"SET\", \"{key}\"", "[\"SETEX\", \"{key}\""),
            InvalidValue,
            "scenarios/golden.toml:5: key `lock.acquire.command`: command `SETEX` is not \
             implemented by the model's abstract Redis; it implements GET, SET, SETNX, GETSET, \
             GETDEL, DEL, UNLINK, EXISTS, INCR, INCRBY, DECR, DECRBY, EXPIRE, PEXPIRE, EXPIREAT, \
             PEXPIREAT, TTL, PTTL, HSET, HGET, HGETALL, HLEN, HDEL, HEXISTS, HINCRBY, LPUSH, \
             RPUSH, LPOP, RPOP, LLEN, PUBLISH, TIME",
        ),
        // A Lua syntax error: the file line of the script's line.
        (
            custom_with("end\nreturn 0", "return 0"),
            InvalidValue,
            "scenarios/golden.toml:9: key `lock.release.script`: Lua syntax error at line 3 of \
             the script: 'end' expected (to close 'if' at line 1) near 'return'",
        ),
        // A step without its success reply.
        (
            custom_with(", granted = \"OK\"", ""),
            Missing,
            "scenarios/golden.toml:5: key `lock.acquire.granted`: required key is missing from \
             [lock.acquire]; write the reply that means success: a string (\"OK\"), an integer, \
             or \"nil\"",
        ),
        // A misspelt placeholder.
        (
            custom_with("args = [\"{token}\"]", "args = [\"{tokn}\"]"),
            InvalidValue,
            "scenarios/golden.toml:11: key `lock.release.args`: unknown placeholder `{tokn}` in \
             \"{tokn}\"; placeholders: {key}, {token}, {ttl}",
        ),
        // A misspelt step key.
        (
            custom_with("renewed = 1", "renwed = 1"),
            Unknown,
            "scenarios/golden.toml:12: key `lock.renew.renwed`: unknown key; valid keys in \
             [lock.renew]: command, script, script_file, keys, args, renewed, every",
        ),
        (
            custom_with(
                "[lock]\n",
                "[lock]\nrelase = { command = [\"DEL\", \"{key}\"] }\n",
            ),
            Unknown,
            "scenarios/golden.toml:5: key `lock.relase`: unknown key; valid keys in [lock]: \
             acquire, release, renew, reenter",
        ),
        // Both a command and a script.
        (
            custom_with(
                "renew = { script",
                "renew = { command = [\"PEXPIRE\", \"{key}\", \"{ttl}\"], script",
            ),
            InvalidValue,
            "scenarios/golden.toml:12: key `lock.renew.script`: a step is one of `command`, \
             `script` and `script_file`, not two",
        ),
        // [lock] for a built-in design.
        (
            custom_with("design = \"custom\"", "design = \"lua-release\""),
            InvalidValue,
            "scenarios/golden.toml:4: key `lock`: [lock] gives a custom lock's steps; design \
             `lua-release` has its own: set design = \"custom\" or remove [lock]",
        ),
    ]
}

#[test]
fn every_custom_lock_mistake_has_its_exact_message() {
    assert!(Scenario::parse(CUSTOM, FILE).is_ok_and(|s| s.lock.is_some()));
    let mut wrong = Vec::new();
    for (text, kind, expected) in custom_cases() {
        let err = error(&text);
        if err.to_string() != expected || err.kind() != Some(kind) {
            wrong.push(format!(
                "expected {kind:?} {expected}\n   found {:?} {err}",
                err.kind()
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn a_custom_design_needs_its_lock() {
    let text = BASE.replace("design = \"lua-release\"", "design = \"custom\"");
    assert_eq!(
        error(&text).to_string(),
        "scenarios/golden.toml:1: key `lock`: design `custom` needs a [lock] table with acquire \
         and release steps"
    );
}

#[test]
fn the_base_file_is_valid() {
    let s = Scenario::parse(BASE, FILE).unwrap();
    assert_eq!(s.name, "golden");
}

/// A fresh, empty directory under the system temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("locklab-golden-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn errors_about_files_have_their_exact_message() {
    let dir = temp_dir("files");
    let err = load_dir(&dir).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: no scenario files (*.toml) in this directory",
            dir.display()
        )
    );
    let err = load_paths(&[dir.join("nope.toml")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: cannot read: No such file or directory (os error 2)",
            dir.join("nope.toml").display()
        )
    );

    // The same name in two files: the second one's `name` line.
    let (one, two) = (dir.join("one"), dir.join("two"));
    for d in [&one, &two] {
        fs::create_dir_all(d).unwrap();
        fs::write(d.join("golden.toml"), format!("# comment\n\n{BASE}")).unwrap();
    }
    let err = load_paths(&[one.clone(), two.clone()]).unwrap_err();
    assert_eq!(err.kind(), Some(KeyErrorKind::DuplicateName));
    assert_eq!(
        err.to_string(),
        format!(
            "{}:3: key `name`: scenario `golden` is also defined in {}; names must be unique",
            two.join("golden.toml").display(),
            one.join("golden.toml").display()
        )
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// A scenario serializes (JSON traces, reports) with the file's keys, `design` and
/// `fencing` as the words of the file, and its path.
#[test]
fn a_scenario_serializes_with_the_keys_of_its_file() {
    let text = with("fencing", "fencing = \"writes\"\nwait_replicas = 1")
        .replace(
            "\nreplicas = 1",
            "\nreplicas = 1\npromotion = \"most-advanced\"",
        )
        .replace("pauses = 1", "pauses = 1\nsplit_brains = 1");
    let s = Scenario::parse(&text, FILE).unwrap();
    assert_eq!(
        serde_json::to_string(&s).unwrap(),
        concat!(
            r#"{"name":"golden","design":"lua-release","summary":"","fencing":"writes","#,
            r#""wait_replicas":1,"topology":{"masters":1,"replicas":1,"#,
            r#""promotion":"most-advanced"},"clients":{"count":2,"attempts":2,"#,
            r#""arrival":"start"},"timing":{"ttl":4,"work":1,"max_step_delay":1,"#,
            r#""horizon":10,"tick_ms":100,"clock_jump":4},"faults":{"pauses":1,"#,
            r#""crashes":0,"failovers":0,"restarts":0,"partitions":0,"clock_jumps":0,"#,
            r#""lost_replies":0,"split_brains":1},"expect":{"mutual_exclusion":"holds","#,
            r#""owner_only_release":"holds","no_orphaned_lock":"holds","#,
            r#""resource_safety":"holds"},"path":"scenarios/golden.toml"}"#
        )
    );
}
