//! What the visited set's fingerprints risk, and the guards: the reported collision bound,
//! the re-check of every counterexample against the model, and random walks that never
//! claim "holds".

use std::collections::HashSet;

use locklab_model::model::{Action, LockModel};
use locklab_model::recheck::{recheck, PathError};
use locklab_model::scenario::{Property, Scenario};
use locklab_model::search::{search, Reduction, SearchOptions, Strategy};
use locklab_model::state::State;
use locklab_model::walk::{random_walks, WalkOptions};
use stateright::Model;

fn scenario(design: &str, ttl: u32, horizon: u32, faults: &str) -> Scenario {
    let text = format!(
        r#"name = "fp"
design = "{design}"
[clients]
count = 2
[timing]
ttl = {ttl}
work = 1
max_step_delay = 1
horizon = {horizon}
[faults]
{faults}
[expect]
mutual_exclusion = "holds"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "holds"
"#
    );
    Scenario::parse(&text, "fp.toml").expect("test scenario parses")
}

/// No reduction but, if asked, symmetry: what the whole-state reference compares with.
fn opts(symmetry: bool, bits: u32) -> SearchOptions {
    let plain = SearchOptions::plain();
    SearchOptions {
        reductions: if symmetry {
            plain.reductions.with(Reduction::Symmetry)
        } else {
            plain.reductions
        },
        fingerprint_bits: bits,
        ..plain
    }
}

/// The shortest violation of each property by a breadth-first search that stores whole
/// states (no fingerprints, no symmetry): the reference.
fn reference(model: &LockModel) -> (usize, Vec<Option<usize>>) {
    let mut shortest = vec![None; Property::ALL.len()];
    let mut seen: HashSet<State> = HashSet::new();
    let mut level: Vec<State> = model.init_states();
    seen.extend(level.iter().cloned());
    let mut depth = 0;
    let mut actions = Vec::new();
    while !level.is_empty() {
        for s in &level {
            for (k, p) in Property::ALL.iter().enumerate() {
                if shortest[k].is_none() && !model.holds(*p, s) {
                    shortest[k] = Some(depth);
                }
            }
        }
        let mut next = Vec::new();
        for s in &level {
            actions.clear();
            model.actions(s, &mut actions);
            for &a in &actions {
                if let Some(n) = model.next_state(s, a).filter(|n| model.within_boundary(n)) {
                    if seen.insert(n.clone()) {
                        next.push(n);
                    }
                }
            }
        }
        level = next;
        depth += 1;
    }
    (seen.len(), shortest)
}

fn lengths(r: &locklab_model::search::SearchResult) -> Vec<Option<usize>> {
    Property::ALL
        .iter()
        .map(|&p| r.counterexample(p).map(<[Action]>::len))
        .collect()
}

/// With 64-bit fingerprints the search agrees with a search over whole states and reports
/// a negligible collision bound. Truncated to a few bits, fingerprints collide, states
/// are hidden and verdicts or lengths go wrong; the run's reported bound is then 1, and
/// what it still reports as a counterexample is a real one (re-checked).
#[test]
fn weak_fingerprints_hide_states_and_the_bound_says_so() {
    let sc = scenario("set-px-del", 3, 8, "pauses = 1");
    let model = LockModel::new(&sc);
    let (unique, want) = reference(&model);
    assert!(want.iter().filter(|l| l.is_some()).count() >= 2);

    let full = search(&model, &opts(false, 64), |_| {});
    assert_eq!(full.unique_states, unique as u64);
    assert_eq!(lengths(&full), want);
    assert!(full.unverified.is_empty());
    assert!(
        full.collision_probability() < 1e-9,
        "{}",
        full.collision_probability()
    );

    let mut wrong = 0;
    for bits in [4, 6, 8, 10] {
        for symmetry in [false, true] {
            let weak = search(&model, &opts(symmetry, bits), |_| {});
            assert_eq!(weak.fingerprint_bits, bits);
            assert!(weak.unique_states <= 1 << bits);
            let got = lengths(&weak);
            if got != want {
                wrong += 1;
                assert_eq!(weak.collision_probability(), 1.0, "{bits} bits");
            }
            for (k, &p) in Property::ALL.iter().enumerate() {
                if let Some(c) = weak.counterexample(p) {
                    recheck(&model, p, c).expect("a reported counterexample is real");
                    assert!(Some(c.len()) >= want[k], "never shorter than the shortest");
                }
            }
        }
    }
    assert!(
        wrong > 0,
        "truncated fingerprints changed no verdict or length"
    );
}

/// The re-check rejects every way a path can fail to be a counterexample.
#[test]
fn recheck_rejects_paths_that_are_not_counterexamples() {
    let sc = scenario("set-px-del", 3, 8, "pauses = 1");
    let model = LockModel::new(&sc);
    let r = search(&model, &opts(true, 64), |_| {});
    let p = Property::MutualExclusion;
    let good = r
        .counterexample(p)
        .expect("a pause breaks set-px-del")
        .to_vec();
    let states = recheck(&model, p, &good).expect("the search's path is a counterexample");
    assert_eq!(states.len(), good.len() + 1);

    // One step short: the property still holds.
    assert_eq!(
        recheck(&model, p, &good[..good.len() - 1]),
        Err(PathError::NotBroken { property: p })
    );
    // A step the model does not offer (client 1 receives a reply it never asked for).
    let mut bad = good.clone();
    bad.insert(0, Action::Receive(0, 0));
    assert!(matches!(
        recheck(&model, p, &bad),
        Err(PathError::NotEnabled { step: 1, .. })
    ));
    // Past the break: one more enabled step after the violation.
    let last = states.last().unwrap();
    let mut offered = Vec::new();
    model.actions(last, &mut offered);
    let more = offered
        .into_iter()
        .find(|&a| {
            model
                .next_state(last, a)
                .is_some_and(|n| model.within_boundary(&n))
        })
        .expect("the violating state has a successor");
    let mut longer = good.clone();
    longer.push(more);
    assert_eq!(
        recheck(&model, p, &longer),
        Err(PathError::BrokenEarly {
            property: p,
            step: good.len()
        })
    );
}

/// A result whose path does not re-check loses it: the property is listed as unverified,
/// never as holding.
#[test]
fn a_failing_path_moves_to_unverified() {
    let sc = scenario("set-px-del", 3, 8, "pauses = 1");
    let model = LockModel::new(&sc);
    let mut r = search(&model, &opts(true, 64), |_| {});
    let p = Property::MutualExclusion;
    for (q, c) in &mut r.counterexamples {
        if *q == p {
            c.as_mut().unwrap().pop();
        }
    }
    r.recheck(&model);
    assert!(r.counterexample(p).is_none());
    assert_eq!(r.unverified(p), Some(&PathError::NotBroken { property: p }));
}

/// Random walks find real counterexamples, never shorter than the shortest, never for a
/// property the exhaustive search proves; the same seed gives the same walks.
#[test]
fn random_walks_find_real_counterexamples_only() {
    let sc = scenario("set-px-del", 3, 8, "pauses = 1");
    let model = LockModel::new(&sc);
    let exhaustive = search(&model, &opts(true, 64), |_| {});
    let walks = WalkOptions {
        walks: 300,
        seed: 7,
        ..WalkOptions::default()
    };
    let a = random_walks(&model, &walks);
    assert_eq!(
        a.strategy,
        Strategy::Random {
            walks: 300,
            seed: 7
        }
    );
    assert!(a.purchased);
    assert!(a.unverified.is_empty());
    let mut found = 0;
    for p in Property::ALL {
        match (a.counterexample(p), exhaustive.counterexample(p)) {
            (Some(c), Some(shortest)) => {
                found += 1;
                recheck(&model, p, c).expect("a walk's counterexample is real");
                assert!(c.len() >= shortest.len(), "{p}");
            }
            (Some(_), None) => panic!("{p}: a walk broke a property the search proves"),
            _ => {}
        }
    }
    assert!(found > 0, "300 walks found nothing");
    let b = random_walks(&model, &walks);
    for p in Property::ALL {
        assert_eq!(
            a.counterexample(p),
            b.counterexample(p),
            "{p}: same seed, same walks"
        );
    }
    assert_eq!(a.states, b.states);
    let c = random_walks(&model, &WalkOptions { seed: 8, ..walks });
    assert_ne!(a.states, c.states, "another seed, other walks");
}
