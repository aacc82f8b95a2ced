//! The scenario format's unit tests: the documented example, every key's forms and
//! defaults, and each kind of mistake named by file, line and key.

use std::fs;

use super::parse::EXPECT_KEYS;
use super::*;

/// A full scenario file: every key, with comments (docs/ARCHITECTURE.md, "Scenarios").
const EXAMPLE: &str = r#"name = "redlock-gc-pause"
design = "redlock"             # an id from the table
summary = "Kleppmann: a pause longer than the validity lets a second client in"
fencing = false

[topology]
masters = 5                    # independent masters (1 unless redlock)
replicas = 0                   # asynchronous replicas per master

[clients]
count = 2

[timing]                       # logical ticks; the harness maps 1 tick to tick_ms
ttl = 4
work = 1
max_step_delay = 1
horizon = 14
tick_ms = 100

[faults]                       # budgets: how many of each the checker may inject
pauses = 1
crashes = 0
failovers = 0
restarts = 0
partitions = 0
clock_jumps = 0

[expect]                       # "holds" | "violated"
mutual_exclusion = "violated"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "violated"
"#;

const FILE: &str = "scenarios/redlock-gc-pause.toml";

/// The example with the line that sets `key` replaced by `replacement`
/// (which may be several lines, or empty to delete the line).
fn set(text: &str, key: &str, replacement: &str) -> String {
    let mut found = false;
    let mut out = String::new();
    for line in text.lines() {
        let lhs = line.split('=').next().unwrap_or("").trim();
        if !found && (lhs == key || line.trim_start().starts_with(&format!("[{key}]"))) {
            found = true;
            if !replacement.is_empty() {
                out.push_str(replacement);
                out.push('\n');
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(found, "no line for {key}");
    out
}

fn edit(edits: &[(&str, &str)]) -> String {
    edits
        .iter()
        .fold(EXAMPLE.to_string(), |text, (key, replacement)| {
            set(&text, key, replacement)
        })
}

/// Parses text that must fail; checks the one-line message names file, key and line.
fn fail(text: &str, key: &str, line: usize, kind: KeyErrorKind) -> String {
    let err = Scenario::parse(text, FILE).expect_err("should fail");
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "not one line: {msg}");
    assert_eq!(err.key(), Some(key), "{msg}");
    assert_eq!(err.line(), Some(line), "{msg}");
    assert_eq!(err.kind(), Some(kind), "{msg}");
    assert_eq!(err.path(), Path::new(FILE));
    let prefix = format!("{FILE}:{line}: key `{key}`: ");
    assert!(
        msg.starts_with(&prefix),
        "{msg:?} does not start with {prefix:?}"
    );
    msg
}

#[test]
fn design_md_example_parses() {
    let s = Scenario::parse(EXAMPLE, FILE).unwrap();
    assert_eq!(s.name, "redlock-gc-pause");
    assert_eq!(s.design, DesignId::Redlock);
    assert_eq!(
        s.summary,
        "Kleppmann: a pause longer than the validity lets a second client in"
    );
    assert_eq!(s.fencing, Fencing::Off);
    assert_eq!(s.wait_replicas, 0);
    assert_eq!(
        s.topology,
        Topology {
            masters: 5,
            replicas: 0,
            promotion: Promotion::Any,
            sentinels: 0,
        }
    );
    assert_eq!(s.topology.nodes(), 5);
    assert_eq!(
        s.clients,
        Clients {
            count: 2,
            attempts: DEFAULT_ATTEMPTS,
            arrival: Arrival::Start,
        }
    );
    assert_eq!(
        s.timing,
        Timing {
            ttl: 4,
            work: 1,
            max_step_delay: 1,
            horizon: Some(14),
            tick_ms: 100,
            clock_jump: 4,
            node_drift: 0,
            drift_allowance: 0,
            min_validity: None,
            wait_timeout: 0,
        }
    );
    let mut pause = Faults::default();
    pause[crate::fault::FaultKind::Pause] = 1;
    assert_eq!(s.faults, pause);
    assert_eq!(s.faults.total(), 1);
    use Expectation::*;
    assert_eq!(
        s.expect,
        Expect {
            mutual_exclusion: Violated,
            owner_only_release: Holds,
            no_orphaned_lock: Holds,
            resource_safety: Violated,
            cause: None,
        }
    );
    assert_eq!(s.expect.get(Property::MutualExclusion), Violated);
    assert_eq!(s.expect.get(Property::NoOrphanedLock), Holds);
    assert_eq!(
        s.expect.iter().map(|(_, e)| e).collect::<Vec<_>>(),
        vec![Violated, Holds, Holds, Violated]
    );
    assert_eq!(s.path, PathBuf::from(FILE));
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["design"], "redlock");
    assert_eq!(json["fencing"], "off");
    assert_eq!(json["expect"]["mutual_exclusion"], "violated");
    assert_eq!(json["timing"]["horizon"], 14);
}

#[test]
fn optional_keys_and_defaults() {
    let text = edit(&[
        ("count", "count = 3\nattempts = 4"),
        ("tick_ms", "clock_jump = 2"),
        ("fencing", "fencing = \"writes\""),
        ("design", "design = \"lua-release\""),
        ("masters", "masters = 1"),
        ("replicas", "replicas = 2"),
        ("summary", "wait_replicas = 1"),
        ("failovers", "failovers = 1"),
    ]);
    let s = Scenario::parse(&text, FILE).unwrap();
    assert_eq!(
        s.clients,
        Clients {
            count: 3,
            attempts: 4,
            arrival: Arrival::Start,
        }
    );
    assert_eq!(s.timing.clock_jump, 2);
    assert_eq!(s.timing.tick_ms, DEFAULT_TICK_MS);
    assert_eq!(s.fencing, Fencing::Writes);
    assert_eq!(s.summary, "");
    assert_eq!(s.wait_replicas, 1);
    assert_eq!(
        s.topology,
        Topology {
            masters: 1,
            replicas: 2,
            promotion: Promotion::Any,
            sentinels: 0,
        }
    );
    assert_eq!(s.topology.nodes(), 3);
    assert_eq!(s.faults[crate::fault::FaultKind::Failover], 1);

    // Tables of defaults may be left out entirely.
    let text = edit(&[
        ("topology", ""),
        ("masters", ""),
        ("replicas", ""),
        ("faults", ""),
        ("pauses", ""),
        ("crashes", ""),
        ("failovers", ""),
        ("restarts", ""),
        ("partitions", ""),
        ("clock_jumps", ""),
    ]);
    let s = Scenario::parse(&text, FILE).unwrap();
    assert_eq!(
        s.topology,
        Topology {
            masters: 1,
            replicas: 0,
            promotion: Promotion::Any,
            sentinels: 0,
        }
    );
    assert_eq!(s.faults, Faults::default());
}

#[test]
fn split_brains_need_a_replica_and_are_at_most_one() {
    let with = |replicas: &str, split: &str| {
        edit(&[
            ("design", "design = \"lua-release\""),
            ("masters", "masters = 1"),
            ("replicas", &format!("replicas = {replicas}")),
            ("clock_jumps", &format!("clock_jumps = 0\n{split}")),
        ])
    };
    let s = Scenario::parse(&with("1", "split_brains = 1"), FILE).unwrap();
    assert_eq!(s.faults[crate::fault::FaultKind::SplitBrain], 1);
    assert_eq!(s.faults.total(), 2);
    let msg = fail(
        &with("1", "split_brains = 2"),
        "faults.split_brains",
        27,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.contains("must be 0 or 1 (got 2)"), "{msg}");
    let msg = fail(
        &with("0", "split_brains = 1"),
        "faults.split_brains",
        27,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.contains("topology.replicas = 0"), "{msg}");
}

#[test]
fn node_drift_and_drift_allowance() {
    let with = |extra: &str| set(EXAMPLE, "tick_ms", &format!("tick_ms = 100\n{extra}"));
    let s = Scenario::parse(&with("node_drift = 1"), FILE).unwrap();
    assert_eq!((s.timing.node_drift, s.timing.drift_allowance), (1, 1));
    let s = Scenario::parse(&with("node_drift = 1\ndrift_allowance = 0"), FILE).unwrap();
    assert_eq!((s.timing.node_drift, s.timing.drift_allowance), (1, 0));
    // Written as a trace embeds it, and read back: the same timing, an allowance of 0
    // under drift included (its default is the drift). Without drift, neither key.
    for extra in ["node_drift = 1\ndrift_allowance = 0", "node_drift = 1", ""] {
        let s = Scenario::parse(&with(extra), FILE).unwrap();
        let mut value = serde_json::to_value(&s).unwrap();
        value.as_object_mut().unwrap().remove("path");
        let back = Scenario::parse(&toml::to_string(&value).unwrap(), FILE).unwrap();
        assert_eq!(back.timing, s.timing, "{extra:?}");
        let timing = value["timing"].as_object().unwrap();
        let drift = !extra.is_empty();
        assert_eq!(timing.contains_key("node_drift"), drift, "{extra:?}");
        assert_eq!(timing.contains_key("drift_allowance"), drift, "{extra:?}");
    }
    let msg = fail(
        &with("node_drift = 15"),
        "timing.node_drift",
        19,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.contains("at most horizon (14)"), "{msg}");
    let msg = fail(
        &with("node_drift = 1\ndrift_allowance = 4"),
        "timing.drift_allowance",
        20,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.contains("less than ttl (4)"), "{msg}");
    // Any other design runs without an allowance: its scenario with drift, written as a
    // trace embeds it, reads back.
    let text = set(
        &with("node_drift = 1"),
        "design",
        "design = \"lua-release\"",
    );
    let text = set(&text, "masters", "masters = 1");
    let s = Scenario::parse(&text, FILE).unwrap();
    assert_eq!((s.timing.node_drift, s.timing.drift_allowance), (1, 0));
    let mut value = serde_json::to_value(&s).unwrap();
    value.as_object_mut().unwrap().remove("path");
    let back = Scenario::parse(&toml::to_string(&value).unwrap(), FILE).unwrap();
    assert_eq!(back.timing, s.timing);
    let text = set(
        &with("node_drift = 1\ndrift_allowance = 1"),
        "design",
        "design = \"lua-release\"",
    );
    let text = set(&text, "masters", "masters = 1");
    let msg = fail(
        &text,
        "timing.drift_allowance",
        20,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.contains("only redlock"), "{msg}");
}

#[test]
fn min_validity_is_redlocks_and_below_the_lease() {
    let with = |extra: &str| set(EXAMPLE, "tick_ms", &format!("tick_ms = 100\n{extra}"));
    let s = Scenario::parse(&with(""), FILE).unwrap();
    assert_eq!(s.timing.min_validity, None);
    let default = u64::from(s.timing.work) + 2 * u64::from(s.timing.max_step_delay);
    assert_eq!(s.timing.min_validity(), default);
    let s = Scenario::parse(&with("min_validity = 0"), FILE).unwrap();
    assert_eq!(
        (s.timing.min_validity, s.timing.min_validity()),
        (Some(0), 0)
    );
    // Written as a trace embeds it, and read back; left out when not given.
    for extra in ["min_validity = 0", "min_validity = 2", ""] {
        let s = Scenario::parse(&with(extra), FILE).unwrap();
        let mut value = serde_json::to_value(&s).unwrap();
        value.as_object_mut().unwrap().remove("path");
        let back = Scenario::parse(&toml::to_string(&value).unwrap(), FILE).unwrap();
        assert_eq!(back.timing, s.timing, "{extra:?}");
        let given = value["timing"]
            .as_object()
            .unwrap()
            .contains_key("min_validity");
        assert_eq!(given, !extra.is_empty(), "{extra:?}");
    }
    let msg = fail(
        &with("min_validity = 4"),
        "timing.min_validity",
        19,
        KeyErrorKind::InvalidValue,
    );
    assert!(
        msg.contains("less than ttl (4) less drift_allowance (0)"),
        "{msg}"
    );
    let text = set(
        &with("min_validity = 1"),
        "design",
        "design = \"lua-release\"",
    );
    let text = set(&text, "masters", "masters = 1");
    let msg = fail(&text, "timing.min_validity", 19, KeyErrorKind::InvalidValue);
    assert!(msg.contains("only redlock"), "{msg}");
}

#[test]
fn promotion_forms() {
    let with = |replicas: &str, promotion: &str| {
        edit(&[
            ("design", "design = \"lua-release\""),
            ("masters", "masters = 1"),
            ("replicas", &format!("replicas = {replicas}\n{promotion}")),
        ])
    };
    let s = Scenario::parse(&with("2", ""), FILE).unwrap();
    assert_eq!(s.topology.promotion, Promotion::Any);
    for (written, rule) in [
        ("\"any\"", Promotion::Any),
        ("\"most-advanced\"", Promotion::MostAdvanced),
    ] {
        let text = with("2", &format!("promotion = {written}"));
        assert_eq!(
            Scenario::parse(&text, FILE).unwrap().topology.promotion,
            rule
        );
    }
    let msg = fail(
        &with("2", "promotion = \"best\""),
        "topology.promotion",
        9,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.contains("`best` is not a promotion rule"), "{msg}");
    fail(
        &with("2", "promotion = 1"),
        "topology.promotion",
        9,
        KeyErrorKind::WrongType,
    );
    let msg = fail(
        &with("0", "promotion = \"any\""),
        "topology.promotion",
        9,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.contains("topology.replicas = 0"), "{msg}");
}

#[test]
fn fencing_forms() {
    for (written, fencing) in [
        ("true", Fencing::All),
        ("false", Fencing::Off),
        ("\"all\"", Fencing::All),
        ("\"writes\"", Fencing::Writes),
        ("\"off\"", Fencing::Off),
    ] {
        let text = set(EXAMPLE, "fencing", &format!("fencing = {written}"));
        assert_eq!(
            Scenario::parse(&text, FILE).unwrap().fencing,
            fencing,
            "{written}"
        );
    }
    let msg = fail(
        &set(EXAMPLE, "fencing", "fencing = \"reads\""),
        "fencing",
        4,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.contains("`reads` is not a fencing mode"), "{msg}");
    let msg = fail(
        &set(EXAMPLE, "fencing", "fencing = 1"),
        "fencing",
        4,
        KeyErrorKind::WrongType,
    );
    assert!(msg.contains("found an integer"), "{msg}");
}

#[test]
fn syntax_error_names_file_and_line() {
    let text = set(EXAMPLE, "ttl", "ttl = = 4");
    let err = Scenario::parse(&text, FILE).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, ScenarioError::Syntax { line: 14, .. }),
        "{msg}"
    );
    assert!(msg.starts_with(&format!("{FILE}:14:")), "{msg}");
    assert!(msg.contains("not valid TOML"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");

    // Duplicate keys are the parser's to catch, too.
    let text = set(EXAMPLE, "work", "work = 1\nwork = 2");
    let err = Scenario::parse(&text, FILE).unwrap_err();
    assert!(
        matches!(err, ScenarioError::Syntax { line: 16, .. }),
        "{err}"
    );
}

#[test]
fn unknown_top_level_key() {
    let text = set(EXAMPLE, "fencing", "fencing = false\ncolour = \"red\"");
    let msg = fail(&text, "colour", 5, KeyErrorKind::Unknown);
    assert!(
        msg.contains("valid top-level keys: name, design, summary, fencing, wait_replicas"),
        "{msg}"
    );
}

#[test]
fn unknown_key_in_table_beats_missing() {
    let text = set(EXAMPLE, "ttl", "tll = 4");
    let msg = fail(&text, "timing.tll", 14, KeyErrorKind::Unknown);
    assert!(
        msg.contains(
            "valid keys in [timing]: ttl, work, max_step_delay, horizon, tick_ms, clock_jump"
        ),
        "{msg}"
    );
    // The first unknown key in file order is reported, not the first alphabetically.
    let text = edit(&[("pauses", "zzz = 1"), ("clock_jumps", "aaa = 1")]);
    fail(&text, "faults.zzz", 21, KeyErrorKind::Unknown);
    let text = set(
        EXAMPLE,
        "mutual_exclusion",
        "mutual_exclusion = \"violated\"\nliveness = \"holds\"",
    );
    fail(&text, "expect.liveness", 30, KeyErrorKind::Unknown);
}

#[test]
fn wrong_types() {
    let msg = fail(
        &set(EXAMPLE, "ttl", "ttl = \"4\""),
        "timing.ttl",
        14,
        KeyErrorKind::WrongType,
    );
    assert!(
        msg.contains("expected an integer, found a string (\"4\"); write ttl = 4 without quotes"),
        "{msg}"
    );
    let msg = fail(
        &set(EXAMPLE, "horizon", "horizon = 14.0"),
        "timing.horizon",
        17,
        KeyErrorKind::WrongType,
    );
    assert!(msg.contains("found a float"), "{msg}");
    let msg = fail(
        &set(EXAMPLE, "design", "design = 3"),
        "design",
        2,
        KeyErrorKind::WrongType,
    );
    assert!(msg.contains("expected a string, found an integer"), "{msg}");
    let msg = fail(
        &set(EXAMPLE, "mutual_exclusion", "mutual_exclusion = false"),
        "expect.mutual_exclusion",
        29,
        KeyErrorKind::WrongType,
    );
    assert!(msg.contains("found a boolean"), "{msg}");
    // A table given as a plain value.
    let text = edit(&[
        ("clients", ""),
        ("count", ""),
        ("summary", "summary = \"\"\nclients = 2"),
    ]);
    let msg = fail(&text, "clients", 4, KeyErrorKind::WrongType);
    assert!(
        msg.contains("expected a table ([clients]), found an integer"),
        "{msg}"
    );
}

#[test]
fn bad_expectation_value() {
    let text = set(EXAMPLE, "resource_safety", "resource_safety = \"maybe\"");
    let msg = fail(
        &text,
        "expect.resource_safety",
        32,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.contains("use \"holds\" or \"violated\""), "{msg}");
}

#[test]
fn missing_required_keys() {
    // In a table that exists: the line of its header.
    let msg = fail(
        &set(EXAMPLE, "ttl", ""),
        "timing.ttl",
        13,
        KeyErrorKind::Missing,
    );
    assert!(
        msg.contains("required key is missing from [timing]"),
        "{msg}"
    );
    fail(
        &set(EXAMPLE, "count", ""),
        "clients.count",
        10,
        KeyErrorKind::Missing,
    );
    let msg = fail(
        &set(EXAMPLE, "no_orphaned_lock", ""),
        "expect.no_orphaned_lock",
        28,
        KeyErrorKind::Missing,
    );
    assert!(
        msg.contains("\"holds\" or \"violated\" for every property"),
        "{msg}"
    );
    // Top-level keys: line 1.
    fail(
        &set(EXAMPLE, "design", ""),
        "design",
        1,
        KeyErrorKind::Missing,
    );
    fail(&set(EXAMPLE, "name", ""), "name", 1, KeyErrorKind::Missing);
    // A missing table: line 1.
    let text = edit(&[
        ("expect", ""),
        ("mutual_exclusion", ""),
        ("owner_only_release", ""),
        ("no_orphaned_lock", ""),
        ("resource_safety", ""),
    ]);
    let msg = fail(&text, "expect.mutual_exclusion", 1, KeyErrorKind::Missing);
    assert!(msg.contains("no [expect] table"), "{msg}");
}

#[test]
fn unknown_design_lists_known_ones() {
    let msg = fail(
        &set(EXAMPLE, "design", "design = \"redlok\""),
        "design",
        2,
        KeyErrorKind::UnknownDesign,
    );
    assert!(msg.contains("unknown design `redlok`"), "{msg}");
    for d in DesignId::ALL {
        assert!(msg.contains(d.as_str()), "{msg} lacks {d}");
    }
}

#[test]
fn zero_values_are_rejected() {
    for (key, dotted, line) in [
        ("count", "clients.count", 11),
        ("ttl", "timing.ttl", 14),
        ("work", "timing.work", 15),
        ("max_step_delay", "timing.max_step_delay", 16),
        ("horizon", "timing.horizon", 17),
        ("tick_ms", "timing.tick_ms", 18),
        ("masters", "topology.masters", 7),
    ] {
        let msg = fail(
            &set(EXAMPLE, key, &format!("{key} = 0")),
            dotted,
            line,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.ends_with("must be at least 1 (got 0)"), "{msg}");
    }
    let text = set(EXAMPLE, "count", "count = 2\nattempts = 0");
    fail(&text, "clients.attempts", 12, KeyErrorKind::InvalidValue);
    let text = set(EXAMPLE, "tick_ms", "tick_ms = 100\nclock_jump = 0");
    fail(&text, "timing.clock_jump", 19, KeyErrorKind::InvalidValue);
}

#[test]
fn negative_and_huge_numbers() {
    let msg = fail(
        &set(EXAMPLE, "ttl", "ttl = -1"),
        "timing.ttl",
        14,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.ends_with("must not be negative (got -1)"), "{msg}");
    let msg = fail(
        &set(EXAMPLE, "work", "work = 5_000_000_000"),
        "timing.work",
        15,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.ends_with("too large (got 5000000000)"), "{msg}");
    // tick_ms is a u64 and accepts hex like any integer.
    let s = Scenario::parse(&set(EXAMPLE, "tick_ms", "tick_ms = 0x1F4"), FILE).unwrap();
    assert_eq!(s.timing.tick_ms, 500);
}

#[test]
fn caps_keep_the_state_space_finite() {
    for (edits, dotted, line, cap) in [
        (
            vec![("count", "count = 5")],
            "clients.count",
            11,
            MAX_CLIENTS,
        ),
        (
            vec![("masters", "masters = 8")],
            "topology.masters",
            7,
            MAX_MASTERS,
        ),
        (
            vec![
                ("design", "design = \"lua-release\""),
                ("masters", "masters = 1"),
                ("replicas", "replicas = 4"),
            ],
            "topology.replicas",
            8,
            MAX_REPLICAS,
        ),
        (
            vec![("horizon", "horizon = 65")],
            "timing.horizon",
            17,
            MAX_HORIZON,
        ),
        (
            vec![("count", "count = 2\nattempts = 9")],
            "clients.attempts",
            12,
            MAX_ATTEMPTS,
        ),
    ] {
        let msg = fail(&edit(&edits), dotted, line, KeyErrorKind::InvalidValue);
        assert!(
            msg.contains(&format!("must be at most {cap} (got {})", cap + 1)),
            "{msg}"
        );
        assert!(msg.contains("keep the model's state space finite"), "{msg}");
    }
}

#[test]
fn several_masters_only_for_redlock() {
    let text = set(EXAMPLE, "design", "design = \"lua-release\"");
    let msg = fail(&text, "topology.masters", 7, KeyErrorKind::InvalidValue);
    assert!(
        msg.contains("design `lua-release` uses a single master (got 5)"),
        "{msg}"
    );
}

#[test]
fn redlock_with_replicas_is_not_supported() {
    let text = edit(&[("masters", "masters = 1"), ("replicas", "replicas = 1")]);
    let msg = fail(&text, "topology.replicas", 8, KeyErrorKind::InvalidValue);
    assert!(
        msg.contains("design `redlock` with replicas (got 1) is not supported"),
        "{msg}"
    );
}

#[test]
fn replicas_with_several_masters_is_not_supported() {
    let text = set(EXAMPLE, "replicas", "replicas = 1");
    let msg = fail(&text, "topology.replicas", 8, KeyErrorKind::InvalidValue);
    assert!(
        msg.contains("together with several masters (masters = 5)"),
        "{msg}"
    );
}

#[test]
fn wait_replicas_needs_that_many_replicas() {
    let text = edit(&[
        ("design", "design = \"lua-release\""),
        ("masters", "masters = 1"),
        ("replicas", "replicas = 1"),
        ("fencing", "fencing = false\nwait_replicas = 2"),
    ]);
    let msg = fail(&text, "wait_replicas", 5, KeyErrorKind::InvalidValue);
    assert!(
        msg.ends_with("cannot wait for 2 replicas when topology.replicas = 1"),
        "{msg}"
    );
}

/// `timing.wait_timeout`: the ticks a WAIT may block, honoured exactly or refused, only
/// where the acquire sends a WAIT; written in a trace's JSON only when set, and read back
/// as the same timing.
#[test]
fn wait_timeout_is_a_number_of_ticks_for_a_wait() {
    let waits = |timeout: &str| {
        edit(&[
            ("design", "design = \"lua-release\""),
            ("masters", "masters = 1"),
            ("replicas", "replicas = 1"),
            ("fencing", "fencing = false\nwait_replicas = 1"),
            ("tick_ms", &format!("tick_ms = 100\n{timeout}")),
        ])
    };
    for (timeout, ticks) in [("", 0), ("wait_timeout = 0", 0), ("wait_timeout = 1", 1)]
        .into_iter()
        .chain([("wait_timeout = 255", 255)])
    {
        let s = Scenario::parse(&waits(timeout), FILE).unwrap();
        assert_eq!(s.timing.wait_timeout, ticks, "{timeout:?}");
        let mut value = serde_json::to_value(&s).unwrap();
        assert_eq!(
            value["timing"].get("wait_timeout").and_then(|t| t.as_u64()),
            (ticks > 0).then_some(u64::from(ticks)),
            "{timeout:?}"
        );
        value.as_object_mut().unwrap().remove("path");
        let back = Scenario::parse(&toml::to_string(&value).unwrap(), FILE).unwrap();
        assert_eq!(back, s, "{timeout:?}");
    }
    for (timeout, message) in [
        ("wait_timeout = 256", "must be at most 255 (got 256)"),
        ("wait_timeout = 4294967296", "too large (got 4294967296)"),
        ("wait_timeout = -1", "must not be negative (got -1)"),
    ] {
        let msg = fail(
            &waits(timeout),
            "timing.wait_timeout",
            20,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.contains(message), "{msg}");
    }
    // No WAIT to time out.
    let text = set(
        &set(EXAMPLE, "tick_ms", "tick_ms = 100\nwait_timeout = 2"),
        "fencing",
        "fencing = false\nwait_replicas = 0",
    );
    let msg = fail(&text, "timing.wait_timeout", 20, KeyErrorKind::InvalidValue);
    assert!(msg.contains("wait_replicas = 0 sends no WAIT"), "{msg}");
    assert!(Scenario::parse(
        &set(EXAMPLE, "tick_ms", "tick_ms = 100\nwait_timeout = 0"),
        FILE
    )
    .is_ok());
}

#[test]
fn failover_needs_a_replica() {
    let msg = fail(
        &set(EXAMPLE, "failovers", "failovers = 1"),
        "faults.failovers",
        23,
        KeyErrorKind::InvalidValue,
    );
    assert!(
        msg.contains("a failover promotes a replica, but topology.replicas = 0"),
        "{msg}"
    );
}

#[test]
fn name_must_be_non_empty_and_match_the_file() {
    let msg = fail(
        &set(EXAMPLE, "name", "name = \"\""),
        "name",
        1,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.ends_with("must not be empty"), "{msg}");

    let text = format!("# a comment\n{EXAMPLE}");
    let err = Scenario::parse(&text, "scenarios/other.toml").unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.kind(), Some(KeyErrorKind::NameMismatch));
    assert!(
        msg.starts_with("scenarios/other.toml:2: key `name`: must equal the file name without .toml, `other` (got `redlock-gc-pause`)"),
        "{msg}"
    );
}

#[test]
fn properties_and_expectations() {
    assert_eq!(
        Property::ALL.map(Property::as_str),
        [
            "mutual_exclusion",
            "owner_only_release",
            "no_orphaned_lock",
            "resource_safety"
        ]
    );
    assert_eq!(
        Property::ALL.map(Property::as_str).to_vec(),
        EXPECT_KEYS[..Property::ALL.len()].to_vec()
    );
    for p in Property::ALL {
        assert_eq!(p.as_str().parse::<Property>(), Ok(p));
        assert_eq!(p.to_string(), p.as_str());
        assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
    }
    assert!("liveness".parse::<Property>().is_err());
    assert_eq!("holds".parse::<Expectation>(), Ok(Expectation::Holds));
    assert_eq!(Expectation::Violated.to_string(), "violated");
}

/// A fresh, empty directory under the system temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("locklab-scenario-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_scenario(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    fs::write(&path, set(EXAMPLE, "name", &format!("name = \"{name}\""))).unwrap();
    path
}

#[test]
fn load_dir_sorts_by_file_name_and_skips_other_files() {
    let dir = temp_dir("sorted");
    write_scenario(&dir, "b-second");
    write_scenario(&dir, "a-first");
    fs::write(dir.join("README.md"), "not a scenario").unwrap();
    let names: Vec<_> = load_dir(&dir)
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["a-first", "b-second"]);

    // load: the same, from a file.
    let s = Scenario::load(dir.join("a-first.toml")).unwrap();
    assert_eq!(s.path, dir.join("a-first.toml"));

    // A file and the directory holding it: loaded once.
    let all = load_paths(&[dir.join("b-second.toml"), dir.clone()]).unwrap();
    let names: Vec<_> = all.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["b-second", "a-first"]);

    // An error in one file is reported with that file's path.
    fs::write(
        dir.join("c-bad.toml"),
        set(EXAMPLE, "name", "name = \"c-bad\"\nbogus = 1"),
    )
    .unwrap();
    let err = load_dir(&dir).unwrap_err();
    assert_eq!(err.path(), dir.join("c-bad.toml"));
    assert_eq!(err.line(), Some(2));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn load_paths_errors() {
    let dir = temp_dir("errors");
    // Missing path.
    let err = load_paths(&[dir.join("nope.toml")]).unwrap_err();
    assert!(matches!(err, ScenarioError::Io { .. }), "{err}");
    assert!(err.to_string().starts_with(&format!(
        "{}: cannot read: ",
        dir.join("nope.toml").display()
    )));
    // Empty directory.
    let err = load_dir(&dir).unwrap_err();
    assert_eq!(err, ScenarioError::NoScenarios { path: dir.clone() });
    // Same name in two directories.
    let (one, two) = (dir.join("one"), dir.join("two"));
    fs::create_dir_all(&one).unwrap();
    fs::create_dir_all(&two).unwrap();
    write_scenario(&one, "same");
    write_scenario(&two, "same");
    let err = load_paths(&[one.clone(), two.clone()]).unwrap_err();
    assert_eq!(err.kind(), Some(KeyErrorKind::DuplicateName));
    assert_eq!(err.line(), Some(1));
    assert_eq!(err.path(), two.join("same.toml"));
    assert!(
        err.to_string().contains(&format!(
            "also defined in {}",
            one.join("same.toml").display()
        )),
        "{err}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn watchdog_and_renewal_rule_forms() {
    let renewing = |extra: &str| {
        edit(&[
            ("design", "design = \"watchdog\""),
            ("masters", "masters = 1"),
            ("fencing", &format!("fencing = false\n{extra}")),
        ])
    };
    let renewal = |extra: &str| Scenario::parse(&renewing(extra), FILE).unwrap().renewal;
    let r = renewal("").unwrap();
    assert!(r.watchdog);
    assert_eq!(r.renewal_on_error, RenewalOnError::Stop);
    assert!(!renewal("watchdog = false").unwrap().watchdog);
    let r = renewal("renewal_on_error = \"retry\"").unwrap();
    assert_eq!(r.renewal_on_error, RenewalOnError::Retry);
    assert_eq!(Scenario::parse(EXAMPLE, FILE).unwrap().renewal, None);
    let msg = fail(
        &renewing("renewal_on_error = \"sometimes\""),
        "renewal_on_error",
        5,
        KeyErrorKind::InvalidValue,
    );
    assert!(msg.contains("`sometimes` is not a renewal rule"), "{msg}");
    let msg = fail(
        &renewing("watchdog = \"off\""),
        "watchdog",
        5,
        KeyErrorKind::WrongType,
    );
    assert!(msg.contains("a boolean"), "{msg}");
    // Redlock renews nothing: both keys are refused.
    for extra in ["watchdog = false", "renewal_on_error = \"retry\""] {
        let key = extra.split(' ').next().unwrap();
        let text = set(EXAMPLE, "fencing", &format!("fencing = false\n{extra}"));
        let msg = fail(&text, key, 5, KeyErrorKind::InvalidValue);
        assert!(msg.contains("design `redlock`"), "{msg}");
    }
}

#[test]
fn expect_cause_names_budgeted_faults_or_step_delays() {
    use crate::cause::Ingredient;
    use crate::model::FaultKind;
    use Property::*;
    let with = |cause: &str| format!("{EXAMPLE}cause = {cause}\n");
    let pause = Ingredient::Fault(FaultKind::Pause);
    let delays = Ingredient::StepDelays;
    let s = Scenario::parse(&with("[\"step_delays\", \"pauses\"]"), FILE).unwrap();
    let both = [pause, delays];
    let stated = s.expect.cause.as_ref().unwrap();
    assert_eq!(stated.of(MutualExclusion), Some(&both[..]));
    assert_eq!(stated.of(ResourceSafety), Some(&both[..]));
    assert_eq!(stated.of(NoOrphanedLock), None);
    // The table form, one list per property expected violated.
    let table = with("{ resource_safety = [], mutual_exclusion = [\"pauses\"] }");
    let s = Scenario::parse(&table, FILE).unwrap();
    assert_eq!(
        s.expect.cause,
        Some(ExpectedCauses(vec![
            (MutualExclusion, vec![pause]),
            (ResourceSafety, Vec::new())
        ]))
    );
    // Written back (as a trace embeds its scenario), it reads the same.
    let mut value = serde_json::to_value(&s).unwrap();
    value.as_object_mut().unwrap().remove("path");
    let text = toml::to_string(&value).unwrap();
    assert_eq!(Scenario::parse(&text, FILE).unwrap().expect, s.expect);
    assert_eq!(Scenario::parse(EXAMPLE, FILE).unwrap().expect.cause, None);
    let invalid = KeyErrorKind::InvalidValue;
    let msg = fail(&with("[\"pause\"]"), "expect.cause", 33, invalid);
    assert!(
        msg.contains("`pause` is not a cause; causes: pauses,"),
        "{msg}"
    );
    let msg = fail(
        &with("[\"pauses\", \"pauses\"]"),
        "expect.cause",
        33,
        invalid,
    );
    assert!(msg.contains("listed twice"), "{msg}");
    let msg = fail(&with("[\"crashes\"]"), "expect.cause", 33, invalid);
    assert!(msg.contains("faults.crashes = 0"), "{msg}");
    // The masters' clock drift is a cause only where the scenario has one.
    let msg = fail(&with("[\"node_drift\"]"), "expect.cause", 33, invalid);
    assert!(msg.contains("timing.node_drift = 0"), "{msg}");
    let drifting = with("[\"node_drift\", \"step_delays\"]").replace(
        "[timing]                       #",
        "[timing]\nnode_drift = 1\n#",
    );
    let s = Scenario::parse(&drifting, FILE).unwrap();
    assert_eq!(
        s.expect.cause.as_ref().unwrap().of(MutualExclusion),
        Some(&[Ingredient::NodeDrift, delays][..])
    );
    fail(
        &with("\"pauses\""),
        "expect.cause",
        33,
        KeyErrorKind::WrongType,
    );
    fail(&with("[1]"), "expect.cause", 33, KeyErrorKind::WrongType);
    let holds = with("[]").replace("= \"violated\"", "= \"holds\"");
    let msg = fail(&holds, "expect.cause", 33, invalid);
    assert!(msg.contains("every property is expected to hold"), "{msg}");
    let one = with("{ mutual_exclusion = [\"pauses\"] }");
    let msg = fail(&one, "expect.cause", 33, invalid);
    assert!(
        msg.contains("resource_safety is expected violated"),
        "{msg}"
    );
    let held = with("{ mutual_exclusion = [], resource_safety = [], no_orphaned_lock = [] }");
    let msg = fail(&held, "expect.cause.no_orphaned_lock", 33, invalid);
    assert!(msg.contains("expected to hold"), "{msg}");
    let typo = with("{ mutual_exclusion = [], resource_safty = [] }");
    fail(&typo, "expect.cause.resource_safty", 33, invalid);
}
