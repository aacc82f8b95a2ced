//! The stateright model: a small struct, an action enum, and the properties beside them.
//!
//! Time is partially synchronous (docs/ARCHITECTURE.md, "Model semantics"): a global `Tick` up to
//! the horizon, if the scenario has one ([`crate::relative_time`] without), disabled while
//! a running client has had a step pending for `max_step_delay` ticks. A command travels in two legs, each delivered within
//! `max_step_delay` ticks: the request reaches the node, which executes it
//! ([`Action::Deliver`]); the reply comes back to the client ([`Action::Receive`]). A
//! paused client receives nothing until it resumes (its reply waits, and the clock may
//! run past the bound meanwhile); a cut link or a dead node answers neither leg, and the
//! running client's timeout fires ([`Action::Timeout`]), also for a command that ran.
//! A crashed client's requests already sent still reach their nodes; their replies
//! are read by nobody. A `WAIT` with a timeout (`[timing] wait_timeout`) delivered short
//! of replicas blocks on its node, with no reply and no leg the clock waits for, until a
//! replica's catch-up ([`Action::Replicate`]) brings enough or the tick that ends its
//! timeout answers it ([`Flight::wait`]). Every interleaving is offered; the search
//! ([`crate::search`]) takes the answers a Redlock fan-out only records in one order,
//! and overdue Redlock requests before steps that cannot touch them
//! ([`crate::partial_order`]). Faults are actions the checker may choose at any point
//! within the budget.

use locklab::resource::Stock;
use locklab::{Answer, Command, DesignId, LockConfig, NoAnswer, Reply, Step};
use stateright::{Model, Property as SrProperty};

pub use crate::action::Action;
pub use crate::fault::FaultKind;
use std::sync::{Arc, Mutex};

pub use crate::client::Op;
use crate::client::{Change, Program};
use crate::fault::Spent;
use crate::redis::Exec;
use crate::run_fault::{self, RunFault};
use crate::scenario::{Arrival, Promotion, Property, Scenario, MAX_MASTERS};
use crate::state::{Client, ClientCore, Flight, Node, Phase, State, Stray};

/// The stock every scenario starts with.
pub const INITIAL_STOCK: i64 = 10;

/// The model of one scenario.
#[derive(Clone, Debug)]
pub struct LockModel {
    /// The scenario.
    pub scenario: Scenario,
    /// The lock configuration the machines run with (times in ticks).
    pub cfg: LockConfig,
    program: Program,
    /// The first fault of a custom step's run the search met ([`crate::run_fault`]):
    /// a report beside the search, not part of any state.
    fault: Arc<Mutex<Option<RunFault>>>,
}

/// A deterministic hash (the same in every run, so representatives are stable).
pub fn fingerprint<T: std::hash::Hash>(value: &T) -> u64 {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// The states first reached at each of the first `depth` steps of a breadth-first walk
/// of the unreduced model (level `k` holds those `k + 1` steps from the start): for tests
/// and probes that check something of every reachable state near the start.
pub fn levels(model: &LockModel, depth: usize) -> Vec<Vec<State>> {
    let mut seen = std::collections::HashSet::new();
    let mut level = model.init_states();
    let mut actions = Vec::new();
    let mut out = Vec::with_capacity(depth);
    for _ in 0..depth {
        let mut next = Vec::new();
        for s in &level {
            actions.clear();
            model.actions(s, &mut actions);
            next.extend(
                actions
                    .iter()
                    .filter_map(|&a| model.next_state(s, a))
                    .filter(|n| seen.insert(fingerprint(n))),
            );
        }
        out.push(next.clone());
        level = next;
    }
    out
}

/// The node a client reaches for each master slot ([`LockModel::routes`]), kept in
/// place: it is read at every machine step.
struct Routes {
    len: usize,
    node: [u8; MAX_MASTERS as usize],
}

impl std::ops::Deref for Routes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.node[..self.len]
    }
}

/// A client, master or node index as the `Action` enum stores it. Indexes are bounded by
/// the scenario caps (`MAX_CLIENTS`, `MAX_MASTERS`, `MAX_REPLICAS`), far below 256.
pub(crate) fn client_index(i: usize) -> u8 {
    u8::try_from(i).expect("indexes are bounded by the scenario caps")
}

impl LockModel {
    /// The model of `scenario`, running its design from `src/`.
    pub fn new(scenario: &Scenario) -> Self {
        let mut cfg = LockConfig::new(scenario.design, "lock", u64::from(scenario.timing.ttl));
        cfg.masters = scenario.topology.masters as usize;
        // The drift allowance in ticks, as the scenario sets it (clocks that run fast are
        // `Action::NodeDrift`).
        cfg.drift_ppm = 0;
        cfg.drift_ms = u64::from(scenario.timing.drift_allowance);
        cfg.fencing = scenario.fencing.enabled();
        cfg.wait_replicas = scenario.wait_replicas;
        if scenario.timing.wait_timeout > 0 {
            // In the machine's unit, the tick, as the ttl: `WAIT 1 2` blocks up to two
            // ticks. A WAIT without a timeout keeps the configuration's own number,
            // which the model does not read (it answers at the delivery), so that the
            // scenarios written before the key kept their states and traces.
            cfg.wait_timeout_ms = u64::from(scenario.timing.wait_timeout);
        }
        if scenario.design == DesignId::Redlock {
            // Redlock's client contract: the holder takes the lock only with more
            // validity left than the scenario asks (by default its slowest critical
            // section: the read within the step bound, the work, the write within it).
            cfg.min_validity = scenario.timing.min_validity();
        }
        if let Some(r) = scenario.renewal {
            cfg.renewal_on_error = r.renewal_on_error;
            cfg.watchdog = r.watchdog;
        }
        if let Some(lock) = &scenario.lock {
            cfg.custom = Some(std::sync::Arc::new(lock.lock.clone()));
            cfg.renew_every = lock.every.map(u64::from);
            // A custom lock's texts speak Redis's units: `{ttl}` and the abstract
            // Redis's times are ms, a tick is tick_ms of them. The built-in designs'
            // commands carry times in the machine's unit, the tick, read as 1 ms.
            cfg.unit_ms = scenario.timing.tick_ms;
        }
        Self::with_config(scenario, cfg)
    }

    /// The model with an explicit lock configuration.
    pub fn with_config(scenario: &Scenario, cfg: LockConfig) -> Self {
        LockModel {
            scenario: scenario.clone(),
            program: Program::of(&cfg),
            cfg,
            fault: Arc::default(),
        }
    }

    /// The first fault of a custom step's run met so far (the least, when several
    /// threads met some: the same for every run of the search).
    pub fn run_fault(&self) -> Option<RunFault> {
        self.fault
            .lock()
            .map_or_else(|e| e.into_inner().clone(), |f| f.clone())
    }

    fn note_fault(&self, fault: RunFault) {
        let mut kept = self
            .fault
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.as_ref().is_none_or(|k| fault < *k) {
            *kept = Some(fault);
        }
    }

    /// The critical-section program every client runs once it holds the lock.
    pub fn program(&self) -> &[Op] {
        self.program.ops()
    }

    /// The client program the model drives (shared with the real-run engine).
    pub fn client_program(&self) -> &Program {
        &self.program
    }

    pub(crate) fn masters(&self) -> usize {
        self.scenario.topology.masters as usize
    }

    /// The client's clock reading.
    pub fn client_clock(&self, s: &State, c: usize) -> i64 {
        i64::from(s.now) + s.clients[c].offset
    }

    /// A node's clock reading.
    pub fn node_clock(&self, s: &State, n: usize) -> i64 {
        i64::from(s.now) + s.nodes[n].offset
    }

    fn op(&self, c: &Client) -> Option<Op> {
        self.program
            .next(&c.core.phase, &c.core.machine, self.scenario.timing.work)
    }

    fn renew_due(&self, c: &Client) -> bool {
        c.holding()
            && !c.core.machine.busy()
            && c.core.machine.renewing(&self.cfg)
            && u64::from(c.since_renew) >= self.cfg.renew_interval()
    }

    /// Whether a running client's due renewal has waited `max_step_delay` ticks: the
    /// renewal is a step of its own, bounded on its own (the renewal task's timer does
    /// not wait for the client's other steps), so the tick waits for it.
    fn renew_overdue(&self, c: &Client) -> bool {
        c.running()
            && self.renew_due(c)
            && u64::from(c.since_renew)
                >= self
                    .cfg
                    .renew_interval()
                    .saturating_add(u64::from(self.scenario.timing.max_step_delay))
    }

    /// The most `since_renew` counts to: past the renewal's bound every value reads
    /// the same.
    fn since_renew_cap(&self) -> u8 {
        let cap = self
            .cfg
            .renew_interval()
            .saturating_add(u64::from(self.scenario.timing.max_step_delay));
        u8::try_from(cap).unwrap_or(u8::MAX)
    }

    /// The client's own steps (not faults), in the order they are offered.
    fn client_actions(&self, s: &State, i: usize, out: &mut Vec<Action>) {
        let c = &s.clients[i];
        let ci = client_index(i);
        // A crashed client's requests already sent still reach their nodes.
        for (m, f) in c.core.flights.iter().enumerate() {
            let Some(f) = f else { continue };
            let reachable = self.reachable(s, i, f, m);
            let m = client_index(m);
            match (&f.held, reachable) {
                // A WAIT blocking on its node has no leg to deliver: it waits for a
                // replica or its timeout (or, cut off, for its client's timeout).
                (None, true) if f.blocked() => {}
                (None, true) => out.push(Action::Deliver(ci, m)),
                (Some(_), true) if c.running() => out.push(Action::Receive(ci, m)),
                (_, false) if c.running() => out.push(Action::Timeout(ci, m)),
                _ => {}
            }
        }
        // What it gave up on still reaches its node, whatever the client does now.
        for (k, st) in c.core.strays.iter().enumerate() {
            if self.reachable(s, i, &st.flight, usize::from(st.slot)) {
                out.push(Action::DeliverLate(ci, client_index(k)));
            }
        }
        if !c.running() {
            return;
        }
        if c.core.phase == Phase::Idle && c.core.attempts > 0 && !c.retry_wait {
            out.push(Action::Acquire(ci));
        }
        if let Some(op) = self.op(c) {
            out.push(match op {
                Op::Reenter => Action::Reenter(ci),
                Op::Read => Action::Read(ci),
                Op::Write => Action::Write(ci),
                Op::Release => Action::Release(ci),
            });
        }
        if self.renew_due(c) {
            out.push(Action::Renew(ci));
        }
    }

    /// Whether a running client has a step of its program (not a message delivery, not
    /// a renewal, each bounded on its own) it must take within `max_step_delay` ticks:
    /// its next op, or with `arrival = "start"` its first attempt (with "any", it comes
    /// whenever it likes). A denied client retries whenever it likes (a back-off of any
    /// length), which is how a retry can land just after a lease expired. `waited`
    /// counts the ticks this step has waited, and only this step's taking resets it.
    fn has_pending(&self, s: &State, i: usize) -> bool {
        let c = &s.clients[i];
        let first_attempt = self.scenario.clients.arrival == Arrival::Start
            && c.core.phase == Phase::Idle
            && u32::from(c.core.attempts) == self.scenario.clients.attempts;
        c.running() && (first_attempt || self.op(c).is_some())
    }

    /// Whether a request, a reply or a timeout is due: each leg is delivered within
    /// `max_step_delay` ticks; a reply (or a timeout) only to a running client.
    ///
    /// A `WAIT` blocking on its node is no leg: the tick does not wait for it (only for
    /// its client's timeout, once its link is cut or its node gone).
    fn deliverable(&self, s: &State, i: usize, f: &Flight, m: usize) -> bool {
        let c = &s.clients[i];
        match (&f.held, self.reachable(s, i, f, m)) {
            (None, true) if f.blocked() => false,
            (None, true) => true,
            _ => c.running(),
        }
    }

    /// The faults and their undoing steps (see [`crate::fault`]), and each replica's
    /// catching up with its master.
    fn fault_actions(&self, s: &State, out: &mut Vec<Action>) {
        for i in 0..s.clients.len() {
            self.client_faults(s, i, out);
        }
        for (n, node) in s.nodes.iter().enumerate() {
            if !node.alive {
                continue;
            }
            if let Some(master) = node.replica_of {
                let up = &s.nodes[master as usize];
                if up.alive && (up.data != node.data || up.repl_offset != node.repl_offset) {
                    out.push(Action::Replicate(client_index(n)));
                }
            }
            self.node_faults(s, n, out);
        }
    }

    /// Whether client `i`'s request or reply on slot `m` has waited `max_step_delay`
    /// ticks and is due: the tick waits for it.
    pub(crate) fn overdue(&self, s: &State, i: usize, f: &Flight, m: usize) -> bool {
        u32::from(f.age) >= self.scenario.timing.max_step_delay && self.deliverable(s, i, f, m)
    }

    /// Whether client `i`'s request given up on has been deliverable for
    /// `max_step_delay` ticks: the tick waits for it.
    pub(crate) fn stray_overdue(&self, s: &State, i: usize, st: &Stray) -> bool {
        u32::from(st.flight.age) >= self.scenario.timing.max_step_delay
            && self.reachable(s, i, &st.flight, usize::from(st.slot))
    }

    /// Whether a request of client `i` on slot `m` that got no answer stays on the wire:
    /// its link is cut, but the node it was sent to is up and on the client's side of
    /// any split brain, so TCP delivers it once the link heals. A request to a dead node,
    /// or across a split brain that lasts to the horizon (or for ever), never arrives.
    fn strands(&self, s: &State, i: usize, f: &Flight, m: usize) -> bool {
        let cut = s.clients[i].cut & (1 << m) != 0;
        let split_off = s.split.as_ref().is_some_and(|sp| {
            sp.slot as usize == m && (f.node == sp.old) != (sp.moved & (1 << i) == 0)
        });
        f.undelivered() && cut && !split_off && s.nodes[f.node as usize].alive
    }

    /// The node client `i` reaches for master slot `m`: the serving one, except during a
    /// split brain, where a client that has not learnt the new master reaches the old.
    fn route(&self, s: &State, i: usize, m: usize) -> u8 {
        match &s.split {
            Some(sp) if sp.slot as usize == m && sp.moved & (1 << i) == 0 => sp.old,
            _ => s.serving[m],
        }
    }

    /// Whether client `i`'s request on slot `m` can reach its node: the node is up, the
    /// link is not cut, and no split brain puts the node on the other side; and, for a
    /// `WAIT` that blocked there, the node still has its connection.
    pub(crate) fn reachable(&self, s: &State, i: usize, f: &Flight, m: usize) -> bool {
        let c = &s.clients[i];
        let split_off = s.split.as_ref().is_some_and(|sp| {
            sp.slot as usize == m && (f.node == sp.old) != (sp.moved & (1 << i) == 0)
        });
        s.nodes[f.node as usize].alive
            && c.cut & (1 << m) == 0
            && !split_off
            && f.wait != Flight::LOST
    }

    /// Whether replica `n` may be promoted when its master fails, by the scenario's
    /// promotion rule: any replica, or (Sentinel) one with the greatest replication
    /// offset among its master's live replicas that Sentinel reaches (those of
    /// `hidden`, the slot's replicas on the old master's side of a split brain, it
    /// does not).
    pub(crate) fn promotable(&self, s: &State, n: usize, hidden: u8) -> bool {
        match self.scenario.topology.promotion {
            Promotion::Any => true,
            Promotion::MostAdvanced => {
                let node = &s.nodes[n];
                !s.nodes.iter().enumerate().any(|(k, o)| {
                    o.alive
                        && o.replica_of == node.replica_of
                        && o.repl_offset > node.repl_offset
                        && self
                            .slot_replica(k)
                            .is_none_or(|(_, j)| hidden & (1 << j) == 0)
                })
            }
        }
    }

    /// The slot and index within the slot of replica node `n` (its group: replicas
    /// `masters + slot × replicas + j`), or `None` for a master node.
    fn slot_replica(&self, n: usize) -> Option<(usize, u8)> {
        let masters = self.masters();
        let per = self.scenario.topology.replicas as usize;
        (n >= masters && per > 0).then(|| {
            let k = n - masters;
            (
                k / per,
                u8::try_from(k % per).expect("at most MAX_REPLICAS replicas"),
            )
        })
    }

    /// The bit of replica node `n` in a set of slot `m`'s replicas (0 when it is not one).
    pub(crate) fn replica_bit(&self, m: usize, n: usize) -> u8 {
        match self.slot_replica(n) {
            Some((slot, j)) if slot == m => 1 << j,
            _ => 0,
        }
    }

    /// The live replicas of slot `m` that follow node `master`, as a set.
    pub(crate) fn followers(&self, s: &State, master: u8, m: usize) -> u8 {
        (0..s.nodes.len())
            .filter(|&k| s.nodes[k].alive && s.nodes[k].replica_of == Some(master))
            .fold(0, |set, k| set | self.replica_bit(m, k))
    }

    pub(crate) fn tick_enabled(&self, s: &State) -> bool {
        // Without a horizon the search keeps the clock at 0 (`relative_time`); a run
        // replayed from the start stops at the clock's last value.
        let end = self.scenario.timing.horizon.unwrap_or(u32::from(u8::MAX));
        if u32::from(s.now) >= end {
            return false;
        }
        // Compared in u32: the scenario's delay is honoured exactly, whatever its size.
        let limit = self.scenario.timing.max_step_delay;
        let overdue_step = (0..s.clients.len()).any(|i| {
            (u32::from(s.clients[i].waited) >= limit && self.has_pending(s, i))
                || self.renew_overdue(&s.clients[i])
        });
        let overdue_message = s.clients.iter().enumerate().any(|(i, c)| {
            c.core
                .flights
                .iter()
                .enumerate()
                .any(|(m, f)| f.as_ref().is_some_and(|f| self.overdue(s, i, f, m)))
                || c.core.strays.iter().any(|st| self.stray_overdue(s, i, st))
        });
        !overdue_step && !overdue_message
    }

    fn tick(&self, s: &mut State) {
        // Whether each client has a pending step, read before anything moves (a bit per
        // client). Then each leg that is due ages; whether a leg is due reads no age, so
        // ageing them one by one reads what reading them all first would.
        let pending = (0..s.clients.len())
            .filter(|&i| self.has_pending(s, i))
            .fold(0u8, |bits, i| bits | 1 << i);
        for i in 0..s.clients.len() {
            // Each client is reached mutably only where it changes: a client reached
            // so is copied back and hashed again ([`crate::parts`]).
            for m in 0..s.clients[i].core.flights.len() {
                let due = s.clients[i].core.flights[m]
                    .as_ref()
                    .is_some_and(|f| self.deliverable(s, i, f, m));
                if due {
                    if let Some(f) = &mut s.clients[i].core.flights[m] {
                        f.age = f.age.saturating_add(1);
                    }
                }
            }
            for k in 0..s.clients[i].core.strays.len() {
                let st = &s.clients[i].core.strays[k];
                if self.reachable(s, i, &st.flight, usize::from(st.slot)) {
                    let st = &mut s.clients[i].core.strays[k];
                    st.flight.age = st.flight.age.saturating_add(1);
                }
            }
        }
        s.now += 1;
        for n in 0..s.nodes.len() {
            let clock = self.node_clock(s, n);
            // Read first: a node reached mutably is hashed again ([`crate::parts`]).
            if s.nodes[n].data.expires_by(clock) {
                s.nodes[n].data.expire(clock);
            }
        }
        self.time_out_waits(s);
        let work = self.scenario.timing.work;
        let since_renew_cap = self.since_renew_cap();
        for i in 0..s.clients.len() {
            if !s.clients[i].running() {
                continue;
            }
            let c = &mut s.clients[i];
            c.retry_wait = false;
            if pending & 1 << i != 0 {
                c.waited = c.waited.saturating_add(1);
            }
            self.program.on_tick(&mut c.core.phase, work);
            if c.core.machine.renewing(&self.cfg) {
                c.since_renew = c.since_renew.saturating_add(1).min(since_renew_cap);
            }
        }
    }

    /// Put a machine step into effect through the client program; what the outcome
    /// means for the model's timing (renewal interval, retry back-off) is taken here.
    /// Requests go to the node each slot routes to for this client (a split brain
    /// leaves some clients on the old master).
    fn apply(&self, s: &mut State, i: usize, step: Step) {
        let serving = self.routes(s, i);
        let c = &mut s.clients[i];
        let change = self.program.apply(step, &mut c.core, &serving);
        Self::time_after(c, &change);
    }

    /// The answer from slot `m` reaches client `i`.
    pub(crate) fn answer(&self, s: &mut State, i: usize, m: usize, answer: Answer) {
        let serving = self.routes(s, i);
        let now = self.client_clock(s, i);
        let c = &mut s.clients[i];
        let change = self
            .program
            .answer(&mut c.core, &self.cfg, (m, answer), now, &serving);
        Self::time_after(c, &change);
    }

    /// The node each slot routes to for client `i`.
    fn routes(&self, s: &State, i: usize) -> Routes {
        let mut r = Routes {
            len: s.serving.len(),
            node: [0; MAX_MASTERS as usize],
        };
        for (m, n) in r.node.iter_mut().enumerate().take(r.len) {
            *n = self.route(s, i, m);
        }
        r
    }

    /// What a change means for the model's timing of client `c`: a grant or an
    /// extension starts the renewal interval, a failed acquire waits for the clock.
    fn time_after(c: &mut Client, change: &Change) {
        match change {
            Change::Acquired { .. } | Change::Extended => c.since_renew = 0,
            Change::AcquireFailed(_) => c.retry_wait = true,
            Change::Answered { .. } | Change::RenewFailed | Change::None => {}
        }
    }

    /// Whether client `i`'s machine takes the lock on `reply` to its request on slot
    /// `m`. A GETSET that does is that design's acquire (the steal), not a release.
    fn wins_with(&self, s: &State, i: usize, m: usize, reply: &Reply) -> bool {
        let now = self.client_clock(s, i);
        s.clients[i]
            .core
            .machine
            .acquires_with(&self.cfg, m, reply, now)
    }

    /// Run `command` of client `i` (sent on slot `m`) on `node`. A command that removes
    /// or changes an entry another client holds (a DEL, an overwrite, a PEXPIRE) breaks
    /// `owner_only_release`, unless it is a GETSET or plain SET that wins the lock: the
    /// seeds' owner problems are a release that deletes another's lock, a losing
    /// stealer's GETSET and a renewal of a lock that is no longer ours, not the write
    /// that takes the lock (which `mutual_exclusion` judges).
    ///
    /// A request its client gave up on (`late`) is no acquire of its client's machine,
    /// which waits for it no more: whatever it overwrites is displaced.
    fn execute(
        &self,
        s: &mut State,
        i: usize,
        m: usize,
        node: usize,
        command: &Command,
        late: bool,
    ) -> Reply {
        if let Command::Wait { .. } = command {
            return Self::acks(s, node);
        }
        let clock = self.node_clock(s, node);
        let before = self.counts_offsets().then(|| s.nodes[node].data.clone());
        let mut exec = Exec::new(&mut s.nodes[node].data, clock, client_index(i))
            .with_tick_ms(self.cfg.unit_ms)
            .watching(&self.cfg.key);
        let reply = exec.run(command);
        if self.cfg.custom.is_some() {
            let fault = run_fault::judge(
                &self.cfg,
                command,
                &reply,
                exec.unmodelled.as_deref(),
                exec.script_line,
            );
            if let Some(fault) = fault {
                self.note_fault(fault);
            }
        }
        let mut displaced = std::mem::take(&mut exec.effect.displaced);
        if !late
            && matches!(command, Command::GetSet { .. } | Command::SetPx { .. })
            && self.wins_with(s, i, m, &reply)
        {
            displaced.clear();
        }
        if before.is_some_and(|b| b != s.nodes[node].data) {
            // A write enters the replication stream. Saturating: a scenario's writes are
            // far fewer than 255, and a saturated offset still ranks last-written highest.
            s.nodes[node].repl_offset = s.nodes[node].repl_offset.saturating_add(1);
        }
        for owner in displaced.into_iter().flatten() {
            let o = &s.clients[owner as usize];
            if owner as usize != i && o.core.phase.claims() {
                s.displaced_other = true;
            }
        }
        reply
    }

    /// Replica `r` becomes the master of slot `m`; returns the old master. As Sentinel
    /// does, the old master's other replicas now follow the promoted one, except those
    /// of `stay` (on the old master's side of a split brain), which Sentinel cannot
    /// reach; each resyncs from its master at its next `Replicate` step (until then it
    /// lags).
    pub(crate) fn promote(&self, s: &mut State, m: u8, r: u8, stay: u8) -> u8 {
        let old = s.serving[m as usize];
        s.nodes[r as usize].replica_of = None;
        s.serving[m as usize] = r;
        for k in 0..s.nodes.len() {
            let stays = self.replica_bit(m as usize, k) & stay != 0;
            if s.nodes[k].replica_of == Some(old) && !stays {
                s.nodes[k].replica_of = Some(r);
            }
        }
        let clock = self.node_clock(s, r as usize);
        s.nodes[r as usize].data.expire(clock);
        old
    }

    /// Whether nodes count replication offsets (only the promotion rule reads them).
    fn counts_offsets(&self) -> bool {
        self.scenario.topology.promotion == Promotion::MostAdvanced
    }

    /// Client `c`'s `k`-th request given up on reaches its node and runs; the reply is
    /// read by nobody and returned for the trace. `None` when it cannot arrive now.
    pub fn deliver_late(&self, s: &mut State, c: u8, k: u8) -> Option<Reply> {
        let i = usize::from(c);
        let st = s.clients[i].core.strays.get(usize::from(k))?;
        if !self.reachable(s, i, &st.flight, usize::from(st.slot)) {
            return None;
        }
        let st = s.clients[i].core.strays.remove(usize::from(k));
        let (m, node) = (usize::from(st.slot), usize::from(st.flight.node));
        Some(self.execute(s, i, m, node, &st.flight.command, true))
    }

    /// A node that died or restarted drops its connections: the requests given up on
    /// that were on their way to it never arrive, and a `WAIT` blocking there never
    /// answers (its client times out).
    pub(crate) fn drop_connections_to(s: &mut State, node: u8) {
        for c in &mut s.clients {
            c.core.strays.retain(|st| st.flight.node != node);
            for f in c.core.flights.iter_mut().flatten() {
                if f.blocked() && f.node == node {
                    f.wait = Flight::LOST;
                }
            }
        }
    }

    /// A node that restarted drops its connections as one that died does, and what its
    /// clients had sent on them and it had not read yet is lost with them: the new
    /// process never reads it, and its client times out ([`Flight::LOST`]); a crashed
    /// client's, which nobody will wait for, goes.
    pub(crate) fn reset_connections_to(s: &mut State, node: u8) {
        Self::drop_connections_to(s, node);
        for c in &mut s.clients {
            c.core.lose_requests_to(node);
        }
    }

    /// What a `WAIT` to `node` answers: its replicas in sync with it, up and with the
    /// same data.
    fn acks(s: &State, node: usize) -> Reply {
        let data = &s.nodes[node].data;
        let acks = s
            .nodes
            .iter()
            .filter(|r| r.alive && r.replica_of == Some(client_index(node)) && &r.data == data)
            .count();
        Reply::Int(i64::try_from(acks).expect("at most MAX_REPLICAS acks"))
    }

    /// Whether a request that answered `reply` blocks on its node instead: a `WAIT`
    /// short of replicas, in a scenario that gives WAIT a timeout. `Some` of the
    /// [`Flight::wait`] it starts with: its timeout's ticks, and the tick that ends the
    /// last of them. (It was delivered somewhere in the current tick, so its timeout
    /// ends somewhere in the tick `wait_timeout` ticks on; a replica's acknowledgement
    /// anywhere in that tick may come before it.)
    fn blocks(&self, command: &Command, reply: &Reply) -> Option<u16> {
        let timeout = self.scenario.timing.wait_timeout;
        match (command, reply) {
            (Command::Wait { replicas, .. }, Reply::Int(acks))
                if timeout > 0 && *acks < i64::from(*replicas) =>
            {
                Some(u16::try_from(timeout + 1).expect("wait_timeout is at most MAX_WAIT_TIMEOUT"))
            }
            _ => None,
        }
    }

    /// The `WAIT` of `f` answers `reply`: the reply starts its leg back.
    fn answer_wait(f: &mut Flight, reply: Reply) {
        f.held = Some(reply);
        f.wait = 0;
        f.age = 0;
    }

    /// A replica of `master` caught up: every `WAIT` blocking there that now has the
    /// replicas it waits for answers their number.
    fn acknowledge_waits(&self, s: &mut State, master: usize) {
        let acks = Self::acks(s, master);
        for c in &mut s.clients {
            for f in c.core.flights.iter_mut().flatten() {
                let enough = match (&*f.command, &acks) {
                    (Command::Wait { replicas, .. }, Reply::Int(n)) => *n >= i64::from(*replicas),
                    _ => false,
                };
                if f.waiting() && usize::from(f.node) == master && enough {
                    Self::answer_wait(f, acks.clone());
                }
            }
        }
    }

    /// A tick passed: every `WAIT` blocking on its node has a tick less to wait, and one
    /// whose timeout ran out answers the replicas in sync now, fewer than it waits for:
    /// had that many acknowledged its writes, the acknowledgement that made them enough
    /// would have answered it. (A replica can match its master without having
    /// acknowledged anything: the lock key expired on both. Real Redis counts
    /// acknowledgements, not copies, so such a replica does not count.)
    fn time_out_waits(&self, s: &mut State) {
        let mut timed_out = Vec::new();
        for (i, c) in s.clients.iter_mut().enumerate() {
            for (m, f) in c.core.flights.iter_mut().enumerate() {
                if let Some(f) = f.as_mut().filter(|f| f.waiting()) {
                    f.wait -= 1;
                    if f.wait == 0 {
                        timed_out.push((i, m, usize::from(f.node)));
                    }
                }
            }
        }
        for (i, m, node) in timed_out {
            let acks = Self::acks(s, node);
            if let Some(f) = s.clients[i].core.flights[m].as_mut() {
                let fewer = match (&*f.command, acks) {
                    (Command::Wait { replicas, .. }, Reply::Int(n)) => {
                        Reply::Int(n.min(i64::from(*replicas) - 1))
                    }
                    (_, acks) => acks,
                };
                Self::answer_wait(f, fewer);
            }
        }
    }

    fn new_token(s: &mut State) -> String {
        s.next_token += 1;
        format!("t{}", s.next_token)
    }

    /// Inside the critical section: from the grant until the stock write is done (the
    /// release that follows is outside it).
    pub fn in_critical_section(&self, c: &Client) -> bool {
        self.program.in_critical_section(&c.core.phase)
    }

    /// Whether a property holds in this state (the safety properties are invariants).
    pub fn holds(&self, property: Property, s: &State) -> bool {
        match property {
            Property::MutualExclusion => {
                s.clients
                    .iter()
                    .filter(|c| self.in_critical_section(c))
                    .count()
                    <= 1
            }
            Property::OwnerOnlyRelease => !s.displaced_other,
            Property::NoOrphanedLock => !self.serving_nodes(s).any(|n| {
                let n = &s.nodes[n];
                n.alive
                    && n.data
                        .entry(&self.cfg.key)
                        .is_some_and(|e| self.orphaned(s, e))
            }),
            Property::ResourceSafety => s.stock.consistent(),
        }
    }

    /// The nodes clients write the lock to: the one serving each master slot, and during
    /// a split brain the old master too. A replica's copy blocks nobody: it is removed
    /// when the replica next catches up (replication brings the delete), and is judged
    /// once the replica is promoted and serves.
    pub fn serving_nodes<'a>(&self, s: &'a State) -> impl Iterator<Item = usize> + 'a {
        let old = s.split.as_ref().map(|sp| usize::from(sp.old));
        s.serving
            .iter()
            .map(|&n| usize::from(n))
            .chain(old.filter(|o| !s.serving.iter().any(|&n| usize::from(n) == *o)))
    }

    /// An orphaned lock entry: it can never go away (no expiry, or renewed by a machine
    /// whose client no longer believes it holds the lock) while no live client believes
    /// it holds it (acquiring or holding), whatever the cause: its owner crashed, timed
    /// out on a command that ran, lost a reply, or dropped a hold. getset-timestamp keeps
    /// its expiry in the value, which every client honours.
    pub fn orphaned(&self, s: &State, e: &crate::redis::Entry) -> bool {
        if self.scenario.design == DesignId::GetsetTimestamp {
            return false;
        }
        let owner = e.owner.map(|o| &s.clients[o as usize]);
        let believed = owner.is_some_and(|c| c.core.phase.claims());
        let kept_alive = owner
            .is_some_and(|c| c.core.phase != Phase::Crashed && c.core.machine.renewing(&self.cfg));
        !believed && (e.expires_at.is_none() || kept_alive)
    }

    /// Whether client `d`'s lease is still in place: its lock entry is on a majority of
    /// the live nodes serving the masters (the one master for single-instance designs).
    pub fn lease_held(&self, s: &State, d: usize) -> bool {
        let owned = s
            .serving
            .iter()
            .filter(|&&n| {
                let node = &s.nodes[n as usize];
                node.alive
                    && node
                        .data
                        .entry(&self.cfg.key)
                        .is_some_and(|e| e.owner.is_some_and(|o| usize::from(o) == d))
            })
            .count();
        owned > s.serving.len() / 2
    }

    /// Whether client `d` still believes it holds the lock (in its critical section, or
    /// re-entering it; not releasing it) while its lease is gone: it ran out, or its
    /// key vanished (a restart, a failover, another client's delete).
    pub fn lease_lost(&self, s: &State, d: usize) -> bool {
        let believes = match &s.clients[d].core.phase {
            Phase::Critical { .. } => true,
            Phase::Waiting { pc, .. } => self.program.op(*pc) == Some(Op::Reenter),
            Phase::Idle | Phase::Acquiring | Phase::Done | Phase::Crashed => false,
        };
        believes && !self.lease_held(s, d)
    }

    /// The vacuity guard: some client completed its critical section.
    pub fn purchased(s: &State) -> bool {
        s.stock.accepted > 0
    }
}

impl LockModel {
    /// `action` taken in place on `s`, a copy of the state it is taken from (what
    /// [`Model::next_state`] does to its copy); `None` where the model has no such step,
    /// and `s` is then left half-changed.
    pub fn take_step(&self, s: &mut State, action: Action) -> Option<()> {
        let by_client = |c: u8, s: &mut State| s.clients[c as usize].waited = 0;
        match action {
            Action::Tick => self.tick(s),
            Action::Acquire(c) => {
                by_client(c, s);
                let i = c as usize;
                let token = Self::new_token(s);
                let now = self.client_clock(s, i);
                let cl = &mut s.clients[i];
                let step = self.program.acquire(&mut cl.core, &self.cfg, now, &token)?;
                self.apply(s, i, step);
            }
            Action::Deliver(c, m) => {
                let (i, m) = (c as usize, m as usize);
                let f = s.clients[i].core.flights[m].clone()?;
                if f.held.is_some() {
                    return None;
                }
                if f.blocked() {
                    return None;
                }
                let reply = self.execute(s, i, m, f.node as usize, &f.command, false);
                // The reply starts its own leg back to the client (if it still lives);
                // a WAIT short of replicas blocks instead, if it has a timeout.
                let blocks = self.blocks(&f.command, &reply);
                s.clients[i].core.flights[m] = (s.clients[i].core.phase != Phase::Crashed)
                    .then_some(match blocks {
                        Some(wait) => Flight { wait, age: 0, ..f },
                        None => Flight {
                            held: Some(reply),
                            age: 0,
                            ..f
                        },
                    });
            }
            Action::Receive(c, m) => {
                let reply = s.clients[c as usize].core.flights[m as usize]
                    .as_ref()?
                    .held
                    .clone()?;
                self.answer(s, c as usize, m as usize, Ok(reply));
            }
            Action::Timeout(c, m) => {
                let (i, m) = (c as usize, m as usize);
                let f = s.clients[i].core.flights[m].as_ref()?;
                if self.strands(s, i, f, m) {
                    let stray = Stray {
                        slot: client_index(m),
                        flight: Flight {
                            age: 0,
                            ..f.clone()
                        },
                    };
                    s.clients[i].core.strays.push(stray);
                }
                self.answer(s, i, m, Err(NoAnswer));
            }
            Action::DeliverLate(c, k) => {
                self.deliver_late(s, c, k)?;
            }
            Action::Renew(c) => {
                // The renewal task's step: the program's own pending step waits on.
                let i = c as usize;
                let now = self.client_clock(s, i);
                let step = s.clients[i].core.machine.renew(&self.cfg, now);
                s.clients[i].since_renew = 0;
                self.apply(s, i, step);
            }
            Action::Read(c) | Action::Write(c) | Action::Release(c) | Action::Reenter(c) => {
                by_client(c, s);
                let i = c as usize;
                if self.op(&s.clients[i]) != action.op() {
                    return None;
                }
                let fence = s.clients[i].core.fence();
                match action {
                    Action::Read(_) => {
                        let read = s.stock.read(fence);
                        self.program.on_read(&mut s.clients[i].core.phase, read)?;
                    }
                    Action::Write(_) => {
                        let value = self.program.on_write(&mut s.clients[i].core.phase)?;
                        let _ = s.stock.write(fence, value);
                    }
                    _ => {
                        let now = self.client_clock(s, i);
                        let mut token = None;
                        if let Action::Reenter(_) = action {
                            token = Some(Self::new_token(s));
                        }
                        let cl = &mut s.clients[i];
                        let step = self
                            .program
                            .request(&mut cl.core, &self.cfg, now, || token.unwrap_or_default())?;
                        self.apply(s, i, step);
                    }
                }
            }
            Action::Replicate(n) => {
                // A full resync: the replica takes the master's data and drops what the
                // master lacks (after a failover, writes only the dead master had).
                let master = s.nodes[n as usize].replica_of? as usize;
                s.nodes[n as usize].data = s.nodes[master].data.clone();
                s.nodes[n as usize].repl_offset = s.nodes[master].repl_offset;
                // Its acknowledgement may be the one a WAIT there waits for.
                self.acknowledge_waits(s, master);
            }
            Action::NodeDrift(n) => {
                let node = &mut s.nodes[n as usize];
                node.drifted += 1;
                node.offset += 1;
                let clock = self.node_clock(s, n as usize);
                s.nodes[n as usize].data.expire(clock);
            }
            Action::Pause(_)
            | Action::Resume(_)
            | Action::Crash(_)
            | Action::Failover(..)
            | Action::SplitBrain(..)
            | Action::Redirect(..)
            | Action::Restart(_)
            | Action::Partition(..)
            | Action::Heal(..)
            | Action::NodeClockJump(_)
            | Action::ClientClockJump(_)
            | Action::LoseReply(..) => self.apply_fault(s, action)?,
        }
        Some(())
    }

    /// The state `action` leads to from `last`, built in `out` (whatever it held
    /// before): [`Model::next_state`] without a fresh copy, so that a search that drops
    /// most successors reuses one state's vectors for all of them. `false` where the
    /// model has no such step.
    pub fn next_state_into(&self, last: &State, action: Action, out: &mut State) -> bool {
        out.clone_from(last);
        self.take_step(out, action).is_some()
    }

    /// [`LockModel::next_state_into`] where `out` was last built from `last` (by either
    /// of these, then changed only by the step and the search's canonical form): only
    /// what that changed is copied back ([`State::restore_from`]) before the step.
    pub fn sibling_into(&self, last: &State, action: Action, out: &mut State) -> bool {
        out.restore_from(last);
        self.take_step(out, action).is_some()
    }
}

impl Model for LockModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let sc = &self.scenario;
        let masters = self.masters();
        let mut nodes: Vec<Node> = (0..masters)
            .map(|_| Node {
                alive: true,
                offset: 0,
                data: Default::default(),
                replica_of: None,
                repl_offset: 0,
                drifted: 0,
            })
            .collect();
        for m in 0..masters {
            for _ in 0..sc.topology.replicas {
                nodes.push(Node {
                    alive: true,
                    offset: 0,
                    data: Default::default(),
                    replica_of: Some(client_index(m)),
                    repl_offset: 0,
                    drifted: 0,
                });
            }
        }
        let attempts =
            u8::try_from(sc.clients.attempts).expect("clients.attempts is at most MAX_ATTEMPTS");
        let client = Client {
            core: ClientCore::new(&self.cfg, attempts, masters),
            paused: false,
            offset: 0,
            retry_wait: false,
            waited: 0,
            since_renew: 0,
            cut: 0,
        };
        vec![State {
            now: 0,
            clients: vec![client; sc.clients.count as usize].into(),
            nodes: nodes.into(),
            serving: (0..masters).map(client_index).collect(),
            stock: Stock::new(INITIAL_STOCK, sc.fencing),
            spent: Spent::default(),
            next_token: 0,
            displaced_other: false,
            split: None,
            pausing: false,
            stepped: false,
        }]
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        if self.tick_enabled(s) {
            out.push(Action::Tick);
        }
        for i in 0..s.clients.len() {
            self.client_actions(s, i, out);
        }
        self.fault_actions(s, out);
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        self.take_step(&mut s, action)?;
        Some(s)
    }

    fn properties(&self) -> Vec<SrProperty<Self>> {
        vec![
            SrProperty::always("mutual_exclusion", |m, s| {
                m.holds(Property::MutualExclusion, s)
            }),
            SrProperty::always("owner_only_release", |m, s| {
                m.holds(Property::OwnerOnlyRelease, s)
            }),
            SrProperty::always("no_orphaned_lock", |m, s| {
                m.holds(Property::NoOrphanedLock, s)
            }),
            SrProperty::always("resource_safety", |m, s| {
                m.holds(Property::ResourceSafety, s)
            }),
            SrProperty::sometimes("purchase_completed", |_, s| LockModel::purchased(s)),
        ]
    }

    fn format_action(&self, action: &Action) -> String {
        action.to_string()
    }

    fn within_boundary(&self, s: &State) -> bool {
        self.scenario
            .timing
            .horizon
            .is_none_or(|h| u32::from(s.now) <= h)
    }
}
