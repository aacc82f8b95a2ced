//! Partial-order reduction: the answers a Redlock fan-out only records are read in one
//! order, overdue requests reach their masters before anything that cannot touch them,
//! and a finishing client's deletes that can delete nothing are delivered at once.
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
//!   effect; and, so that the deliveries below stay closed, no request given up on
//!   still on the wire (it may reach any master unbidden). (C1)
//! - **`r` is invisible.** It changes no property and no vacuity record: the client's
//!   phase, the nodes, the stock and the ownership ghosts stay as they are. (C2)
//! - **No cycle.** Every step but the tick uses up something bounded (a request, a
//!   reply, an attempt, a budget) and the tick moves the clock, so the state graph has
//!   no cycle, and the induction over the steps left to the horizon goes through: from
//!   every state the search keeps, a state breaking a property is reached whenever one
//!   is reachable at all. (C3)
//! - The set is empty only when nothing is offered. (C0)
//!
//! **Deliveries.** Where no such read is offered, the orders in which requests reach
//! the masters make the rest of the space. A delivery (`Deliver`) depends on the tick
//! (the command reads the master's clock), on another client's delivery to the same
//! master (who wins it), on that node's faults (restart, clock jump, drift step) and on
//! a cut of its link; with no lost reply, partition, replica or split brain left (as
//! for the reads), the search takes alone a set `D` ([`LockModel::deliveries_alone`]),
//! built from a master `m` that has an *overdue* request (one that has waited
//! `max_step_delay` ticks: the tick is not offered until it is delivered). `D` is every
//! client's request to every master of a set `M`, which starts as `{m}`, and every node
//! fault the budget still allows at a master of `M`; for each master `j` of `M`, a
//! client with no request to `j` still to deliver must not be able to send one by steps
//! outside `D`:
//!
//! - it sends nothing before the next tick: finished, crashed, no attempt left,
//!   waiting to retry, or holding the lock with its release behind work that only
//!   ticks advance; or
//! - every answer it waits for is on its way back, or is the timeout of a request a
//!   restarted master lost ([`crate::state::Flight::LOST`]: only the client's own step
//!   gives it, and no delivery or node fault changes it), and once it has read them it
//!   sends nothing before the next tick (its machine decides on their set, at this
//!   clock, since the tick waits: the reads and timeouts are taken on a copy to see); or
//! - its machine is in the middle of an operation and waits for a master `k` whose
//!   request is still to be delivered: it sends again only once that answer has been
//!   read, so `k` joins `M`.
//!
//! Otherwise no set is taken, nor where `D` has a fault and a client is paused (taking
//! the fault alone would end the resumes pause placement keeps on offer until a step is
//! taken); of the sets the overdue masters give, the smallest.
//! Why it keeps every verdict, in the terms above:
//!
//! - **Nothing outside `D` depends on `D` before a step of `D` (C1).** The tick is not
//!   offered while `D`'s overdue request waits; the faults at masters of `M` are in
//!   `D`, and those at other masters touch none of `D` (a fault of the same kind
//!   elsewhere may spend the budget one of `D` needs, but then a run has room for
//!   both, in either order); other deliveries go to other masters; and by the
//!   construction no client can put a request to a master of `M` ahead of `D`'s. Every
//!   other step (reads, a client's own steps, pauses, resumes, crashes, which leave a
//!   request on the wire) commutes with a delivery and a node fault. So a run that
//!   reaches a broken state takes its first step of `D` after steps that commute with
//!   it, and moves it to the front; a run that takes none ends in a state the same but
//!   for a delivery, which breaks the same properties.
//! - **`D` is invisible (C2).** A Redlock delivery runs `SET NX PX`, or the
//!   compare-and-delete or compare-and-pexpire script on the client's own token: it
//!   never overwrites or deletes another client's entry, every entry it writes expires,
//!   and Redlock never renews, so no entry is orphaned before or after; a node fault
//!   only empties or moves a node's clock; phases and the stock stay as they are
//!   (`model/tests/reductions.rs` checks this on the reachable states of the
//!   three-master scenarios).
//! - No cycle (C3) and a non-empty set (C0) as above.
//!
//! **A client's last operation.** A client whose operation in flight is the last of its
//! life — the release at the end of its program, or the release that undoes a failed
//! acquire when no attempt is left — is finished once that operation ends, and nothing of
//! it is read after: no property reads it (it is in no critical section; a Redlock entry
//! always expires and is never renewed, so no entry of its is orphaned; and once it
//! finishes it owns no entry any more, since each of its deletes has run or its master lost
//! the entry, so `owner_only_release`, which asks whether an entry's writer still claims
//! the lock, cannot tell when it finished), no other client or node reads its machine, and
//! a finished client takes no step. Where such a release has a request still to deliver to
//! a master that holds no entry with the client's token (the compare-and-delete there
//! deletes nothing, and stays so: only the client writes its token, and its request to that
//! master is this one), the search takes that delivery alone
//! ([`LockModel::delivery_changes_nothing`]), under the same conditions as the reads above
//! and with no node fault left that could strike the master (a restart would lose the
//! request). The delivery changes nothing but the client's own request, which becomes a
//! reply; it is checked on a copy (the master, the stock and the ownership flag as they
//! were). Moving it to the front of a run `w`: every step of `w` but the client's own is
//! taken as in `w` (none reads the client's request or reply; the master is as it was), the
//! client's own reads are taken as in `w` but that of this master, which is taken before
//! the first tick at which its reply would be overdue, and before the pauses that pause
//! placement puts just ahead of that tick (a paused client's reply waits and blocks
//! nothing), and a step of the client's that its earlier end makes impossible (a read of a
//! reply already read, a pause or crash after it finished) is left out, which only leaves
//! fault budget unspent. The run ends in a state that differs from `w`'s only in that
//! client, which no property reads, so it breaks the same properties (C1, C2); no cycle and
//! a non-empty set as above (C3, C0). The tests compare verdicts, lengths and coverage with
//! the search without the reduction, as for the rest of it.
//!
//! Pause placement ([`crate::pause_placement`]) keeps every resume on offer after a
//! delivery, as after a recorded answer: a delivery reads nothing of a pause.
//!
//! So every verdict is the unreduced search's, and every counterexample found is a real
//! run of the model (it is re-checked, [`crate::recheck`]). Reading an answer or taking
//! a delivery first can in principle make a counterexample longer than the shortest
//! one, when the violation did not need that step; `model/tests/reductions.rs` compares
//! verdicts, counterexample lengths and coverage with the unreduced search on every
//! scenario the reduction acts on.

use stateright::Model;

use locklab::{Command, Script};

use crate::client::Op;
use crate::model::{client_index, Action, FaultKind, LockModel};
use crate::redis::Value;
use crate::state::{Client, Flight, Phase, State};

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
                .core
                .machine
                .records_only(usize::from(m)),
            _ => false,
        });
        if let Some(a) = ample {
            out.clear();
            out.push(a);
            return;
        }
        if let Some(last) = out.iter().copied().find(|&a| match a {
            Action::Deliver(c, m) => self.delivery_changes_nothing(s, c, m),
            _ => false,
        }) {
            out.clear();
            out.push(last);
            return;
        }
        if let Some(set) = self.deliveries_alone(s) {
            out.retain(|a| set.contains(a));
            assert_eq!(out.len(), set.len(), "deliveries taken alone are offered");
        }
    }

    /// The deliveries (and node faults) the search takes alone from `s`, if any (see the
    /// module documentation, "Deliveries"): every request to a set of masters closed
    /// under what could reach them first, one of them overdue, so that the tick waits
    /// for it, and every fault that may still strike those masters.
    pub fn deliveries_alone(&self, s: &State) -> Option<Vec<Action>> {
        if !self.partial_order_applies() || self.could_interfere_with_reads(s) {
            return None;
        }
        // Whether each client decides quietly, asked at most once per state: the answer
        // plays out the client's replies on a copy of the state, and every overdue
        // master asks it again.
        let mut quiet = vec![None; s.clients.len()];
        (0..s.nodes.len())
            .filter_map(|m| {
                let overdue = s.clients.iter().enumerate().any(|(i, c)| {
                    c.core.flights[m]
                        .as_ref()
                        .is_some_and(|f| f.undelivered() && self.overdue(s, i, f, m))
                });
                overdue
                    .then(|| self.deliveries_closed(s, m, &mut quiet))
                    .flatten()
            })
            .min_by_key(Vec::len)
    }

    /// The deliveries to master `m` and to every master they depend on: each client's
    /// request there, if it has one; a client with none there (or whose reply from
    /// there is on its way back) either sends nothing before the next tick, or is in
    /// the middle of an operation with a request still to deliver to some master `k`,
    /// whose answer it needs before it can send again, so `k` joins the set. `None`
    /// when a client could send to a master of the set by steps outside it. `quiet`
    /// keeps each client's [`Self::decides_quietly`] once asked.
    fn deliveries_closed(
        &self,
        s: &State,
        m: usize,
        quiet: &mut [Option<bool>],
    ) -> Option<Vec<Action>> {
        let mut masters: u32 = 1 << m;
        let mut todo = vec![m];
        let mut set = Vec::new();
        while let Some(j) = todo.pop() {
            for (i, c) in s.clients.iter().enumerate() {
                let undelivered = |k: usize| {
                    c.core.flights[k]
                        .as_ref()
                        .is_some_and(|f| f.undelivered() && self.reachable(s, i, f, k))
                };
                match &c.core.flights[j] {
                    Some(f) if f.undelivered() => {
                        if !self.reachable(s, i, f, j) {
                            return None;
                        }
                        set.push(Action::Deliver(client_index(i), client_index(j)));
                    }
                    slot => {
                        if slot.is_none() && self.sends_nothing_before_tick(c) {
                            continue;
                        }
                        // A busy machine sends only when an answer decides its operation,
                        // and that takes every master it waits for, `k` among them.
                        if !c.core.machine.busy() {
                            return None;
                        }
                        let waits: u32 = (0..s.nodes.len())
                            .filter(|&k| undelivered(k))
                            .fold(0, |set, k| set | 1 << k);
                        if waits == 0 {
                            // Every answer it waits for is on its way back.
                            if *quiet[i].get_or_insert_with(|| self.decides_quietly(s, i)) {
                                continue;
                            }
                            return None;
                        }
                        // One master it waits for is enough: one already in the set,
                        // else the first, which joins it.
                        if waits & masters == 0 {
                            let k = waits.trailing_zeros() as usize;
                            masters |= 1 << k;
                            todo.push(k);
                        }
                    }
                }
            }
        }
        // The faults that may still strike a master of the set join it: each changes
        // what a delivery there does.
        let faults = self.node_faults_at(s, masters);
        if !faults.is_empty() && s.clients.iter().any(|c| c.paused) {
            // Taking a fault alone would end the resumes pause placement keeps on
            // offer until a step is taken.
            return None;
        }
        set.extend(faults);
        Some(set)
    }

    /// Whether client `c`'s operation in flight is the last of its life and a release,
    /// which reports no grant (see the module documentation, "A client's last
    /// operation").
    fn in_last_release(&self, c: &Client) -> bool {
        self.client_program().ends_on_answer(&c.core) && c.core.machine.awaits_only_reported()
    }

    /// Whether delivering client `c`'s request to master `m` changes nothing that anyone
    /// but `c` reads, now or whenever it comes: `c` is in its last operation, the request
    /// is a compare-and-delete whose token no entry of its node holds, no fault can
    /// strike that node any more, and executed on a copy it leaves every node, the stock
    /// and the ownership flag as they are (see the module documentation).
    pub fn delivery_changes_nothing(&self, s: &State, c: u8, m: u8) -> bool {
        let (i, j) = (usize::from(c), usize::from(m));
        let client = &s.clients[i];
        let Some(flight) = client.core.flights[j].as_ref() else {
            return false;
        };
        let Command::Eval {
            script: Script::CompareAndDelete,
            args,
            ..
        } = &*flight.command
        else {
            return false;
        };
        let n = usize::from(flight.node);
        let node = &s.nodes[n];
        let holds_token = |token: &str| {
            node.data
                .entries
                .iter()
                .any(|(_, e)| matches!(&e.value, Value::Str(v) if v.as_str() == token))
        };
        if !self.partial_order_applies()
            || !flight.undelivered()
            || !node.alive
            || args.first().is_none_or(|token| holds_token(token))
            || !self.in_last_release(client)
            || self.could_interfere_with_reads(s)
            || !self.node_faults_at(s, 1 << n).is_empty()
        {
            return false;
        }
        self.next_state(s, Action::Deliver(c, m))
            .is_some_and(|next| {
                next.nodes == s.nodes
                    && next.stock == s.stock
                    && next.displaced_other == s.displaced_other
            })
    }

    /// The node faults offered at the masters of `masters` (bit per master).
    fn node_faults_at(&self, s: &State, masters: u32) -> Vec<Action> {
        let mut out = Vec::new();
        for (j, node) in s.nodes.iter().enumerate() {
            if masters & (1 << j) != 0 && node.alive {
                self.node_faults(s, j, &mut out);
            }
        }
        out
    }

    /// Whether client `i`, once it has read every answer on its way back to it (in any
    /// order: its machine decides on their set, at this clock, since the tick waits),
    /// and timed out on each request a restarted master lost (an answer only its own
    /// step gives, which no delivery or node fault can change), sends nothing before
    /// the clock moves.
    fn decides_quietly(&self, s: &State, i: usize) -> bool {
        let mut t = s.clone();
        for k in 0..s.nodes.len() {
            if let Some(f) = &t.clients[i].core.flights[k] {
                let (c, m) = (client_index(i), client_index(k));
                let answer = if f.wait == Flight::LOST {
                    Action::Timeout(c, m)
                } else {
                    Action::Receive(c, m)
                };
                match self.next_state(&t, answer) {
                    Some(next) => t = next,
                    None => return false,
                }
            }
        }
        let c = &t.clients[i];
        c.core.flights.iter().all(Option::is_none)
            && !c.core.machine.busy()
            && self.sends_nothing_before_tick(c)
    }

    /// Whether client `c` cannot send a request before the clock moves: it is finished
    /// or crashed, has no attempt left or waits to retry, or holds the lock with its
    /// next request (the release) behind work that only ticks advance.
    fn sends_nothing_before_tick(&self, c: &Client) -> bool {
        let work = self.scenario.timing.work;
        match &c.core.phase {
            Phase::Done | Phase::Crashed => true,
            Phase::Idle => c.core.attempts == 0 || c.retry_wait,
            Phase::Critical { pc, read, worked } => {
                let program = self.client_program();
                let renewal_due = c.core.machine.renewing(&self.cfg)
                    && u64::from(c.since_renew) >= self.cfg.renew_interval();
                let waits_for_work = match program.op(*pc) {
                    // A read cannot be refused without a fencing token; the write after
                    // it waits `work` ticks.
                    Some(Op::Read) => {
                        work >= 1 && c.core.fence.is_none() && program.op(pc + 1) == Some(Op::Write)
                    }
                    Some(Op::Write) => read.is_some() && u32::from(*worked) < work,
                    Some(Op::Reenter | Op::Release) | None => false,
                };
                !renewal_due && waits_for_work
            }
            Phase::Acquiring | Phase::Waiting { .. } => false,
        }
    }

    /// Whether a step that could change what a read of a reply reads may still come: a
    /// lost reply or a cut link left in the budget, a replica that could be promoted, or
    /// a split brain in effect (its redirects).
    fn could_interfere_with_reads(&self, s: &State) -> bool {
        let left = |kind| self.budget_left(s, kind);
        left(FaultKind::LostReply)
            || left(FaultKind::Partition)
            || (self.scenario.topology.replicas > 0
                && (left(FaultKind::Failover) || left(FaultKind::SplitBrain)))
            || s.split.is_some()
            // A request given up on may still reach any master, unbidden.
            || s.clients.iter().any(|c| !c.core.strays.is_empty())
    }
}
