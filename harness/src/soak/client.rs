//! The soak's clients: each a task with its own production [`Lock`] (the driver's
//! retries are off: the task retries itself so that every attempt is in the history),
//! looping acquire → critical section on the stock store → release, until told to stop.
//!
//! The critical section is the model's: read the stock, work `work × tick_ms`, write
//! the stock minus one (a reentrant holder re-enters first and drops the inner hold
//! after the read). A stop-the-world pause is the client's [`PauseGate`]: the driver
//! stops sending, renewing and reading replies, and the client's own code stops at its
//! next step (before the read, after the work), as a process frozen by a long GC would.
//!
//! A crash aborts the task: its `Lock` is dropped with its connections and renewal
//! task, mid-operation or mid-critical section; the client comes back later as a new
//! process (a new client id, `c{index}.{generation}`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use locklab::design::CustomLock;
use locklab::driver::{ClockShift, Lock, LockBuilder, LockError, PauseGate};
use locklab::{DesignId, Fencing, RenewalOnError};
use locklab_model::scenario::Scenario;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::task::JoinHandle;

use super::{client_id, Recorder};
use crate::run::history::Event;

/// The lock key of a soak.
pub const KEY: &str = "soak:lock";

/// What every client runs with, from the scenario.
#[derive(Clone, Debug)]
pub struct Spec {
    pub design: DesignId,
    pub key: String,
    pub ttl_ms: u64,
    pub tick_ms: u64,
    pub work_ms: u64,
    pub fencing: Fencing,
    pub wait_replicas: u32,
    /// The `WAIT` timeout in ms: the scenario's `timing.wait_timeout` ticks, or a
    /// fifth of a tick without one ([`crate::run::wait_timeout_ms`]).
    pub wait_timeout_ms: u64,
    /// Redlock's drift allowance in ms.
    pub drift_ms: u64,
    /// The validity a Redlock acquire must leave, in ms (`[timing] min_validity`, as
    /// the model holds it).
    pub min_validity_ms: u64,
    /// Whether a renewing design renews while held (`false`: an explicit lease).
    pub watchdog: bool,
    pub renewal_on_error: RenewalOnError,
    /// A custom lock's steps, and how often it renews (ms; `None`: ttl/3).
    pub custom: Option<CustomLock>,
    pub renew_every_ms: Option<u64>,
}

impl Spec {
    /// The scenario's design, ttl × tick_ms, work × tick_ms and options.
    pub fn of(scenario: &Scenario) -> Spec {
        let tick_ms = scenario.timing.tick_ms;
        Spec {
            design: scenario.design,
            key: KEY.to_string(),
            ttl_ms: u64::from(scenario.timing.ttl).saturating_mul(tick_ms),
            tick_ms,
            work_ms: u64::from(scenario.timing.work).saturating_mul(tick_ms),
            fencing: scenario.fencing,
            wait_replicas: scenario.wait_replicas,
            wait_timeout_ms: crate::run::wait_timeout_ms(scenario, tick_ms),
            drift_ms: u64::from(scenario.timing.drift_allowance).saturating_mul(tick_ms),
            min_validity_ms: scenario.timing.min_validity().saturating_mul(tick_ms),
            watchdog: scenario.renewal.is_none_or(|r| r.watchdog),
            renewal_on_error: scenario
                .renewal
                .map_or(RenewalOnError::default(), |r| r.renewal_on_error),
            custom: scenario.lock.as_ref().map(|l| l.lock.clone()),
            renew_every_ms: scenario
                .lock
                .as_ref()
                .and_then(|l| l.every)
                .map(|every| u64::from(every).saturating_mul(tick_ms)),
        }
    }

    /// How long the driver waits for one command before it gives up on it: half the
    /// ttl, at most 250 ms.
    pub fn command_timeout(ttl_ms: u64) -> Duration {
        Duration::from_millis((ttl_ms / 2).clamp(1, 250))
    }

    /// The pause before another attempt after a busy or failed one: a quarter to a half
    /// of a tick, so that a lock that frees up is taken within half a tick.
    pub(super) fn retry_pause(&self, rng: &mut ChaCha8Rng) -> Duration {
        let base = (self.tick_ms / 4).max(1);
        Duration::from_millis(base + rng.random_range(0..=base))
    }

    async fn build(
        &self,
        urls: &[String],
        id: &str,
        gate: &PauseGate,
        clock: &ClockShift,
    ) -> Result<Lock, LockError> {
        let builder = match (&self.custom, self.design) {
            (Some(lock), _) => LockBuilder::custom(lock.clone()),
            (
                None,
                DesignId::LuaRelease | DesignId::Watchdog | DesignId::Reentrant | DesignId::Redlock,
            ) => LockBuilder::new(self.design),
            (None, _) => locklab::driver::LockBuilder::pitfall(self.design),
        };
        let mut builder = builder
            .key(self.key.clone())
            .nodes(urls.iter().cloned())
            .ttl(Duration::from_millis(self.ttl_ms))
            .retry_count(0)
            .command_timeout(Spec::command_timeout(self.ttl_ms))
            .connect_timeout(Duration::from_millis(500))
            .fencing(self.fencing.enabled())
            .wait_replicas(self.wait_replicas)
            .wait_timeout(Duration::from_millis(self.wait_timeout_ms))
            .watchdog_enabled(self.watchdog)
            .renewal_on_error(self.renewal_on_error)
            .client_id(id)
            .pause_gate(gate.clone())
            .clock_shift(clock.clone());
        if let Some(every) = self.renew_every_ms {
            builder = builder.renew_interval(Duration::from_millis(every));
        }
        if self.design == DesignId::Redlock {
            builder = builder
                .drift_factor(0.0)
                .drift_fixed(Duration::from_millis(self.drift_ms))
                .min_validity(Duration::from_millis(self.min_validity_ms));
        }
        builder.build().await
    }
}

/// One client slot: its gate, its clock's shift, its task, its lives.
struct Slot {
    gate: PauseGate,
    /// The shift of the client's clock: its machine's clock, kept across its lives.
    clock: ClockShift,
    task: Option<JoinHandle<()>>,
    generation: u32,
}

/// The soak's driver clients.
pub struct DriverClients {
    spec: Spec,
    urls: Vec<Vec<String>>,
    recorder: Arc<Recorder>,
    stop: Arc<AtomicBool>,
    seed: u64,
    slots: Mutex<Vec<Slot>>,
}

impl DriverClients {
    /// Start one task per client (`urls[c]`: client `c`'s link to each master).
    pub fn start(
        spec: Spec,
        urls: Vec<Vec<String>>,
        recorder: Arc<Recorder>,
        stop: Arc<AtomicBool>,
        seed: u64,
    ) -> DriverClients {
        let n = urls.len();
        let clients = DriverClients {
            spec,
            urls,
            recorder,
            stop,
            seed,
            slots: Mutex::new(
                (0..n)
                    .map(|_| Slot {
                        gate: PauseGate::new(),
                        clock: ClockShift::new(),
                        task: None,
                        generation: 0,
                    })
                    .collect(),
            ),
        };
        for c in 0..n {
            clients.spawn(c);
        }
        clients
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of clients.
    pub fn len(&self) -> usize {
        self.urls.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.urls.is_empty()
    }

    fn spawn(&self, c: usize) {
        let mut slots = self.slots();
        let slot = &mut slots[c];
        slot.generation += 1;
        let gate = PauseGate::new();
        slot.gate = gate.clone();
        let seed = self
            .seed
            .wrapping_add((c as u64) << 32)
            .wrapping_add(u64::from(slot.generation));
        let task = tokio::spawn(client_loop(
            c,
            client_id(c, slot.generation),
            self.spec.clone(),
            self.urls[c].clone(),
            gate,
            slot.clock.clone(),
            self.recorder.clone(),
            self.stop.clone(),
            seed,
        ));
        slot.task = Some(task);
    }

    /// Client `c`'s pause gate.
    pub fn gate(&self, c: usize) -> PauseGate {
        self.slots()[c].gate.clone()
    }

    /// The shift of client `c`'s clock (a client clock jump moves it).
    pub fn clock(&self, c: usize) -> ClockShift {
        self.slots()[c].clock.clone()
    }

    /// Client `c` crashes: its task is aborted (the lock, its connections and its
    /// renewal task are dropped where they are). Recorded.
    pub fn crash(&self, c: usize) {
        let task = self.slots()[c].task.take();
        if let Some(task) = task {
            task.abort();
        }
        self.recorder.push(Event::Crash { client: c });
    }

    /// Crashed client `c` comes back as a new process.
    pub fn restart(&self, c: usize) {
        if !self.stop.load(Ordering::SeqCst) {
            self.spawn(c);
        }
    }

    /// Wait up to `grace` for every client to finish its round, then abort the rest.
    pub async fn stop(&self, grace: Duration) {
        self.stop.store(true, Ordering::SeqCst);
        let tasks: Vec<JoinHandle<()>> = {
            let mut slots = self.slots();
            for s in slots.iter() {
                s.gate.resume();
            }
            slots.iter_mut().filter_map(|s| s.task.take()).collect()
        };
        super::fleet::finish(tasks, grace).await;
    }
}

fn outcome(e: &LockError) -> String {
    let s = e.to_string();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

/// One client's life: build the lock, then rounds of acquire → critical section →
/// release until the soak stops.
#[allow(clippy::too_many_arguments)]
async fn client_loop(
    c: usize,
    id: String,
    spec: Spec,
    urls: Vec<String>,
    gate: PauseGate,
    clock: ClockShift,
    rec: Arc<Recorder>,
    stop: Arc<AtomicBool>,
    seed: u64,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let lock = loop {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        gate.wait().await;
        match spec.build(&urls, &id, &gate, &clock).await {
            Ok(lock) => break lock,
            Err(_) => tokio::time::sleep(spec.retry_pause(&mut rng)).await,
        }
    };
    let mut attempt: u64 = 0;
    let work = Duration::from_millis(spec.work_ms);
    while !stop.load(Ordering::SeqCst) {
        gate.wait().await;
        let token = format!("{id}:{attempt}");
        attempt += 1;
        rec.push(Event::AcquireStart { client: c, token });
        let guard = match lock.try_acquire().await {
            Ok(Some(guard)) => guard,
            Ok(None) => {
                rec.push(Event::AcquireFailed {
                    client: c,
                    outcome: "busy".into(),
                });
                tokio::time::sleep(spec.retry_pause(&mut rng)).await;
                continue;
            }
            Err(e) => {
                rec.push(Event::AcquireFailed {
                    client: c,
                    outcome: outcome(&e),
                });
                tokio::time::sleep(spec.retry_pause(&mut rng)).await;
                continue;
            }
        };
        let fence = guard.fencing_token();
        rec.push(Event::Acquired { client: c, fence });
        // A reentrant lock re-enters first (one more hold of the same lock).
        let reentrant = spec.design == DesignId::Reentrant
            || spec.custom.as_ref().is_some_and(|l| l.reenter.is_some());
        let inner = if reentrant {
            attempt += 1;
            lock.try_acquire().await.ok().flatten()
        } else {
            None
        };
        gate.wait().await;
        let read = rec.read_stock(c, fence);
        if let Some(inner) = inner {
            let _ = lock.release(inner).await;
        }
        if let Some(value) = read {
            tokio::time::sleep(work).await;
            // A pause during the work holds the write back until the client resumes.
            gate.wait().await;
            rec.write_stock(c, fence, value - 1);
        }
        rec.push(Event::ReleaseStart { client: c });
        let _ = lock.release(guard).await;
        rec.push(Event::Done { client: c });
    }
}
