//! The real-run engine: a scenario's clients, Redis nodes, faults and stock resource
//! on real containers, driven one model [`Action`] at a time.
//!
//! A [`Run`] maps the scenario's topology onto a [`locklab_cluster::Cluster`] (masters,
//! replicas per master, a Docker network per run, clock control when a clock can jump)
//! through the [`nemesis::Nemesis`], starts one [`client::Client`] per scenario client
//! (each running the design's sans-IO `LockMachine` from `src/` on real connections
//! through its own [`proxy::LinkProxy`] per master), and executes model actions for
//! real with [`Run::step`]: an acquire runs the machine and queues its requests, a
//! delivery sends the request to Redis and keeps the reply for the reply step (the
//! model's reply leg: `Receive` hands it to the machine; a crashed client's request is
//! still sent, its reply read by nobody; a lost reply is withheld and the machine sees a
//! timeout, [`LOST_REPLY_EMULATION`]; a `WAIT` that blocks on Redis is sent by a task
//! of its own and answered by the replica's catch-up or at the tick that ends its
//! timeout, docs/ARCHITECTURE.md "A WAIT that blocks, for real"), a tick lets `tick_ms`
//! of real time pass, a fault
//! happens to a container, a proxy or a clock. Everything is recorded in a [`history::History`] that [`checker::check`]
//! judges for the model's four properties, and in a printable [`TimelineEntry`] list.
//!
//! Time: TTLs are `ttl × tick_ms` real milliseconds on the Redis servers. A tick lasts
//! at least `tick_ms`; when the model says a key expires at the tick being entered, the
//! tick also waits until the key really expired on its node (its deadline is known from
//! `PTTL` observed after every step, and placed in the model's ticks when it is first
//! seen, right after the write: `Expiry::observed`), so a key set late within a tick
//! is not still there for a command the model runs just after the expiry. Clients read the run's
//! tick clock (`tick × tick_ms`, plus their clock offset): the clock readings the
//! lock machines compute validity and timestamps from are the model's.
//!
//! The run's containers are removed by [`Run::finish`], and by dropping the run (an
//! error, a panic): [`locklab_cluster::Cluster`] tears down on drop.

pub mod checker;
pub mod client;
pub mod history;
pub mod nemesis;
pub mod proxy;

use std::time::{Duration, Instant};

use locklab::resource::Stock;
use locklab::{Command, LockConfig, Millis, NoAnswer, Reply};
use locklab_cluster::ClusterError;
use locklab_model::ids::{ClientId, NodeId};
use locklab_model::model::{Action, FaultKind, LockModel, INITIAL_STOCK};
use locklab_model::scenario::Scenario;
use locklab_model::state::Flight;

use client::{Change, Client, Phase, Program, Stray, LINK_TIMEOUTS};
use history::{Event, History};
use nemesis::{Nemesis, Processes};

/// The name of the lost-reply emulation, as reports show it: the command really ran
/// on Redis, the engine read its reply and withholds it from the client, whose lock
/// machine sees the timeout a dropped connection would give.
pub const LOST_REPLY_EMULATION: &str =
    "lost reply: the command ran on Redis; the harness read its reply and withholds it, so the client's lock machine sees a timeout";

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Docker, the image or a container operation failed.
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    /// An action that does not apply in the run's state (a trace of another scenario).
    #[error("step {step}: {action}: {why}")]
    Inapplicable {
        step: usize,
        action: String,
        why: String,
    },
    /// A client connection could not be set up.
    #[error("client connection: {0}")]
    Client(String),
}

impl RunError {
    /// Whether the environment cannot run containers (no engine, no image).
    pub fn is_environment(&self) -> bool {
        matches!(self, RunError::Cluster(e) if e.is_environment())
    }
}

/// One line of the real timeline: when, who, what, and Redis' reply if any.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TimelineEntry {
    /// Real milliseconds since the run started.
    pub ms: f64,
    /// `client1`, `node1`, `clock`, `nemesis`, `stock`.
    pub actor: String,
    /// The command sent, the fault carried out, the step taken.
    pub event: String,
    /// Redis' (or the stock store's) reply; null when there is none.
    pub reply: Option<String>,
}

/// How to run.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// Real milliseconds per model tick.
    pub tick_ms: u64,
}

impl RunOptions {
    /// The scenario's own `tick_ms`.
    pub fn of(scenario: &Scenario) -> Self {
        RunOptions {
            tick_ms: scenario.timing.tick_ms,
        }
    }
}

/// The lock key's expiry on one node as last observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Expiry {
    /// The tick at which the model would expire it.
    tick: u32,
    /// When it really expires.
    at: Instant,
}

/// How far apart two observations of one deadline may be (PTTL's whole milliseconds and
/// the command's round trip) and still be the same deadline.
const SAME_DEADLINE: Duration = Duration::from_millis(3);

impl Expiry {
    /// The expiry of a key observed at `at` in tick `tick` with `pttl_ms` left, given
    /// what the last observation learnt. A new deadline (a write, a renewal, a clock
    /// that jumped) is placed in the model's ticks by rounding its ttl left to whole
    /// ticks from now: the first observation comes right after the write, in the tick
    /// of the write, where that is exact. The same deadline seen again keeps its tick:
    /// rounded again later it would move by a tick whenever the write came late in its
    /// tick (a key set 90 ms into tick 1 with a 500 ms ttl expires in tick 6 of the
    /// model, yet 384 ms left early in tick 3 rounds to tick 7).
    fn observed(
        last: Option<Expiry>,
        tick: u32,
        tick_ms: u64,
        at: Instant,
        pttl_ms: u64,
    ) -> Expiry {
        let deadline = at + Duration::from_millis(pttl_ms);
        if let Some(last) = last {
            let apart = deadline
                .checked_duration_since(last.at)
                .unwrap_or_else(|| last.at.duration_since(deadline));
            if apart <= SAME_DEADLINE {
                return last;
            }
        }
        let ticks = pttl_ms.saturating_add(tick_ms / 2) / tick_ms.max(1);
        Expiry {
            tick: tick.saturating_add(u32::try_from(ticks).unwrap_or(u32::MAX)),
            at: deadline,
        }
    }
}

/// The real lock configuration of a scenario: the model's, with times in milliseconds.
pub fn lock_config(scenario: &Scenario, tick_ms: u64) -> LockConfig {
    let mut cfg = LockModel::new(scenario).cfg;
    cfg.ttl = u64::from(scenario.timing.ttl) * tick_ms;
    // The times are ms already: `{ttl}` is the ttl as it is.
    cfg.unit_ms = 1;
    cfg.renew_every = cfg.renew_every.map(|ticks| ticks * tick_ms);
    cfg.drift_ms = u64::from(scenario.timing.drift_allowance) * tick_ms;
    cfg.min_validity = cfg.min_validity.saturating_mul(tick_ms);
    cfg.wait_timeout_ms = wait_timeout_ms(scenario, tick_ms);
    cfg
}

/// The `WAIT` timeout of a real client of `scenario`, in ms: its `timing.wait_timeout`
/// ticks; without one a fifth of a tick (at least 5 ms), so that a `WAIT` answers within
/// the step the model answers it in. (The run engine sends each blocking `WAIT` with
/// the timeout that ends where the model's does: [`Run::step`].)
pub fn wait_timeout_ms(scenario: &Scenario, tick_ms: u64) -> u64 {
    match scenario.timing.wait_timeout {
        0 => (tick_ms / 5).max(5),
        ticks => u64::from(ticks).saturating_mul(tick_ms),
    }
}

/// What ended a `WAIT` that blocked on Redis, as the timeline says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WaitEnd {
    /// A replica's catch-up: its acknowledgement.
    Replicated,
    /// The tick at which its timeout ran out.
    TimedOut,
    /// Taken when its client reads (or loses) it.
    Read,
}

/// How long a delivery waits for a `WAIT` to answer before taking it as blocked (an
/// answer from replicas already in sync takes a round trip), and how long a replica's
/// catch-up waits for the `WAIT`s it answers.
fn quick_wait(tick_ms: u64) -> Duration {
    Duration::from_millis((tick_ms / 20).clamp(2, 10))
}

/// One real run of a scenario.
pub struct Run {
    scenario: Scenario,
    cfg: LockConfig,
    tick_ms: u64,
    program: Program,
    nemesis: Nemesis,
    clients: Vec<Client>,
    stock: Stock,
    history: History,
    timeline: Vec<TimelineEntry>,
    emulations: Vec<String>,
    t0: Instant,
    tick: u32,
    tick_started: Instant,
    next_token: u32,
    /// Every acquire's token and its client, to tell whose entry a custom lock's key
    /// holds.
    tokens: Vec<(String, usize)>,
    steps: usize,
    /// Per node: the client whose command last wrote the lock entry (ghost state, as
    /// the model's entry owner, kept from the replies of the commands).
    owner: Vec<Option<usize>>,
    /// Per node: the last observed lock-key state (exists, has expiry).
    seen: Vec<Option<(Option<usize>, bool)>>,
    expiry: Vec<Option<Expiry>>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("scenario", &self.scenario.name)
            .field("tick", &self.tick)
            .field("nemesis", &self.nemesis)
            .field("clients", &self.clients)
            .finish()
    }
}

fn client_name(c: usize) -> String {
    ClientId::at(c).to_string()
}

fn node_name(n: usize) -> String {
    NodeId::at(n).to_string()
}

fn inapplicable(step: usize, action: Action, why: &str) -> RunError {
    RunError::Inapplicable {
        step,
        action: action.to_string(),
        why: why.to_string(),
    }
}

/// The engine's clients, as the nemesis strikes their processes.
struct EngineProcesses<'a> {
    clients: &'a mut [Client],
    cfg: &'a LockConfig,
}

impl Processes for EngineProcesses<'_> {
    fn pause(&mut self, c: usize) {
        self.clients[c].gate.pause();
    }

    fn resume(&mut self, c: usize) {
        self.clients[c].gate.resume();
    }

    fn crash(&mut self, c: usize, urls: &[String]) {
        self.clients[c].crash(self.cfg, urls);
    }

    fn jump_clock(&mut self, c: usize, ms: i64) -> String {
        self.clients[c].clock_offset += ms;
        format!("{} clock +{ms} ms", client_name(c))
    }
}

impl Run {
    /// `tick_ms` as a signed ms count (it is at most `MAX_TICK_MS`, checked at start).
    fn tick_ms_i64(&self) -> Millis {
        Millis::try_from(self.tick_ms).expect("tick_ms is at most MAX_TICK_MS")
    }

    /// Start the containers and the clients of `scenario`. Nothing is left behind on error.
    pub async fn start(scenario: &Scenario, options: RunOptions) -> Result<Run, RunError> {
        let tick_ms = options
            .tick_ms
            .clamp(1, locklab_model::scenario::MAX_TICK_MS);
        let cfg = lock_config(scenario, tick_ms);
        let model = LockModel::new(scenario);
        let masters = scenario.topology.masters as usize;
        let replicas = scenario.topology.replicas as usize;
        let n_clients = scenario.clients.count as usize;
        let sentinels = scenario.topology.sentinels as usize;
        let nemesis = Nemesis::start(
            masters,
            replicas,
            sentinels,
            n_clients,
            scenario.faults[FaultKind::ClockJump] > 0 || scenario.timing.node_drift > 0,
        )
        .await?;
        let mut clients = Vec::new();
        for c in 0..n_clients {
            let urls: Vec<String> = (0..masters).map(|m| nemesis.link(c, m).url()).collect();
            let attempts = u8::try_from(scenario.clients.attempts)
                .map_err(|_| RunError::Client("more attempts than the model counts".into()))?;
            let client = Client::new(c, &cfg, &urls, attempts)
                .map_err(|e| RunError::Client(e.to_string()))?;
            clients.push(client);
        }
        let nodes = nemesis.nodes();
        let now = Instant::now();
        Ok(Run {
            scenario: scenario.clone(),
            cfg,
            tick_ms,
            program: model.client_program().clone(),
            nemesis,
            clients,
            stock: Stock::new(INITIAL_STOCK, scenario.fencing),
            history: History::new(scenario.design, scenario.fencing, INITIAL_STOCK),
            timeline: Vec::new(),
            emulations: Vec::new(),
            t0: now,
            tick: 0,
            tick_started: now,
            next_token: 0,
            tokens: Vec::new(),
            steps: 0,
            owner: vec![None; nodes],
            seen: vec![None; nodes],
            expiry: vec![None; nodes],
        })
    }

    /// Real milliseconds since the run started.
    pub fn elapsed_ms(&self) -> f64 {
        self.t0.elapsed().as_secs_f64() * 1000.0
    }

    /// The model tick the run is at.
    pub fn tick(&self) -> u32 {
        self.tick
    }

    /// The real lock configuration (times in ms).
    pub fn config(&self) -> &LockConfig {
        &self.cfg
    }

    /// The clients.
    pub fn clients(&self) -> &[Client] {
        &self.clients
    }

    /// The cluster and its faults.
    pub fn nemesis(&self) -> &Nemesis {
        &self.nemesis
    }

    /// The history so far.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The timeline so far.
    pub fn timeline(&self) -> &[TimelineEntry] {
        &self.timeline
    }

    /// The emulations this run used (named in reports), e.g. a node clock jump.
    pub fn emulations(&self) -> &[String] {
        &self.emulations
    }

    /// The id of the run's cluster (label of its containers and network).
    pub fn cluster_id(&self) -> String {
        self.nemesis.cluster().id().to_string()
    }

    fn record(&mut self, event: Event) {
        let ms = self.elapsed_ms();
        self.history.push(ms, event);
    }

    /// Client `by` removed or changed the lock entry `owner` wrote on `node`: recorded
    /// for the checker, and named on the timeline when it was another client's.
    fn displaced(&mut self, node: usize, by: usize, owner: usize) {
        self.record(Event::Displaced { node, by, owner });
        if owner != by {
            self.line(
                client_name(by),
                format!(
                    "removed or overwrote the lock entry {} wrote on {}",
                    client_name(owner),
                    node_name(node)
                ),
                None,
            );
        }
    }

    fn line(&mut self, actor: String, event: String, reply: Option<String>) {
        let ms = self.elapsed_ms();
        self.timeline.push(TimelineEntry {
            ms,
            actor,
            event,
            reply,
        });
    }

    fn emulation(&mut self, what: &str) {
        if !self.emulations.iter().any(|e| e == what) {
            self.emulations.push(what.to_string());
        }
    }

    /// Client `c`'s clock reading: the run's tick clock plus its offset.
    fn clock(&self, c: usize) -> Millis {
        Millis::from(self.tick) * self.tick_ms_i64() + self.clients[c].clock_offset
    }

    /// The node each master slot's requests go to (node numbers as the model's, which fit
    /// a `u8`): for client `c`, the one it reaches (during a split brain, the old master
    /// until it learns the new one).
    fn serving(&self, c: Option<usize>) -> Vec<u8> {
        (0..self.scenario.topology.masters as usize)
            .map(|m| match c {
                Some(c) => self.nemesis.route(c, m),
                None => self.nemesis.serving(m),
            })
            .map(|n| u8::try_from(n).expect("node numbers fit a u8"))
            .collect()
    }

    /// Put a client's change into the history.
    fn changed(&mut self, c: usize, change: Change) {
        match change {
            Change::Acquired { fence } => {
                self.record(Event::Acquired { client: c, fence });
                let fence = fence
                    .map(|f| format!(" (fencing token {f})"))
                    .unwrap_or_default();
                self.line(
                    client_name(c),
                    format!("acquired{fence}: enters critical section"),
                    None,
                );
            }
            Change::AcquireFailed(outcome) => {
                let outcome = format!("{outcome:?}");
                self.record(Event::AcquireFailed {
                    client: c,
                    outcome: outcome.clone(),
                });
                self.line(client_name(c), format!("acquire failed: {outcome}"), None);
                if self.clients[c].core.phase == Phase::Done {
                    self.record(Event::Done { client: c });
                }
            }
            Change::Answered { done } => {
                if done {
                    self.record(Event::Done { client: c });
                    self.line(client_name(c), "released: done".into(), None);
                }
            }
            Change::Extended => self.line(client_name(c), "lease extended".into(), None),
            Change::RenewFailed | Change::None => {}
        }
    }

    /// Execute one model action for real. `Tick` waits; every other step is carried out
    /// at once (the model's message delays are the actions' order).
    pub async fn step(&mut self, action: Action) -> Result<(), RunError> {
        self.steps += 1;
        let step = self.steps;
        let serving = self.serving(action.client().map(usize::from));
        match action {
            Action::Tick => self.next_tick().await,
            Action::Acquire(c) => {
                let c = c as usize;
                self.next_token += 1;
                let token = format!("t{}", self.next_token);
                self.tokens.push((token.clone(), c));
                let now = self.clock(c);
                let cl = &mut self.clients[c];
                let s = self
                    .program
                    .acquire(&mut cl.core, &self.cfg, now, &token)
                    .ok_or_else(|| inapplicable(step, action, "the client is not idle"))?;
                let change = cl.apply(s, &serving, &self.program);
                self.record(Event::AcquireStart {
                    client: c,
                    token: token.clone(),
                });
                self.line(client_name(c), format!("acquire (token {token})"), None);
                self.changed(c, change);
            }
            Action::Deliver(c, m) | Action::Timeout(c, m) => {
                self.deliver(step, action, c as usize, m as usize).await?
            }
            Action::DeliverLate(c, k) => {
                self.deliver_late(step, action, c as usize, k as usize)
                    .await?
            }
            Action::Receive(c, m) => {
                let (c, m) = (c as usize, m as usize);
                self.take_wait(c, m, WaitEnd::Read).await;
                let f = self.clients[c].core.flights[m]
                    .clone()
                    .ok_or_else(|| inapplicable(step, action, "no request on this link"))?;
                let reply = f
                    .held
                    .ok_or_else(|| inapplicable(step, action, "no reply is held"))?;
                let shown = reply.to_string();
                let node = usize::from(f.node);
                self.record(Event::Receive {
                    client: c,
                    node,
                    reply: shown.clone(),
                });
                self.line(
                    client_name(c),
                    format!(
                        "receives the reply to {} from {}",
                        f.command,
                        node_name(node)
                    ),
                    Some(shown),
                );
                let now = self.clock(c);
                let change =
                    self.clients[c].answer(&self.cfg, (m, Ok(reply)), now, &serving, &self.program);
                self.changed(c, change);
            }
            Action::Renew(c) => {
                let c = c as usize;
                let now = self.clock(c);
                let s = self.clients[c].core.machine.renew(&self.cfg, now);
                let change = self.clients[c].apply(s, &serving, &self.program);
                self.line(client_name(c), "watchdog renews".into(), None);
                self.changed(c, change);
            }
            Action::Read(c) | Action::Write(c) | Action::Release(c) | Action::Reenter(c) => {
                self.program_step(step, action, c as usize)?
            }
            Action::Replicate(n) => {
                let what = self.nemesis.replicate(n as usize).await?;
                let n = n as usize;
                if let Some(m) = self.nemesis.serving_slot_of_replica(n) {
                    self.owner[n] = self.owner[self.nemesis.serving(m)];
                }
                self.record(Event::Fault { what: what.clone() });
                self.line(node_name(n), format!("replicates: {what}"), None);
                // Its acknowledgement may answer a WAIT blocking on the node it copied.
                let upstream = self.nemesis.upstream(n);
                self.take_waits_answered(upstream).await;
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
            | Action::NodeDrift(_)
            | Action::ClientClockJump(_) => self.strike(step, action, &serving).await?,
            Action::LoseReply(c, m) => {
                let (c, m) = (c as usize, m as usize);
                self.take_wait(c, m, WaitEnd::Read).await;
                let reply = self.clients[c].core.flights[m]
                    .as_ref()
                    .and_then(|f| f.held.clone())
                    .ok_or_else(|| inapplicable(step, action, "no executed command's reply"))?;
                self.record(Event::Fault {
                    what: format!("reply master{} -> {} lost", m + 1, client_name(c)),
                });
                self.reply_lost(c, m, reply);
            }
        }
        self.observe().await;
        Ok(())
    }

    /// Fault `action` (or the step that undoes one) really happens
    /// ([`Nemesis::carry_out`]); the engine then follows it: the requests it drops, the
    /// connections it moves, what the history and timeline say.
    async fn strike(
        &mut self,
        step: usize,
        action: Action,
        serving: &[u8],
    ) -> Result<(), RunError> {
        let jump = i64::from(self.scenario.timing.clock_jump);
        let strike = self
            .nemesis
            .strike_for(action, self.tick_ms_i64(), jump)
            .ok_or_else(|| inapplicable(step, action, "not a fault"))?;
        match action {
            Action::Failover(m, r) | Action::SplitBrain(m, r, _)
                if usize::from(r) >= self.nemesis.nodes() || usize::from(m) >= serving.len() =>
            {
                return Err(inapplicable(step, action, "no such node"));
            }
            Action::Redirect(_, m) if !self.nemesis.split_on(usize::from(m)) => {
                return Err(inapplicable(step, action, "no split brain on this slot"));
            }
            _ => {}
        }
        let before = match action {
            Action::Failover(m, _) => self.nemesis.serving(usize::from(m)),
            _ => 0,
        };
        let mut processes = EngineProcesses {
            clients: &mut self.clients,
            cfg: &self.cfg,
        };
        let what = self.nemesis.carry_out(&strike, &mut processes).await?;
        let (actor, line) = match action {
            Action::Pause(c) => {
                let c = usize::from(c);
                self.record(Event::Pause { client: c });
                let line = "FAULT stop-the-world pause (work, renewal and replies stop)";
                (client_name(c), line.to_string())
            }
            Action::Resume(c) => {
                let c = usize::from(c);
                self.record(Event::Resume { client: c });
                (client_name(c), "resumes".to_string())
            }
            Action::Crash(c) => {
                let c = usize::from(c);
                self.record(Event::Crash { client: c });
                let line = "FAULT crashes (process gone, connections dropped)";
                (client_name(c), line.to_string())
            }
            Action::Failover(m, _) => {
                self.drop_strays_to(before);
                self.reconnect_slot(usize::from(m))?;
                self.record(Event::Fault { what: what.clone() });
                ("nemesis".into(), format!("FAULT failover: {what}"))
            }
            Action::SplitBrain(..) => {
                self.record(Event::Fault { what: what.clone() });
                ("nemesis".into(), format!("FAULT split brain: {what}"))
            }
            Action::Redirect(c, m) => {
                let (c, m) = (usize::from(c), usize::from(m));
                let url = self.nemesis.link(c, m).url();
                self.clients[c]
                    .reconnect(m, &url)
                    .map_err(|e| RunError::Client(e.to_string()))?;
                self.record(Event::Fault { what: what.clone() });
                (client_name(c), what)
            }
            Action::Restart(node) => {
                self.lose_requests_to(node);
                let n = usize::from(node);
                self.owner[n] = None;
                self.drop_strays_to(n);
                for (m, _) in serving
                    .iter()
                    .enumerate()
                    .filter(|(_, &s)| usize::from(s) == n)
                {
                    self.reconnect_slot(m)?;
                }
                self.record(Event::Fault { what: what.clone() });
                ("nemesis".into(), format!("FAULT restart: {what}"))
            }
            Action::Partition(..) | Action::Heal(..) => {
                self.record(Event::Fault { what: what.clone() });
                let tag = if matches!(action, Action::Partition(..)) {
                    "FAULT partition"
                } else {
                    "heal"
                };
                ("nemesis".into(), format!("{tag}: {what}"))
            }
            Action::NodeClockJump(_) | Action::ClientClockJump(_) => {
                self.emulation(if matches!(action, Action::NodeClockJump(_)) {
                    nemesis::NODE_CLOCK_EMULATION
                } else {
                    nemesis::CLIENT_CLOCK_EMULATION
                });
                self.record(Event::Fault { what: what.clone() });
                (
                    "nemesis".into(),
                    format!("FAULT clock jump (emulated): {what}"),
                )
            }
            Action::NodeDrift(_) => {
                self.emulation(nemesis::NODE_DRIFT_EMULATION);
                self.record(Event::Fault { what: what.clone() });
                ("nemesis".into(), format!("clock drift (emulated): {what}"))
            }
            _ => return Err(inapplicable(step, action, "not a fault")),
        };
        self.line(actor, line, None);
        Ok(())
    }

    /// Node `n` died or restarted: the requests given up on that were on their way to it
    /// went with its connections.
    fn drop_strays_to(&mut self, n: usize) {
        for c in &mut self.clients {
            c.core.strays.retain(|st| usize::from(st.flight.node) != n);
        }
    }

    /// Node `n` restarted: the requests still to send to it are lost with the
    /// connections they would have travelled on (the model's [`Flight::LOST`]); only
    /// their clients' timeouts answer them, and a crashed client's go.
    fn lose_requests_to(&mut self, node: u8) {
        for c in &mut self.clients {
            c.core.lose_requests_to(node);
        }
    }

    /// Every client's link to slot `m` reconnects (its proxy now leads to another node).
    fn reconnect_slot(&mut self, m: usize) -> Result<(), RunError> {
        for c in 0..self.clients.len() {
            let url = self.nemesis.link(c, m).url();
            self.clients[c]
                .reconnect(m, &url)
                .map_err(|e| RunError::Client(e.to_string()))?;
        }
        Ok(())
    }

    /// The clock advances one tick: at least `tick_ms` after the last tick began, and
    /// not before every key the model expires at this tick really expired.
    async fn next_tick(&mut self) {
        self.tick += 1;
        let mut until = self.tick_started + Duration::from_millis(self.tick_ms);
        for e in self.expiry.iter().flatten() {
            if e.tick <= self.tick {
                until = until.max(e.at + Duration::from_millis(2));
            }
        }
        tokio::time::sleep_until(until.into()).await;
        self.tick_started = Instant::now();
        let tick = self.tick;
        self.record(Event::Tick { tick });
        self.line("clock".into(), format!("tick {tick}"), None);
        // The WAITs whose timeout the model ends at this tick: each was sent with the
        // timeout that runs out just here, so that a replica that catches up before it
        // counts and one after it does not; their answers are taken before any step of
        // the new tick.
        for c in 0..self.clients.len() {
            for m in 0..self.clients[c].core.flights.len() {
                let due = self.clients[c].pending_wait(m).map(|w| w.due);
                if due.is_some_and(|due| due <= tick) {
                    self.take_wait(c, m, WaitEnd::TimedOut).await;
                }
            }
        }
    }

    /// The `WAIT` of client `c` at this delivery, with the timeout that ends where the
    /// model's does: the model answers a `WAIT` that blocks at the tick that ends the
    /// last of its `wait_timeout` ticks, counting from the tick after its delivery
    /// (it was delivered somewhere in its tick, so its timeout ends somewhere in that
    /// last tick, and a replica's acknowledgement anywhere in it may come first). So the
    /// real timeout is `wait_timeout × tick_ms` plus what is left of the current tick,
    /// and ends at the start of tick `due`, the one returned.
    fn timed_wait(&self, replicas: u32) -> (Command, u32) {
        let ticks = self.scenario.timing.wait_timeout;
        let tick = Duration::from_millis(self.tick_ms);
        let now = Instant::now();
        let next = (self.tick_started + tick).max(now);
        let end = next + tick * ticks;
        // Whole ms, rounded up: Redis' deadline is at the tick's start or just after.
        let ms = end.duration_since(now).as_micros().div_ceil(1000);
        let timeout_ms = u64::try_from(ms).unwrap_or(u64::MAX);
        let command = Command::Wait {
            replicas,
            timeout_ms,
        };
        (command, self.tick.saturating_add(ticks).saturating_add(1))
    }

    /// Take the answer of client `c`'s `WAIT` that blocks on slot `m`, if there is one
    /// (waiting for it), record it, and leave it as the reply on its way back. Redis
    /// checks a blocked client's timeout when its event loop wakes, which an idle
    /// server does `hz` times a second (10 by default): a node is pinged meanwhile, so
    /// that a timeout that ran out is answered within a few milliseconds of its end,
    /// as the model's tick is.
    async fn take_wait(&mut self, c: usize, m: usize, end: WaitEnd) {
        let Some(node) = self.clients[c]
            .pending_wait(m)
            .and(self.clients[c].core.flights[m].as_ref())
            .map(|f| usize::from(f.node))
        else {
            return;
        };
        let give_up = Instant::now() + LINK_TIMEOUTS.command + Duration::from_millis(self.tick_ms);
        while !self.clients[c]
            .pending_wait(m)
            .is_some_and(|w| w.finished())
            && Instant::now() < give_up
        {
            let _ = self.nemesis.node(node).command(&["PING"]).await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let Some((command, answer)) = self.clients[c].wait_answer(m).await else {
            return;
        };
        let why = match end {
            WaitEnd::Replicated => "a replica caught up",
            WaitEnd::TimedOut => "its timeout ran out",
            WaitEnd::Read => "read by its client",
        };
        let event = format!("{command} on {} answers ({why})", node_name(node));
        self.record_answer(c, node, command.to_string(), &answer, event);
    }

    /// Redis' answer to `command`, sent by client `c` to `node`: into the history, and
    /// into the timeline as `event` (marked when the client is paused and the reply
    /// waits for it) with the reply or the error.
    fn record_answer(
        &mut self,
        c: usize,
        node: usize,
        command: String,
        answer: &Result<Reply, String>,
        mut event: String,
    ) {
        let paused = self.clients[c].gate.is_paused();
        let (reply, error) = match answer {
            Ok(r) => (Some(r.to_string()), None),
            Err(e) => (None, Some(e.clone())),
        };
        self.record(Event::Command {
            client: c,
            node,
            command,
            reply: reply.clone(),
            error: error.clone(),
            held: paused && answer.is_ok(),
        });
        if paused && answer.is_ok() {
            event.push_str(" (reply held: client paused)");
        }
        let shown = reply.or(error.map(|e| format!("no answer: {e}")));
        self.line(client_name(c), event, shown);
    }

    /// A replica of `node` caught up: the `WAIT`s blocking there that its
    /// acknowledgement answers (Redis answers them as the acknowledgement comes in,
    /// before the catch-up step ends) are taken.
    async fn take_waits_answered(&mut self, node: usize) {
        let quick = quick_wait(self.tick_ms);
        let since = Instant::now();
        for c in 0..self.clients.len() {
            for m in 0..self.clients[c].core.flights.len() {
                let there = self.clients[c].core.flights[m]
                    .as_ref()
                    .is_some_and(|f| usize::from(f.node) == node);
                if !there || self.clients[c].pending_wait(m).is_none() {
                    continue;
                }
                while !self.clients[c]
                    .pending_wait(m)
                    .is_some_and(|w| w.finished())
                    && since.elapsed() < quick
                {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                if self.clients[c]
                    .pending_wait(m)
                    .is_some_and(|w| w.finished())
                {
                    self.take_wait(c, m, WaitEnd::Replicated).await;
                }
            }
        }
    }

    /// Deliver (or time out) the request of client `c` on slot `m`: really send it.
    /// Redis' reply is kept for the reply step ([`Action::Receive`]), as the model's
    /// reply leg; a timeout of a command already executed discards its reply.
    async fn deliver(
        &mut self,
        step: usize,
        action: Action,
        c: usize,
        m: usize,
    ) -> Result<(), RunError> {
        let serving = self.serving(Some(c));
        let f = self.clients[c].core.flights[m]
            .clone()
            .ok_or_else(|| inapplicable(step, action, "no request on this link"))?;
        if f.blocked() {
            if !matches!(action, Action::Timeout(..)) {
                return Err(inapplicable(step, action, "the WAIT was already sent"));
            }
            // A WAIT blocking on Redis, cut off or its connection gone, or a request
            // its restarted node lost: the client gives up on it (nothing of it stays
            // on the wire).
            self.clients[c].drop_wait(m);
            let why = if f.wait == Flight::LOST {
                "never sent, its node restarted"
            } else {
                "the link is down"
            };
            self.line(
                client_name(c),
                format!(
                    "{} on {}: no answer, {why}: timeout",
                    f.command,
                    node_name(usize::from(f.node))
                ),
                None,
            );
            let now = self.clock(c);
            let change =
                self.clients[c].answer(&self.cfg, (m, Err(NoAnswer)), now, &serving, &self.program);
            self.changed(c, change);
            return Ok(());
        }
        if let Some(reply) = &f.held {
            if !matches!(action, Action::Timeout(..)) {
                return Err(inapplicable(
                    step,
                    action,
                    "the request was already executed",
                ));
            }
            self.reply_lost(c, m, reply.clone());
            return Ok(());
        }
        let node = usize::from(f.node);
        if matches!(action, Action::Timeout(..))
            && f.node == serving[m]
            && self.nemesis.alive(node)
            && self.nemesis.link(c, m).state() == proxy::LinkState::Cut
        {
            // The link is cut: the client gives up, but its request was already
            // written to the socket, and TCP delivers it once the link heals (the
            // model's `DeliverLate`, carried out by [`Run::deliver_late`]).
            self.line(
                client_name(c),
                format!(
                    "{} to {}: no answer, link cut: timeout (the request stays on the wire)",
                    f.command,
                    node_name(node)
                ),
                None,
            );
            self.clients[c].core.strays.push(Stray {
                slot: u8::try_from(m).expect("master slots fit a u8"),
                flight: f.clone(),
            });
            let now = self.clock(c);
            let change =
                self.clients[c].answer(&self.cfg, (m, Err(NoAnswer)), now, &serving, &self.program);
            self.changed(c, change);
            return Ok(());
        }
        if matches!(action, Action::Timeout(..)) && f.node != serving[m] && self.nemesis.alive(node)
        {
            // Split brain: the client learnt the new master and reconnected; the old
            // one is still up, but the request addressed to it went with the dropped
            // connection and never ran (as the model's timeout says).
            self.line(
                client_name(c),
                format!(
                    "{} to {} dropped with the old connection: timeout",
                    f.command,
                    node_name(node)
                ),
                None,
            );
            let now = self.clock(c);
            let change =
                self.clients[c].answer(&self.cfg, (m, Err(NoAnswer)), now, &serving, &self.program);
            self.changed(c, change);
            return Ok(());
        }
        let custom = self.is_custom(&f.command);
        let before = if custom {
            self.key_holder(node).await
        } else {
            Err(())
        };
        let timed = match (&*f.command, action) {
            // A crashed client's WAIT still runs, and nobody reads it: no need to wait.
            (Command::Wait { replicas, .. }, Action::Deliver(..))
                if self.scenario.timing.wait_timeout > 0
                    && f.node == serving[m]
                    && self.clients[c].core.phase != Phase::Crashed =>
            {
                Some(self.timed_wait(*replicas))
            }
            _ => None,
        };
        let shown_command = timed
            .as_ref()
            .map_or_else(|| f.command.to_string(), |(w, _)| w.to_string());
        let answer: Result<Reply, String> = if let Some((wait, due)) = timed {
            let quick = quick_wait(self.tick_ms);
            match self.clients[c].send_wait(m, wait, due, quick).await {
                Ok(answer) => answer,
                Err(()) => {
                    self.line(
                        client_name(c),
                        format!(
                            "{shown_command} -> {} (blocks: fewer replicas acknowledged than it \
                             waits for; answers when one catches up, or at tick {due})",
                            node_name(node)
                        ),
                        None,
                    );
                    return Ok(());
                }
            }
        } else if f.node == serving[m] {
            self.clients[c]
                .send(m)
                .await
                .map(|(_, a)| a)
                .unwrap_or_else(|| Err("no request".into()))
        } else {
            // Addressed to a node that no longer serves the slot (it died): the client
            // still talks to that node's address.
            let url = format!("redis://{}", self.nemesis.addr(node));
            match locklab::driver::Node::new(m, &url, LINK_TIMEOUTS) {
                Ok(direct) => direct.execute(&f.command).await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            }
        };
        if let Ok(reply) = &answer {
            if custom {
                let after = self.key_holder(node).await;
                self.track_custom_owner(c, node, before, after);
            } else {
                self.track_owner(c, m, node, &f.command, reply, false);
            }
        }
        let event = format!("{shown_command} -> {}", node_name(node));
        self.record_answer(c, node, shown_command, &answer, event);
        if self.clients[c].core.phase == Phase::Crashed {
            // The sender is gone: nobody reads the reply.
            self.clients[c].core.flights[m] = None;
            return Ok(());
        }
        let answer = answer.map_err(|_| NoAnswer);
        if let (Action::Deliver(..), Ok(reply)) = (action, &answer) {
            // The reply's own leg: the client reads it at the reply step.
            if let Some(fl) = self.clients[c].core.flights[m].as_mut() {
                fl.held = Some(reply.clone());
            }
            return Ok(());
        }
        let now = self.clock(c);
        let change = self.clients[c].answer(&self.cfg, (m, answer), now, &serving, &self.program);
        self.changed(c, change);
        Ok(())
    }

    /// Client `c`'s `k`-th request given up on reaches its node: the very command, over
    /// a fresh connection through the client's link (the link works again, and the
    /// model delivers it within the step bound, as TCP's retransmission after the heal
    /// does). It runs on Redis; nobody reads the reply.
    async fn deliver_late(
        &mut self,
        step: usize,
        action: Action,
        c: usize,
        k: usize,
    ) -> Result<(), RunError> {
        if k >= self.clients[c].core.strays.len() {
            return Err(inapplicable(step, action, "no request given up on"));
        }
        let st = self.clients[c].core.strays.remove(k);
        let (m, node) = (usize::from(st.slot), usize::from(st.flight.node));
        let command = Command::clone(&st.flight.command);
        let custom = self.is_custom(&command);
        let before = if custom {
            self.key_holder(node).await
        } else {
            Err(())
        };
        let url = if self.nemesis.route(c, m) == node {
            self.nemesis.link(c, m).url()
        } else {
            format!("redis://{}", self.nemesis.addr(node))
        };
        let answer: Result<Reply, String> = match locklab::driver::Node::new(m, &url, LINK_TIMEOUTS)
        {
            Ok(link) => link.execute(&command).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Ok(reply) = &answer {
            if custom {
                let after = self.key_holder(node).await;
                self.track_custom_owner(c, node, before, after);
            } else {
                self.track_owner(c, m, node, &command, reply, true);
            }
        }
        let (reply, error) = match &answer {
            Ok(r) => (Some(r.to_string()), None),
            Err(e) => (None, Some(e.clone())),
        };
        self.record(Event::Command {
            client: c,
            node,
            command: command.to_string(),
            reply: reply.clone(),
            error: error.clone(),
            held: false,
        });
        let shown = reply.or(error.map(|e| format!("no answer: {e}")));
        self.line(
            client_name(c),
            format!(
                "{command} -> {} (given up on, arrives late; nobody reads the reply)",
                node_name(node)
            ),
            shown,
        );
        Ok(())
    }

    /// The reply to an executed command of client `c` on slot `m` never reaches it: its
    /// timeout fires. The engine had already read the reply from Redis (the command
    /// really ran) and discards it ([`LOST_REPLY_EMULATION`]).
    fn reply_lost(&mut self, c: usize, m: usize, reply: Reply) {
        self.emulation(LOST_REPLY_EMULATION);
        self.line(
            client_name(c),
            format!("the reply from master{} is lost: timeout", m + 1),
            Some(format!("discarded: {reply}")),
        );
        let serving = self.serving(Some(c));
        let now = self.clock(c);
        let change =
            self.clients[c].answer(&self.cfg, (m, Err(NoAnswer)), now, &serving, &self.program);
        self.changed(c, change);
    }

    /// Whether client `c`'s machine takes the lock on `reply` to its request on slot `m`
    /// (asked of a copy, before the client itself sees the reply).
    fn wins_with(&self, c: usize, m: usize, reply: &Reply) -> bool {
        self.clients[c]
            .core
            .machine
            .acquires_with(&self.cfg, m, reply, self.clock(c))
    }

    /// Keep the ghost owner of the lock entry on `node` from a command's reply, and
    /// record a displacement: the reply says the command removed the entry (`DEL` → 1,
    /// compare-and-delete → 1, reentrant unlock at zero → 1) or overwrote it (`GETSET`
    /// → the old value, unless the client's machine wins the lock with that reply: the
    /// winning steal is getset-timestamp's acquire, not a release; a request its client
    /// gave up on (`late`) wins nothing); the ghost says whose entry it was.
    fn track_owner(
        &mut self,
        c: usize,
        m: usize,
        node: usize,
        command: &Command,
        reply: &Reply,
        late: bool,
    ) {
        use locklab::Script;
        if !command.keys().contains(&self.cfg.key.as_str()) {
            return;
        }
        let removed = match command {
            Command::Del { .. } => *reply == Reply::Int(1),
            Command::Eval { script, .. } => {
                matches!(script, Script::CompareAndDelete | Script::ReentrantUnlock)
                    && *reply == Reply::Int(1)
            }
            _ => false,
        };
        let overwrote = matches!(command, Command::GetSet { .. } | Command::SetPx { .. })
            && *reply != Reply::Nil
            && (late || !self.wins_with(c, m, reply));
        // A PEXPIRE that extended an entry changes it (the unchecked renewal's flaw).
        let extended = matches!(command, Command::PExpire { .. }) && *reply == Reply::Int(1);
        let created = match command {
            Command::SetNx { .. } => *reply == Reply::Int(1),
            Command::SetNxPx { .. } | Command::SetPx { .. } => *reply == Reply::Ok,
            Command::GetSet { .. } => true,
            Command::Eval {
                script: Script::ReentrantLock,
                ..
            } => *reply == Reply::Nil && self.owner[node].is_none_or(|o| o == c),
            _ => false,
        };
        if extended {
            if let Some(owner) = self.owner[node].filter(|&o| o != c) {
                self.record(Event::Displaced { node, by: c, owner });
                self.line(
                    client_name(c),
                    format!(
                        "changed the expiry of the lock entry {} wrote on {}",
                        client_name(owner),
                        node_name(node)
                    ),
                    None,
                );
            }
        }
        if removed || overwrote {
            if let Some(owner) = self.owner[node] {
                self.displaced(node, c, owner);
            }
            self.owner[node] = None;
        }
        if created {
            self.owner[node] = Some(c);
        }
    }

    /// Whether `command` is a custom lock's step on the lock key: its effect on the key
    /// cannot be told from its reply, so the key is read before and after it.
    fn is_custom(&self, command: &Command) -> bool {
        let custom = matches!(
            command,
            Command::Call { .. }
                | Command::Eval {
                    script: locklab::Script::Custom(_),
                    ..
                }
        );
        custom && command.keys().contains(&self.cfg.key.as_str())
    }

    /// Whose token the lock key on `node` holds (as its string value or as a field of
    /// its hash); `Err` when the node cannot be read.
    async fn key_holder(&self, node: usize) -> Result<Option<usize>, ()> {
        let key = self.cfg.key.as_str();
        let n = self.nemesis.node(node);
        let kind = n.command(&["TYPE", key]).await.map_err(|_| ())?;
        let holds: Vec<String> = match kind {
            redis::Value::SimpleString(t) if t == "string" => {
                match n.command(&["GET", key]).await {
                    Ok(redis::Value::BulkString(b)) => {
                        vec![String::from_utf8_lossy(&b).into_owned()]
                    }
                    Ok(_) => Vec::new(),
                    Err(_) => return Err(()),
                }
            }
            redis::Value::SimpleString(t) if t == "hash" => {
                match n.command(&["HKEYS", key]).await {
                    Ok(redis::Value::Array(fields)) => fields
                        .into_iter()
                        .filter_map(|f| match f {
                            redis::Value::BulkString(b) => {
                                Some(String::from_utf8_lossy(&b).into_owned())
                            }
                            _ => None,
                        })
                        .collect(),
                    Ok(_) => Vec::new(),
                    Err(_) => return Err(()),
                }
            }
            _ => Vec::new(),
        };
        Ok(self
            .tokens
            .iter()
            .find(|(token, _)| holds.contains(token))
            .map(|(_, c)| *c))
    }

    /// The ghost owner after a custom step of client `c`, from the key read before and
    /// after it: an entry of another client that is gone or now someone else's was
    /// removed or overwritten by the step. (A lease that runs out in the milliseconds
    /// between the read and the step would be blamed on the step; the model's tick is
    /// far longer.)
    fn track_custom_owner(
        &mut self,
        c: usize,
        node: usize,
        before: Result<Option<usize>, ()>,
        after: Result<Option<usize>, ()>,
    ) {
        let (Ok(before), Ok(after)) = (before, after) else {
            return;
        };
        if let Some(owner) = before.filter(|&o| after != Some(o)) {
            self.displaced(node, c, owner);
        }
        self.owner[node] = after;
    }

    /// A step of the critical-section program: read or write the stock, release, re-enter.
    fn program_step(&mut self, step: usize, action: Action, c: usize) -> Result<(), RunError> {
        let due = match self.clients[c].core.phase {
            Phase::Critical { pc, .. } => self.program.op(pc),
            _ => None,
        };
        if due.is_none() || due != action.op() {
            return Err(inapplicable(
                step,
                action,
                "the client is not in its critical section",
            ));
        }
        let fence = self.clients[c].core.fence();
        let serving = self.serving(Some(c));
        match action {
            Action::Read(_) => {
                let read = self.stock.read(fence);
                self.program
                    .on_read(&mut self.clients[c].core.phase, read)
                    .ok_or_else(|| inapplicable(step, action, "no read is due"))?;
                match read {
                    Ok(v) => {
                        self.record(Event::StockRead {
                            client: c,
                            token: fence,
                            value: Some(v),
                        });
                        self.line(client_name(c), "reads stock".into(), Some(v.to_string()));
                    }
                    Err(rej) => {
                        self.record(Event::StockRead {
                            client: c,
                            token: fence,
                            value: None,
                        });
                        self.record(Event::Leave { client: c });
                        self.line(
                            client_name(c),
                            format!("reads stock with token {}", rej.token),
                            Some(format!("rejected: newest token is {}", rej.newest)),
                        );
                    }
                }
            }
            Action::Write(_) => {
                let value = self
                    .program
                    .on_write(&mut self.clients[c].core.phase)
                    .ok_or_else(|| {
                        inapplicable(step, action, "the client has not read the stock")
                    })?;
                let result = self.stock.write(fence, value);
                let stock = self.stock.value;
                self.record(Event::StockWrite {
                    client: c,
                    token: fence,
                    value,
                    accepted: result.is_ok(),
                    stock,
                });
                self.record(Event::Leave { client: c });
                let reply = match result {
                    Ok(()) => format!("accepted, stock {stock}"),
                    Err(r) => format!("rejected: token {} < newest {}", r.token, r.newest),
                };
                self.line(
                    client_name(c),
                    format!("writes stock {value}: leaves critical section"),
                    Some(reply),
                );
            }
            _ => {
                let now = self.clock(c);
                let reenter = matches!(action, Action::Reenter(_));
                if reenter {
                    self.next_token += 1;
                    self.line(client_name(c), "re-enters the lock".into(), None);
                } else {
                    self.record(Event::ReleaseStart { client: c });
                    self.line(client_name(c), "releases".into(), None);
                }
                let token = format!("t{}", self.next_token);
                let cl = &mut self.clients[c];
                let s = self
                    .program
                    .request(&mut cl.core, &self.cfg, now, || token)
                    .ok_or_else(|| inapplicable(step, action, "no release or re-entry is due"))?;
                let change = self.clients[c].apply(s, &serving, &self.program);
                self.changed(c, change);
            }
        }
        Ok(())
    }

    /// Look at the lock key on every observable node: learn when it really expires, and
    /// on the nodes that serve record it for the checker when it changed (or has no
    /// expiry).
    async fn observe(&mut self) {
        let key = self.cfg.key.clone();
        for n in 0..self.nemesis.nodes() {
            if !self.nemesis.observable(n) {
                continue;
            }
            let at = Instant::now();
            let Ok(v) = self.nemesis.node(n).command(&["PTTL", &key]).await else {
                continue;
            };
            let pttl = match v {
                redis::Value::Int(i) => i,
                _ => -2,
            };
            if pttl == -2 {
                self.expiry[n] = None;
                self.seen[n] = None;
                continue;
            }
            self.expiry[n] = u64::try_from(pttl)
                .ok()
                .map(|ms| Expiry::observed(self.expiry[n], self.tick, self.tick_ms, at, ms));
            let state = (self.owner[n], pttl >= 0);
            // The checker's evidence is the key where clients write it: a replica's
            // copy is judged once it serves, as the model judges it.
            if !self.nemesis.serves(n) {
                self.seen[n] = None;
                continue;
            }
            if self.seen[n] != Some(state) || pttl == -1 {
                self.seen[n] = Some(state);
                self.record(Event::KeyObserved {
                    node: n,
                    owner: self.owner[n],
                    pttl_ms: pttl,
                });
            }
        }
    }

    /// Look once more, then remove the containers; returns the history.
    pub async fn finish(mut self) -> Result<(History, Vec<TimelineEntry>), RunError> {
        self.observe().await;
        let Run {
            nemesis,
            history,
            timeline,
            ..
        } = self;
        nemesis.shutdown().await?;
        Ok((history, timeline))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_lock_sends_the_same_ms_in_the_model_and_on_real_redis() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/custom/release-logged.toml");
        let scenario = Scenario::load(&path).expect("the example loads");
        let acquire = |cfg: &LockConfig| {
            let lock = cfg.custom.as_ref().expect("a custom lock");
            format!("{:?}", lock.acquire[0].request(cfg, "t1"))
        };
        // ttl = 3 ticks of 100 ms: PX 300 for both.
        let real = acquire(&lock_config(&scenario, 100));
        assert!(real.contains("\"300\""), "{real}");
        assert_eq!(real, acquire(&LockModel::new(&scenario).cfg));
    }

    #[test]
    fn a_deadline_seen_again_keeps_the_tick_it_was_placed_in() {
        // Tick 1 began at t0 + 100 ms; a key is set 90 ms into it with a 500 ms ttl:
        // it expires in the model at tick 6 (1 + 5), really at t0 + 690 ms.
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let first = Expiry::observed(None, 1, 100, ms(190), 500);
        assert_eq!(
            first,
            Expiry {
                tick: 6,
                at: ms(690)
            }
        );
        // Early in tick 3, 384 ms are left: rounded on their own, tick 7.
        assert_eq!(Expiry::observed(None, 3, 100, ms(306), 384).tick, 7);
        // The same deadline (within a round trip) keeps tick 6.
        let again = Expiry::observed(Some(first), 3, 100, ms(306), 383);
        assert_eq!(again, first);
        let later = Expiry::observed(Some(first), 5, 100, ms(505), 186);
        assert_eq!(later, first);
        // A renewal early in tick 3 is a new deadline: 3 + 5.
        let renewed = Expiry::observed(Some(first), 3, 100, ms(306), 500);
        assert_eq!(
            renewed,
            Expiry {
                tick: 8,
                at: ms(806)
            }
        );
    }
}
