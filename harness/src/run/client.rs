//! One real client: the design's sans-IO [`LockMachine`](locklab::LockMachine) from `src/` (the same value
//! the model runs), real connections through [`locklab::driver::Node::execute`], the
//! client program the model runs ([`Program`]: phases, critical-section ops, what each
//! outcome means) and a stop-the-world [`PauseGate`].
//!
//! The requests a machine step emits wait in `flights` until the run delivers them
//! (the model's message delay is a held request); the reply Redis gives waits in the
//! flight until the run's reply step (the model's reply leg), and while the gate is
//! paused until the client resumes (Kleppmann's "replies sit in the kernel buffer"); a
//! paused client takes no step of its own.

use std::time::Duration;

use locklab::driver::{Node as Link, NodeTimeouts, PauseGate};
use locklab::{Answer, Command, LockConfig, Millis, Reply, Step};
pub use locklab_model::client::{Change, ClientCore, Flight, Phase, Program, Stray};

/// Timeouts of a client's connections: long enough for a loaded machine, short enough
/// that a dead node shows within a step (a cut link or a killed node refuses at once).
pub const LINK_TIMEOUTS: NodeTimeouts = NodeTimeouts {
    connect: Duration::from_millis(1000),
    command: Duration::from_millis(2000),
};

/// One client process.
pub struct Client {
    pub index: usize,
    /// Its machine, phase, attempts, fence and requests on the wire: what the model
    /// keeps of a client too.
    pub core: ClientCore,
    pub gate: PauseGate,
    /// Per master slot: the connection (through the link proxy).
    links: Vec<Link>,
    /// Offset of the client's clock from the run's clock, in ms.
    pub clock_offset: Millis,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("index", &self.index)
            .field("phase", &self.core.phase)
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
        attempts: u8,
    ) -> Result<Client, locklab::driver::LockError> {
        let links = urls
            .iter()
            .enumerate()
            .map(|(m, u)| Link::new(m, u, LINK_TIMEOUTS))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Client {
            index,
            core: ClientCore::new(cfg, attempts, urls.len()),
            gate: PauseGate::new(),
            links,
            clock_offset: 0,
        })
    }

    /// Whether the client runs (not paused, not crashed).
    pub fn running(&self) -> bool {
        !self.gate.is_paused() && self.core.phase != Phase::Crashed
    }

    /// Whether the client acquires, holds or releases the lock (the model's notion of
    /// "holds" for `owner_only_release`).
    pub fn holds(&self) -> bool {
        self.core.phase.claims()
    }

    /// Reconnect slot `m` (after a failover or restart behind its proxy).
    pub fn reconnect(&mut self, m: usize, url: &str) -> Result<(), locklab::driver::LockError> {
        self.links[m] = Link::new(m, url, LINK_TIMEOUTS)?;
        Ok(())
    }

    /// The process died: its connections are dropped, its requests on the wire are not.
    pub fn crash(&mut self, cfg: &LockConfig, urls: &[String]) {
        self.core.phase = Phase::Crashed;
        self.gate.resume();
        // A request already sent still reaches Redis (the run delivers it over a fresh
        // connection); a reply has nobody to read it.
        for f in &mut self.core.flights {
            if f.as_ref().is_some_and(|f| f.held.is_some()) {
                *f = None;
            }
        }
        self.core.machine.reset(cfg);
        for (m, u) in urls.iter().enumerate() {
            if let Ok(l) = Link::new(m, u, LINK_TIMEOUTS) {
                self.links[m] = l;
            }
        }
    }

    /// Send the request waiting on slot `m` for real and wait for Redis' answer.
    pub async fn send(&self, m: usize) -> Option<(Command, Result<Reply, String>)> {
        let f = self.core.flights[m].as_ref()?;
        let answer = self.links[m]
            .execute(&f.command)
            .await
            .map_err(|e| e.to_string());
        Some((Command::clone(&f.command), answer))
    }

    /// Put a machine step into effect through the client program (the model's): record
    /// its sends (addressed to the nodes serving the slots now), act on its outcome.
    pub fn apply(&mut self, step: Step, serving: &[u8], program: &Program) -> Change {
        program.apply(step, &mut self.core, serving)
    }

    /// Feed the answer from slot `m` to the machine (clock reading `now`).
    pub fn answer(
        &mut self,
        cfg: &LockConfig,
        (m, answer): (usize, Answer),
        now: Millis,
        serving: &[u8],
        program: &Program,
    ) -> Change {
        program.answer(&mut self.core, cfg, (m, answer), now, serving)
    }
}
