//! Soak: a Jepsen-style free-running test of the production driver
//! ([`locklab::driver`]) on real Redis containers, in real time.
//!
//! Unlike the [run engine](crate::run), which carries out a model walk one action at a
//! time, a soak lets the pieces run on their own, as Jepsen does:
//!
//! - **clients** ([`client`]): C tasks, each with its own [`locklab::driver::Lock`]
//!   (the scenario's design, ttl × tick_ms, fencing, `WAIT`; the driver's own renewal
//!   task, timeouts and reconnections), looping acquire → critical section on the
//!   fenced stock store ([`locklab::resource::Stock`]) → release;
//! - **nemesis** ([`nemesis`]): a seeded schedule of faults of the kinds the scenario
//!   enables, one at a time, each aimed at the holder of the moment (a pause while it
//!   holds, a failover or restart right after an acquire), lengths drawn around the ttl;
//! - **history** ([`Recorder`]): invocations and completions with real timestamps,
//!   stock accesses, faults, and the lock key as an observer sees it on the masters;
//! - **checker**: the run engine's [`checker::check`] on
//!   that history, for the model's properties.
//!
//! With an adapter ([`SoakOptions::client`], `locklab soak --client CMD`) the clients
//! are a third-party library's instead ([`adapter`], over the [`protocol`]): one adapter
//! process per client, the same nemesis ([`fleet::Clients`] answers it for both), the
//! same history and checker.
//!
//! The containers are removed at the end, and on every error path (the cluster tears
//! itself down when dropped; the tasks are aborted first).

pub mod adapter;
pub mod client;
pub mod fleet;
pub mod nemesis;
pub mod protocol;
pub mod timeline;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use locklab::resource::Stock;
use locklab::DesignId;
use locklab_model::fault::FaultKind;
use locklab_model::scenario::{Property, Scenario};
use serde::Serialize;

use self::adapter::{AdapterClients, AdapterCommand, AnswerCounts};
use self::fleet::Clients;
use crate::run::checker::{self, Verdicts, Violation};
use crate::run::history::{Entry, Event, History};
use crate::run::nemesis::Nemesis;
use crate::run::RunError;

/// The stock at the start of a soak: enough for every purchase of a long run, so the
/// stock stays positive.
pub const INITIAL_STOCK: i64 = 1_000_000;

/// The most clients a soak runs.
pub const MAX_CLIENTS: usize = 16;

/// How to soak.
#[derive(Clone, Debug)]
pub struct SoakOptions {
    /// How long the clients run.
    pub duration: Duration,
    /// Number of clients (1 to [`MAX_CLIENTS`]).
    pub clients: usize,
    /// Seed of the fault schedule and of the clients' retry jitter.
    pub seed: u64,
    /// When the first fault is due (default: drawn from the seed, 1 to 3 ttls in).
    pub first_fault: Option<Duration>,
    /// The range, in ttls, the length of a lasting fault is drawn from.
    pub fault_ttls: (f64, f64),
    /// The range, as fractions of the model's step bound (`max_step_delay × tick_ms`),
    /// a slow client's step delay is drawn from.
    pub step_delays: (f64, f64),
    /// Whether the nemesis draws slow clients beside the scenario's faults.
    pub slow_steps: bool,
    /// A third-party library's adapter to run as the clients instead of the
    /// production driver.
    pub client: Option<AdapterCommand>,
}

impl SoakOptions {
    /// `seconds` of soak with the scenario's client count (at most [`MAX_CLIENTS`]).
    pub fn new(scenario: &Scenario, seconds: u64, seed: u64) -> Self {
        SoakOptions {
            duration: Duration::from_secs(seconds),
            clients: (scenario.clients.count as usize).clamp(1, MAX_CLIENTS),
            seed,
            first_fault: None,
            fault_ttls: (0.5, 2.5),
            step_delays: (0.5, 0.9),
            slow_steps: true,
            client: None,
        }
    }
}

/// One fault as it was carried out.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FaultRecord {
    /// The fault kind (`pause`, `crash`, `lost-reply`, `failover`, `split-brain`,
    /// `restart`, `partition`, `container-pause`, `late-request`, `renewal-race`,
    /// `clock-jump`, `slow-steps`, `clock-drift`, `drift-step`).
    pub kind: String,
    /// The client it struck, if it struck one (a pause, a crash, a link cut).
    pub client: Option<usize>,
    /// When it began (ms since the soak started).
    pub start_ms: f64,
    /// When it ended (equal to `start_ms` for an instant fault).
    pub end_ms: f64,
    /// What was done.
    pub what: String,
    /// Whether it struck a client while that client held the lock (or right after a
    /// client's acquire, for failovers, restarts and clock jumps).
    pub aimed: bool,
}

/// The shared record of a soak: the history, the stock store, and what the nemesis
/// needs to aim (who is in its critical section, the latest acquire).
pub struct Recorder {
    t0: Instant,
    inner: Mutex<Inner>,
}

struct Inner {
    entries: Vec<Entry>,
    stock: Stock,
    /// Per client: in its critical section since (ms), if it is.
    inside: Vec<Option<f64>>,
    /// Per client: between an acquire attempt's start and its outcome.
    acquiring: Vec<bool>,
    /// The latest successful acquire: (client, ms).
    last_acquire: Option<(usize, f64)>,
    /// Per client: whether it holds or is acquiring the lock as the checker sees it
    /// (from an acquire attempt to its failure, the end of the release, or a crash),
    /// and how often that changed.
    holding: Vec<(bool, u64)>,
    faults: Vec<FaultRecord>,
    /// Lock values a library chose, with the client that holds each (an adapter says
    /// which value it stored; the driver's tokens name their client themselves).
    tokens: HashMap<String, usize>,
}

impl Recorder {
    fn new(clients: usize, fencing: locklab::Fencing) -> Self {
        Recorder {
            t0: Instant::now(),
            inner: Mutex::new(Inner {
                entries: Vec::new(),
                stock: Stock::new(INITIAL_STOCK, fencing),
                inside: vec![None; clients],
                acquiring: vec![false; clients],
                last_acquire: None,
                holding: vec![(false, 0); clients],
                faults: Vec::new(),
                tokens: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Milliseconds since the soak started.
    pub fn ms(&self) -> f64 {
        self.t0.elapsed().as_secs_f64() * 1000.0
    }

    /// Append an event now; returns its time.
    pub fn push(&self, event: Event) -> f64 {
        let mut inner = self.lock();
        let ms = self.ms();
        let holds = |inner: &mut Inner, c: usize, on: bool| {
            let h = &mut inner.holding[c];
            if h.0 != on {
                *h = (on, h.1 + 1);
            }
        };
        match &event {
            Event::AcquireStart { client, .. } => {
                inner.acquiring[*client] = true;
                holds(&mut inner, *client, true)
            }
            Event::AcquireFailed { client, .. } => {
                inner.acquiring[*client] = false;
                holds(&mut inner, *client, false)
            }
            Event::Acquired { client, .. } => {
                inner.acquiring[*client] = false;
                inner.inside[*client] = Some(ms);
                inner.last_acquire = Some((*client, ms));
            }
            Event::Leave { client } => inner.inside[*client] = None,
            Event::Crash { client } | Event::Done { client } => {
                inner.acquiring[*client] = false;
                inner.inside[*client] = None;
                holds(&mut inner, *client, false);
            }
            _ => {}
        }
        inner.entries.push(Entry { ms, event });
        ms
    }

    /// Client `c` stored `value` as the lock's value.
    pub fn register_token(&self, value: String, c: usize) {
        self.lock().tokens.insert(value, c);
    }

    /// The client whose lock value `value` is: one an adapter registered, or a token
    /// that names its client ([`owner_of`]).
    pub fn owner(&self, value: &str) -> Option<usize> {
        match self.lock().tokens.get(value) {
            Some(&c) => Some(c),
            None => owner_of(value),
        }
    }

    /// Now (ms), and every client's holding state at this moment: whether it holds or
    /// is acquiring the lock as the checker sees it, and how often that changed. Events
    /// recorded before have an earlier time, events recorded after a later one.
    pub fn holding(&self) -> (f64, Vec<(bool, u64)>) {
        let inner = self.lock();
        (self.ms(), inner.holding.clone())
    }

    /// Append an event observed at `ms` (earlier than now: the history is sorted at the end).
    pub fn push_at(&self, ms: f64, event: Event) {
        self.lock().entries.push(Entry { ms, event });
    }

    /// Read the stock with `token`, recorded; `None` when the store rejected the token
    /// (the client then leaves its critical section, also recorded).
    pub fn read_stock(&self, client: usize, token: Option<u64>) -> Option<i64> {
        let mut inner = self.lock();
        let ms = self.ms();
        let read = inner.stock.read(token);
        inner.entries.push(Entry {
            ms,
            event: Event::StockRead {
                client,
                token,
                value: read.ok(),
            },
        });
        if read.is_err() {
            inner.inside[client] = None;
            inner.entries.push(Entry {
                ms,
                event: Event::Leave { client },
            });
        }
        read.ok()
    }

    /// Write `value` with `token`, recorded, and leave the critical section.
    pub fn write_stock(&self, client: usize, token: Option<u64>, value: i64) {
        let mut inner = self.lock();
        let ms = self.ms();
        let result = inner.stock.write(token, value);
        let stock = inner.stock.value;
        inner.entries.push(Entry {
            ms,
            event: Event::StockWrite {
                client,
                token,
                value,
                accepted: result.is_ok(),
                stock,
            },
        });
        inner.inside[client] = None;
        inner.entries.push(Entry {
            ms,
            event: Event::Leave { client },
        });
    }

    /// The clients in their critical section now, with the time each entered.
    pub fn inside(&self) -> Vec<(usize, f64)> {
        self.lock()
            .inside
            .iter()
            .enumerate()
            .filter_map(|(c, at)| at.map(|at| (c, at)))
            .collect()
    }

    /// The clients in the middle of an acquire attempt now.
    pub fn acquiring(&self) -> Vec<usize> {
        self.lock()
            .acquiring
            .iter()
            .enumerate()
            .filter_map(|(c, on)| on.then_some(c))
            .collect()
    }

    /// The latest successful acquire: (client, ms).
    pub fn last_acquire(&self) -> Option<(usize, f64)> {
        self.lock().last_acquire
    }

    /// Record a fault (its start and end are known once it is over).
    pub fn fault(&self, record: FaultRecord) {
        let mut inner = self.lock();
        let ms = record.start_ms;
        inner.entries.push(Entry {
            ms,
            event: Event::Fault {
                what: format!("{}: {}", record.kind, record.what),
            },
        });
        inner.faults.push(record);
    }

    /// Counts so far: (acquire attempts, critical sections completed, faults).
    pub fn counts(&self) -> (usize, usize, usize) {
        let inner = self.lock();
        let attempts = inner
            .entries
            .iter()
            .filter(|e| matches!(e.event, Event::AcquireStart { .. }))
            .count();
        let sections = inner
            .entries
            .iter()
            .filter(|e| matches!(e.event, Event::Leave { .. }))
            .count();
        (attempts, sections, inner.faults.len())
    }

    fn take(&self) -> (Vec<Entry>, Vec<FaultRecord>) {
        let mut inner = self.lock();
        (
            std::mem::take(&mut inner.entries),
            std::mem::take(&mut inner.faults),
        )
    }
}

/// Operation counts of a soak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Acquire attempts (one `try_acquire` each).
    pub acquire_attempts: usize,
    /// Attempts that got the lock.
    pub acquired: usize,
    /// Releases sent.
    pub releases: usize,
    /// Critical sections completed (the client left: its write done, or its read rejected).
    pub critical_sections: usize,
    /// Stock writes the store accepted (purchases).
    pub purchases: usize,
    /// Accesses the store rejected for a stale fencing token.
    pub rejected: usize,
    /// Grants while another client was inside its critical section (every breach of
    /// mutual exclusion, where the checker names the first).
    pub overlapping_grants: usize,
    /// Accepted writes after which the stock was not initial − purchases for the
    /// first time or anew (every lost update, where the checker names the first).
    pub lost_updates: usize,
    /// Faults followed by an overlapping grant or a lost update while they lasted or
    /// within one ttl after.
    pub faults_followed_by_breach: usize,
}

impl Counts {
    fn of(history: &History, faults: &[FaultRecord], ttl_ms: u64) -> Counts {
        let mut c = Counts::default();
        let mut inside: Vec<usize> = Vec::new();
        let mut lost_base = history.initial_stock;
        let mut breaches = Vec::new();
        for e in &history.entries {
            match &e.event {
                Event::AcquireStart { .. } => c.acquire_attempts += 1,
                Event::Acquired { client, .. } => {
                    c.acquired += 1;
                    if inside.iter().any(|i| i != client) {
                        c.overlapping_grants += 1;
                        breaches.push(e.ms);
                    }
                    inside.push(*client);
                }
                Event::Crash { client } | Event::Done { client } => {
                    inside.retain(|i| i != client);
                }
                Event::ReleaseStart { .. } => c.releases += 1,
                Event::Leave { client } => {
                    c.critical_sections += 1;
                    inside.retain(|i| i != client);
                }
                Event::StockWrite {
                    accepted: true,
                    stock,
                    ..
                } => {
                    c.purchases += 1;
                    let purchases = i64::try_from(c.purchases).unwrap_or(i64::MAX);
                    if *stock != lost_base - purchases {
                        c.lost_updates += 1;
                        breaches.push(e.ms);
                        lost_base = stock + purchases;
                    }
                }
                Event::StockWrite {
                    accepted: false, ..
                }
                | Event::StockRead { value: None, .. } => c.rejected += 1,
                _ => {}
            }
        }
        let ttl = ttl_ms as f64;
        c.faults_followed_by_breach = faults
            .iter()
            .filter(|f| {
                breaches
                    .iter()
                    .any(|b| *b >= f.start_ms && *b <= f.end_ms + ttl)
            })
            .count();
        c
    }
}

/// What a soak did and what the checker found.
#[derive(Clone, Debug)]
pub struct SoakOutcome {
    /// The history, sorted by time.
    pub history: History,
    /// The faults carried out.
    pub faults: Vec<FaultRecord>,
    /// The checker's verdicts.
    pub verdicts: Verdicts,
    /// Operation counts.
    pub counts: Counts,
    /// Properties the soak cannot judge, and why.
    pub unjudged: Vec<(Property, &'static str)>,
    /// Fault kinds the scenario enables that a soak does not inject.
    pub not_injected: Vec<&'static str>,
    /// Clients run.
    pub clients: usize,
    /// The lease in ms (ttl × tick_ms).
    pub ttl_ms: u64,
    /// The id of the cluster (label of its containers and network).
    pub cluster: String,
    /// Real seconds the soak took, set-up and tear-down included.
    pub seconds: f64,
    /// The library behind an adapter, when the clients were one's.
    pub adapter: Option<AdapterSummary>,
}

/// What an adapter's library was and what it answered.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdapterSummary {
    /// The adapter command.
    pub command: String,
    /// The library and its version, as the adapter named it.
    pub library: String,
    /// The Redis key the library wrote.
    pub key: String,
    /// Whether the harness called `extend` while a client held the lock.
    pub extends: bool,
    /// The library's answers by operation and outcome (an error by its text).
    #[serde(serialize_with = "answer_counts")]
    pub answers: AnswerCounts,
}

fn answer_counts<S: serde::Serializer>(a: &AnswerCounts, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(a.len()))?;
    for ((op, outcome), count) in a {
        seq.serialize_element(&serde_json::json!({"op": op, "outcome": outcome, "count": count}))?;
    }
    seq.end()
}

impl SoakOutcome {
    /// The stretch of history that shows `v`: from when the earliest client still in
    /// its critical section at the violation entered it (at least one ttl before the
    /// violation, and the start of a fault in progress then, whole-soak clock drift
    /// aside), to the violation.
    pub fn interval(&self, v: &Violation) -> (f64, f64) {
        let mut start = v.ms - self.ttl_ms as f64;
        let mut since: Vec<Option<f64>> = vec![None; self.clients];
        for e in &self.history.entries {
            if e.ms >= v.ms {
                break;
            }
            match &e.event {
                Event::Acquired { client, .. } => since[*client] = Some(e.ms),
                Event::Leave { client } | Event::Crash { client } | Event::Done { client } => {
                    since[*client] = None;
                }
                _ => {}
            }
        }
        for at in since.iter().flatten() {
            start = start.min(*at);
        }
        // Clock drift lasts the whole soak; its aimed steps are faults of their own.
        for f in self.faults.iter().filter(|f| f.kind != "clock-drift") {
            if f.start_ms <= v.ms && f.end_ms >= start {
                start = start.min(f.start_ms);
            }
        }
        (start.max(0.0), v.ms)
    }
}

/// What a soak restricted to one kind injects (`locklab soak --fault KIND`): one fault
/// kind of a scenario's `[faults]`, or the slow clients beside them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoakFault {
    Budget(FaultKind),
    /// No declared fault: the slow clients alone (the model's step delays).
    SlowSteps,
}

impl SoakFault {
    /// The `[faults]` key (`slow_steps` for the slow clients).
    pub fn as_str(self) -> &'static str {
        match self {
            SoakFault::Budget(kind) => kind.key(),
            SoakFault::SlowSteps => "slow_steps",
        }
    }

    /// Every kind, as `--fault` names them.
    pub fn all() -> impl Iterator<Item = SoakFault> {
        FaultKind::ALL
            .into_iter()
            .map(SoakFault::Budget)
            .chain([SoakFault::SlowSteps])
    }
}

impl std::str::FromStr for SoakFault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SoakFault::all().find(|k| k.as_str() == s).ok_or_else(|| {
            let names: Vec<&str> = SoakFault::all().map(SoakFault::as_str).collect();
            format!("`{s}` is not a fault kind; use one of {}", names.join(", "))
        })
    }
}

/// `scenario` with one fault kind only: that `[faults]` budget (the file's, or 1 when
/// the file has none) and every other budget 0; for [`SoakFault::SlowSteps`] every
/// budget 0 (the soak then runs its slow clients alone, the model its step delays). The
/// model checks this scenario, and the soak injects its faults, so that the two judge
/// the same thing. Refused when the file's topology cannot have the fault.
pub fn one_fault(scenario: &Scenario, kind: SoakFault) -> Result<Scenario, String> {
    let mut faults = locklab_model::scenario::Faults::default();
    if let SoakFault::Budget(k) = kind {
        // A split brain lasts to the horizon: one is all a scenario may have.
        faults[k] = match k {
            FaultKind::SplitBrain => 1,
            _ => scenario.faults[k].max(1),
        };
    }
    let needs_replica = matches!(kind, SoakFault::Budget(k) if k.needs_replica());
    if needs_replica && scenario.topology.replicas == 0 {
        return Err(format!(
            "{}: --fault {} needs a replica to promote, and the scenario has `[topology] replicas = 0`",
            scenario.path.display(),
            kind.as_str()
        ));
    }
    if needs_replica && scenario.topology.sentinels > 0 {
        return Err(format!(
            "{}: --fault {}: a soak scripts its promotions; the scenario's sentinels are for replay and chaos",
            scenario.path.display(),
            kind.as_str()
        ));
    }
    let mut one = scenario.clone();
    one.faults = faults;
    Ok(one)
}

/// The client id of client `c` in its `generation`-th life (a crashed client comes
/// back as a new process): `c{c}.{generation}`; lock tokens are `{id}:{attempt}`.
pub fn client_id(c: usize, generation: u32) -> String {
    format!("c{c}.{generation}")
}

/// The client whose token (or reentrant hash field) `value` is, if it is one of ours.
pub fn owner_of(value: &str) -> Option<usize> {
    let rest = value.strip_prefix('c')?;
    let (c, _) = rest.split_once('.')?;
    c.parse().ok()
}

/// Aborts the soak's tasks when dropped (an error or a panic): the cluster, dropped
/// after them, then tears down.
struct Tasks(Vec<tokio::task::AbortHandle>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// Soak `scenario`: start the containers, run the clients, the nemesis and the
/// observer for `options.duration`, stop them, remove the containers, judge the
/// history. `progress` gets a line every few seconds. An adapter that breaks the
/// protocol ends the soak early with [`RunError::Client`], every process and container
/// removed.
pub async fn soak(
    scenario: &Scenario,
    options: &SoakOptions,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<SoakOutcome, RunError> {
    let started = Instant::now();
    let n_clients = options.clients.clamp(1, MAX_CLIENTS);
    let masters = scenario.topology.masters as usize;
    let replicas = scenario.topology.replicas as usize;
    if options.client.is_some()
        && scenario.design == DesignId::GetsetTimestamp
        && scenario.faults[FaultKind::ClockJump] > 0
    {
        return Err(RunError::Client(format!(
            "{}: its clock jumps strike a client's clock, and a library's clock is its own process's: a soak through an adapter cannot shift it",
            scenario.path.display()
        )));
    }
    // A soak scripts its failovers (client links first, then the kill): no sentinels.
    let cluster = Nemesis::start(
        masters,
        replicas,
        0,
        n_clients,
        scenario.faults[FaultKind::ClockJump] > 0 || scenario.timing.node_drift > 0,
    )
    .await?;
    let mut plan = nemesis::Plan::of(scenario, options);
    let mut cluster = cluster;
    for n in plan.in_sync_replicas() {
        cluster.keep_in_sync(n).await?;
    }
    let cluster_id = cluster.cluster().id().to_string();
    let urls: Vec<Vec<String>> = (0..n_clients)
        .map(|c| (0..masters).map(|m| cluster.link(c, m).url()).collect())
        .collect();
    let cluster = Arc::new(tokio::sync::Mutex::new(cluster));
    let recorder = Arc::new(Recorder::new(n_clients, scenario.fencing));
    let stop = Arc::new(AtomicBool::new(false));
    let spec = client::Spec::of(scenario);
    let clients = match &options.client {
        None => Clients::Driver(Box::new(client::DriverClients::start(
            spec.clone(),
            urls,
            recorder.clone(),
            stop.clone(),
            options.seed,
        ))),
        Some(command) => {
            let cfg = crate::run::lock_config(scenario, scenario.timing.tick_ms);
            let renew_every = cfg.renews().then(|| cfg.renew_interval());
            Clients::Adapter(
                AdapterClients::start(
                    spec.clone(),
                    command.clone(),
                    renew_every,
                    urls,
                    recorder.clone(),
                    stop.clone(),
                    options.seed,
                )
                .await?,
            )
        }
    };
    let key = match &clients {
        Clients::Adapter(a) => a.ready().key.clone(),
        Clients::Driver(_) => spec.key.clone(),
    };
    plan = plan.with_key(&key);
    let clients = Arc::new(clients);
    let mut tasks = Tasks(Vec::new());
    let nemesis_task = tokio::spawn(nemesis::run(
        plan.clone(),
        cluster.clone(),
        clients.clone(),
        recorder.clone(),
        stop.clone(),
    ));
    tasks.0.push(nemesis_task.abort_handle());
    // Slow clients run beside the schedule: step delays are part of every scenario's
    // timing, so they may meet any fault, as in the model.
    let slow_task = options.slow_steps.then(|| {
        tokio::spawn(nemesis::slow_steps(
            plan.clone(),
            clients.clone(),
            recorder.clone(),
            stop.clone(),
        ))
    });
    if let Some(t) = &slow_task {
        tasks.0.push(t.abort_handle());
    }
    let drift_task = (scenario.timing.node_drift > 0).then(|| {
        tokio::spawn(nemesis::drift(
            plan.clone(),
            cluster.clone(),
            clients.clone(),
            recorder.clone(),
            stop.clone(),
        ))
    });
    if let Some(t) = &drift_task {
        tasks.0.push(t.abort_handle());
    }
    let observer = tokio::spawn(nemesis::observe(
        cluster.clone(),
        recorder.clone(),
        scenario.timing.tick_ms,
        key.clone(),
    ));
    tasks.0.push(observer.abort_handle());
    let deadline = Instant::now() + options.duration;
    let mut next_note = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if nemesis_task.is_finished() || clients.fatal().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100).min(deadline - Instant::now())).await;
        if Instant::now() >= next_note {
            next_note += Duration::from_secs(5);
            let (attempts, sections, faults) = recorder.counts();
            progress(&format!(
                "{:.0}/{} s: {attempts} acquire attempts, {sections} critical sections, {faults} faults",
                recorder.ms() / 1000.0,
                options.duration.as_secs()
            ));
        }
    }
    stop.store(true, Ordering::SeqCst);
    // The nemesis ends the fault in progress (resume, heal, unpause) and returns.
    let nemesis_result = match tokio::time::timeout(Duration::from_secs(30), nemesis_task).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(RunError::Client(format!("the nemesis task failed: {e}"))),
        Err(_) => Err(RunError::Client("the nemesis did not stop in 30 s".into())),
    };
    let drift_result = match drift_task {
        None => Ok(()),
        Some(t) => match tokio::time::timeout(Duration::from_secs(30), t).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(RunError::Client(format!("the drift task failed: {e}"))),
            Err(_) => Err(RunError::Client(
                "the drift task did not stop in 30 s".into(),
            )),
        },
    };
    if let Some(t) = slow_task {
        // It sets every gate steady and returns once it sees the stop.
        let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
    }
    let grace = Duration::from_millis(spec.ttl_ms.saturating_mul(2)) + Duration::from_secs(2);
    clients.stop(grace).await;
    observer.abort();
    let _ = observer.await;
    drop(tasks);
    let fatal = clients.fatal();
    let adapter = match clients.as_ref() {
        Clients::Adapter(a) => Some(AdapterSummary {
            command: a.command().command.clone(),
            library: a.ready().library.clone(),
            key: a.ready().key.clone(),
            extends: a.ready().extends,
            answers: a.answers(),
        }),
        Clients::Driver(_) => None,
    };
    // Every adapter process is gone before the containers go.
    drop(clients);
    if let Some(fatal) = fatal {
        // The containers are removed as the cluster is dropped on the way out.
        return Err(RunError::Client(fatal));
    }
    nemesis_result?;
    drift_result?;
    let cluster = Arc::try_unwrap(cluster)
        .map_err(|_| RunError::Client("the cluster is still in use".into()))?
        .into_inner();
    cluster.shutdown().await?;
    let (mut entries, faults) = recorder.take();
    entries.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    let history = History {
        design: scenario.design,
        fencing: scenario.fencing,
        initial_stock: INITIAL_STOCK,
        entries,
    };
    let verdicts = checker::check(&history);
    let mut unjudged = vec![(
        Property::OwnerOnlyRelease,
        if adapter.is_some() {
            "a library's commands are not observed one by one in a soak"
        } else {
            "the driver's commands are not observed one by one in a soak (judged by replay and chaos)"
        },
    )];
    if scenario.design == DesignId::GetsetTimestamp {
        unjudged.push((
            Property::NoOrphanedLock,
            "getset-timestamp keeps its expiry in the value",
        ));
    }
    Ok(SoakOutcome {
        counts: Counts::of(&history, &faults, spec.ttl_ms),
        history,
        faults,
        verdicts,
        unjudged,
        not_injected: nemesis::not_injected(scenario),
        clients: n_clients,
        ttl_ms: spec.ttl_ms,
        cluster: cluster_id,
        seconds: started.elapsed().as_secs_f64(),
        adapter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_fault_keeps_that_budget_alone_and_refuses_what_the_topology_cannot_have() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/lua-release-failover.toml");
        let mut sc = Scenario::load(&path).unwrap();
        sc.faults[FaultKind::Pause] = 3;
        sc.faults[FaultKind::Restart] = 1;
        let one = one_fault(&sc, SoakFault::Budget(FaultKind::Pause)).unwrap();
        assert_eq!(one.faults[FaultKind::Pause], 3, "the file's budget is kept");
        assert_eq!(one.faults.total(), 3, "{:?}", one.faults);
        let one = one_fault(&sc, SoakFault::Budget(FaultKind::ClockJump)).unwrap();
        assert_eq!(
            (one.faults[FaultKind::ClockJump], one.faults.total()),
            (1, 1)
        );
        assert_eq!(
            one_fault(&sc, SoakFault::SlowSteps).unwrap().faults.total(),
            0
        );
        sc.topology.replicas = 0;
        let e = one_fault(&sc, SoakFault::Budget(FaultKind::Failover)).unwrap_err();
        assert!(e.contains("replicas = 0"), "{e}");
        assert_eq!(
            "lost_replies".parse(),
            Ok(SoakFault::Budget(FaultKind::LostReply))
        );
        assert!("pause".parse::<SoakFault>().unwrap_err().contains("pauses"));
    }

    #[test]
    fn tokens_name_their_client() {
        assert_eq!(owner_of(&format!("{}:7", client_id(3, 2))), Some(3));
        assert_eq!(owner_of("c12.1:0"), Some(12));
        assert_eq!(owner_of("1732000000123"), None);
        assert_eq!(owner_of(""), None);
    }

    #[test]
    fn a_client_is_acquiring_from_its_attempt_to_the_attempt_s_outcome() {
        let rec = Recorder::new(2, locklab::Fencing::Off);
        let start = |c: usize| Event::AcquireStart {
            client: c,
            token: format!("{c}:0"),
        };
        rec.push(start(0));
        rec.push(start(1));
        assert_eq!(rec.acquiring(), vec![0, 1]);
        rec.push(Event::Acquired {
            client: 0,
            fence: None,
        });
        rec.push(Event::AcquireFailed {
            client: 1,
            outcome: "busy".into(),
        });
        assert!(rec.acquiring().is_empty());
        assert_eq!(rec.inside().len(), 1);
        // A crash mid-acquire ends the attempt too.
        rec.push(start(1));
        rec.push(Event::Crash { client: 1 });
        assert!(rec.acquiring().is_empty());
    }

    fn outcome(entries: Vec<(f64, Event)>, faults: Vec<FaultRecord>, v: Violation) -> SoakOutcome {
        let history = History {
            design: DesignId::LuaRelease,
            fencing: locklab::Fencing::Off,
            initial_stock: INITIAL_STOCK,
            entries: entries
                .into_iter()
                .map(|(ms, event)| Entry { ms, event })
                .collect(),
        };
        SoakOutcome {
            counts: Counts::of(&history, &faults, 100),
            history,
            faults,
            verdicts: Verdicts {
                violations: vec![v],
            },
            unjudged: Vec::new(),
            not_injected: Vec::new(),
            clients: 2,
            ttl_ms: 100,
            cluster: String::new(),
            seconds: 0.0,
            adapter: None,
        }
    }

    #[test]
    fn the_interval_reaches_back_to_the_oldest_holder_inside_and_the_fault() {
        let v = Violation {
            property: Property::MutualExclusion,
            ms: 900.0,
            detail: String::new(),
        };
        let pause = FaultRecord {
            kind: "pause".into(),
            client: Some(0),
            start_ms: 450.0,
            end_ms: 1000.0,
            what: String::new(),
            aimed: true,
        };
        let o = outcome(
            vec![
                (
                    100.0,
                    Event::Acquired {
                        client: 1,
                        fence: None,
                    },
                ),
                (150.0, Event::Leave { client: 1 }),
                (
                    400.0,
                    Event::Acquired {
                        client: 0,
                        fence: None,
                    },
                ),
                (
                    900.0,
                    Event::Acquired {
                        client: 1,
                        fence: None,
                    },
                ),
                (1000.0, Event::Leave { client: 0 }),
            ],
            vec![pause.clone()],
            v.clone(),
        );
        assert_eq!(o.interval(&v), (400.0, 900.0));
        assert_eq!(o.counts.acquired, 3);
        // Nobody inside: one ttl back, or the fault in progress.
        let o = outcome(vec![], vec![pause], v.clone());
        assert_eq!(o.interval(&v), (450.0, 900.0));
        let o = outcome(vec![], vec![], v.clone());
        assert_eq!(o.interval(&v), (800.0, 900.0));
        let svg = timeline::svg(&o, "a <title>");
        assert!(svg.contains("a &lt;title&gt;") && svg.contains("mutual_exclusion"));
    }

    /// Two violations a few ms apart: their labels go on two lines, neither on the
    /// panel's title; a fault of 1 ms in a long soak is still drawn a few px wide.
    #[test]
    fn timeline_labels_do_not_overlap_and_short_faults_show() {
        let violation = |property, ms| Violation {
            property,
            ms,
            detail: String::new(),
        };
        let blip = FaultRecord {
            kind: "pause".into(),
            client: Some(0),
            start_ms: 5000.0,
            end_ms: 5001.0,
            what: String::new(),
            aimed: false,
        };
        let mut o = outcome(
            vec![(60_000.0, Event::Leave { client: 0 })],
            vec![blip],
            violation(Property::MutualExclusion, 30_000.0),
        );
        o.verdicts
            .violations
            .push(violation(Property::ResourceSafety, 30_005.0));
        let svg = timeline::svg(&o, "t");
        let y_of = |text: &str| -> Vec<String> {
            svg.lines()
                .filter(|l| l.contains(&format!(">{text}</text>")))
                .map(|l| {
                    let at = l.rfind("<text").unwrap();
                    let y = &l[at..];
                    let y = &y[y.find(" y=\"").unwrap() + 4..];
                    y[..y.find('"').unwrap()].to_string()
                })
                .collect()
        };
        let (me, rs, title) = (
            y_of("mutual_exclusion"),
            y_of("resource_safety"),
            y_of("whole soak"),
        );
        // In the first panel (the whole soak), then in each close-up.
        assert!(!me.is_empty() && !rs.is_empty(), "{svg}");
        assert_ne!(me[0], rs[0], "{svg}");
        assert!(me[0] != title[0] && rs[0] != title[0], "{svg}");
        let pause = svg
            .lines()
            .find(|l| l.contains("<title>pause 5000.0"))
            .expect("the pause is drawn");
        assert!(pause.contains(r#"width="4.0""#), "{pause}");
    }
}
