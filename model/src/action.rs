//! The model's actions: every step the system can take, the faults among them.
//!
//! A client's own steps, the network's deliveries, the clock's tick, and the faults of
//! the `[faults]` budget with the steps that undo them (a resume, a heal, a client
//! learning the new master). When each is offered and what it does: the client's steps
//! in [`crate::model`], the faults' in [`crate::fault`].

use crate::client::Op;
use crate::fault::FaultKind;
use crate::ids::{ClientId, MasterId, NodeId};

/// One step of the system. Client arguments are client indexes; `u8` master slots.
///
/// Traces store actions with the derived serde form `{"kind": "Deliver", "args": [0, 1]}`
/// (the variant's fields in order; see [`crate::trace`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "args")]
pub enum Action {
    /// The global clock advances one tick.
    Tick,
    /// Client starts an acquire attempt.
    Acquire(u8),
    /// The request from client to master slot reaches the node, which executes it; the
    /// reply starts back.
    Deliver(u8, u8),
    /// The reply reaches the (running) client.
    Receive(u8, u8),
    /// The request gets no answer (link cut, node down): the client's timeout fires. A
    /// request cut off by its link stays on the wire ([`Stray`](crate::state::Stray)).
    Timeout(u8, u8),
    /// The client's `k`-th request it gave up on (a [`Stray`](crate::state::Stray)) reaches its node once the
    /// link works again, and runs; nobody reads the reply.
    DeliverLate(u8, u8),
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
    /// Fault: master slot's node dies and this replica is promoted; the slot's other
    /// replicas follow the promoted one from now on.
    Failover(u8, u8),
    /// Fault: split brain. A partition cuts master slot's node off from Sentinel and
    /// the replicas on the majority's side, and this replica (one of those) is
    /// promoted; the old master stays up and keeps serving every client that has not
    /// learnt of the new one ([`Action::Redirect`]). The third argument is the set of
    /// the slot's replicas (bit `j`: the slot's `j`-th replica node) left on the old
    /// master's side: they keep following it (and acknowledging its `WAIT`).
    SplitBrain(u8, u8, u8),
    /// During a split brain, the client (on the majority side) learns the new master of
    /// the slot from Sentinel: from now on it reaches only that one.
    Redirect(u8, u8),
    /// Fault: a node restarts empty (no persistence).
    Restart(u8),
    /// Fault: the link from client to master slot is cut.
    Partition(u8, u8),
    /// The cut link works again.
    Heal(u8, u8),
    /// Fault: a node's clock jumps forward.
    NodeClockJump(u8),
    /// A node's clock, running fast, gains one tick (bounded by `timing.node_drift`).
    NodeDrift(u8),
    /// Fault: a client's clock jumps forward.
    ClientClockJump(u8),
    /// Fault: the reply from master slot to client, of a command that ran, is lost: the
    /// client's timeout fires.
    LoseReply(u8, u8),
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
            | DeliverLate(c, _)
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
            | Redirect(c, _)
            | ClientClockJump(c)
            | LoseReply(c, _) => Some(c),
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
            // A stray keeps its place in its client's list; its slot is in the state.
            DeliverLate(x, k) => DeliverLate(c(x), k),
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
            // Replica sides are named within their slot: master renamings (Redlock,
            // which has no replicas) leave them as they are.
            SplitBrain(m, r, with_old) => SplitBrain(n(m), n(r), with_old),
            Redirect(x, m) => Redirect(c(x), n(m)),
            Restart(r) => Restart(n(r)),
            Partition(x, m) => Partition(c(x), n(m)),
            Heal(x, m) => Heal(c(x), n(m)),
            NodeClockJump(r) => NodeClockJump(n(r)),
            NodeDrift(r) => NodeDrift(n(r)),
            ClientClockJump(x) => ClientClockJump(c(x)),
            LoseReply(x, m) => LoseReply(c(x), n(m)),
        }
    }

    /// The critical-section op this action takes, if it is one.
    pub fn op(&self) -> Option<Op> {
        match self {
            Action::Read(_) => Some(Op::Read),
            Action::Write(_) => Some(Op::Write),
            Action::Release(_) => Some(Op::Release),
            Action::Reenter(_) => Some(Op::Reenter),
            _ => None,
        }
    }

    /// Whether the action is a fault from the budget.
    pub fn is_fault(&self) -> bool {
        FaultKind::of(self).is_some()
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use Action::*;
        let c = |c: &u8| ClientId::from(*c);
        let m = |m: &u8| MasterId::from(*m);
        let n = |n: &u8| NodeId::from(*n);
        match self {
            Tick => write!(f, "tick"),
            Acquire(x) => write!(f, "{} acquire", c(x)),
            Deliver(x, s) => write!(f, "{} request to {} executed", c(x), m(s)),
            Receive(x, s) => write!(f, "{} receives the reply from {}", c(x), m(s)),
            Timeout(x, s) => write!(f, "{} request to {} times out", c(x), m(s)),
            DeliverLate(x, k) => write!(
                f,
                "{} request given up on (#{}) reaches its node and runs; nobody reads the reply",
                c(x),
                k + 1
            ),
            Renew(x) => write!(f, "{} watchdog renews", c(x)),
            Read(x) => write!(f, "{} reads stock", c(x)),
            Write(x) => write!(f, "{} writes stock", c(x)),
            Release(x) => write!(f, "{} releases", c(x)),
            Reenter(x) => write!(f, "{} re-enters", c(x)),
            Replicate(r) => write!(f, "{} replicates", n(r)),
            Pause(x) => write!(f, "FAULT {} paused (stop-the-world)", c(x)),
            Resume(x) => write!(f, "{} resumes", c(x)),
            Crash(x) => write!(f, "FAULT {} crashes", c(x)),
            Failover(s, r) => write!(f, "FAULT {} dies, {} promoted", m(s), n(r)),
            SplitBrain(s, r, with_old) => {
                write!(
                    f,
                    "FAULT split brain: {} cut off from Sentinel but up, {} promoted",
                    m(s),
                    n(r)
                )?;
                if *with_old != 0 {
                    let left: Vec<String> = (0..8)
                        .filter(|j| with_old & (1 << j) != 0)
                        .map(|j| format!("replica {} of {}", j + 1, m(s)))
                        .collect();
                    write!(f, "; on the old master's side: {}", left.join(", "))?;
                }
                Ok(())
            }
            Redirect(x, s) => write!(f, "{} learns the new {} from Sentinel", c(x), m(s)),
            Restart(r) => write!(f, "FAULT {} restarts empty", n(r)),
            Partition(x, s) => write!(f, "FAULT link {} -> {} cut", c(x), m(s)),
            Heal(x, s) => write!(f, "link {} -> {} healed", c(x), m(s)),
            NodeClockJump(r) => write!(f, "FAULT {} clock jumps forward", n(r)),
            NodeDrift(r) => write!(f, "{} clock runs fast: gains a tick", n(r)),
            ClientClockJump(x) => write!(f, "FAULT {} clock jumps forward", c(x)),
            LoseReply(x, s) => write!(f, "FAULT reply {} -> {} lost", m(s), c(x)),
        }
    }
}
