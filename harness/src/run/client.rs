//! One real client: the design's sans-IO [`LockMachine`](locklab::LockMachine) from `src/` (the same value
//! the model runs), real connections through [`locklab::driver::Node::execute`], the
//! client program the model runs ([`Program`]: phases, critical-section ops, what each
//! outcome means) and a stop-the-world [`PauseGate`].
//!
//! The requests a machine step emits wait in `flights` until the run delivers them
//! (the model's message delay is a held request); the reply Redis gives waits in the
//! flight until the run's reply step (the model's reply leg), and while the gate is
//! paused until the client resumes (Kleppmann's "replies sit in the kernel buffer"); a
//! paused client takes no step of its own. A `WAIT` that blocks on Redis (the scenario
//! gives it a timeout, and its replicas lag) is sent on the client's own connection by
//! a task of its own ([`Client::send_wait`]), so that the run goes on to the steps that
//! let it answer (a replica catching up, the ticks of its timeout); its answer is taken
//! at the step the model answers it ([`Client::wait_answer`]).

use std::sync::Arc;
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
    links: Vec<Arc<Link>>,
    /// Per master slot: a `WAIT` sent that blocks on Redis, until the step that reads
    /// its answer (the slot's flight has its `wait` set meanwhile).
    waits: Vec<Option<PendingWait>>,
    /// Offset of the client's clock from the run's clock, in ms.
    pub clock_offset: Millis,
}

/// A `WAIT` sent on a client's connection that had not answered when its delivery
/// step ended.
pub struct PendingWait {
    /// The command as sent, with the timeout the run gave it.
    pub command: Command,
    /// The run's tick at whose start the model's timeout answers it.
    pub due: u32,
    /// Redis' answer, while it is awaited.
    task: Option<tokio::task::JoinHandle<Result<Reply, String>>>,
    /// Redis' answer, once taken.
    answer: Option<Result<Reply, String>>,
}

impl PendingWait {
    /// Whether Redis has answered (or the connection failed).
    pub fn finished(&self) -> bool {
        self.answer.is_some() || self.task.as_ref().is_some_and(|t| t.is_finished())
    }

    /// Redis' answer, waiting for it.
    async fn answer(&mut self) -> Result<Reply, String> {
        if let Some(task) = self.task.take() {
            self.answer = Some(match task.await {
                Ok(answer) => answer,
                Err(e) => Err(format!("the WAIT's task ended: {e}")),
            });
        }
        self.answer
            .clone()
            .unwrap_or_else(|| Err("no WAIT was sent".into()))
    }
}

impl Drop for PendingWait {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
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
            .map(|(m, u)| Link::new(m, u, LINK_TIMEOUTS).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Client {
            index,
            core: ClientCore::new(cfg, attempts, urls.len()),
            gate: PauseGate::new(),
            waits: urls.iter().map(|_| None).collect(),
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
        self.links[m] = Arc::new(Link::new(m, url, LINK_TIMEOUTS)?);
        Ok(())
    }

    /// The process died: its connections are dropped, its requests on the wire are not.
    pub fn crash(&mut self, cfg: &LockConfig, urls: &[String]) {
        self.core.phase = Phase::Crashed;
        self.gate.resume();
        // A request already sent still reaches Redis (the run delivers it over a fresh
        // connection); a reply has nobody to read it.
        // A WAIT blocking on Redis goes with the connection.
        for f in &mut self.core.flights {
            if f.as_ref().is_some_and(|f| f.held.is_some() || f.blocked()) {
                *f = None;
            }
        }
        self.waits.iter_mut().for_each(|w| *w = None);
        self.core.machine.reset(cfg);
        for (m, u) in urls.iter().enumerate() {
            if let Ok(l) = Link::new(m, u, LINK_TIMEOUTS) {
                self.links[m] = Arc::new(l);
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

    /// Send `command`, the `WAIT` of slot `m`, on the slot's connection (the one its
    /// writes went over: `WAIT` counts the replicas that have those) by a task of its
    /// own (the slot's flight then carries it as sent, with the timeout the run gave it),
    /// and wait up to `quick` for the answer. `Ok` with Redis' answer when it came
    /// in time; `Err(())` when the `WAIT` blocks: it stays on the slot until its answer
    /// is taken ([`Client::wait_answer`]) at tick `due` at the latest, and the flight's
    /// `wait` is set meanwhile.
    pub async fn send_wait(
        &mut self,
        m: usize,
        command: Command,
        due: u32,
        quick: Duration,
    ) -> Result<Result<Reply, String>, ()> {
        // The flight carries the command as sent, timeout included.
        if let Some(f) = self.core.flights[m].as_mut() {
            f.command = Arc::new(command.clone());
        }
        let link = Arc::clone(&self.links[m]);
        let sent = command.clone();
        let mut task =
            tokio::spawn(async move { link.execute(&sent).await.map_err(|e| e.to_string()) });
        if let Ok(done) = tokio::time::timeout(quick, &mut task).await {
            return Ok(done.unwrap_or_else(|e| Err(format!("the WAIT's task ended: {e}"))));
        }
        self.waits[m] = Some(PendingWait {
            command,
            due,
            task: Some(task),
            answer: None,
        });
        if let Some(f) = self.core.flights[m].as_mut() {
            f.wait = 1;
        }
        Err(())
    }

    /// The `WAIT` blocking on slot `m`, if there is one.
    pub fn pending_wait(&self, m: usize) -> Option<&PendingWait> {
        self.waits[m].as_ref()
    }

    /// Redis' answer to the `WAIT` blocking on slot `m`, waiting for it; the slot's
    /// flight then holds it as the reply on its way back (an answer that failed leaves
    /// the flight without one). `None` when no `WAIT` blocks there.
    pub async fn wait_answer(&mut self, m: usize) -> Option<(Command, Result<Reply, String>)> {
        let mut pending = self.waits[m].take()?;
        let answer = pending.answer().await;
        if let Some(f) = self.core.flights[m].as_mut() {
            f.wait = 0;
            if let Ok(reply) = &answer {
                f.held = Some(reply.clone());
            }
        }
        Some((pending.command.clone(), answer))
    }

    /// The `WAIT` blocking on slot `m` is given up on (its client timed out): its task
    /// is stopped and the slot is free.
    pub fn drop_wait(&mut self, m: usize) {
        self.waits[m] = None;
        if let Some(f) = self.core.flights[m].as_mut() {
            f.wait = 0;
        }
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
