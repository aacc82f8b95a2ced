//! Fault kinds: one table row and one model rule each.
//!
//! A fault kind is
//! - a row of the table below ([`FaultKind`]'s methods): its `[faults]` key, its noun in
//!   a cause, its label on a gallery page. Everything kept per kind is a [`PerFault`]:
//!   the scenario's budget ([`Faults`]), what a state has spent ([`Spent`]), the search's
//!   coverage;
//! - one rule here (`Rule`): when the model offers the fault (and the step that undoes
//!   it: a resume, a heal, a client learning the new master), what it does to the state,
//!   and whether it strikes a hold;
//! - its real side, one arm of `Nemesis::carry_out` (harness/src/run/nemesis.rs), which
//!   replay, chaos and soak all use.
//!
//! Adding a kind is a variant, a table row, a rule, and an arm of `carry_out`.

use std::hash::{Hash, Hasher};
use std::ops::{Index, IndexMut};

use locklab::{DesignId, NoAnswer};

use crate::action::Action;
use crate::model::{client_index, LockModel};
use crate::state::{Flight, Phase, Split, State};

/// The kinds of fault of a scenario's `[faults]` budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    Pause,
    Crash,
    Failover,
    Restart,
    Partition,
    ClockJump,
    LostReply,
    SplitBrain,
}

/// How many kinds there are.
const KINDS: usize = 8;

impl FaultKind {
    /// Every kind, in the order of the `[faults]` keys.
    pub const ALL: [FaultKind; KINDS] = [
        FaultKind::Pause,
        FaultKind::Crash,
        FaultKind::Failover,
        FaultKind::Restart,
        FaultKind::Partition,
        FaultKind::ClockJump,
        FaultKind::LostReply,
        FaultKind::SplitBrain,
    ];

    /// The `[faults]` keys, in the order of [`FaultKind::ALL`].
    pub const KEYS: [&'static str; KINDS] = {
        let mut keys = [""; KINDS];
        let mut k = 0;
        while k < KINDS {
            keys[k] = TABLE[k].key;
            k += 1;
        }
        keys
    };

    /// Its place in [`FaultKind::ALL`] and in every [`PerFault`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The kind of a fault action, one that spends the budget (`None` for every other
    /// action, the steps that undo a fault included).
    pub fn of(action: &Action) -> Option<FaultKind> {
        Some(match action {
            Action::Pause(_) => FaultKind::Pause,
            Action::Crash(_) => FaultKind::Crash,
            Action::Failover(..) => FaultKind::Failover,
            Action::Restart(_) => FaultKind::Restart,
            Action::Partition(..) => FaultKind::Partition,
            Action::NodeClockJump(_) | Action::ClientClockJump(_) => FaultKind::ClockJump,
            Action::LoseReply(..) => FaultKind::LostReply,
            Action::SplitBrain(..) => FaultKind::SplitBrain,
            _ => return None,
        })
    }

    /// The kind whose rule takes `action`: a fault, or the step that undoes one (a
    /// resume, a heal, a redirect after a split brain).
    pub fn ruling(action: &Action) -> Option<FaultKind> {
        FaultKind::of(action).or(match action {
            Action::Resume(_) => Some(FaultKind::Pause),
            Action::Heal(..) => Some(FaultKind::Partition),
            Action::Redirect(..) => Some(FaultKind::SplitBrain),
            _ => None,
        })
    }

    /// Its `[faults]` key.
    pub fn key(self) -> &'static str {
        self.row().key
    }

    /// Its noun in a cause, singular: "a pause".
    pub fn noun(self) -> &'static str {
        self.row().noun
    }

    /// `n` faults of this kind, as a gallery page counts them: "1 pause", "2 lost
    /// replies".
    pub fn counted(self, n: u32) -> String {
        let (one, many) = self.row().label;
        format!("{n} {}", if n == 1 { one } else { many })
    }

    /// Whether the fault promotes a replica, so that a scenario needs replicas for it.
    pub fn needs_replica(self) -> bool {
        self.row().needs_replica
    }

    /// Its budget in `faults`.
    pub fn budget(self, faults: &Faults) -> u32 {
        faults[self]
    }

    fn row(self) -> &'static Row {
        &TABLE[self.index()]
    }
}

/// One kind's row of the table.
struct Row {
    key: &'static str,
    noun: &'static str,
    /// Singular and plural.
    label: (&'static str, &'static str),
    needs_replica: bool,
    /// Left out of a scenario's JSON when its budget is 0 (traces written before the
    /// kind existed stay as they were).
    omitted_when_zero: bool,
}

const fn row(key: &'static str, noun: &'static str, label: (&'static str, &'static str)) -> Row {
    Row {
        key,
        noun,
        label,
        needs_replica: false,
        omitted_when_zero: false,
    }
}

/// The table, in the order of [`FaultKind::ALL`].
const TABLE: [Row; KINDS] = [
    row("pauses", "a pause", ("pause", "pauses")),
    row("crashes", "a crash", ("crash", "crashes")),
    Row {
        needs_replica: true,
        ..row("failovers", "a failover", ("failover", "failovers"))
    },
    row("restarts", "a restart", ("restart", "restarts")),
    row("partitions", "a partition", ("partition", "partitions")),
    row("clock_jumps", "a clock jump", ("clock jump", "clock jumps")),
    row(
        "lost_replies",
        "a lost reply",
        ("lost reply", "lost replies"),
    ),
    Row {
        needs_replica: true,
        omitted_when_zero: true,
        ..row(
            "split_brains",
            "a split brain",
            ("split brain", "split brains"),
        )
    },
];

/// One value per fault kind, indexed by [`FaultKind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerFault<T>([T; KINDS]);

impl<T> PerFault<T> {
    /// The table whose entry for each kind is `f(kind)`.
    pub fn from_fn(mut f: impl FnMut(FaultKind) -> T) -> PerFault<T> {
        PerFault(FaultKind::ALL.map(&mut f))
    }

    /// Each kind with its entry, in the order of [`FaultKind::ALL`].
    pub fn iter(&self) -> impl Iterator<Item = (FaultKind, &T)> {
        FaultKind::ALL.into_iter().zip(&self.0)
    }
}

impl PerFault<u32> {
    /// The whole budget: the sum of all counts.
    pub fn total(&self) -> u32 {
        self.0.iter().sum()
    }
}

impl<T> Index<FaultKind> for PerFault<T> {
    type Output = T;
    fn index(&self, kind: FaultKind) -> &T {
        &self.0[kind.index()]
    }
}

impl<T> IndexMut<FaultKind> for PerFault<T> {
    fn index_mut(&mut self, kind: FaultKind) -> &mut T {
        &mut self.0[kind.index()]
    }
}

/// Entry by entry, as a struct of one field per kind hashes: no length prefix, so that
/// a state's fingerprint does not depend on how the table is stored.
impl<T: Hash> Hash for PerFault<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        for x in &self.0 {
            x.hash(state);
        }
    }
}

/// As the `[faults]` table: each key with its count.
impl<T: serde::Serialize + Default + PartialEq> serde::Serialize for PerFault<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let kept: Vec<(FaultKind, &T)> = self
            .iter()
            .filter(|(k, v)| !(k.row().omitted_when_zero && **v == T::default()))
            .collect();
        let mut map = serializer.serialize_map(Some(kept.len()))?;
        for (k, v) in kept {
            map.serialize_entry(k.key(), v)?;
        }
        map.end()
    }
}

/// `[faults]`: how many of each fault the checker may inject.
///
/// - `pauses`: stop-the-world pauses of a client;
/// - `crashes`: client crashes;
/// - `failovers`: a master dies and a (possibly stale) replica is promoted;
/// - `restarts`: a node comes back empty;
/// - `partitions`: a client-to-node link is cut (and later healed);
/// - `clock_jumps`: a node's or client's clock jumps by `timing.clock_jump`;
/// - `lost_replies`: the reply to a command that ran never reaches its client, whose
///   timeout fires;
/// - `split_brains` (0 or 1): a replica is promoted while the old master keeps serving
///   the clients on its side of a partition.
pub type Faults = PerFault<u32>;

/// Faults a state has spent.
pub type Spent = PerFault<u8>;

/// One fault kind's rule in the model.
trait Rule: Sync {
    /// Offers the fault (or its undoing step) at client `i`, which has neither crashed
    /// nor finished.
    fn at_client(&self, _m: &LockModel, _s: &State, _i: usize, _out: &mut Vec<Action>) {}

    /// Offers its steps at client `i`, which crashed or finished.
    fn at_gone_client(&self, _m: &LockModel, _s: &State, _i: usize, _out: &mut Vec<Action>) {}

    /// Offers the fault at live node `n`.
    fn at_node(&self, _m: &LockModel, _s: &State, _n: usize, _out: &mut Vec<Action>) {}

    /// Takes the fault or its undoing step; `None` when it cannot be taken here.
    fn apply(&self, m: &LockModel, s: &mut State, a: Action) -> Option<()>;

    /// Whether fault `a`, taken from `s`, strikes a hold (the search's coverage).
    fn strikes_a_hold(&self, m: &LockModel, s: &State, a: Action) -> bool;
}

/// The rules, in the order of [`FaultKind::ALL`].
const RULES: [&dyn Rule; KINDS] = [
    &Pause,
    &Crash,
    &Failover,
    &Restart,
    &Partition,
    &ClockJump,
    &LostReply,
    &SplitBrain,
];

fn rule(kind: FaultKind) -> &'static dyn Rule {
    RULES[kind.index()]
}

/// The order in which a client's faults are offered (the search's order of successors,
/// so that its counterexamples stay as they are).
const AT_CLIENT: [FaultKind; 6] = [
    FaultKind::Pause,
    FaultKind::Crash,
    FaultKind::Partition,
    FaultKind::LostReply,
    FaultKind::SplitBrain,
    FaultKind::ClockJump,
];

/// The order in which a node's faults are offered.
const AT_NODE: [FaultKind; 4] = [
    FaultKind::Failover,
    FaultKind::SplitBrain,
    FaultKind::Restart,
    FaultKind::ClockJump,
];

impl LockModel {
    /// Whether the budget still allows a fault of `kind` in `s`.
    pub fn budget_left(&self, s: &State, kind: FaultKind) -> bool {
        u32::from(s.spent[kind]) < self.scenario.faults[kind]
    }

    /// The faults (and the steps that undo them) offered at client `i`.
    pub(crate) fn client_faults(&self, s: &State, i: usize, out: &mut Vec<Action>) {
        let gone = matches!(s.clients[i].core.phase, Phase::Crashed | Phase::Done);
        for kind in AT_CLIENT {
            if gone {
                rule(kind).at_gone_client(self, s, i, out);
            } else {
                rule(kind).at_client(self, s, i, out);
            }
        }
    }

    /// The faults the budget still allows at live node `n`, and a drift step of its
    /// clock (bounded by `timing.node_drift`, not by the budget).
    pub(crate) fn node_faults(&self, s: &State, n: usize, out: &mut Vec<Action>) {
        for kind in AT_NODE {
            rule(kind).at_node(self, s, n, out);
        }
        if u32::from(s.nodes[n].drifted) < self.scenario.timing.node_drift {
            out.push(Action::NodeDrift(client_index(n)));
        }
    }

    /// Takes fault `a` (or the step that undoes one); `None` when it cannot be taken.
    pub(crate) fn apply_fault(&self, s: &mut State, a: Action) -> Option<()> {
        rule(FaultKind::ruling(&a)?).apply(self, s, a)
    }

    /// Whether fault `action` strikes a hold: a client fault of a client that holds the
    /// lock, a node fault of a node that keeps a holder's lock entry, a failover or
    /// split brain of the slot whose master keeps one.
    pub fn strikes_a_hold(&self, s: &State, action: Action) -> bool {
        FaultKind::of(&action).is_some_and(|k| rule(k).strikes_a_hold(self, s, action))
    }

    /// Whether node `n` keeps the lock entry of a client that holds the lock.
    fn keeps_a_holders_entry(&self, s: &State, n: usize) -> bool {
        s.nodes[n]
            .data
            .entry(&self.cfg.key)
            .and_then(|e| e.owner)
            .is_some_and(|o| s.clients[usize::from(o)].holding())
    }
}

/// A client fault strikes a hold when its client holds the lock.
fn client_holds(s: &State, a: Action) -> bool {
    a.client()
        .is_some_and(|c| s.clients[usize::from(c)].holding())
}

/// A stop-the-world pause of a client: its work, its renewal and the replies it reads
/// stop until it resumes, whenever it likes.
struct Pause;

impl Rule for Pause {
    fn at_client(&self, m: &LockModel, s: &State, i: usize, out: &mut Vec<Action>) {
        if s.clients[i].paused {
            out.push(Action::Resume(client_index(i)));
        } else if m.budget_left(s, FaultKind::Pause) {
            out.push(Action::Pause(client_index(i)));
        }
    }

    fn apply(&self, _m: &LockModel, s: &mut State, a: Action) -> Option<()> {
        match a {
            Action::Pause(c) => {
                s.spent[FaultKind::Pause] += 1;
                s.clients[usize::from(c)].paused = true;
            }
            Action::Resume(c) => {
                let cl = &mut s.clients[usize::from(c)];
                cl.paused = false;
                cl.waited = 0;
            }
            _ => return None,
        }
        Some(())
    }

    fn strikes_a_hold(&self, _m: &LockModel, s: &State, a: Action) -> bool {
        client_holds(s, a)
    }
}

/// The client process dies. What is on the wire stays there: a request still reaches
/// its node; a reply has nobody to read it, and a `WAIT` blocking on its node goes with
/// the process's connection.
struct Crash;

impl Rule for Crash {
    fn at_client(&self, m: &LockModel, s: &State, i: usize, out: &mut Vec<Action>) {
        if m.budget_left(s, FaultKind::Crash) {
            out.push(Action::Crash(client_index(i)));
        }
    }

    fn apply(&self, _m: &LockModel, s: &mut State, a: Action) -> Option<()> {
        let Action::Crash(c) = a else { return None };
        s.spent[FaultKind::Crash] += 1;
        let cl = &mut s.clients[usize::from(c)];
        cl.core.phase = Phase::Crashed;
        cl.paused = false;
        // A reply, or a WAIT blocking on its node, goes with the process's connection.
        for f in &mut cl.core.flights {
            if f.as_ref().is_some_and(|f| f.held.is_some() || f.blocked()) {
                *f = None;
            }
        }
        Some(())
    }

    fn strikes_a_hold(&self, _m: &LockModel, s: &State, a: Action) -> bool {
        client_holds(s, a)
    }
}

/// A master dies for good and one of its replicas, by the promotion rule, takes its
/// slot; its other replicas follow the promoted one. The dead master's connections go:
/// the requests given up on that were on their way to it, and the `WAIT`s blocking there
/// (their clients time out).
struct Failover;

impl Rule for Failover {
    fn at_node(&self, m: &LockModel, s: &State, n: usize, out: &mut Vec<Action>) {
        let Some(master) = s.nodes[n].replica_of else {
            return;
        };
        let slot = s.serving.iter().position(|&p| p == master);
        if let (Some(slot), true) = (slot, m.promotable(s, n, 0)) {
            if m.budget_left(s, FaultKind::Failover) {
                out.push(Action::Failover(client_index(slot), client_index(n)));
            }
        }
    }

    fn apply(&self, m: &LockModel, s: &mut State, a: Action) -> Option<()> {
        let Action::Failover(slot, r) = a else {
            return None;
        };
        s.spent[FaultKind::Failover] += 1;
        let old = m.promote(s, slot, r, 0);
        s.nodes[usize::from(old)].alive = false;
        LockModel::drop_connections_to(s, old);
        Some(())
    }

    fn strikes_a_hold(&self, m: &LockModel, s: &State, a: Action) -> bool {
        let Action::Failover(slot, _) = a else {
            return false;
        };
        m.keeps_a_holders_entry(s, usize::from(s.serving[usize::from(slot)]))
    }
}

/// A node restarts empty (no persistence); the requests on their way to it (given up
/// on or not), and the `WAIT`s blocking there, go with its connections.
struct Restart;

impl Rule for Restart {
    fn at_node(&self, m: &LockModel, s: &State, n: usize, out: &mut Vec<Action>) {
        if m.budget_left(s, FaultKind::Restart) {
            out.push(Action::Restart(client_index(n)));
        }
    }

    fn apply(&self, _m: &LockModel, s: &mut State, a: Action) -> Option<()> {
        let Action::Restart(n) = a else { return None };
        s.spent[FaultKind::Restart] += 1;
        s.nodes[usize::from(n)].data = Default::default();
        LockModel::reset_connections_to(s, n);
        Some(())
    }

    fn strikes_a_hold(&self, m: &LockModel, s: &State, a: Action) -> bool {
        let Action::Restart(n) = a else { return false };
        m.keeps_a_holders_entry(s, usize::from(n))
    }
}

/// The link from a client to a master slot is cut, and heals whenever, also after its
/// client crashed or finished (what it left on the wire then arrives).
struct Partition;

impl Rule for Partition {
    fn at_client(&self, m: &LockModel, s: &State, i: usize, out: &mut Vec<Action>) {
        let c = &s.clients[i];
        for slot in (0..m.masters()).map(client_index) {
            if c.cut & (1 << slot) != 0 {
                out.push(Action::Heal(client_index(i), slot));
            } else if m.budget_left(s, FaultKind::Partition) {
                out.push(Action::Partition(client_index(i), slot));
            }
        }
    }

    fn at_gone_client(&self, m: &LockModel, s: &State, i: usize, out: &mut Vec<Action>) {
        let c = &s.clients[i];
        if c.core.strays.is_empty() && c.core.flights.iter().all(Option::is_none) {
            return;
        }
        for slot in (0..m.masters()).map(client_index) {
            if c.cut & (1 << slot) != 0 {
                out.push(Action::Heal(client_index(i), slot));
            }
        }
    }

    fn apply(&self, _m: &LockModel, s: &mut State, a: Action) -> Option<()> {
        match a {
            Action::Partition(c, slot) => {
                s.spent[FaultKind::Partition] += 1;
                s.clients[usize::from(c)].cut |= 1 << slot;
            }
            Action::Heal(c, slot) => s.clients[usize::from(c)].cut &= !(1 << slot),
            _ => return None,
        }
        Some(())
    }

    fn strikes_a_hold(&self, _m: &LockModel, s: &State, a: Action) -> bool {
        client_holds(s, a)
    }
}

/// A clock jumps forward by `timing.clock_jump`: a node's (its keys may expire at
/// once), or a client's where the design compares timestamps (getset-timestamp).
struct ClockJump;

impl Rule for ClockJump {
    fn at_client(&self, m: &LockModel, s: &State, i: usize, out: &mut Vec<Action>) {
        if m.budget_left(s, FaultKind::ClockJump) && m.scenario.design == DesignId::GetsetTimestamp
        {
            out.push(Action::ClientClockJump(client_index(i)));
        }
    }

    fn at_node(&self, m: &LockModel, s: &State, n: usize, out: &mut Vec<Action>) {
        if m.budget_left(s, FaultKind::ClockJump) {
            out.push(Action::NodeClockJump(client_index(n)));
        }
    }

    fn apply(&self, m: &LockModel, s: &mut State, a: Action) -> Option<()> {
        let jump = i64::from(m.scenario.timing.clock_jump);
        match a {
            Action::NodeClockJump(n) => {
                s.spent[FaultKind::ClockJump] += 1;
                let n = usize::from(n);
                s.nodes[n].offset += jump;
                let clock = m.node_clock(s, n);
                s.nodes[n].data.expire(clock);
            }
            Action::ClientClockJump(c) => {
                s.spent[FaultKind::ClockJump] += 1;
                s.clients[usize::from(c)].offset += jump;
            }
            _ => return None,
        }
        Some(())
    }

    fn strikes_a_hold(&self, m: &LockModel, s: &State, a: Action) -> bool {
        match a {
            Action::NodeClockJump(n) => m.keeps_a_holders_entry(s, usize::from(n)),
            _ => client_holds(s, a),
        }
    }
}

/// The reply to a command that ran is lost on its way back; the running client's
/// timeout fires.
struct LostReply;

impl Rule for LostReply {
    fn at_client(&self, m: &LockModel, s: &State, i: usize, out: &mut Vec<Action>) {
        let c = &s.clients[i];
        if m.budget_left(s, FaultKind::LostReply) && c.running() {
            for (slot, f) in c.core.flights.iter().enumerate() {
                if f.as_ref().is_some_and(|f| f.held.is_some()) {
                    out.push(Action::LoseReply(client_index(i), client_index(slot)));
                }
            }
        }
    }

    fn apply(&self, m: &LockModel, s: &mut State, a: Action) -> Option<()> {
        let Action::LoseReply(c, slot) = a else {
            return None;
        };
        let (c, slot) = (usize::from(c), usize::from(slot));
        s.clients[c].core.flights[slot].as_ref()?.held.as_ref()?;
        if !m.budget_left(s, FaultKind::LostReply) {
            return None;
        }
        s.spent[FaultKind::LostReply] += 1;
        m.answer(s, c, slot, Err(NoAnswer));
        Some(())
    }

    fn strikes_a_hold(&self, _m: &LockModel, s: &State, a: Action) -> bool {
        client_holds(s, a)
    }
}

/// A split brain (the case Jepsen found in Redis Sentinel): a partition cuts a master
/// off from Sentinel and the replicas on the majority's side, one of which is promoted;
/// the old master stays up and serves every client that has not learnt of the new one
/// (each learns it whenever: [`Action::Redirect`]). Offered at a replica, once for every
/// way the partition can split the slot's other replicas.
struct SplitBrain;

impl Rule for SplitBrain {
    fn at_client(&self, _m: &LockModel, s: &State, i: usize, out: &mut Vec<Action>) {
        if let Some(sp) = &s.split {
            if sp.moved & (1 << i) == 0 {
                out.push(Action::Redirect(client_index(i), sp.slot));
            }
        }
    }

    fn at_node(&self, m: &LockModel, s: &State, n: usize, out: &mut Vec<Action>) {
        let Some(master) = s.nodes[n].replica_of else {
            return;
        };
        let Some(slot) = s.serving.iter().position(|&p| p == master) else {
            return;
        };
        if s.split.is_some() || !m.budget_left(s, FaultKind::SplitBrain) {
            return;
        }
        // Those on the old master's side stay with it; Sentinel promotes among the rest.
        let others = m.followers(s, master, slot) & !m.replica_bit(slot, n);
        let mut with_old = others;
        loop {
            if m.promotable(s, n, with_old) {
                out.push(Action::SplitBrain(
                    client_index(slot),
                    client_index(n),
                    with_old,
                ));
            }
            if with_old == 0 {
                break;
            }
            with_old = (with_old - 1) & others;
        }
    }

    fn apply(&self, m: &LockModel, s: &mut State, a: Action) -> Option<()> {
        match a {
            Action::SplitBrain(slot, r, with_old) => {
                s.spent[FaultKind::SplitBrain] += 1;
                let old = m.promote(s, slot, r, with_old);
                s.split = Some(Split {
                    slot,
                    old,
                    moved: 0,
                });
            }
            Action::Redirect(c, slot) => {
                let old = s.split.as_ref()?.old;
                s.split.as_mut()?.moved |= 1 << c;
                // Its connection to the old master goes, and a WAIT blocking there with
                // it.
                let flight = s.clients[usize::from(c)].core.flights[usize::from(slot)].as_mut();
                if let Some(f) = flight.filter(|f| f.blocked() && f.node == old) {
                    f.wait = Flight::LOST;
                }
            }
            _ => return None,
        }
        Some(())
    }

    fn strikes_a_hold(&self, m: &LockModel, s: &State, a: Action) -> bool {
        let Action::SplitBrain(slot, ..) = a else {
            return false;
        };
        m.keeps_a_holders_entry(s, usize::from(s.serving[usize::from(slot)]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_row_and_rule_in_place() {
        for (k, kind) in FaultKind::ALL.into_iter().enumerate() {
            assert_eq!(kind.index(), k);
        }
        let keys: Vec<&str> = FaultKind::ALL.iter().map(|k| k.key()).collect();
        assert_eq!(
            keys,
            [
                "pauses",
                "crashes",
                "failovers",
                "restarts",
                "partitions",
                "clock_jumps",
                "lost_replies",
                "split_brains"
            ]
        );
        // Each client and node order names a kind at most once.
        for order in [&AT_CLIENT[..], &AT_NODE[..]] {
            let mut seen = std::collections::BTreeSet::new();
            assert!(order.iter().all(|k| seen.insert(*k)));
        }
    }

    #[test]
    fn a_table_hashes_as_a_struct_of_one_field_per_kind() {
        #[derive(Hash)]
        struct Fields(u8, u8, u8, u8, u8, u8, u8, u8);
        let mut spent = Spent::default();
        spent[FaultKind::Crash] = 2;
        spent[FaultKind::SplitBrain] = 1;
        assert_eq!(
            crate::model::fingerprint(&spent),
            crate::model::fingerprint(&Fields(0, 2, 0, 0, 0, 0, 0, 1))
        );
    }

    #[test]
    fn a_budget_serializes_as_its_keys_and_leaves_out_a_zero_split_brain() {
        let mut f = Faults::default();
        f[FaultKind::Pause] = 1;
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(
            json,
            r#"{"pauses":1,"crashes":0,"failovers":0,"restarts":0,"partitions":0,"clock_jumps":0,"lost_replies":0}"#
        );
        f[FaultKind::SplitBrain] = 1;
        assert!(serde_json::to_string(&f)
            .unwrap()
            .ends_with(r#""lost_replies":0,"split_brains":1}"#));
        assert_eq!(f.total(), 2);
    }
}
