//! The model against itself and against stateright's own checker, on small scenarios
//! written here (the shipped scenarios are checked by `locklab check`).

use locklab_model::model::{levels, Action, LockModel};
use locklab_model::scenario::{Property, Scenario};
use locklab_model::search::{replay, search, Reduction, SearchOptions};
use stateright::{Checker, Model};

fn scenario(name: &str, design: &str, ttl: u32, horizon: u32, faults: &str) -> Scenario {
    let text = format!(
        r#"name = "{name}"
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
    Scenario::parse(&text, format!("{name}.toml")).expect("test scenario parses")
}

fn opts(symmetry: bool, max_depth: Option<usize>) -> SearchOptions {
    let options = SearchOptions {
        threads: 1,
        max_depth,
        time_limit: None,
        ..SearchOptions::default()
    };
    if symmetry {
        options
    } else {
        options.without(Reduction::Symmetry)
    }
}

/// The model holds no lock logic of its own: swapping the Lua compare-and-delete release
/// for a plain DEL (lua-release -> set-px-del, whose only difference is the release in
/// src/) flips owner_only_release.
#[test]
fn a_release_without_owner_check_flips_the_verdict() {
    let safe = scenario("mutant", "lua-release", 3, 8, "pauses = 1");
    let broken = scenario("mutant", "set-px-del", 3, 8, "pauses = 1");
    let r = search(&LockModel::new(&safe), &opts(true, None), |_| {});
    assert!(r.purchased);
    assert!(r.counterexample(Property::OwnerOnlyRelease).is_none());
    let r = search(&LockModel::new(&broken), &opts(true, None), |_| {});
    assert!(r.counterexample(Property::OwnerOnlyRelease).is_some());
}

/// Every counterexample is the shortest: with one step less, the property holds.
#[test]
fn counterexamples_are_minimal() {
    let sc = scenario("minimal", "set-px-del", 3, 8, "pauses = 1");
    let model = LockModel::new(&sc);
    let r = search(&model, &opts(true, None), |_| {});
    let mut seen = 0;
    for (p, c) in &r.counterexamples {
        let Some(c) = c else { continue };
        seen += 1;
        let states = replay(&model, c).expect("the trace replays on concrete clients");
        assert!(
            !model.holds(*p, states.last().unwrap()),
            "{p} broken at the end"
        );
        assert!(
            states[..states.len() - 1]
                .iter()
                .all(|s| model.holds(*p, s)),
            "{p} only at the end"
        );
        let shorter = search(&model, &opts(true, Some(c.len() - 1)), |_| {});
        assert!(
            shorter.counterexample(*p).is_none(),
            "{p}: no trace of {} steps",
            c.len() - 1
        );
    }
    assert!(
        seen >= 2,
        "set-px-del with a pause breaks at least two properties"
    );
}

/// Symmetry reduction changes the number of states, never a verdict or a trace length.
#[test]
fn symmetry_keeps_verdicts_and_lengths() {
    for sc in [
        scenario("sym", "set-px-get-del", 3, 8, "pauses = 1"),
        scenario("sym", "naive-setnx", 4, 8, "crashes = 1"),
    ] {
        let model = LockModel::new(&sc);
        let a = search(&model, &opts(true, None), |_| {});
        let b = search(&model, &opts(false, None), |_| {});
        assert!(a.unique_states < b.unique_states);
        for p in Property::ALL {
            assert_eq!(
                a.counterexample(p).map(|c| c.len()),
                b.counterexample(p).map(|c| c.len()),
                "{p}"
            );
        }
    }
}

/// Our breadth-first search agrees with stateright's own checker on which properties
/// are violated.
#[test]
fn agrees_with_stateright_bfs() {
    let sc = scenario("agree", "setnx-expire", 3, 7, "crashes = 1");
    let model = LockModel::new(&sc);
    let ours = search(&model, &opts(false, None), |_| {});
    let checker = LockModel::new(&sc).checker().spawn_bfs().join();
    for p in Property::ALL {
        let theirs = checker.discovery(p.as_str()).is_some();
        assert_eq!(ours.counterexample(p).is_some(), theirs, "{p}");
    }
    assert!(checker.unique_state_count() > 0);
}

/// Two threads find the same verdicts and trace lengths as one.
#[test]
fn threads_agree() {
    let sc = scenario("threads", "lua-release", 3, 8, "pauses = 1");
    let model = LockModel::new(&sc);
    let one = search(&model, &opts(true, None), |_| {});
    let two = search(
        &model,
        &SearchOptions {
            threads: 2,
            ..opts(true, None)
        },
        |_| {},
    );
    assert_eq!(one.unique_states, two.unique_states);
    for p in Property::ALL {
        assert_eq!(
            one.counterexample(p).map(|c| c.len()),
            two.counterexample(p).map(|c| c.len())
        );
    }
}

/// Redlock on three masters, small enough to search without symmetry.
fn redlock(name: &str, horizon: u32, faults: &str, fencing: bool) -> Scenario {
    let text = format!(
        r#"name = "{name}"
design = "redlock"
fencing = {fencing}
[topology]
masters = 3
[clients]
count = 2
attempts = 1
[timing]
ttl = 4
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
    Scenario::parse(&text, format!("{name}.toml")).expect("test scenario parses")
}

/// Merging states that differ by a renaming of Redlock's masters changes the number of
/// states, never a verdict or a trace length; the traces replay on the concrete masters.
#[test]
fn master_symmetry_keeps_verdicts_lengths_and_traces() {
    let sc = redlock("masters", 6, "restarts = 1", false);
    let model = LockModel::new(&sc);
    assert!(model.masters_symmetric());
    let a = search(&model, &opts(true, None), |_| {});
    let b = search(&model, &opts(false, None), |_| {});
    assert!(a.purchased && b.purchased);
    assert!(
        a.unique_states * 3 < b.unique_states,
        "{} vs {}",
        a.unique_states,
        b.unique_states
    );
    let mut violated = 0;
    for p in Property::ALL {
        assert_eq!(
            a.counterexample(p).map(|c| c.len()),
            b.counterexample(p).map(|c| c.len()),
            "{p}"
        );
        if let Some(c) = a.counterexample(p) {
            violated += 1;
            let states = replay(&model, c).expect("the trace replays on concrete masters");
            assert!(!model.holds(p, states.last().unwrap()), "{p}");
        }
    }
    assert!(violated > 0, "a restart breaks Redlock");
}

/// The representative (as the search stores states: unread values forgotten, tokens
/// known by first appearance) does not depend on how masters and clients are numbered.
#[test]
fn representatives_ignore_master_and_client_numbering() {
    let sc = redlock("canonical", 4, "restarts = 1\npauses = 1", false);
    let model = LockModel::new(&sc);
    let options = SearchOptions::default();
    let mut checked = 0;
    for next in levels(&model, 8) {
        for s in next.iter().step_by(7) {
            let want = options.representative(&model, s.clone()).fingerprint;
            for perm in [[1, 0, 2], [2, 0, 1], [0, 2, 1]] {
                let mut t = s.clone();
                t.permute_masters(&perm);
                t.reorder_clients(&[1, 0]);
                assert_eq!(options.representative(&model, t).fingerprint, want);
                checked += 1;
            }
        }
    }
    assert!(checked > 100);
}

/// Masters are interchangeable only for Redlock without an option that singles out
/// node 0 (fencing's INCR).
#[test]
fn master_symmetry_only_where_masters_are_interchangeable() {
    assert!(!LockModel::new(&redlock("fenced", 4, "", true)).masters_symmetric());
    let single = scenario("single", "lua-release", 3, 4, "");
    assert!(!LockModel::new(&single).masters_symmetric());
}

/// One master, two replicas, `WAIT 1`, one failover, with the given promotion rule.
fn failover_wait(promotion: &str) -> Scenario {
    let text = format!(
        r#"name = "failover"
design = "lua-release"
wait_replicas = 1
[topology]
replicas = 2
promotion = "{promotion}"
[clients]
count = 2
[timing]
ttl = 5
work = 1
max_step_delay = 1
horizon = 10
[faults]
failovers = 1
[expect]
mutual_exclusion = "holds"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "holds"
"#
    );
    Scenario::parse(&text, "failover.toml").expect("test scenario parses")
}

/// The replica that acknowledged client1's WAIT is not promoted; the other one is, and
/// the acknowledging replica follows it, resyncs (dropping client1's key) and
/// acknowledges client2's WAIT: both clients hold the lock.
#[test]
fn failover_repoints_the_other_replicas_to_the_promoted_one() {
    use locklab_model::model::Action::*;
    let model = LockModel::new(&failover_wait("any"));
    let mut s = model.init_states().remove(0);
    let steps = [
        Acquire(0),
        Deliver(0, 0),
        Receive(0, 0),
        Replicate(1),
        Deliver(0, 0),
        Receive(0, 0),
        Failover(0, 2),
        Acquire(1),
        Deliver(1, 0),
        Receive(1, 0),
    ];
    for a in steps {
        s = model
            .next_state(&s, a)
            .unwrap_or_else(|| panic!("{a} applies"));
    }
    assert_eq!(
        s.nodes[1].replica_of,
        Some(2),
        "node2 follows the promoted node3"
    );
    let mut actions = Vec::new();
    model.actions(&s, &mut actions);
    assert!(actions.contains(&Replicate(1)), "node2 resyncs from node3");
    s = model.next_state(&s, Replicate(1)).unwrap();
    assert_eq!(
        s.nodes[1].data, s.nodes[2].data,
        "what node3 lacks is dropped"
    );
    s = model.next_state(&s, Deliver(1, 0)).unwrap();
    s = model.next_state(&s, Receive(1, 0)).unwrap();
    assert!(
        !model.holds(Property::MutualExclusion, &s),
        "WAIT 1 acknowledged"
    );
}

/// Under Sentinel's rule, the replica that missed client1's write cannot be promoted
/// while the other one has it; under "any" it can.
#[test]
fn most_advanced_promotion_skips_a_lagging_replica() {
    use locklab_model::model::Action::*;
    for (rule, lagging_promotable) in [("any", true), ("most-advanced", false)] {
        let model = LockModel::new(&failover_wait(rule));
        let mut s = model.init_states().remove(0);
        for a in [Acquire(0), Deliver(0, 0), Replicate(1)] {
            s = model.next_state(&s, a).unwrap();
        }
        let mut actions = Vec::new();
        model.actions(&s, &mut actions);
        assert!(actions.contains(&Failover(0, 1)), "{rule}");
        assert_eq!(
            actions.contains(&Failover(0, 2)),
            lagging_promotable,
            "{rule}"
        );
    }
}

/// Split brain: the old master keeps serving a client that has not learnt the new one;
/// a client that has reaches only the promoted replica, and both hold the lock.
#[test]
fn split_brain_leaves_two_masters_each_serving_its_side() {
    use locklab_model::model::Action::*;
    let text = r#"name = "split"
design = "lua-release"
[topology]
replicas = 1
[clients]
count = 2
[timing]
ttl = 5
work = 1
max_step_delay = 1
horizon = 10
[faults]
split_brains = 1
[expect]
mutual_exclusion = "holds"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "holds"
"#;
    let model = LockModel::new(&Scenario::parse(text, "split.toml").unwrap());
    let mut s = model.init_states().remove(0);
    for a in [
        Acquire(0),
        Deliver(0, 0),
        Receive(0, 0),
        SplitBrain(0, 1, 0),
        Acquire(1),
    ] {
        s = model
            .next_state(&s, a)
            .unwrap_or_else(|| panic!("{a} applies"));
    }
    assert!(s.nodes[0].alive, "the old master stays up");
    assert_eq!(s.serving[0], 1);
    let f = s.clients[1].core.flights[0].as_ref().unwrap();
    assert_eq!(
        f.node, 0,
        "client2 has not learnt the new master: it reaches the old"
    );
    let mut actions = Vec::new();
    model.actions(&s, &mut actions);
    assert!(actions.contains(&Redirect(1, 0)));
    s = model.next_state(&s, Redirect(1, 0)).unwrap();
    actions.clear();
    model.actions(&s, &mut actions);
    assert!(
        actions.contains(&Timeout(1, 0)),
        "the old master is on the other side"
    );
    assert!(!actions.contains(&Deliver(1, 0)));
    s = model.next_state(&s, Timeout(1, 0)).unwrap();
    s = model.next_state(&s, Tick).unwrap();
    for a in [Acquire(1), Deliver(1, 0), Receive(1, 0)] {
        s = model
            .next_state(&s, a)
            .unwrap_or_else(|| panic!("{a} applies"));
    }
    assert_eq!(s.nodes[1].data.entry("lock").unwrap().owner, Some(1));
    assert!(
        !model.holds(Property::MutualExclusion, &s),
        "two masters, two holders"
    );
}

/// getset-timestamp: the GETSET that steals a live lock (a fast clock) is the stealer's
/// acquire. It breaks mutual exclusion, not owner_only_release; the robbed holder's
/// DEL, which removes the stealer's lock, does.
#[test]
fn a_winning_getset_steal_is_no_release() {
    use locklab_model::model::Action::*;
    let sc = scenario("steal", "getset-timestamp", 3, 10, "clock_jumps = 1");
    let model = LockModel::new(&sc);
    let mut s = model.init_states().remove(0);
    let steps = [
        Acquire(0),
        Deliver(0, 0), // SETNX lock 3 -> 1
        Receive(0, 0),
        ClientClockJump(1),
        Tick,
        Acquire(1),
        Deliver(1, 0), // SETNX -> 0
        Receive(1, 0),
        Deliver(1, 0), // GET -> "3", expired by client2's clock
        Receive(1, 0),
        Deliver(1, 0), // GETSET -> "3": client2 wins
        Receive(1, 0),
    ];
    for a in steps {
        s = model
            .next_state(&s, a)
            .unwrap_or_else(|| panic!("{a} applies"));
    }
    assert!(!model.holds(Property::MutualExclusion, &s));
    assert!(
        model.holds(Property::OwnerOnlyRelease, &s),
        "the steal is an acquire"
    );
    for a in [Read(0), Tick, Write(0), Release(0), Deliver(0, 0)] {
        s = model
            .next_state(&s, a)
            .unwrap_or_else(|| panic!("{a} applies"));
    }
    assert!(
        !model.holds(Property::OwnerOnlyRelease, &s),
        "client1's DEL removed client2's lock"
    );
}

fn offered(model: &LockModel, s: &locklab_model::state::State) -> Vec<Action> {
    let mut actions = Vec::new();
    model.actions(s, &mut actions);
    actions
}

/// The model offers every interleaving: a reply waiting to be read holds no other
/// client back ("another step in tick t, the reply read in tick t+1" is offered).
#[test]
fn a_waiting_reply_holds_no_other_client_back() {
    let sc = scenario("wait", "lua-release", 3, 8, "");
    let model = LockModel::new(&sc);
    let mut s = model.init_states().remove(0);
    for a in [Action::Acquire(0), Action::Deliver(0, 0)] {
        s = model.next_state(&s, a).unwrap();
    }
    let now = offered(&model, &s);
    assert!(now.contains(&Action::Receive(0, 0)), "{now:?}");
    assert!(now.contains(&Action::Tick), "{now:?}");
    assert!(now.contains(&Action::Acquire(1)), "{now:?}");
}
