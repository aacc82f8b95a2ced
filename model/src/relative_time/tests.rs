use std::collections::HashSet;
use std::path::Path;

use stateright::Model;

use super::*;
use crate::model::{fingerprint, Action};
use crate::scenario::{load_dir, Property};
use crate::search::{search, SearchOptions};
use crate::walk::SplitMix64;

/// Every shipped scenario and custom lock that can run without a horizon, with its
/// horizon taken away.
fn unbounded_scenarios() -> Vec<Scenario> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut scenarios = load_dir(root.join("scenarios")).unwrap();
    scenarios.extend(load_dir(root.join("examples/custom")).unwrap());
    assert!(scenarios.len() >= 40, "{} scenarios", scenarios.len());
    scenarios
        .into_iter()
        .filter(|sc| needs_horizon(sc).is_none())
        .map(|mut sc| {
            sc.timing.horizon = None;
            sc
        })
        .collect()
}

/// Reachable states as the model makes them (clock not rebased): the first `near` of a
/// breadth-first walk, and the states along `walks` seeded random walks of at most
/// `steps` steps each, which reach clocks far from 0.
fn sample(model: &LockModel, near: usize, walks: u64, steps: usize) -> Vec<State> {
    let mut out = model.init_states();
    let mut seen: HashSet<u64> = out.iter().map(fingerprint).collect();
    let mut actions = Vec::new();
    let mut k = 0;
    while k < out.len() && out.len() < near {
        actions.clear();
        model.actions(&out[k], &mut actions);
        for &a in &actions {
            if let Some(n) = model.next_state(&out[k], a) {
                if seen.insert(fingerprint(&n)) {
                    out.push(n);
                }
            }
        }
        k += 1;
    }
    for w in 0..walks {
        let mut rng = SplitMix64(w.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x7135);
        let mut s = model.init_states().remove(0);
        // Short of the clock's last value, where a run replayed from tick 0 stops
        // ticking (`tick_enabled`); the search's clock is always 0 or 1 there.
        for _ in 0..steps {
            if s.now >= u8::MAX - 1 {
                break;
            }
            actions.clear();
            model.actions(&s, &mut actions);
            if actions.is_empty() {
                break;
            }
            // Ticks taken more often than chance, so that clocks move far from 0.
            let a = if actions.contains(&Action::Tick) && rng.below(3) == 0 {
                Action::Tick
            } else {
                actions[rng.below(actions.len())]
            };
            s = model.next_state(&s, a).expect("an offered step applies");
            if seen.insert(fingerprint(&s)) {
                out.push(s.clone());
            }
        }
    }
    out
}

fn rebased(model: &LockModel, s: &State) -> State {
    let mut r = s.clone();
    model.rebase(&mut r);
    r
}

/// `s` and its rebased form are bisimilar, one step deep.
fn check_state(model: &LockModel, s: &State) {
    crate::bisimilar::one_step(model, s, |t| rebased(model, t), "rebased");
}

/// Rebasing is exact on every scenario that can run without a horizon: checked on
/// states near the start and along random walks that move the clock far from 0, where
/// leases have long expired and starts lie far in the past. Some states of each
/// scenario must hold a time at its floor, or the check would not reach the second half
/// of the argument.
fn rebasing_is_exact_on(near: usize, walks: u64, steps: usize) {
    let scenarios = unbounded_scenarios();
    assert!(scenarios.len() >= 30, "{} scenarios", scenarios.len());
    let mut held = 0;
    for sc in &scenarios {
        let model = LockModel::new(sc);
        let states = sample(&model, near, walks, steps);
        let moved = states.iter().filter(|s| s.now > 0).count();
        assert!(moved > 0, "{}: no state with its clock past 0", sc.name);
        for s in &states {
            check_state(&model, s);
            // A time at its floor: shifting alone would have left it lower.
            let mut shifted = s.clone();
            shift_only(&mut shifted);
            held += usize::from(shifted != rebased(&model, s));
        }
    }
    assert!(held > 0, "no state held a time at its floor");
}

/// The shift without the floors: every time moved by the clock.
fn shift_only(s: &mut State) {
    let by = -i64::from(s.now);
    s.now = 0;
    for node in &mut s.nodes {
        for (_, e) in &mut node.data.entries {
            if let Some(at) = &mut e.expires_at {
                *at += by;
            }
        }
    }
    for c in &mut s.clients {
        c.core.machine.shift_times(by, i64::MIN);
    }
}

#[test]
fn rebasing_keeps_the_behaviours_of_a_sample() {
    rebasing_is_exact_on(150, 6, 120);
}

#[test]
#[ignore = "second tier (minutes): `bash .ci/run` runs it, as does `cargo test --workspace --release -- --ignored`"]
fn rebasing_keeps_every_behaviour() {
    rebasing_is_exact_on(1_500, 60, 300);
}

/// A small lua-release scenario with `faults` and the given horizon line.
fn lua_release(faults: &str, horizon: &str) -> Scenario {
    let text = format!(
        "name = \"t\"\ndesign = \"lua-release\"\n[topology]\nmasters = 1\n\
         [clients]\ncount = 2\n[timing]\nttl = 3\nwork = 1\nmax_step_delay = 1\n{horizon}\
         [faults]\n{faults}\n[expect]\nmutual_exclusion = \"holds\"\n\
         owner_only_release = \"holds\"\nno_orphaned_lock = \"holds\"\n\
         resource_safety = \"holds\"\n"
    );
    Scenario::parse(&text, "t.toml").unwrap()
}

/// Verdicts and shortest lengths of a search of `sc`.
fn outcome(sc: &Scenario, options: &SearchOptions) -> Vec<(Property, Option<usize>)> {
    let model = LockModel::new(sc);
    let r = search(&model, options, |_| {});
    assert!(r.complete, "{}: search incomplete", sc.name);
    Property::ALL
        .into_iter()
        .map(|p| (p, r.counterexample(p).map(<[Action]>::len)))
        .collect()
}

/// Without a horizon the search ends, and agrees with searches to ever longer horizons
/// once they are long enough for every run to finish: the same verdicts, the same
/// shortest counterexamples. The plain search (no reduction) and the reduced one agree
/// on the relative clock too.
#[test]
fn a_search_without_horizon_agrees_with_long_horizons() {
    for faults in ["", "pauses = 1", "crashes = 1", "lost_replies = 1"] {
        let free = lua_release(faults, "");
        let plain = outcome(&free, &SearchOptions::plain());
        assert_eq!(plain, outcome(&free, &SearchOptions::default()), "{faults}");
        let long = outcome(
            &lua_release(faults, "horizon = 24\n"),
            &SearchOptions::default(),
        );
        assert_eq!(plain, long, "faults {faults:?}");
    }
}

/// Rebasing makes the space smaller than a horizon's: states that differ only by when
/// they happen are one.
#[test]
fn relative_time_merges_states_that_differ_only_by_when() {
    let count = |sc: &Scenario| {
        let r = search(&LockModel::new(sc), &SearchOptions::plain(), |_| {});
        r.unique_states
    };
    let free = count(&lua_release("pauses = 1", ""));
    let bounded = count(&lua_release("pauses = 1", "horizon = 24\n"));
    assert!(
        free < bounded,
        "{free} states without a horizon, {bounded} with 24"
    );
}

#[test]
fn getset_and_a_clock_reading_custom_lock_need_a_horizon() {
    let getset = "name = \"g\"\ndesign = \"getset-timestamp\"\n[topology]\nmasters = 1\n\
                  [clients]\ncount = 2\n[timing]\nttl = 3\nwork = 1\nmax_step_delay = 1\n\
                  [faults]\n[expect]\nmutual_exclusion = \"holds\"\n\
                  owner_only_release = \"holds\"\nno_orphaned_lock = \"holds\"\n\
                  resource_safety = \"holds\"\n";
    let e = Scenario::parse(getset, "g.toml").unwrap_err().to_string();
    assert!(e.contains("g.toml") && e.contains("timing.horizon"), "{e}");
    assert!(e.contains("g.toml:7"), "{e}");
    assert!(e.contains("getset-timestamp"), "{e}");
    let with = getset.replace("max_step_delay = 1\n", "max_step_delay = 1\nhorizon = 8\n");
    Scenario::parse(&with, "g.toml").unwrap();

    let custom = "name = \"c\"\ndesign = \"custom\"\n[topology]\nmasters = 1\n\
                  [clients]\ncount = 2\n[timing]\nttl = 3\nwork = 1\nmax_step_delay = 1\n\
                  [lock.acquire]\nscript = \"local t = redis.call('time') \
                  return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])\"\n\
                  keys = [\"{key}\"]\nargs = [\"{token}\", \"{ttl}\"]\ngranted = \"OK\"\n\
                  [lock.release]\ncommand = [\"DEL\", \"{key}\"]\nreleased = 1\n\
                  [faults]\n[expect]\nmutual_exclusion = \"holds\"\n\
                  owner_only_release = \"holds\"\nno_orphaned_lock = \"holds\"\n\
                  resource_safety = \"holds\"\n";
    let e = Scenario::parse(custom, "c.toml").unwrap_err().to_string();
    assert!(
        e.contains("timing.horizon") && e.contains("`acquire`"),
        "{e}"
    );
    assert!(e.contains("TIME"), "{e}");
    let plain = custom.replace("local t = redis.call('time') ", "");
    let sc = Scenario::parse(&plain, "c.toml").unwrap();
    assert_eq!(sc.timing.horizon, None);
}
