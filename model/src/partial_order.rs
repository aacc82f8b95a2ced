//! Partial-order reduction: the answers a Redlock fan-out only records are read in one
//! order.
//!
//! A Redlock client sends its command to every master and decides only when the last
//! one has answered. Every earlier answer is just recorded: its machine sends nothing,
//! reports nothing and reads no clock ([`locklab::LockMachine::records_only`]). With
//! five masters and two clients, the orders and ticks in which those answers are read
//! make most of the state space, and none of them can change what happens next.
//!
//! So where such a read `r` of client `c` is offered, the search ([`crate::search`])
//! takes `r` alone from that state when nothing that could change what `r` reads can
//! still come. A variant of the classic argument for safety properties (Clarke, Grumberg
//! and Peled, *Model Checking*, ch. 10: conditions C0 to C3):
//!
//! - **Moving `r` to the front.** Let `w` be any run from the state to a state that
//!   breaks a property. Then `r` followed by `w` without its `r` is a run too, and ends
//!   in a state that breaks the same properties. Every step of `w` before its `r` either
//!   commutes with `r` and leaves it offered, or only holds `r` back: the tick (`r`
//!   reads no clock, and its client stays busy, so the tick treats the client the same
//!   before and after `r`); every step of another client or of a node (they touch
//!   neither `r`'s reply nor its client); the client's own other answers, recorded too
//!   while `r`'s master is outstanding (recorded answers of one operation commute: the
//!   machine decides on their set); a pause of `c`, which holds `r` back until the
//!   resume and changes nothing `r` reads; and a crash of `c`, after which its machine
//!   is never read again. If `w` ends before taking `r`, the run with `r` in front ends
//!   in `w`'s last state with `r` read, which differs from it only by a recorded answer
//!   that no property reads.
//! - **What could change what `r` reads** is a lost reply or a cut of `c`'s link (the
//!   answer becomes a timeout), a failover or split brain of `r`'s master's slot and
//!   the redirect after one. `r` is taken alone only when none of these can happen any
//!   more: no lost reply or partition left in the budget, no replica, no split brain in
//!   effect. (C1)
//! - **`r` is invisible.** It changes no property and no vacuity record: the client's
//!   phase, the nodes, the stock and the ownership ghosts stay as they are. (C2)
//! - **No cycle.** Every step but the tick uses up something bounded (a request, a
//!   reply, an attempt, a budget) and the tick moves the clock, so the state graph has
//!   no cycle, and the induction over the steps left to the horizon goes through: from
//!   every state the search keeps, a state breaking a property is reached whenever one
//!   is reachable at all. (C3)
//! - The set is empty only when nothing is offered. (C0)
//!
//! So every verdict is the unreduced search's, and every counterexample found is a real
//! run of the model (it is re-checked, [`crate::recheck`]). Reading an answer first can
//! in principle make a counterexample longer than the shortest one, when the violation
//! did not need that answer; `model/tests/reductions.rs` compares verdicts,
//! counterexample lengths and coverage with the unreduced search on every scenario the
//! reduction acts on.

use crate::model::{Action, LockModel};
use crate::state::State;

impl LockModel {
    /// Whether the reduction can act on this model: only a Redlock machine's answers
    /// can be only recorded.
    pub fn partial_order_applies(&self) -> bool {
        self.scenario.design == locklab::DesignId::Redlock
    }

    /// Narrow the steps `out` offered from `s` to the one that the partial-order
    /// reduction takes alone, if there is one (see the module documentation).
    pub fn reduce_to_ample(&self, s: &State, out: &mut Vec<Action>) {
        if self.could_interfere_with_reads(s) {
            return;
        }
        let ample = out.iter().copied().find(|a| match *a {
            Action::Receive(c, m) => s.clients[usize::from(c)]
                .machine
                .records_only(usize::from(m)),
            _ => false,
        });
        if let Some(a) = ample {
            out.clear();
            out.push(a);
        }
    }

    /// Whether a step that could change what a read of a reply reads may still come: a
    /// lost reply or a cut link left in the budget, a replica that could be promoted, or
    /// a split brain in effect (its redirects).
    fn could_interfere_with_reads(&self, s: &State) -> bool {
        let f = &self.scenario.faults;
        let left = |spent: u8, budget: u32| u32::from(spent) < budget;
        left(s.spent.lost_replies, f.lost_replies)
            || left(s.spent.partitions, f.partitions)
            || (self.scenario.topology.replicas > 0
                && (left(s.spent.failovers, f.failovers)
                    || left(s.spent.split_brains, f.split_brains)))
            || s.split.is_some()
    }
}
