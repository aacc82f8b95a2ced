//! Forgetting what no step reads again: before a state is stored, every value the model
//! will never read (or reads only through a comparison that a smaller value answers the
//! same way) is set to one fixed value, so that states which differ only there are
//! stored once.
//!
//! This is exact, not an approximation: a state and its forgotten form enable the same
//! actions, satisfy the same properties, record the same coverage, and every action
//! takes them to states whose forgotten forms are equal (a bisimulation, checked on the
//! reachable states of every scenario by `model/tests/forget.rs`). So the search over
//! forgotten states finds the same verdicts and the same shortest counterexamples, step
//! for step, as the search over the states themselves; only the count of states
//! changes. Counterexamples are replayed from the real initial state, so traces show
//! every value.

use locklab::Reply;

use crate::model::LockModel;
use crate::state::{Phase, State};

impl LockModel {
    /// Set what `s` keeps but no later step reads to a fixed value:
    ///
    /// - a leg's age and a client's wait past `max_step_delay` (only compared with it);
    /// - the times a lock machine keeps only to report them, and what a Redlock
    ///   release will report (the client program reads only that a release answered,
    ///   or that an acquire was denied: [`locklab::LockMachine::forget_reported_values`]),
    ///   with the answers to it on their way back, which say no more than that
    ///   ([`locklab::LockMachine::awaits_only_reported`]);
    /// - the renewal timer, the fencing token and the retry back-off of a client that
    ///   does not hold the lock (each is set anew before it is read again);
    /// - everything of a finished or crashed client but its phase and, while it has
    ///   requests or replies on the wire, its machine, clock and links (a crashed
    ///   client's request still reaches its node, and whether it took the lock is its
    ///   machine's say);
    /// - which finished or crashed client wrote an entry: the properties ask only
    ///   whether its writer still claims the lock, which such a client never does again,
    ///   as nobody does.
    pub fn forget(&self, s: &mut State) {
        let gone: Vec<bool> = s
            .clients
            .iter()
            .map(|c| matches!(c.core.phase, Phase::Done | Phase::Crashed))
            .collect();
        for node in &mut s.nodes {
            for (_, e) in &mut node.data.entries {
                if e.owner.is_some_and(|o| gone[usize::from(o)]) {
                    e.owner = None;
                }
            }
        }
        let limit = u8::try_from(self.scenario.timing.max_step_delay).unwrap_or(u8::MAX);
        for c in &mut s.clients {
            for f in c.core.flights.iter_mut().flatten() {
                f.age = f.age.min(limit);
            }
            for st in &mut c.core.strays {
                st.flight.age = st.flight.age.min(limit);
            }
            c.waited = c.waited.min(limit);
            if c.core.machine.awaits_only_reported() {
                for f in c.core.flights.iter_mut().flatten() {
                    if f.held.is_some() {
                        f.held = Some(Reply::Nil);
                    }
                }
            }
            c.core.machine.forget_reported_values();
            if !c.holding() {
                c.since_renew = 0;
                c.core.fence = None;
            }
            if c.core.phase != Phase::Idle || c.core.attempts == 0 {
                c.retry_wait = false;
            }
            if matches!(c.core.phase, Phase::Done | Phase::Crashed) {
                c.core.attempts = 0;
                c.waited = 0;
                // What it has on the wire still reads its machine (a crashed stealer's
                // GETSET wins or loses by it), its clock and its links; a request it gave
                // up on reads only its links.
                if c.core.flights.iter().all(Option::is_none) {
                    c.core.machine.reset(&self.cfg);
                    c.offset = 0;
                    if c.core.strays.is_empty() {
                        c.cut = 0;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::path::Path;

    use stateright::Model;

    use super::*;
    use crate::model::fingerprint;
    use crate::scenario::load_dir;
    use crate::walk::SplitMix64;

    /// Reachable states of `model` to check: the first `near` states of a breadth-first
    /// walk, and every state along `walks` seeded random walks to the horizon.
    fn sample(model: &LockModel, near: usize, walks: u64) -> Vec<State> {
        let mut out = model.init_states();
        let mut seen: HashSet<u64> = out.iter().map(fingerprint).collect();
        let mut k = 0;
        let mut actions = Vec::new();
        while k < out.len() && out.len() < near {
            actions.clear();
            model.actions(&out[k], &mut actions);
            for &a in &actions {
                if let Some(n) = model.next_state(&out[k], a) {
                    if model.within_boundary(&n) && seen.insert(fingerprint(&n)) {
                        out.push(n);
                    }
                }
            }
            k += 1;
        }
        for w in 0..walks {
            let mut rng = SplitMix64(w.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed);
            let mut s = model.init_states().remove(0);
            loop {
                actions.clear();
                model.actions(&s, &mut actions);
                let next: Vec<State> = actions
                    .iter()
                    .filter_map(|&a| model.next_state(&s, a))
                    .filter(|n| model.within_boundary(n))
                    .collect();
                if next.is_empty() {
                    break;
                }
                s = next[rng.below(next.len())].clone();
                if seen.insert(fingerprint(&s)) {
                    out.push(s.clone());
                }
            }
        }
        out
    }

    /// Reachable states one step after a state as the search stores it (unread values
    /// forgotten, tokens by first appearance, clients and masters by role), which is
    /// where forgetting too much shows: about `count` of them, spread over the stored
    /// space (its first `25 * count` stored states: 50,000 for the full check) rather
    /// than its first levels.
    fn after_stored(model: &LockModel, count: usize) -> Vec<State> {
        let stored_cap = 25 * count;
        let options = crate::search::SearchOptions::default();
        let mut level = vec![options.representative(model, model.init_states().remove(0))];
        let mut seen: HashSet<u64> = level.iter().map(|r| r.fingerprint).collect();
        let mut stored = Vec::new();
        let mut actions = Vec::new();
        while !level.is_empty() && stored.len() < stored_cap {
            let mut next = Vec::new();
            for r in level {
                actions.clear();
                model.actions(&r.state, &mut actions);
                for &a in &actions {
                    if let Some(n) = model.next_state(&r.state, a) {
                        if model.within_boundary(&n) {
                            let rep = options.representative(model, n);
                            if seen.insert(rep.fingerprint) {
                                next.push(rep);
                            }
                        }
                    }
                }
                stored.push(r.state);
            }
            level = next;
        }
        let step = (stored.len() / count.max(1)).max(1);
        let mut out = Vec::new();
        for r in stored.iter().step_by(step) {
            actions.clear();
            model.actions(r, &mut actions);
            out.extend(
                actions
                    .iter()
                    .filter_map(|&a| model.next_state(r, a))
                    .filter(|n| model.within_boundary(n)),
            );
        }
        out
    }

    fn forgotten(model: &LockModel, s: &State) -> State {
        let mut f = s.clone();
        model.forget(&mut f);
        f
    }

    /// `s` and its forgotten form are bisimilar, one step deep.
    fn check_state(model: &LockModel, s: &State) {
        crate::bisimilar::one_step(model, s, |t| forgotten(model, t), "forgotten");
    }

    /// Forgetting is exact on every shipped scenario and custom lock: checked on the
    /// states near the start, along random walks to the horizon, and one step after
    /// states spread over the whole space the search stores. Some state of each scenario
    /// must actually forget something, or the check would be empty.
    #[test]
    #[ignore = "second tier (minutes): `bash .ci/run` runs it, as does `cargo test --workspace --release -- --ignored`"]
    fn forgetting_keeps_every_behaviour() {
        forgetting_is_exact_on(2_000, 200);
    }

    /// The same, on a tenth of the states per scenario.
    #[test]
    fn forgetting_keeps_the_behaviours_of_a_sample() {
        forgetting_is_exact_on(200, 20);
    }

    /// Forgetting is exact on about `n` states near the start and along `walks` random
    /// walks, and `n` stored states, of each shipped scenario and custom lock, of two
    /// fault mixes none of them has, and of three with a WAIT that blocks.
    fn forgetting_is_exact_on(n: usize, walks: u64) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut scenarios = load_dir(root.join("scenarios")).unwrap();
        scenarios.extend(load_dir(root.join("examples/custom")).unwrap());
        assert!(scenarios.len() >= 40, "{} scenarios", scenarios.len());
        // Faults no shipped scenario combines: a crash with a cut link (a crashed
        // client's requests still travel its links), lost replies on Redlock.
        for (name, design, masters, faults) in [
            (
                "crash-cut",
                "lua-release",
                1,
                "crashes = 1\npartitions = 1\npauses = 1",
            ),
            (
                "redlock-mix",
                "redlock",
                3,
                "crashes = 1\npartitions = 1\nlost_replies = 1",
            ),
        ] {
            let text = format!(
                "name = \"{name}\"\ndesign = \"{design}\"\n[topology]\nmasters = {masters}\n\
                 [clients]\ncount = 2\n[timing]\nttl = 3\nwork = 1\nmax_step_delay = 1\n\
                 horizon = 7\n[faults]\n{faults}\n[expect]\nmutual_exclusion = \"holds\"\n\
                 owner_only_release = \"holds\"\nno_orphaned_lock = \"holds\"\n\
                 resource_safety = \"holds\"\n"
            );
            scenarios
                .push(crate::scenario::Scenario::parse(&text, format!("{name}.toml")).unwrap());
        }
        // A WAIT that blocks (no shipped scenario has a WAIT timeout), with faults that
        // drop it or hold its reply.
        for (name, faults) in [
            ("wait-crash-restart", "crashes = 1\nrestarts = 1"),
            ("wait-failover-pause", "failovers = 1\npauses = 1"),
            ("wait-split-cut", "split_brains = 1\npartitions = 1"),
        ] {
            let text = format!(
                "name = \"{name}\"\ndesign = \"lua-release\"\nwait_replicas = 1\n\
                 [topology]\nmasters = 1\nreplicas = 1\n[clients]\ncount = 2\n[timing]\n\
                 ttl = 5\nwork = 1\nmax_step_delay = 1\nhorizon = 8\nwait_timeout = 2\n\
                 [faults]\n{faults}\n[expect]\nmutual_exclusion = \"holds\"\n\
                 owner_only_release = \"holds\"\nno_orphaned_lock = \"holds\"\n\
                 resource_safety = \"holds\"\n"
            );
            scenarios
                .push(crate::scenario::Scenario::parse(&text, format!("{name}.toml")).unwrap());
        }
        for sc in &scenarios {
            let model = LockModel::new(sc);
            let mut states = sample(&model, n, walks);
            states.extend(after_stored(&model, n));
            let changed = states
                .iter()
                .filter(|s| forgotten(&model, s) != **s)
                .count();
            assert!(
                changed > 0,
                "{}: nothing forgotten in {} states",
                sc.name,
                states.len()
            );
            for s in &states {
                check_state(&model, s);
            }
        }
    }
}
