//! The stateright model: a small struct, an action enum, and the properties beside them.
//!
//! Time is partially synchronous (DESIGN.md, "Model semantics"): a global `Tick` up to
//! the horizon, disabled while a running client has had a step pending for
//! `max_step_delay` ticks. A request and its reply are one step unless the client is
//! paused (the reply is held until it resumes) or the link is cut (the request times
//! out). Faults are actions the checker may choose at any point within the budget.

use locklab::resource::Stock;
use locklab::{
    Answer, Command, DesignId, Grant, LockConfig, LockMachine, NoAnswer, Outcome, Reply, Step,
};
use stateright::{Model, Property as SrProperty};

use crate::redis::Exec;
use crate::scenario::{Property, Scenario};
use crate::state::{Client, Flight, Node, Phase, Spent, State};

/// The stock every scenario starts with.
pub const INITIAL_STOCK: i64 = 10;

/// One step of the system. Client arguments are client indexes; `u8` master slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The global clock advances one tick.
    Tick,
    /// Client starts an acquire attempt.
    Acquire(u8),
    /// The request from client to master slot is executed by the node; the reply
    /// reaches the client in the same step unless the client is paused.
    Deliver(u8, u8),
    /// A held reply reaches the (resumed) client.
    Receive(u8, u8),
    /// The request gets no answer (link cut, node down): the client's timeout fires.
    Timeout(u8, u8),
    /// The watchdog renews the lease.
    Renew(u8),
    /// Critical section: read the stock (with the fencing token, if any).
    Read(u8),
    /// Critical section: write the stock minus one.
    Write(u8),
    /// Release the lock (one hold of it).
    Release(u8),
    /// Re-enter the lock already held (reentrant design).
    Reenter(u8),
    /// A replica catches up with its master.
    Replicate(u8),
    /// Fault: stop-the-world pause of a client (work, renewal and reply delivery stop).
    Pause(u8),
    /// The paused client runs again.
    Resume(u8),
    /// Fault: the client process dies.
    Crash(u8),
    /// Fault: master slot's node dies and this replica is promoted.
    Failover(u8, u8),
    /// Fault: a node restarts empty (no persistence).
    Restart(u8),
    /// Fault: the link from client to master slot is cut.
    Partition(u8, u8),
    /// The cut link works again.
    Heal(u8, u8),
    /// Fault: a node's clock jumps forward.
    NodeClockJump(u8),
    /// Fault: a client's clock jumps forward.
    ClientClockJump(u8),
}

impl Action {
    /// The client that takes this step, if a client does.
    pub fn client(&self) -> Option<u8> {
        use Action::*;
        match *self {
            Acquire(c)
            | Deliver(c, _)
            | Receive(c, _)
            | Timeout(c, _)
            | Renew(c)
            | Read(c)
            | Write(c)
            | Release(c)
            | Reenter(c)
            | Pause(c)
            | Resume(c)
            | Crash(c)
            | Partition(c, _)
            | Heal(c, _)
            | ClientClockJump(c) => Some(c),
            _ => None,
        }
    }

    /// The same action with clients renamed by `client` and master slots and nodes by
    /// `node`.
    pub fn rename(self, client: impl Fn(u8) -> u8, node: impl Fn(u8) -> u8) -> Action {
        use Action::*;
        let (c, n) = (&client, &node);
        match self {
            Tick => Tick,
            Acquire(x) => Acquire(c(x)),
            Deliver(x, m) => Deliver(c(x), n(m)),
            Receive(x, m) => Receive(c(x), n(m)),
            Timeout(x, m) => Timeout(c(x), n(m)),
            Renew(x) => Renew(c(x)),
            Read(x) => Read(c(x)),
            Write(x) => Write(c(x)),
            Release(x) => Release(c(x)),
            Reenter(x) => Reenter(c(x)),
            Replicate(r) => Replicate(n(r)),
            Pause(x) => Pause(c(x)),
            Resume(x) => Resume(c(x)),
            Crash(x) => Crash(c(x)),
            Failover(m, r) => Failover(n(m), n(r)),
            Restart(r) => Restart(n(r)),
            Partition(x, m) => Partition(c(x), n(m)),
            Heal(x, m) => Heal(c(x), n(m)),
            NodeClockJump(r) => NodeClockJump(n(r)),
            ClientClockJump(x) => ClientClockJump(c(x)),
        }
    }

    /// Whether the action is a fault from the budget.
    pub fn is_fault(&self) -> bool {
        use Action::*;
        matches!(
            self,
            Pause(_)
                | Crash(_)
                | Failover(..)
                | Restart(_)
                | Partition(..)
                | NodeClockJump(_)
                | ClientClockJump(_)
        )
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use Action::*;
        let c = |c: &u8| format!("client{}", c + 1);
        match self {
            Tick => write!(f, "tick"),
            Acquire(x) => write!(f, "{} acquire", c(x)),
            Deliver(x, m) => write!(f, "{} request to master{} executed", c(x), m + 1),
            Receive(x, m) => write!(f, "{} receives held reply from master{}", c(x), m + 1),
            Timeout(x, m) => write!(f, "{} request to master{} times out", c(x), m + 1),
            Renew(x) => write!(f, "{} watchdog renews", c(x)),
            Read(x) => write!(f, "{} reads stock", c(x)),
            Write(x) => write!(f, "{} writes stock", c(x)),
            Release(x) => write!(f, "{} releases", c(x)),
            Reenter(x) => write!(f, "{} re-enters", c(x)),
            Replicate(n) => write!(f, "node{} replicates", n + 1),
            Pause(x) => write!(f, "FAULT {} paused (stop-the-world)", c(x)),
            Resume(x) => write!(f, "{} resumes", c(x)),
            Crash(x) => write!(f, "FAULT {} crashes", c(x)),
            Failover(m, r) => write!(f, "FAULT master{} dies, node{} promoted", m + 1, r + 1),
            Restart(n) => write!(f, "FAULT node{} restarts empty", n + 1),
            Partition(x, m) => write!(f, "FAULT link {} -> master{} cut", c(x), m + 1),
            Heal(x, m) => write!(f, "link {} -> master{} healed", c(x), m + 1),
            NodeClockJump(n) => write!(f, "FAULT node{} clock jumps forward", n + 1),
            ClientClockJump(x) => write!(f, "FAULT {} clock jumps forward", c(x)),
        }
    }
}

/// One operation of the critical-section program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Reenter,
    Read,
    Release,
    Write,
}

/// The model of one scenario.
#[derive(Clone, Debug)]
pub struct LockModel {
    /// The scenario.
    pub scenario: Scenario,
    /// The lock configuration the machines run with (times in ticks).
    pub cfg: LockConfig,
    program: Vec<Op>,
}

/// A deterministic hash (the same in every run, so representatives are stable).
pub fn fingerprint<T: std::hash::Hash>(value: &T) -> u64 {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

fn client_index(i: usize) -> u8 {
    i as u8
}

impl LockModel {
    /// The model of `scenario`, running its design from `src/`.
    pub fn new(scenario: &Scenario) -> Self {
        let mut cfg = LockConfig::new(scenario.design, "lock", scenario.timing.ttl as u64);
        cfg.masters = scenario.topology.masters as usize;
        // One tick is coarse: the drift allowance is part of the tick.
        cfg.drift_ppm = 0;
        cfg.drift_ms = 0;
        cfg.fencing = scenario.fencing.enabled();
        cfg.wait_replicas = scenario.wait_replicas;
        Self::with_config(scenario, cfg)
    }

    /// The model with an explicit lock configuration.
    pub fn with_config(scenario: &Scenario, cfg: LockConfig) -> Self {
        // A re-entrant holder re-enters at once and drops the inner hold mid-way, so a
        // wrong hold count shows up as a second client inside the critical section.
        let program = if scenario.design == DesignId::Reentrant {
            vec![Op::Reenter, Op::Read, Op::Release, Op::Write, Op::Release]
        } else {
            vec![Op::Read, Op::Write, Op::Release]
        };
        LockModel {
            scenario: scenario.clone(),
            cfg,
            program,
        }
    }

    /// The critical-section program every client runs once it holds the lock.
    pub fn program(&self) -> &[Op] {
        &self.program
    }

    fn masters(&self) -> usize {
        self.scenario.topology.masters as usize
    }

    /// The client's clock reading.
    pub fn client_clock(&self, s: &State, c: usize) -> i64 {
        s.now as i64 + s.clients[c].offset as i64
    }

    /// A node's clock reading.
    pub fn node_clock(&self, s: &State, n: usize) -> i64 {
        s.now as i64 + s.nodes[n].offset as i64
    }

    fn op(&self, c: &Client) -> Option<Op> {
        match c.phase {
            Phase::Critical { pc, read, worked } => {
                let op = *self.program.get(pc as usize)?;
                let ready = match op {
                    Op::Write => read.is_some() && worked as u32 >= self.scenario.timing.work,
                    _ => true,
                };
                (ready && !c.machine.busy()).then_some(op)
            }
            _ => None,
        }
    }

    fn renew_due(&self, c: &Client) -> bool {
        self.scenario.design.renews()
            && c.holding()
            && !c.machine.busy()
            && c.machine.grant().is_some()
            && c.since_renew as u64 >= self.cfg.renew_interval()
    }

    /// The client's own steps (not faults), in the order they are offered.
    fn client_actions(&self, s: &State, i: usize, out: &mut Vec<Action>) {
        let c = &s.clients[i];
        let ci = client_index(i);
        if c.phase == Phase::Crashed {
            return;
        }
        for (m, f) in c.flights.iter().enumerate() {
            let Some(f) = f else { continue };
            let m = m as u8;
            let reachable = s.nodes[f.node as usize].alive && c.cut & (1 << m) == 0;
            match (&f.held, reachable) {
                (None, true) => out.push(Action::Deliver(ci, m)),
                (Some(_), true) if c.running() => out.push(Action::Receive(ci, m)),
                (_, false) if c.running() => out.push(Action::Timeout(ci, m)),
                _ => {}
            }
        }
        if !c.running() {
            return;
        }
        if c.phase == Phase::Idle && c.attempts > 0 && !c.retry_wait {
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

    /// Whether a running client has a step of its own (not a message delivery) it must
    /// take within `max_step_delay` ticks. Every client starts its first acquire at once;
    /// a denied client retries whenever it likes (a back-off of any length), which is
    /// how a retry can land just after a lease expired.
    fn has_pending(&self, s: &State, i: usize) -> bool {
        let c = &s.clients[i];
        let first_attempt =
            c.phase == Phase::Idle && c.attempts as u32 == self.scenario.clients.attempts;
        c.running() && (first_attempt || self.op(c).is_some() || self.renew_due(c))
    }

    /// Whether a request (or a held reply, or a timeout) is due: every message is
    /// delivered within `max_step_delay` ticks unless a pause or a cut link holds it.
    fn deliverable(&self, s: &State, c: &Client, f: &Flight, m: usize) -> bool {
        let reachable = s.nodes[f.node as usize].alive && c.cut & (1 << m) == 0;
        match (&f.held, reachable) {
            (None, true) => true,
            _ => c.running(),
        }
    }

    fn fault_actions(&self, s: &State, out: &mut Vec<Action>) {
        let f = &self.scenario.faults;
        let n_clients = s.clients.len();
        for i in 0..n_clients {
            let c = &s.clients[i];
            let ci = client_index(i);
            if c.phase == Phase::Crashed || c.phase == Phase::Done {
                continue;
            }
            if c.paused {
                out.push(Action::Resume(ci));
            } else if (s.spent.pauses as u32) < f.pauses {
                out.push(Action::Pause(ci));
            }
            if (s.spent.crashes as u32) < f.crashes {
                out.push(Action::Crash(ci));
            }
            for m in 0..self.masters() as u8 {
                if c.cut & (1 << m) != 0 {
                    out.push(Action::Heal(ci, m));
                } else if (s.spent.partitions as u32) < f.partitions {
                    out.push(Action::Partition(ci, m));
                }
            }
            if (s.spent.clock_jumps as u32) < f.clock_jumps
                && self.scenario.design == DesignId::GetsetTimestamp
            {
                // Client clocks matter only where the design compares timestamps.
                out.push(Action::ClientClockJump(ci));
            }
        }
        for (n, node) in s.nodes.iter().enumerate() {
            if !node.alive {
                continue;
            }
            if let Some(master) = node.replica_of {
                if s.nodes[master as usize].alive && s.nodes[master as usize].data != node.data {
                    out.push(Action::Replicate(n as u8));
                }
                if (s.spent.failovers as u32) < f.failovers {
                    if let Some(m) = s.serving.iter().position(|&p| p == master) {
                        out.push(Action::Failover(m as u8, n as u8));
                    }
                }
            }
            if (s.spent.restarts as u32) < f.restarts {
                out.push(Action::Restart(n as u8));
            }
            if (s.spent.clock_jumps as u32) < f.clock_jumps {
                out.push(Action::NodeClockJump(n as u8));
            }
        }
    }

    fn tick_enabled(&self, s: &State) -> bool {
        if s.now as u32 >= self.scenario.timing.horizon {
            return false;
        }
        let limit = self.scenario.timing.max_step_delay as u8;
        let overdue_step =
            (0..s.clients.len()).any(|i| s.clients[i].waited >= limit && self.has_pending(s, i));
        let overdue_message = s.clients.iter().any(|c| {
            c.phase != Phase::Crashed
                && c.flights.iter().enumerate().any(|(m, f)| {
                    f.as_ref()
                        .is_some_and(|f| f.age >= limit && self.deliverable(s, c, f, m))
                })
        });
        !overdue_step && !overdue_message
    }

    fn tick(&self, s: &mut State) {
        let pending: Vec<bool> = (0..s.clients.len())
            .map(|i| self.has_pending(s, i))
            .collect();
        let due: Vec<Vec<bool>> = s
            .clients
            .iter()
            .map(|c| {
                c.flights
                    .iter()
                    .enumerate()
                    .map(|(m, f)| f.as_ref().is_some_and(|f| self.deliverable(s, c, f, m)))
                    .collect()
            })
            .collect();
        for (c, due) in s.clients.iter_mut().zip(due) {
            for (f, due) in c.flights.iter_mut().zip(due) {
                if let (Some(f), true) = (f, due) {
                    f.age = f.age.saturating_add(1);
                }
            }
        }
        s.now += 1;
        for n in 0..s.nodes.len() {
            let clock = self.node_clock(s, n);
            s.nodes[n].data.expire(clock);
        }
        let work = self.scenario.timing.work as u8;
        for (c, pending) in s.clients.iter_mut().zip(pending) {
            if !c.running() {
                continue;
            }
            c.retry_wait = false;
            if pending {
                c.waited = c.waited.saturating_add(1);
            }
            match &mut c.phase {
                Phase::Critical {
                    read: Some(_),
                    worked,
                    ..
                }
                | Phase::Waiting {
                    read: Some(_),
                    worked,
                    ..
                } => {
                    *worked = (*worked + 1).min(work);
                }
                _ => {}
            }
            if self.scenario.design.renews() && c.machine.grant().is_some() {
                c.since_renew = (c.since_renew + 1).min(self.cfg.renew_interval() as u8);
            }
        }
    }

    /// Put a machine step into effect: record its sends, act on its outcome.
    fn apply(&self, s: &mut State, i: usize, step: Step) {
        for send in step.sends {
            let node = s.serving[send.node];
            s.clients[i].flights[send.node] = Some(Flight {
                node,
                command: send.command,
                held: None,
                age: 0,
            });
        }
        let Some(outcome) = step.outcome else { return };
        let c = &mut s.clients[i];
        c.phase = match (std::mem::replace(&mut c.phase, Phase::Idle), outcome) {
            (Phase::Acquiring, Outcome::Acquired(grant)) => {
                c.since_renew = 0;
                c.fence = grant.fence;
                Phase::Critical {
                    pc: 0,
                    read: None,
                    worked: 0,
                }
            }
            (Phase::Acquiring, _) => {
                c.retry_wait = true;
                if c.attempts == 0 {
                    Phase::Done
                } else {
                    Phase::Idle
                }
            }
            (Phase::Waiting { pc, read, worked }, outcome) => {
                if let Outcome::Acquired(Grant { fence: Some(f), .. }) = outcome {
                    c.fence = Some(f);
                }
                let pc = pc + 1;
                if pc as usize >= self.program.len() {
                    Phase::Done
                } else {
                    Phase::Critical { pc, read, worked }
                }
            }
            (Phase::Critical { pc, read, worked }, Outcome::Extended { .. }) => {
                c.since_renew = 0;
                Phase::Critical { pc, read, worked }
            }
            // A renewal that failed: the holder carries on, as application code does.
            (phase, _) => phase,
        };
    }

    fn answer(&self, s: &mut State, i: usize, m: usize, answer: Answer) {
        s.clients[i].flights[m] = None;
        let now = self.client_clock(s, i);
        let step = s.clients[i].machine.on_answer(&self.cfg, m, answer, now);
        self.apply(s, i, step);
    }

    fn execute(&self, s: &mut State, i: usize, node: usize, command: &Command) -> Reply {
        if let Command::Wait { .. } = command {
            let data = &s.nodes[node].data;
            let acks = s
                .nodes
                .iter()
                .filter(|r| r.alive && r.replica_of == Some(node as u8) && &r.data == data)
                .count();
            return Reply::Int(acks as i64);
        }
        let clock = self.node_clock(s, node);
        let mut exec = Exec::new(&mut s.nodes[node].data, clock, i as u8);
        let reply = exec.run(command);
        let displaced = std::mem::take(&mut exec.effect.displaced);
        for owner in displaced.into_iter().flatten() {
            let o = &s.clients[owner as usize];
            let holds = matches!(
                o.phase,
                Phase::Acquiring | Phase::Critical { .. } | Phase::Waiting { .. }
            );
            if owner as usize != i && holds {
                s.displaced_other = true;
            }
        }
        reply
    }

    fn new_token(s: &mut State) -> String {
        s.next_token += 1;
        format!("t{}", s.next_token)
    }

    /// Inside the critical section: from the grant until the stock write is done (the
    /// release that follows is outside it).
    pub fn in_critical_section(&self, c: &Client) -> bool {
        let last = self
            .program
            .iter()
            .rposition(|o| *o == Op::Write)
            .unwrap_or(0) as u8;
        matches!(c.phase, Phase::Critical { pc, .. } | Phase::Waiting { pc, .. } if pc <= last)
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
            // getset-timestamp keeps its expiry in the value, which every client honours.
            Property::NoOrphanedLock => !s.nodes.iter().any(|n| {
                n.alive
                    && n.data.entry(&self.cfg.key).is_some_and(|e| {
                        e.expires_at.is_none()
                            && self.scenario.design != DesignId::GetsetTimestamp
                            && e.owner
                                .is_some_and(|o| s.clients[o as usize].phase == Phase::Crashed)
                    })
            }),
            Property::ResourceSafety => s.stock.consistent(),
        }
    }

    /// The vacuity guard: some client completed its critical section.
    pub fn purchased(s: &State) -> bool {
        s.stock.accepted > 0
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
            })
            .collect();
        for m in 0..masters {
            for _ in 0..sc.topology.replicas {
                nodes.push(Node {
                    alive: true,
                    offset: 0,
                    data: Default::default(),
                    replica_of: Some(m as u8),
                });
            }
        }
        let client = Client {
            machine: LockMachine::new(&self.cfg),
            phase: Phase::Idle,
            paused: false,
            offset: 0,
            attempts: sc.clients.attempts as u8,
            retry_wait: false,
            waited: 0,
            since_renew: 0,
            fence: None,
            flights: vec![None; masters],
            cut: 0,
        };
        vec![State {
            now: 0,
            clients: vec![client; sc.clients.count as usize],
            nodes,
            serving: (0..masters as u8).collect(),
            stock: Stock::new(INITIAL_STOCK, sc.fencing),
            spent: Spent::default(),
            next_token: 0,
            displaced_other: false,
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
        let by_client = |c: u8, s: &mut State| s.clients[c as usize].waited = 0;
        match action {
            Action::Tick => self.tick(&mut s),
            Action::Acquire(c) => {
                by_client(c, &mut s);
                let i = c as usize;
                let token = Self::new_token(&mut s);
                let now = self.client_clock(&s, i);
                let cl = &mut s.clients[i];
                cl.attempts -= 1;
                cl.phase = Phase::Acquiring;
                let step = cl.machine.acquire(&self.cfg, now, &token);
                self.apply(&mut s, i, step);
            }
            Action::Deliver(c, m) => {
                let (i, m) = (c as usize, m as usize);
                let f = s.clients[i].flights[m].clone()?;
                let reply = self.execute(&mut s, i, f.node as usize, &f.command);
                if s.clients[i].running() {
                    self.answer(&mut s, i, m, Ok(reply));
                } else {
                    s.clients[i].flights[m] = Some(Flight {
                        held: Some(reply),
                        age: 0,
                        ..f
                    });
                }
            }
            Action::Receive(c, m) => {
                let reply = s.clients[c as usize].flights[m as usize]
                    .as_ref()?
                    .held
                    .clone()?;
                self.answer(&mut s, c as usize, m as usize, Ok(reply));
            }
            Action::Timeout(c, m) => {
                self.answer(&mut s, c as usize, m as usize, Err(NoAnswer));
            }
            Action::Renew(c) => {
                by_client(c, &mut s);
                let i = c as usize;
                let now = self.client_clock(&s, i);
                let step = s.clients[i].machine.renew(&self.cfg, now);
                s.clients[i].since_renew = 0;
                self.apply(&mut s, i, step);
            }
            Action::Read(c) | Action::Write(c) | Action::Release(c) | Action::Reenter(c) => {
                by_client(c, &mut s);
                let i = c as usize;
                let Phase::Critical { pc, read, worked } = s.clients[i].phase.clone() else {
                    return None;
                };
                let fence = s.clients[i].fence;
                let next = Phase::Critical {
                    pc: pc + 1,
                    read,
                    worked,
                };
                match action {
                    Action::Read(_) => {
                        s.clients[i].phase = match s.stock.read(fence) {
                            Ok(v) => Phase::Critical {
                                pc: pc + 1,
                                read: Some(v),
                                worked: 0,
                            },
                            // Rejected: skip to the release.
                            Err(_) => Phase::Critical {
                                pc: self.program.iter().rposition(|o| *o == Op::Release)? as u8,
                                read: None,
                                worked: 0,
                            },
                        };
                    }
                    Action::Write(_) => {
                        let _ = s.stock.write(fence, read? - 1);
                        s.clients[i].phase = next;
                    }
                    _ => {
                        let now = self.client_clock(&s, i);
                        s.clients[i].phase = Phase::Waiting { pc, read, worked };
                        let step = if let Action::Reenter(_) = action {
                            let token = Self::new_token(&mut s);
                            s.clients[i].machine.acquire(&self.cfg, now, &token)
                        } else {
                            s.clients[i].machine.release(&self.cfg, now)
                        };
                        self.apply(&mut s, i, step);
                    }
                }
            }
            Action::Replicate(n) => {
                let master = s.nodes[n as usize].replica_of? as usize;
                s.nodes[n as usize].data = s.nodes[master].data.clone();
            }
            Action::Pause(c) => {
                s.spent.pauses += 1;
                s.clients[c as usize].paused = true;
            }
            Action::Resume(c) => {
                s.clients[c as usize].paused = false;
                s.clients[c as usize].waited = 0;
            }
            Action::Crash(c) => {
                s.spent.crashes += 1;
                let cl = &mut s.clients[c as usize];
                cl.phase = Phase::Crashed;
                cl.paused = false;
                cl.flights.iter_mut().for_each(|f| *f = None);
            }
            Action::Failover(m, r) => {
                s.spent.failovers += 1;
                let old = s.serving[m as usize] as usize;
                s.nodes[old].alive = false;
                s.nodes[r as usize].replica_of = None;
                s.serving[m as usize] = r;
                let clock = self.node_clock(&s, r as usize);
                s.nodes[r as usize].data.expire(clock);
            }
            Action::Restart(n) => {
                s.spent.restarts += 1;
                s.nodes[n as usize].data = Default::default();
            }
            Action::Partition(c, m) => {
                s.spent.partitions += 1;
                s.clients[c as usize].cut |= 1 << m;
            }
            Action::Heal(c, m) => s.clients[c as usize].cut &= !(1 << m),
            Action::NodeClockJump(n) => {
                s.spent.clock_jumps += 1;
                let jump = self.scenario.timing.clock_jump as i8;
                s.nodes[n as usize].offset += jump;
                let clock = self.node_clock(&s, n as usize);
                s.nodes[n as usize].data.expire(clock);
            }
            Action::ClientClockJump(c) => {
                s.spent.clock_jumps += 1;
                s.clients[c as usize].offset += self.scenario.timing.clock_jump as i8;
            }
        }
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
        s.now as u32 <= self.scenario.timing.horizon
    }
}
