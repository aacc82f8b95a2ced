//! Every number of a scenario is honoured exactly or refused naming its key: values across
//! each key's accepted range (edges, 127/128/255/256, the maximum) give the verdict an
//! independent argument predicts, and values outside it are scenario errors.

use locklab_model::model::LockModel;
use locklab_model::scenario::{Property, Scenario, ScenarioError};
use locklab_model::search::{search, SearchOptions, SearchResult};

/// Values that a narrowing to u8 or i8 would turn into other values.
const EDGES: [u32; 8] = [127, 128, 200, 255, 256, 257, 1000, u32::MAX];

struct Numbers {
    design: &'static str,
    ttl: u64,
    work: u64,
    max_step_delay: u64,
    horizon: u64,
    clock_jump: u64,
    faults: &'static str,
}

const BASE: Numbers = Numbers {
    design: "lua-release",
    ttl: 6,
    work: 2,
    max_step_delay: 1,
    horizon: 9,
    clock_jump: 6,
    faults: "",
};

fn text(n: &Numbers) -> String {
    format!(
        r#"name = "ranges"
design = "{}"
[clients]
count = 2
[timing]
ttl = {}
work = {}
max_step_delay = {}
horizon = {}
clock_jump = {}
[faults]
{}
[expect]
mutual_exclusion = "holds"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "holds"
"#,
        n.design, n.ttl, n.work, n.max_step_delay, n.horizon, n.clock_jump, n.faults
    )
}

fn parse(n: &Numbers) -> Result<Scenario, ScenarioError> {
    Scenario::parse(&text(n), "ranges.toml")
}

/// Searched to the end, or until each of `stop_when_violated` is violated.
fn searched(n: &Numbers, stop_when_violated: Vec<Property>) -> SearchResult {
    let sc = parse(n).expect("scenario in range parses");
    let opts = SearchOptions {
        threads: 1,
        max_depth: None,
        stop_when_violated,
        ..SearchOptions::default()
    };
    search(&LockModel::new(&sc), &opts, |_| {})
}

fn check(n: &Numbers) -> SearchResult {
    searched(n, Vec::new())
}

/// Searched until `property` is violated (or to the end): enough to know whether it is.
fn violates(n: &Numbers, property: Property) -> bool {
    searched(n, vec![property])
        .counterexample(property)
        .is_some()
}

fn verdicts(r: &SearchResult) -> Vec<(Property, bool)> {
    r.counterexamples
        .iter()
        .map(|(p, c)| (*p, c.is_none()))
        .collect()
}

fn refused(n: &Numbers, key: &str, range: &str) {
    let e = parse(n).expect_err("out of range");
    assert_eq!(e.key(), Some(key), "{e}");
    assert!(e.line().is_some(), "{e}");
    assert!(e.to_string().contains("ranges.toml"), "{e}");
    assert!(e.to_string().contains(range), "{key}: {e}");
}

/// A forward jump of the master's clock past the lease expires the key, whatever the
/// jump's size: the other client then acquires while the first still holds. This is the
/// case an `as i8` offset turned into a backward jump (128 -> -128).
#[test]
fn a_node_clock_jump_past_the_ttl_breaks_every_single_master_design() {
    let designs = [
        "set-px-del",
        "set-px-get-del",
        "lua-release",
        "watchdog",
        "reentrant",
    ];
    for design in designs {
        let jumps: Vec<u32> = if design == "lua-release" {
            [7].into_iter().chain(EDGES).collect()
        } else {
            vec![7, 128, 256, u32::MAX]
        };
        for jump in jumps {
            let n = Numbers {
                design,
                clock_jump: jump.into(),
                faults: "clock_jumps = 1",
                ..BASE
            };
            assert!(
                violates(&n, Property::MutualExclusion),
                "{design}: clock_jump = {jump} must break mutual_exclusion"
            );
        }
    }
}

/// `max_step_delay` bounds how many ticks a step may wait; a client waits at most
/// `horizon` ticks, so every delay of at least `horizon` explores the same space, and a
/// delay of 257 is not a delay of 1.
#[test]
fn max_step_delay_is_honoured_across_its_range() {
    let at = |d: u64| {
        check(&Numbers {
            ttl: 3,
            work: 1,
            max_step_delay: d,
            horizon: 6,
            ..BASE
        })
    };
    let unbounded = at(6);
    let one = at(1);
    assert_ne!(one.unique_states, unbounded.unique_states);
    for d in [7].into_iter().chain(EDGES) {
        let r = at(d.into());
        assert_eq!(
            r.unique_states, unbounded.unique_states,
            "max_step_delay = {d}"
        );
        assert_eq!(verdicts(&r), verdicts(&unbounded), "max_step_delay = {d}");
    }
    refused(
        &Numbers {
            max_step_delay: 0,
            ..BASE
        },
        "timing.max_step_delay",
        "at least 1",
    );
    refused(
        &Numbers {
            max_step_delay: u64::from(u32::MAX) + 1,
            ..BASE
        },
        "timing.max_step_delay",
        "too large",
    );
}

/// A client works `work` ticks before its write; with `work` past the horizon no client
/// ever writes, so nothing is purchased and the resource is never overdrawn.
#[test]
fn work_is_honoured_across_its_range() {
    for w in [7u32, 8].into_iter().chain(EDGES) {
        let r = check(&Numbers {
            work: w.into(),
            horizon: 6,
            ..BASE
        });
        assert!(!r.purchased, "work = {w}: no write fits in 6 ticks");
        assert!(
            r.counterexample(Property::ResourceSafety).is_none(),
            "work = {w}"
        );
    }
    let r = check(&Numbers {
        work: 2,
        horizon: 6,
        ..BASE
    });
    assert!(r.purchased, "work = 2 fits in 6 ticks");
}

/// A lease longer than the horizon never expires within it: the correct single-master
/// lock holds under a pause whatever the ttl's size, and breaks with a short one.
#[test]
fn ttl_is_honoured_across_its_range() {
    for ttl in [10u32].into_iter().chain(EDGES) {
        let r = check(&Numbers {
            ttl: ttl.into(),
            work: 1,
            horizon: 7,
            clock_jump: 1,
            faults: "pauses = 1",
            ..BASE
        });
        assert!(
            r.counterexample(Property::MutualExclusion).is_none(),
            "ttl = {ttl}"
        );
        assert!(r.purchased, "ttl = {ttl}");
    }
    let r = check(&Numbers {
        ttl: 2,
        work: 1,
        horizon: 7,
        clock_jump: 1,
        faults: "pauses = 1",
        ..BASE
    });
    assert!(r.counterexample(Property::MutualExclusion).is_some());
    refused(&Numbers { ttl: 0, ..BASE }, "timing.ttl", "at least 1");
}

/// The capped keys: accepted up to their cap, refused past it with the range named.
#[test]
fn capped_keys_are_refused_past_their_range() {
    for h in [1u64, 64] {
        parse(&Numbers { horizon: h, ..BASE }).expect("horizon in range");
    }
    for h in [0u64, 65, 128, 256] {
        let e = parse(&Numbers { horizon: h, ..BASE }).expect_err("horizon out of range");
        assert_eq!(e.key(), Some("timing.horizon"), "{e}");
    }
    for key in ["pauses", "crashes", "restarts", "partitions", "clock_jumps"] {
        for v in [0u32, 1, 127, 128, 255] {
            let faults: &'static str = Box::leak(format!("{key} = {v}").into_boxed_str());
            parse(&Numbers { faults, ..BASE }).expect("fault budget in range");
        }
        for v in [256u32, 257, 1000, u32::MAX] {
            let faults: &'static str = Box::leak(format!("{key} = {v}").into_boxed_str());
            refused(
                &Numbers { faults, ..BASE },
                &format!("faults.{key}"),
                "0..=255",
            );
        }
    }
    let with_tick = |ms: &str| {
        Scenario::parse(
            &text(&BASE).replace("clock_jump =", &format!("tick_ms = {ms}\nclock_jump =")),
            "ranges.toml",
        )
    };
    for ms in ["1", "255", "256", "60000"] {
        with_tick(ms).expect("tick_ms in range");
    }
    for ms in ["0", "60001", "4294967296", "-1"] {
        let e = with_tick(ms).expect_err("tick_ms out of range");
        assert_eq!(e.key(), Some("timing.tick_ms"), "{e}");
    }
}

/// Clock jumps add up without wrapping: three jumps of 128 ticks (384, past an i8) still
/// move the clock forward.
#[test]
fn large_budgets_and_jumps_add_up() {
    let r = check(&Numbers {
        clock_jump: 128,
        horizon: 6,
        faults: "clock_jumps = 3",
        ..BASE
    });
    assert!(r.counterexample(Property::MutualExclusion).is_some());
}

/// `timing.wait_timeout`, the ticks a WAIT may block: a WAIT whose timeout cannot run
/// out within the horizon reads the same whatever the timeout's size (the same states,
/// the same verdicts: 255 is not a timeout of 0 or 1), one that can run out within it
/// does not, and 256 and beyond are refused, not narrowed.
#[test]
fn wait_timeout_is_honoured_across_its_range() {
    let at = |timeout: u64| {
        Scenario::parse(
            &text(&Numbers {
                ttl: 6,
                work: 1,
                horizon: 6,
                ..BASE
            })
            .replace("design =", "wait_replicas = 1\ndesign =")
            .replace("[clients]", "[topology]\nreplicas = 1\n[clients]")
            .replace(
                "clock_jump =",
                &format!("wait_timeout = {timeout}\nclock_jump ="),
            ),
            "ranges.toml",
        )
    };
    let search = |timeout: u64| {
        let sc = at(timeout).expect("wait_timeout in range");
        let opts = SearchOptions {
            threads: 1,
            max_depth: None,
            ..SearchOptions::default()
        };
        search(&LockModel::new(&sc), &opts, |_| {})
    };
    // Delivered at tick 0 at the earliest, a WAIT of 6 ticks or more answers after tick
    // 6, the horizon: it only ever blocks, or answers a replica.
    let never = search(6);
    assert!(never.purchased);
    for timeout in [7, 127, 128, 200, 255] {
        let r = search(timeout);
        assert_eq!(
            r.unique_states, never.unique_states,
            "wait_timeout = {timeout}"
        );
        assert_eq!(verdicts(&r), verdicts(&never), "wait_timeout = {timeout}");
    }
    for timeout in [0, 1, 5] {
        assert_ne!(
            search(timeout).unique_states,
            never.unique_states,
            "wait_timeout = {timeout} runs out within the horizon"
        );
    }
    for timeout in [256, 257, 1000, u64::from(u32::MAX)] {
        let e = at(timeout).expect_err("wait_timeout out of range");
        assert_eq!(e.key(), Some("timing.wait_timeout"), "{e}");
        assert!(e.to_string().contains("0..=255"), "{e}");
    }
}
