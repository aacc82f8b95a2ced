//! The client program: one client's life, written once for the model ([`crate::model`])
//! and for the real-run engine (the harness's `run` module), which both drive it.
//!
//! A client makes acquire attempts until one succeeds or its attempts run out; holding
//! the lock, it runs the critical-section [`Program`] of [`Op`]s (read the stock, write it
//! minus one, release; a re-entrant design re-enters first and drops the inner hold mid
//! way). Its [`Phase`] says where it is. The design's [`LockMachine`] talks to Redis: each
//! machine step's requests become [`Flight`]s, and each [`Outcome`] the machine reaches is
//! given its meaning for the client by [`Program::on_outcome`] (a [`Change`]).
//!
//! What both sides keep of a client is one [`ClientCore`] (its machine, phase, attempts,
//! fence and requests on the wire), and the program takes it by `&mut`. Neither side
//! restates any of this: a new phase, op or outcome is added here, and the exhaustive
//! matches below make both sides handle it.

use std::num::NonZeroU64;

use locklab::{Answer, Command, Grant, LockConfig, LockMachine, Millis, Outcome, Reply, Step};

use crate::clone_in_place::clone_in_place;

/// One client as the model and the run engine both keep it. The model adds its timing
/// and faults (`crate::state::Client`), the run engine its connections and pause gate.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ClientCore {
    /// The design's state machine, the production code from `src/`.
    pub machine: LockMachine,
    /// Its progress.
    pub phase: Phase,
    /// Acquire attempts left.
    pub attempts: u8,
    /// The fencing token of its grant, kept from the acquire (as the driver's guard keeps
    /// it): a holder whose lease was lost still presents it to the store. Fencing tokens
    /// come from `INCR` and start at 1; kept as `NonZeroU64` so that the core packs with
    /// the fields each side adds (it hashes as the `u64` it holds).
    pub fence: Option<NonZeroU64>,
    /// Requests on the wire, one slot per master.
    pub flights: Vec<Option<Flight>>,
    /// Requests it gave up on that are still on the wire, oldest first.
    pub strays: Vec<Stray>,
}

// The search builds successors in place ([`crate::clone_in_place`]).
clone_in_place!(ClientCore {
    copy: [attempts, fence],
    keep: [machine, phase, flights, strays],
});

impl ClientCore {
    /// The fencing token it presents to the store.
    pub fn fence(&self) -> Option<u64> {
        self.fence.map(NonZeroU64::get)
    }

    /// `node` restarted: each request still on its way to it is lost with the
    /// connection it travels on ([`Flight::LOST`]: only this client's timeout answers
    /// it), or goes if this client crashed (nobody waits for it). The model's restart
    /// and the run engine's both call it.
    pub fn lose_requests_to(&mut self, node: u8) {
        let crashed = self.phase == Phase::Crashed;
        for slot in &mut self.flights {
            match slot {
                Some(f) if f.undelivered() && f.node == node => {
                    if crashed {
                        *slot = None;
                    } else {
                        f.wait = Flight::LOST;
                    }
                }
                _ => {}
            }
        }
    }

    /// A client of `cfg`'s lock before its first attempt, with `attempts` attempts and a
    /// slot for each of `masters` masters.
    pub fn new(cfg: &LockConfig, attempts: u8, masters: usize) -> ClientCore {
        ClientCore {
            machine: LockMachine::new(cfg),
            phase: Phase::Idle,
            attempts,
            fence: None,
            flights: vec![None; masters],
            strays: Vec::new(),
        }
    }
}

/// One operation of the critical-section program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Re-enter the lock already held (re-entrant design).
    Reenter,
    /// Read the stock (with the fencing token, if any).
    Read,
    /// Release one hold of the lock.
    Release,
    /// Write the stock read minus one, after the work.
    Write,
}

/// Where a client is in its one purchase.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Not holding; may start an acquire while attempts are left.
    Idle,
    /// An acquire is in flight.
    Acquiring,
    /// Holding (it believes): running the critical-section program, op `pc`.
    Critical {
        /// Next op of the [`Program`].
        pc: u8,
        /// The stock value read, once read.
        read: Option<i64>,
        /// Ticks worked since the read.
        worked: u8,
    },
    /// A release (or a re-entry) is in flight at op `pc` of the program.
    Waiting {
        pc: u8,
        read: Option<i64>,
        worked: u8,
    },
    /// Finished (released, or gave up).
    Done,
    /// The process crashed.
    Crashed,
}

impl Phase {
    /// Holding (it believes): in the critical-section program, releases included.
    pub fn holding(&self) -> bool {
        match self {
            Phase::Critical { .. } | Phase::Waiting { .. } => true,
            Phase::Idle | Phase::Acquiring | Phase::Done | Phase::Crashed => false,
        }
    }

    /// Acquiring or holding: the client has a claim on the lock (an entry it wrote may
    /// be its own, or about to be). `owner_only_release` protects such a client's entry.
    pub fn claims(&self) -> bool {
        self.holding() || *self == Phase::Acquiring
    }
}

/// A request on its way to a node, or executed with its reply on its way back, or a
/// `WAIT` that blocks on its node, or a request whose connection its node dropped
/// ([`Flight::LOST`]).
#[derive(Debug, PartialEq, Eq)]
pub struct Flight {
    /// The physical node it is addressed to (the one serving the slot when sent).
    pub node: u8,
    /// The command (shared: a state is copied at every step of the search, its
    /// requests rarely change).
    pub command: std::sync::Arc<Command>,
    /// Executed: the reply on its way back (or waiting for a paused client).
    pub held: Option<Reply>,
    /// Ticks its current leg has been deliverable without being delivered (the model's
    /// bound; the real run leaves it at 0).
    pub age: u8,
    /// A `WAIT` that ran and has not answered yet ([`Flight::blocked`]): the ticks still
    /// to pass before its timeout answers it, the tick that answers it included; or
    /// [`Flight::LOST`] once its node dropped the connection it blocks on, or the one an
    /// undelivered request travels on (only its client's timeout answers it then). 0
    /// for every other request, and then left out of the hash, so that a state without
    /// a blocked or lost request keeps its fingerprint.
    pub wait: u16,
}

impl Flight {
    /// [`Flight::wait`] of a request whose node dropped its connection before it
    /// answered: a `WAIT` blocking there (a failover, a restart, its client redirected
    /// away from the old master of a split brain), or a request still on its way to a
    /// node that restarted (the new process never reads what was sent to the old one).
    /// It never answers, and its client times out.
    pub const LOST: u16 = u16::MAX;

    /// A `WAIT` that ran on its node and blocks there, or a lost request: no reply yet
    /// (nor a leg to deliver); a replica catching up or a timeout answers it.
    pub fn blocked(&self) -> bool {
        self.wait != 0
    }

    /// A request still on its way to its node: not executed, not blocking there.
    pub fn undelivered(&self) -> bool {
        self.held.is_none() && self.wait == 0
    }

    /// A blocked `WAIT` that its timeout or a replica may still answer (its node keeps
    /// its connection).
    pub fn waiting(&self) -> bool {
        self.blocked() && self.wait != Flight::LOST
    }
}

/// Field by field in the order of the struct, as a derived `Hash` writes them, and
/// [`Flight::wait`] last and only when it is set: every state without a blocked `WAIT`
/// hashes as it did before the field existed.
impl std::hash::Hash for Flight {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.node.hash(h);
        self.command.hash(h);
        self.held.hash(h);
        self.age.hash(h);
        if self.wait != 0 {
            self.wait.hash(h);
        }
    }
}

/// A copy in place into a flight of the same command (as most of the search's successors
/// are: [`crate::clone_in_place`]) keeps the reference it has, and leaves the count of
/// the shared command alone.
impl Clone for Flight {
    fn clone(&self) -> Self {
        let Flight {
            node,
            command,
            held,
            age,
            wait,
        } = self;
        Flight {
            node: *node,
            command: command.clone(),
            held: held.clone(),
            age: *age,
            wait: *wait,
        }
    }

    fn clone_from(&mut self, source: &Self) {
        let Flight {
            node,
            command,
            held,
            age,
            wait,
        } = source;
        self.node = *node;
        if !std::sync::Arc::ptr_eq(&self.command, command) {
            self.command = command.clone();
        }
        self.held.clone_from(held);
        self.age = *age;
        self.wait = *wait;
    }
}

/// A request its client gave up on while it was still on the wire: the client timed
/// out (its link was cut) and went on, but the bytes were already in the socket, and
/// TCP delivers them once the link heals. The node executes it then, and nobody reads
/// the reply. A request to a node that died or restarted meanwhile is lost with the
/// connection.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stray {
    /// The master slot it was sent on.
    pub slot: u8,
    /// The request (never executed: `held` is `None`) and its age since it became
    /// deliverable again.
    pub flight: Flight,
}

/// A grant's fencing token: `INCR` on the fence key, never 0.
fn fencing_token(token: u64) -> NonZeroU64 {
    NonZeroU64::new(token).expect("fencing tokens come from INCR and start at 1")
}

/// What a machine outcome meant for the client's life (the history records it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// The acquire succeeded: the client enters its critical section.
    Acquired { fence: Option<u64> },
    /// The acquire failed (denied, no answer, abandoned).
    AcquireFailed(Outcome),
    /// A release or re-entry answered; `done` when the program is finished.
    Answered { done: bool },
    /// A renewal extended the lease.
    Extended,
    /// A renewal did not: the holder carries on, as application code does.
    RenewFailed,
    /// The step sent requests and reached no outcome yet.
    None,
}

/// The critical-section program of a design.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    ops: Vec<Op>,
}

impl Program {
    /// The program every client of a lock runs once it holds it. The holder of a
    /// reentrant lock (design `reentrant`, a custom lock with a re-entry step) re-enters
    /// at once and drops the inner hold before its work, so a wrong hold count shows up as a second client inside the critical section. A denied
    /// re-entry skips the inner release (`if lock.tryLock() { ... unlock() }`) and the
    /// holder goes on with its work under the outer hold.
    pub fn of(cfg: &LockConfig) -> Self {
        let ops = if cfg.reentrant() {
            vec![Op::Reenter, Op::Release, Op::Read, Op::Write, Op::Release]
        } else {
            vec![Op::Read, Op::Write, Op::Release]
        };
        Program { ops }
    }

    /// The ops in order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The op at `pc`.
    pub fn op(&self, pc: u8) -> Option<Op> {
        self.ops.get(usize::from(pc)).copied()
    }

    /// The next op the client may take now: holding, for the write the stock read and
    /// `work` ticks worked since, and for a re-entry or release its machine idle.
    ///
    /// Reading and writing the stock are the application's own steps, not the lock's:
    /// a renewal in flight (the machine busy) runs beside them on the renewal task's
    /// timer, as Redisson's watchdog, python-redis-lock's renewal thread and the
    /// driver's renewal task do, and holds up only a re-entry or a release, which go
    /// through the machine (one command at a time: the driver's release waits for the
    /// renewal's answer on the machine's lock).
    pub fn next(&self, phase: &Phase, machine: &LockMachine, work: u32) -> Option<Op> {
        let Phase::Critical { pc, read, worked } = phase else {
            return None;
        };
        let op = self.op(*pc)?;
        let ready = match op {
            Op::Write => read.is_some() && u32::from(*worked) >= work,
            Op::Read => true,
            Op::Reenter | Op::Release => !machine.busy(),
        };
        ready.then_some(op)
    }

    fn last(&self, op: Op) -> Option<u8> {
        let i = self.ops.iter().rposition(|o| *o == op)?;
        u8::try_from(i).ok()
    }

    /// Inside the critical section: from the grant until the stock write is done (the
    /// release that follows is outside it).
    pub fn in_critical_section(&self, phase: &Phase) -> bool {
        let last = self.last(Op::Write).unwrap_or(0);
        matches!(phase, Phase::Critical { pc, .. } | Phase::Waiting { pc, .. } if *pc <= last)
    }

    /// Start an acquire attempt (token `token`): the phase, the attempt count and the
    /// machine's first step. `None` when the client is not idle or has no attempt left.
    pub fn acquire(
        &self,
        c: &mut ClientCore,
        cfg: &LockConfig,
        now: Millis,
        token: &str,
    ) -> Option<Step> {
        if c.phase != Phase::Idle || c.attempts == 0 {
            return None;
        }
        c.attempts -= 1;
        c.phase = Phase::Acquiring;
        Some(c.machine.acquire(cfg, now, token))
    }

    /// The stock read answered: `Ok(value)` goes on to the work; a rejected read (stale
    /// fencing token) skips to the release.
    pub fn on_read<E>(&self, phase: &mut Phase, read: Result<i64, E>) -> Option<()> {
        let Phase::Critical { pc, .. } = *phase else {
            return None;
        };
        *phase = match read {
            Ok(v) => Phase::Critical {
                pc: pc + 1,
                read: Some(v),
                worked: 0,
            },
            Err(_) => Phase::Critical {
                pc: self.last(Op::Release)?,
                read: None,
                worked: 0,
            },
        };
        Some(())
    }

    /// The stock write is done: the value written (the read minus one).
    pub fn on_write(&self, phase: &mut Phase) -> Option<i64> {
        let Phase::Critical { pc, read, worked } = phase.clone() else {
            return None;
        };
        let value = read? - 1;
        *phase = Phase::Critical {
            pc: pc + 1,
            read,
            worked,
        };
        Some(value)
    }

    /// Start the release or re-entry at the current op: the machine's first step
    /// (`token` names the re-entry attempt).
    pub fn request(
        &self,
        c: &mut ClientCore,
        cfg: &LockConfig,
        now: Millis,
        token: impl FnOnce() -> String,
    ) -> Option<Step> {
        let Phase::Critical { pc, read, worked } = c.phase.clone() else {
            return None;
        };
        let step = match self.op(pc)? {
            Op::Reenter => c.machine.acquire(cfg, now, &token()),
            Op::Release => c.machine.release(cfg, now),
            Op::Read | Op::Write => return None,
        };
        c.phase = Phase::Waiting { pc, read, worked };
        Some(step)
    }

    /// A tick passed: a client that has read the stock has worked one more tick (counted
    /// up to `work`).
    pub fn on_tick(&self, phase: &mut Phase, work: u32) {
        if let Phase::Critical {
            read: Some(_),
            worked,
            ..
        }
        | Phase::Waiting {
            read: Some(_),
            worked,
            ..
        } = phase
        {
            if u32::from(*worked) < work {
                *worked += 1;
            }
        }
    }

    /// Put a machine step into effect: its sends become flights (addressed to the node
    /// serving each slot now), its outcome moves the client on.
    pub fn apply(&self, step: Step, c: &mut ClientCore, serving: &[u8]) -> Change {
        for send in step.sends {
            c.flights[send.node] = Some(Flight {
                node: serving[send.node],
                command: std::sync::Arc::new(send.command),
                held: None,
                age: 0,
                wait: 0,
            });
        }
        match step.outcome {
            Some(outcome) => self.on_outcome(c, outcome),
            None => Change::None,
        }
    }

    /// The answer from slot `m` reaches the client (its clock reading `now`): the
    /// request is off the wire, and the machine's next step is put into effect.
    pub fn answer(
        &self,
        c: &mut ClientCore,
        cfg: &LockConfig,
        (m, answer): (usize, Answer),
        now: Millis,
        serving: &[u8],
    ) -> Change {
        c.flights[m] = None;
        let step = c.machine.on_answer(cfg, m, answer, now);
        self.apply(step, c, serving)
    }

    /// Whether the client is finished once the operation in flight ends, but for a grant
    /// ([`Program::on_outcome`] gives [`Phase::Done`]): the release that ends the
    /// program, whatever it is answered, or an acquire with no attempt left after it,
    /// denied (a Redlock machine that undoes a failed acquire can only report a denial).
    pub fn ends_on_answer(&self, c: &ClientCore) -> bool {
        match c.phase {
            Phase::Waiting { pc, .. } => {
                self.op(pc) == Some(Op::Release) && usize::from(pc) + 1 >= self.ops.len()
            }
            Phase::Acquiring => c.attempts == 0,
            Phase::Idle | Phase::Critical { .. } | Phase::Done | Phase::Crashed => false,
        }
    }

    /// What an outcome of the machine means in the client's phase: the new phase, the
    /// fencing token kept, and the change for the history.
    pub fn on_outcome(&self, c: &mut ClientCore, outcome: Outcome) -> Change {
        let (next, change) = match (std::mem::replace(&mut c.phase, Phase::Idle), outcome) {
            (Phase::Acquiring, Outcome::Acquired(grant)) => {
                c.fence = grant.fence.map(fencing_token);
                (
                    Phase::Critical {
                        pc: 0,
                        read: None,
                        worked: 0,
                    },
                    Change::Acquired { fence: grant.fence },
                )
            }
            (Phase::Acquiring, other) => (
                if c.attempts == 0 {
                    Phase::Done
                } else {
                    Phase::Idle
                },
                Change::AcquireFailed(other),
            ),
            (Phase::Waiting { pc, read, worked }, outcome) => {
                if let Outcome::Acquired(Grant { fence: Some(f), .. }) = outcome {
                    c.fence = Some(fencing_token(f));
                }
                let reentered = matches!(outcome, Outcome::Acquired(_));
                let pc = if self.op(pc) == Some(Op::Reenter) && !reentered {
                    // No inner hold to release.
                    pc + 2
                } else {
                    pc + 1
                };
                if usize::from(pc) >= self.ops.len() {
                    (Phase::Done, Change::Answered { done: true })
                } else {
                    (
                        Phase::Critical { pc, read, worked },
                        Change::Answered { done: false },
                    )
                }
            }
            (phase @ Phase::Critical { .. }, Outcome::Extended { .. }) => (phase, Change::Extended),
            (phase @ Phase::Critical { .. }, _) => (phase, Change::RenewFailed),
            // No request is in flight in these phases: nothing answers.
            (phase @ (Phase::Idle | Phase::Done | Phase::Crashed), _) => (phase, Change::None),
        };
        c.phase = next;
        change
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab::Denied;
    use locklab::DesignId;

    #[test]
    fn a_denied_reentry_skips_the_inner_release() {
        let cfg = LockConfig::new(DesignId::Reentrant, "lock", 5);
        let p = Program::of(&cfg);
        let waiting = Phase::Waiting {
            pc: 0,
            read: None,
            worked: 0,
        };
        let mut c = ClientCore::new(&cfg, 0, 1);
        c.phase = waiting.clone();
        let denied = Outcome::Denied(Denied::Unavailable { node: 0 });
        assert_eq!(
            p.on_outcome(&mut c, denied),
            Change::Answered { done: false }
        );
        assert_eq!(p.op(2), Some(Op::Read));
        assert!(
            matches!(c.phase, Phase::Critical { pc: 2, .. }),
            "{:?}",
            c.phase
        );
        let grant = Grant {
            token: "t".into(),
            lease_end: Some(5),
            fence: None,
            holds: 2,
        };
        c.phase = waiting;
        p.on_outcome(&mut c, Outcome::Acquired(grant));
        assert_eq!(p.op(1), Some(Op::Release));
        assert!(
            matches!(c.phase, Phase::Critical { pc: 1, .. }),
            "{:?}",
            c.phase
        );
    }

    #[test]
    fn a_rejected_read_skips_to_the_last_release() {
        let p = Program::of(&LockConfig::new(DesignId::Reentrant, "lock", 5));
        let mut phase = Phase::Critical {
            pc: 2,
            read: None,
            worked: 0,
        };
        p.on_read(&mut phase, Err(())).unwrap();
        assert_eq!(
            phase,
            Phase::Critical {
                pc: 4,
                read: None,
                worked: 0
            }
        );
        assert!(!p.in_critical_section(&phase));
    }

    #[test]
    fn a_kept_fencing_token_hashes_as_the_u64_it_holds() {
        for token in [None, Some(1u64), Some(7)] {
            let kept = token.and_then(NonZeroU64::new);
            assert_eq!(
                crate::model::fingerprint(&kept),
                crate::model::fingerprint(&token)
            );
        }
    }

    /// A flight that is no blocked `WAIT` hashes as the struct did without the field,
    /// so that every state without one keeps its fingerprint; a blocked one differs.
    #[test]
    fn a_flight_hashes_its_wait_only_when_set() {
        #[derive(Hash)]
        struct Before {
            node: u8,
            command: std::sync::Arc<Command>,
            held: Option<Reply>,
            age: u8,
        }
        let command = std::sync::Arc::new(Command::Wait {
            replicas: 1,
            timeout_ms: 100,
        });
        for (held, age) in [(None, 0), (Some(Reply::Int(1)), 1)] {
            let before = Before {
                node: 2,
                command: command.clone(),
                held: held.clone(),
                age,
            };
            let mut flight = Flight {
                node: 2,
                command: command.clone(),
                held,
                age,
                wait: 0,
            };
            use crate::model::fingerprint;
            assert_eq!(fingerprint(&flight), fingerprint(&before));
            flight.wait = 3;
            assert_ne!(fingerprint(&flight), fingerprint(&before));
        }
    }

    /// Where `ends_on_answer` says so, every outcome but a grant finishes the client;
    /// elsewhere some outcome does not.
    #[test]
    fn the_last_operation_ends_the_client_but_for_a_grant() {
        let cfg = LockConfig::new(DesignId::Redlock, "lock", 5);
        let p = Program::of(&cfg);
        let grant = Grant {
            token: "t".into(),
            lease_end: Some(5),
            fence: None,
            holds: 1,
        };
        let outcomes = [
            Outcome::Acquired(grant),
            Outcome::Denied(Denied::NoQuorum { granted: 1 }),
            Outcome::Released { holds_left: 0 },
        ];
        let waiting = |pc| Phase::Waiting {
            pc,
            read: Some(9),
            worked: 1,
        };
        let mut last = 0;
        for (phase, attempts) in [
            (Phase::Acquiring, 0),
            (Phase::Acquiring, 1),
            (waiting(2), 0),
            (waiting(2), 1),
            (waiting(1), 0),
        ] {
            let mut c = ClientCore::new(&cfg, attempts, 3);
            c.phase = phase.clone();
            let ends = p.ends_on_answer(&c);
            let done = outcomes
                .iter()
                .filter(|o| !matches!(o, Outcome::Acquired(_)))
                .map(|o| {
                    let mut c = c.clone();
                    p.on_outcome(&mut c, o.clone());
                    c.phase == Phase::Done
                });
            if ends {
                last += 1;
                assert!(done.clone().all(|d| d), "{phase:?}, {attempts} attempts");
            } else {
                assert!(!done.clone().all(|d| d), "{phase:?}, {attempts} attempts");
            }
        }
        assert_eq!(
            last, 3,
            "the last release (either count) and the last attempt"
        );
    }

    #[test]
    fn the_last_release_answered_finishes_the_program() {
        let cfg = LockConfig::new(DesignId::LuaRelease, "lock", 5);
        let p = Program::of(&cfg);
        let mut c = ClientCore::new(&cfg, 0, 1);
        c.phase = Phase::Waiting {
            pc: 2,
            read: Some(9),
            worked: 1,
        };
        c.fence = NonZeroU64::new(3);
        let change = p.on_outcome(&mut c, Outcome::Released { holds_left: 0 });
        assert_eq!(change, Change::Answered { done: true });
        assert_eq!(c.phase, Phase::Done);
        assert_eq!(c.fence(), Some(3), "the token is kept");
    }
}
