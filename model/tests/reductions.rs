//! Every reduction of the search against the search without it, on the shipped
//! scenarios: the same verdicts, the same counterexample lengths, the same vacuity
//! records, and never more states. (Forgetting unread values is also checked state by
//! state, as a bisimulation, in `model/src/forget.rs`.)

use std::path::Path;

use locklab_model::model::LockModel;
use locklab_model::scenario::{load_dir, Expectation, Property, Scenario};
use locklab_model::search::{search, Reduction, SearchOptions, SearchResult};

fn shipped() -> Vec<Scenario> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut all = load_dir(root.join("scenarios")).expect("scenarios load");
    all.extend(load_dir(root.join("examples/custom")).expect("custom locks load"));
    all
}

fn run(sc: &Scenario, options: &SearchOptions) -> SearchResult {
    let options = SearchOptions {
        threads: 2,
        ..options.clone()
    };
    search(&LockModel::new(sc), &options, |_| {})
}

/// Every reduction, searching no further than the first level past `states` unique
/// states: what the tests below compare is what a search this size completes.
fn small(states: usize) -> SearchOptions {
    SearchOptions {
        state_limit: Some(states),
        ..SearchOptions::default()
    }
}

/// `with` (the reduction on) finds what `without` finds: complete searches, the same
/// verdicts, counterexamples of the same length, the same coverage; and no more states.
fn agree(name: &str, with: &SearchResult, without: &SearchResult) {
    agree_on_findings(name, with, without);
    assert!(
        with.unique_states <= without.unique_states,
        "{name}: {} states with the reduction, {} without",
        with.unique_states,
        without.unique_states
    );
    eprintln!(
        "{name}: {} states with the reduction, {} without",
        with.unique_states, without.unique_states
    );
}

/// `with` finds what `without` finds: complete searches, the same verdicts,
/// counterexamples of the same length, the same coverage.
fn agree_on_findings(name: &str, with: &SearchResult, without: &SearchResult) {
    assert!(
        with.complete && without.complete,
        "{name}: complete searches"
    );
    assert_eq!(with.purchased, without.purchased, "{name}: purchase");
    assert_eq!(with.coverage, without.coverage, "{name}: coverage");
    for p in Property::ALL {
        assert_eq!(
            with.counterexample(p).map(<[_]>::len),
            without.counterexample(p).map(<[_]>::len),
            "{name}: {p}"
        );
        assert!(with.unverified(p).is_none() && without.unverified(p).is_none());
    }
}

/// `sc` searched with every reduction and with all but the partial order, compared.
fn with_and_without_partial_order(sc: &Scenario) -> (SearchResult, SearchResult) {
    let with = run(sc, &SearchOptions::default());
    let without = run(
        sc,
        &SearchOptions::default().without(Reduction::PartialOrder),
    );
    agree(&sc.name, &with, &without);
    (with, without)
}

/// The partial-order reduction on the three-master scenarios it acts on (Redlock's),
/// each with one attempt per client so that its unreduced search takes seconds, not
/// minutes, and whose reduced search stays below `cap` unique states (none: every one);
/// at that size some of them still break a property, and the reduction must find the
/// same counterexample lengths there. Each keeps its own time bounds: checked for all
/// time, as shipped, but for the two drift files, which keep their horizon of 8.
/// Returns the scenarios compared and those of them with a counterexample. The
/// full-size comparison of every one is in reports/bench-checker.md (`locklab check
/// --no-partial-order`).
fn partial_order_agrees_below(cap: Option<usize>) -> (Vec<String>, Vec<String>) {
    let mut compared = Vec::new();
    let mut broken = Vec::new();
    for sc in shipped() {
        // Five masters without the reduction take minutes and gigabytes even with one
        // attempt, so this compares three (the argument of partial_order.rs does not
        // depend on the number of masters) and the second tier the five-master scenario
        // whose "holds" rests on the reduction.
        if !LockModel::new(&sc).partial_order_applies() || sc.topology.masters > 3 {
            continue;
        }
        let mut sc = sc.clone();
        sc.clients.attempts = 1;
        let with = run(&sc, &SearchOptions::default());
        if cap.is_some_and(|cap| with.unique_states > cap as u64) {
            eprintln!(
                "{}: {} states with the reduction, left to the second tier",
                sc.name, with.unique_states
            );
            continue;
        }
        let without = run(
            &sc,
            &SearchOptions::default().without(Reduction::PartialOrder),
        );
        agree(&sc.name, &with, &without);
        assert!(
            with.unique_states < without.unique_states,
            "{}: acts",
            sc.name
        );
        if Property::ALL
            .iter()
            .any(|p| with.counterexample(*p).is_some())
        {
            broken.push(sc.name.clone());
        }
        compared.push(sc.name.clone());
    }
    eprintln!("compared: {compared:?}; violated at this size: {broken:?}");
    (compared, broken)
}

/// The partial order on the Redlock scenarios whose reduced search stays below 200,000
/// states: four of the six (62,000 to 613,000 states without the reduction, 22 s
/// together), two of them with counterexamples at this size (redlock-clock-jump,
/// redlock-restart). The two drift files (1.5 and 2 million without) are in the second
/// tier below.
#[test]
fn partial_order_keeps_verdicts_lengths_and_coverage() {
    let (compared, broken) = partial_order_agrees_below(Some(200_000));
    assert!(compared.len() >= 4, "{compared:?}");
    assert!(!broken.is_empty(), "a comparison with a counterexample");
}

/// The same on all six Redlock scenarios.
#[test]
#[ignore = "second tier (minutes): `bash .ci/run` runs it, as does `cargo test --workspace --release -- --ignored`"]
fn partial_order_keeps_verdicts_lengths_and_coverage_of_every_redlock_file() {
    let (compared, broken) = partial_order_agrees_below(None);
    assert_eq!(compared.len(), 6, "the six Redlock scenarios: {compared:?}");
    assert!(!broken.is_empty(), "a comparison with a counterexample");
}

/// The partial order on five masters, where it cuts most: redlock5-no-faults (every
/// property holds, a proof that rests on the reduction) with one attempt per client,
/// against the search without it. Measured: 18 067 states with it, 1 408 564 without
/// (2026-11-29; the test alone: 24 s, two threads). The same verdicts (the
/// scenario's), the same coverage, and a complete search on both sides.
#[test]
#[ignore = "second tier (minutes): `bash .ci/run` runs it, as does `cargo test --workspace --release -- --ignored`"]
fn partial_order_keeps_the_five_master_verdicts() {
    let mut sc = shipped()
        .into_iter()
        .find(|s| s.name == "redlock5-no-faults")
        .expect("scenarios/redlock5-no-faults.toml");
    assert_eq!(sc.topology.masters, 5);
    assert!(LockModel::new(&sc).partial_order_applies());
    sc.clients.attempts = 1;
    let (with, without) = with_and_without_partial_order(&sc);
    assert!(with.purchased, "a client completes a critical section");
    for (p, expected) in sc.expect.iter() {
        assert_eq!(
            with.counterexample(p).is_some(),
            expected == Expectation::Violated,
            "{}: {p}",
            sc.name
        );
    }
    assert!(
        with.unique_states * 10 < without.unique_states,
        "acts: {} against {}",
        with.unique_states,
        without.unique_states
    );
}

/// Pause placement against the search without it on every shipped scenario with a
/// pause whose reduced search stays below `cap` unique states. It takes fewer steps on
/// each; the states it stores carry where they stand between two ticks while a client
/// is paused, so on a single master, where the unread values already merged most pause
/// points, they can be a few more (reports/bench-checker.md has the figures). Returns
/// the scenarios compared.
fn pause_placement_agrees_below(cap: usize) -> Vec<String> {
    let mut compared = Vec::new();
    for sc in shipped() {
        if !LockModel::new(&sc).pause_placement_applies() {
            continue;
        }
        let with = run(&sc, &small(cap));
        if !with.complete {
            continue;
        }
        let without = run(
            &sc,
            &SearchOptions::default().without(Reduction::PausePlacement),
        );
        agree_on_findings(&sc.name, &with, &without);
        assert!(
            with.states < without.states,
            "{}: {} steps taken with the reduction, {} without",
            sc.name,
            with.states,
            without.states
        );
        eprintln!(
            "{}: {} states ({} steps) with the reduction, {} ({}) without",
            sc.name, with.unique_states, with.states, without.unique_states, without.states
        );
        compared.push(sc.name.clone());
    }
    compared
}

/// Pause placement on the shipped scenarios with a pause whose search is small (below
/// 100 000 states): the single-master pauses, each in seconds.
#[test]
fn pause_placement_keeps_verdicts_lengths_and_coverage() {
    let compared = pause_placement_agrees_below(100_000);
    assert!(compared.len() >= 6, "{compared:?}");
}

/// The same on every shipped scenario with a pause that a search completes here (below
/// 2 000 000 states: redlock-gc-pause at full size, more than a million without the
/// reduction; not redlock5-gc-pause, compared at full size in reports/bench-checker.md).
#[test]
#[ignore = "second tier (minutes): `bash .ci/run` runs it, as does `cargo test --workspace --release -- --ignored`"]
fn pause_placement_keeps_verdicts_lengths_and_coverage_up_to_redlock() {
    let compared = pause_placement_agrees_below(2_000_000);
    assert!(
        compared.len() >= 10 && compared.iter().any(|n| n == "redlock-gc-pause"),
        "{compared:?}"
    );
}

/// Token renaming against the search without it, on the shipped scenarios whose reduced
/// search completes within `states` states, keeps what the search finds. A custom lock's
/// tokens keep their names. Returns how many were compared with tokens renamed.
fn token_names_agree_below(states: usize) -> usize {
    let mut compared = 0;
    for sc in shipped() {
        let with = run(&sc, &small(states));
        if !with.complete {
            continue;
        }
        let without = run(
            &sc,
            &SearchOptions::default().without(Reduction::TokenNames),
        );
        agree(&sc.name, &with, &without);
        if LockModel::new(&sc).renames_tokens() {
            compared += 1;
        } else {
            assert_eq!(with.unique_states, without.unique_states, "{}", sc.name);
        }
    }
    compared
}

/// Token renaming on the scenarios below 100,000 states with every reduction. Those
/// between 100,000 and 300,000 are in the second tier below: five Redlock files (0.8 to
/// 2 million states without renaming: minutes) and three custom locks (whose tokens keep
/// their names, so they compare a search with itself).
#[test]
fn token_names_keep_verdicts_lengths_and_coverage() {
    let compared = token_names_agree_below(100_000);
    assert!(compared >= 25, "{compared} scenarios compared");
}

/// Token renaming on every scenario below 300,000 states with every reduction.
#[test]
#[ignore = "second tier (minutes): `bash .ci/run` runs it, as does `cargo test --workspace --release -- --ignored`"]
fn token_names_keep_verdicts_lengths_and_coverage_up_to_redlock() {
    let compared = token_names_agree_below(300_000);
    assert!(compared >= 25, "{compared} scenarios compared");
}

/// Every reduction together against none at all, on the shipped scenarios whose reduced
/// search is small (40,000 states) and whose plain search completes within `plain_cap`
/// states (none: every one): the plain search is what a verdict claims. Returns how
/// many were compared.
fn all_reductions_agree_with_plain(plain_cap: Option<usize>) -> usize {
    let mut compared = 0;
    for sc in shipped() {
        let with = run(&sc, &small(40_000));
        if !with.complete {
            continue;
        }
        let plain = run(
            &sc,
            &SearchOptions {
                state_limit: plain_cap,
                ..SearchOptions::plain()
            },
        );
        if !plain.complete {
            eprintln!(
                "{}: plain search past {plain_cap:?} states, left to the second tier",
                sc.name
            );
            continue;
        }
        agree(&sc.name, &with, &plain);
        compared += 1;
    }
    compared
}

/// All reductions against the plain search where the plain search stays under 250,000
/// states (30 of the 38 files whose reduced search is small; the rest take 0.28 to 10
/// million plain states, a minute or more together, and are in the second tier below).
#[test]
fn all_reductions_keep_what_the_plain_search_finds() {
    let compared = all_reductions_agree_with_plain(Some(250_000));
    assert!(compared >= 25, "{compared} scenarios compared");
}

/// The same on every file whose reduced search is small, the plain searches of millions
/// of states included (redlock-no-faults: 10 million).
#[test]
#[ignore = "second tier (minutes): `bash .ci/run` runs it, as does `cargo test --workspace --release -- --ignored`"]
fn all_reductions_keep_what_the_plain_search_finds_at_any_size() {
    let compared = all_reductions_agree_with_plain(None);
    assert!(compared >= 36, "{compared} scenarios compared");
}

/// The deliveries and node faults the partial order takes alone
/// (`LockModel::deliveries_alone`) change nothing a property or the vacuity record
/// reads, and are offered (and often leave other steps out): checked on every state of
/// the unreduced model within 10 steps of the start, in every three-master Redlock
/// scenario (argument C2 of model/src/partial_order.rs).
#[test]
fn deliveries_taken_alone_are_invisible() {
    deliveries_alone_within(10);
}

/// The same within 12 steps.
#[test]
#[ignore = "second tier (minutes): `bash .ci/run` runs it, as does `cargo test --workspace --release -- --ignored`"]
fn deliveries_taken_alone_are_invisible_within_12_steps() {
    deliveries_alone_within(12);
}

/// The check of [`deliveries_taken_alone_are_invisible`] on every state within `depth`
/// steps, with more than 1,000 states where the set leaves steps out and some node
/// fault in those sets.
fn deliveries_alone_within(depth: usize) {
    use stateright::Model;
    let (mut taken, mut faults) = (0, 0);
    for sc in shipped() {
        let model = LockModel::new(&sc);
        if !model.partial_order_applies() || sc.topology.masters > 3 {
            continue;
        }
        for s in locklab_model::model::levels(&model, depth).iter().flatten() {
            let Some(set) = model.deliveries_alone(s) else {
                continue;
            };
            let mut offered = Vec::new();
            model.actions(s, &mut offered);
            assert!(
                set.iter().all(|a| offered.contains(a)),
                "{}: offered",
                sc.name
            );
            for &a in &set {
                let next = model
                    .next_state(s, a)
                    .expect("an offered step has a next state");
                for p in Property::ALL {
                    assert_eq!(
                        model.holds(p, &next),
                        model.holds(p, s),
                        "{}: {a:?} {p}",
                        sc.name
                    );
                }
                assert_eq!(LockModel::purchased(&next), LockModel::purchased(s));
                assert_eq!(next.stock, s.stock);
                assert_eq!(
                    next.clients
                        .iter()
                        .map(|c| &c.core.phase)
                        .collect::<Vec<_>>(),
                    s.clients.iter().map(|c| &c.core.phase).collect::<Vec<_>>(),
                    "{}: {a:?} phases",
                    sc.name
                );
            }
            if set.len() < offered.len() {
                taken += 1;
                faults += set.iter().filter(|a| a.is_fault()).count();
            }
        }
    }
    eprintln!("{taken} states where the set leaves steps out, {faults} node faults in them");
    assert!(
        taken > 1000,
        "{taken} states where the set leaves steps out"
    );
    assert!(faults > 0, "node faults join the set");
}

/// A delivery the partial order takes alone because it belongs to its client's last
/// operation (`LockModel::delivery_changes_nothing`) changes that client's request and
/// nothing else: the nodes, the stock, the ownership flag, the other clients, the
/// faults spent and every property are as before, and the client's phase too. Checked
/// on every state of the reduced search of every three-master Redlock scenario (whole,
/// each below 150,000 states with one attempt per client, which puts every failed
/// acquire in its last operation), with more than 1,000 such deliveries met.
#[test]
fn deliveries_of_a_last_operation_change_only_their_client() {
    use stateright::Model;
    use std::collections::HashSet;
    let options = SearchOptions::default();
    let mut taken = 0;
    for sc in shipped() {
        let mut sc = sc.clone();
        sc.clients.attempts = 1;
        let model = LockModel::new(&sc);
        if !model.partial_order_applies() || sc.topology.masters > 3 {
            continue;
        }
        let mut seen = HashSet::new();
        let mut level: Vec<_> = model
            .init_states()
            .into_iter()
            .map(|s| options.representative(&model, s))
            .filter(|r| seen.insert(r.fingerprint))
            .map(|r| r.state)
            .collect();
        let mut offered = Vec::new();
        while !level.is_empty() {
            assert!(seen.len() < 150_000, "{}: a small search", sc.name);
            let mut next_level = Vec::new();
            for s in &level {
                offered.clear();
                model.actions(s, &mut offered);
                for &a in &offered {
                    let locklab_model::model::Action::Deliver(c, m) = a else {
                        continue;
                    };
                    if !model.delivery_changes_nothing(s, c, m) {
                        continue;
                    }
                    taken += 1;
                    let next = model.next_state(s, a).expect("offered");
                    let c = usize::from(c);
                    assert_eq!(next.nodes, s.nodes, "{}: {a:?} nodes", sc.name);
                    assert_eq!(next.stock, s.stock);
                    assert_eq!(next.displaced_other, s.displaced_other);
                    assert_eq!(next.spent, s.spent);
                    assert_eq!(next.split, s.split);
                    assert_eq!(next.clients[c].core.phase, s.clients[c].core.phase);
                    for (k, (x, y)) in next.clients.iter().zip(&s.clients).enumerate() {
                        assert!(k == c || x == y, "{}: {a:?} client {k}", sc.name);
                    }
                    for p in Property::ALL {
                        assert_eq!(model.holds(p, &next), model.holds(p, s), "{p}");
                    }
                }
                let placed = model.pause_placement_applies();
                if placed {
                    model.place_pauses(s, &mut offered);
                }
                model.reduce_to_ample(s, &mut offered);
                for &a in &offered {
                    let Some(mut next) = model.next_state(s, a) else {
                        continue;
                    };
                    if placed {
                        model.mark_pause_points(s, a, &mut next);
                    }
                    if !model.within_boundary(&next) {
                        continue;
                    }
                    let r = options.representative(&model, next);
                    if seen.insert(r.fingerprint) {
                        next_level.push(r.state);
                    }
                }
            }
            level = next_level;
        }
    }
    eprintln!("{taken} deliveries of a last operation checked");
    assert!(taken > 1000, "{taken} deliveries of a last operation");
}

/// Scenarios whose WAIT blocks (`timing.wait_timeout`; no shipped file has one): the
/// lease it eats into, and faults that drop a blocked WAIT or hold its reply (a crash, a
/// restart, a failover, a pause, a cut link and a lost reply under a watchdog, a split
/// brain whose redirect drops it). A plain search of each stays under a million states.
fn blocking_waits() -> Vec<Scenario> {
    let scenario = |name: &str, design: &str, body: &str, faults: &str| {
        let text = format!(
            "name = \"{name}\"\ndesign = \"{design}\"\nwait_replicas = 1\n[topology]\n\
             masters = 1\nreplicas = 1\n[clients]\ncount = 2\n{body}\nwork = 1\n\
             max_step_delay = 1\n[faults]\n{faults}\n[expect]\n\
             mutual_exclusion = \"holds\"\nowner_only_release = \"holds\"\n\
             no_orphaned_lock = \"holds\"\nresource_safety = \"holds\"\n"
        );
        Scenario::parse(&text, format!("{name}.toml")).expect("the scenario parses")
    };
    let short = |timeout: u32, horizon: u32| {
        format!("attempts = 1\n[timing]\nttl = 5\nwait_timeout = {timeout}\nhorizon = {horizon}")
    };
    vec![
        scenario(
            "wait-lease",
            "lua-release",
            "[timing]\nttl = 7\nwait_timeout = 1\nhorizon = 12",
            "",
        ),
        scenario(
            "wait-crash-restart",
            "lua-release",
            &short(2, 8),
            "crashes = 1\nrestarts = 1",
        ),
        scenario(
            "wait-failover-pause",
            "lua-release",
            &short(1, 8),
            "failovers = 1\npauses = 1",
        ),
        scenario(
            "wait-watchdog-cut",
            "watchdog",
            &short(2, 8),
            "partitions = 1\nlost_replies = 1",
        ),
        scenario(
            "wait-split-cut",
            "lua-release",
            &short(1, 7),
            "split_brains = 1\npartitions = 1",
        ),
    ]
}

/// Every reduction together against none at all where a WAIT blocks: a blocked WAIT's
/// counter is kept by forgetting, hashed by the fingerprint and the symmetry keys, and
/// read by the reductions as no request still to deliver; the same verdicts, lengths and
/// coverage.
#[test]
fn all_reductions_keep_what_the_plain_search_finds_where_a_wait_blocks() {
    for sc in blocking_waits() {
        let with = run(&sc, &SearchOptions::default());
        let plain = run(&sc, &SearchOptions::plain());
        assert!(with.purchased, "{}", sc.name);
        agree(&sc.name, &with, &plain);
    }
}
