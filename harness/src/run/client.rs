//! One real client: the design's sans-IO [`LockMachine`] from `src/` (the same value
//! the model runs), real connections through [`locklab::driver::Node::execute`], its
//! critical-section program (the model's, [`LockModel::program`]) and a stop-the-world
//! [`PauseGate`].
//!
//! The requests a machine step emits wait in `flights` until the run delivers them
//! (the model's message delay is a held request); a reply that comes back while the
//! gate is paused is held until the client resumes (Kleppmann's "replies sit in the
//! kernel buffer"), and a paused client takes no step of its own.

use std::time::Duration;

use locklab::driver::{Node as Link, NodeTimeouts, PauseGate};
use locklab::{Answer, Command, Grant, LockConfig, LockMachine, Millis, Outcome, Reply, Step};
use locklab_model::model::Op;

/// Timeouts of a client's connections: long enough for a loaded machine, short enough
/// that a dead node shows within a step (a cut link or a killed node refuses at once).
pub const LINK_TIMEOUTS: NodeTimeouts = NodeTimeouts {
    connect: Duration::from_millis(1000),
    command: Duration::from_millis(2000),
};

/// Where a client is in its one purchase (as the model's `Phase`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    Idle,
    Acquiring,
    /// Holding (it believes): next op `pc` of the program, the stock value read.
    Critical {
        pc: usize,
        read: Option<i64>,
    },
    /// A release or re-entry is in flight at op `pc`.
    Waiting {
        pc: usize,
        read: Option<i64>,
    },
    Done,
    Crashed,
}

/// A request emitted by the machine, not yet delivered, or delivered with its answer
/// held by the pause.
#[derive(Clone, Debug)]
pub struct Flight {
    /// The physical node it is addressed to (the one serving the slot when sent).
    pub node: usize,
    pub command: Command,
    pub held: Option<Answer>,
}

/// What a machine step changed in the client's life, for the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Acquired {
        fence: Option<u64>,
    },
    AcquireFailed(String),
    /// A release or re-entry answered; `done` when the program is finished.
    Answered {
        done: bool,
    },
    Extended,
    None,
}

/// One client process.
pub struct Client {
    pub index: usize,
    pub machine: LockMachine,
    pub phase: Phase,
    pub gate: PauseGate,
    /// Per master slot.
    pub flights: Vec<Option<Flight>>,
    /// Per master slot: the connection (through the link proxy).
    links: Vec<Link>,
    /// Offset of the client's clock from the run's clock, in ms.
    pub clock_offset: Millis,
    /// Acquire attempts left.
    pub attempts: u32,
    /// The fencing token of its grant, kept from the acquire: a holder whose lease was
    /// lost still presents it to the store.
    pub fence: Option<u64>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("index", &self.index)
            .field("phase", &self.phase)
            .field("paused", &self.gate.is_paused())
            .finish()
    }
}

impl Client {
    /// Client `index` connecting to each master slot through `urls` (its link proxies).
    pub fn new(
        index: usize,
        cfg: &LockConfig,
        urls: &[String],
        attempts: u32,
    ) -> Result<Client, locklab::driver::LockError> {
        let links = urls
            .iter()
            .enumerate()
            .map(|(m, u)| Link::new(m, u, LINK_TIMEOUTS))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Client {
            index,
            machine: LockMachine::new(cfg),
            phase: Phase::Idle,
            gate: PauseGate::new(),
            flights: vec![None; urls.len()],
            links,
            clock_offset: 0,
            attempts,
            fence: None,
        })
    }

    /// Whether the client runs (not paused, not crashed).
    pub fn running(&self) -> bool {
        !self.gate.is_paused() && self.phase != Phase::Crashed
    }

    /// Whether the client acquires, holds or releases the lock (the model's notion of
    /// "holds" for `owner_only_release`).
    pub fn holds(&self) -> bool {
        matches!(
            self.phase,
            Phase::Acquiring | Phase::Critical { .. } | Phase::Waiting { .. }
        )
    }

    /// Inside the critical section: from the grant until the stock write is done.
    pub fn in_critical_section(&self, program: &[Op]) -> bool {
        let last = program.iter().rposition(|o| *o == Op::Write).unwrap_or(0);
        matches!(self.phase, Phase::Critical { pc, .. } | Phase::Waiting { pc, .. } if pc <= last)
    }

    /// Reconnect slot `m` (after a failover or restart behind its proxy).
    pub fn reconnect(&mut self, m: usize, url: &str) -> Result<(), locklab::driver::LockError> {
        self.links[m] = Link::new(m, url, LINK_TIMEOUTS)?;
        Ok(())
    }

    /// Drop every connection (the process died).
    pub fn crash(&mut self, cfg: &LockConfig, urls: &[String]) {
        self.phase = Phase::Crashed;
        self.gate.resume();
        self.flights.iter_mut().for_each(|f| *f = None);
        self.machine.reset(cfg);
        for (m, u) in urls.iter().enumerate() {
            if let Ok(l) = Link::new(m, u, LINK_TIMEOUTS) {
                self.links[m] = l;
            }
        }
    }

    /// Send the request waiting on slot `m` for real and wait for Redis' answer.
    pub async fn send(&self, m: usize) -> Option<(Command, Result<Reply, String>)> {
        let f = self.flights[m].as_ref()?;
        let answer = self.links[m]
            .execute(&f.command)
            .await
            .map_err(|e| e.to_string());
        Some((f.command.clone(), answer))
    }

    /// Put a machine step into effect, as the model's `LockModel::apply`: record its
    /// sends (addressed to the nodes serving the slots now), act on its outcome.
    pub fn apply(&mut self, step: Step, serving: &[usize], program: &[Op]) -> Change {
        for send in step.sends {
            self.flights[send.node] = Some(Flight {
                node: serving[send.node],
                command: send.command,
                held: None,
            });
        }
        let Some(outcome) = step.outcome else {
            return Change::None;
        };
        let phase = std::mem::replace(&mut self.phase, Phase::Idle);
        let (phase, change) = match (phase, outcome) {
            (Phase::Acquiring, Outcome::Acquired(grant)) => {
                self.fence = grant.fence;
                (
                    Phase::Critical { pc: 0, read: None },
                    Change::Acquired { fence: grant.fence },
                )
            }
            (Phase::Acquiring, other) => (
                if self.attempts == 0 {
                    Phase::Done
                } else {
                    Phase::Idle
                },
                Change::AcquireFailed(format!("{other:?}")),
            ),
            (Phase::Waiting { pc, read }, outcome) => {
                if let Outcome::Acquired(Grant { fence: Some(f), .. }) = outcome {
                    self.fence = Some(f);
                }
                let pc = pc + 1;
                if pc >= program.len() {
                    (Phase::Done, Change::Answered { done: true })
                } else {
                    (
                        Phase::Critical { pc, read },
                        Change::Answered { done: false },
                    )
                }
            }
            (phase @ Phase::Critical { .. }, Outcome::Extended { .. }) => (phase, Change::Extended),
            (phase, _) => (phase, Change::None),
        };
        self.phase = phase;
        change
    }

    /// Feed the answer from slot `m` to the machine (clock reading `now`).
    pub fn answer(
        &mut self,
        cfg: &LockConfig,
        m: usize,
        answer: Answer,
        now: Millis,
        serving: &[usize],
        program: &[Op],
    ) -> Change {
        self.flights[m] = None;
        let step = self.machine.on_answer(cfg, m, answer, now);
        self.apply(step, serving, program)
    }
}
