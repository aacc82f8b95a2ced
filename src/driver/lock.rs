//! [`Lock`]: one client's handle on one lock, running a design's state machine on real
//! Redis nodes.
//!
//! Every operation (acquire, release, extend, and the watchdog's renewals) takes the
//! machine's mutex for its whole run, so one operation at most is in flight per machine.
//! An operation sends the machine's commands (to every node at once for Redlock, each
//! with the per-command timeout, polled in place: see [`InFlight`]), feeds each reply
//! back as it arrives, and stops at the machine's outcome.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::clock::Clock;
use super::error::LockError;
use super::gate::{Passage, PauseGate};
use super::guard::LockGuard;
use super::in_flight::InFlight;
use super::node::Node;
use super::watchdog;
use crate::design_id::DesignId;
use crate::machine::{Denied, Grant, LockConfig, LockMachine, Millis, NoAnswer, Outcome, Step};

/// How [`Lock::acquire`] retries.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RetryPolicy {
    pub(crate) retries: u32,
    pub(crate) delay: Duration,
    pub(crate) jitter: Duration,
}

/// One hold of the lock: from a successful acquire to its release or loss. Re-entries of
/// the reentrant design share it. Its guards keep it alive; once the last guard is
/// gone, the lock's renewal task no longer finds it and renews nothing.
pub(crate) struct Session {
    pub(crate) grant: Mutex<Grant>,
    /// A renewal or release found the lock no longer ours, or its state became unknown.
    pub(crate) lost: AtomicBool,
    /// Released (or lost): no renewal, no further operation.
    pub(crate) ended: AtomicBool,
    /// A renewal got no answer and the machine stopped renewing this hold
    /// ([`LockMachine::renewing`], [`crate::RenewalOnError::Stop`]).
    pub(crate) renewal_stopped: AtomicBool,
    /// When the hold began, on tokio's clock: renewals are due every interval from here.
    pub(crate) began: tokio::time::Instant,
}

impl Session {
    fn new(grant: Grant) -> Self {
        Session {
            grant: Mutex::new(grant),
            lost: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            renewal_stopped: AtomicBool::new(false),
            began: tokio::time::Instant::now(),
        }
    }

    pub(crate) fn grant(&self) -> Grant {
        self.grant.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set_grant(&self, grant: Grant) {
        *self.grant.lock().unwrap_or_else(|e| e.into_inner()) = grant;
    }

    pub(crate) fn set_lease_end(&self, lease_end: Millis) {
        self.grant
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lease_end = Some(lease_end);
    }

    pub(crate) fn is_live(&self) -> bool {
        !self.ended.load(Ordering::SeqCst) && !self.lost.load(Ordering::SeqCst)
    }

    /// Whether the renewal task still renews this hold.
    pub(crate) fn renews(&self) -> bool {
        self.is_live() && !self.renewal_stopped.load(Ordering::SeqCst)
    }

    /// The hold is over (released or lost): the renewal task leaves it alone.
    pub(crate) fn end(&self, lost: bool) {
        if lost {
            self.lost.store(true, Ordering::SeqCst);
        }
        self.ended.store(true, Ordering::SeqCst);
    }
}

/// What a [`Lock`] and its guards and renewal task share.
pub(crate) struct Shared {
    pub(crate) cfg: LockConfig,
    pub(crate) nodes: Vec<Arc<Node>>,
    pub(crate) machine: tokio::sync::Mutex<LockMachine>,
    pub(crate) clock: Clock,
    pub(crate) gate: PauseGate,
    session: Mutex<Weak<Session>>,
    client_id: String,
    attempts: AtomicU64,
    rng: Mutex<ChaCha8Rng>,
    policy: RetryPolicy,
    /// The renewal task (designs that renew), started by the first hold.
    renewer: watchdog::Renewer,
}

/// An operation's end: the machine's outcome and the error of every node that failed
/// on the way (indexed by node; empty when none failed).
struct Finished {
    outcome: Outcome,
    failures: Vec<Option<LockError>>,
}

impl Shared {
    /// Run an operation to its outcome: send the step's commands (all at once), feed
    /// each answer back as it arrives, send whatever the machine asks next.
    ///
    /// The pause gate is awaited before every send and after every reply arrives, before
    /// the machine sees it, leg by leg ([`PauseGate::pass_leg`]). A fan-out's legs pass
    /// it side by side, each on its own way out and back, as the model's legs travel in
    /// parallel (each within `timing.max_step_delay`): a slow client's Redlock acquire
    /// takes one step delay for its sends and one for its replies, not one for every
    /// master; and where the gate makes some legs fast, those masters see the request
    /// first.
    async fn run(
        &self,
        machine: &mut LockMachine,
        mut step: Step,
        whose: Passage,
    ) -> Result<Finished, LockError> {
        // Filled in (one slot per node) by the first failure only.
        let mut failures: Vec<Option<LockError>> = Vec::new();
        let mut in_flight = InFlight::default();
        loop {
            if let Some(outcome) = step.outcome.take() {
                return Ok(Finished { outcome, failures });
            }
            // A paused client does not see its replies until it resumes.
            let (node, result) = if step.sends.len() == 1 && in_flight.is_empty() {
                // One command and nothing else in flight (every single-node design): await
                // it in place, as a direct call would.
                let send = step.sends.pop().expect("one send");
                self.gate.pass_leg(whose, send.node).await;
                let result = self.node(send.node)?.execute(&send.command).await;
                self.gate.pass_leg(whose, send.node).await;
                (send.node, result)
            } else {
                for send in step.sends.drain(..) {
                    let node = self.node(send.node)?.clone();
                    let (index, command) = (send.node, send.command);
                    let gate = self.gate.clone();
                    in_flight.push(index, async move {
                        gate.pass_leg(whose, index).await;
                        let result = node.execute(&command).await;
                        gate.pass_leg(whose, index).await;
                        result
                    });
                }
                in_flight.next().await.ok_or_else(|| {
                    LockError::Internal("the state machine stopped without an outcome".into())
                })?
            };
            let answer = match result {
                Ok(reply) => Ok(reply),
                Err(e) => {
                    if failures.is_empty() {
                        failures.resize_with(self.nodes.len(), || None);
                    }
                    failures[node] = Some(e);
                    Err(NoAnswer)
                }
            };
            step = machine.on_answer(&self.cfg, node, answer, self.clock.now());
        }
    }

    /// The node the machine sent to.
    fn node(&self, node: usize) -> Result<&Arc<Node>, LockError> {
        self.nodes.get(node).ok_or_else(|| {
            LockError::Internal(format!(
                "the machine sent to node {node} of {}",
                self.nodes.len()
            ))
        })
    }

    /// Run an operation; when it fails midway the machine's state is unknown: start over.
    async fn run_or_reset(
        &self,
        machine: &mut LockMachine,
        step: Step,
        whose: Passage,
    ) -> Result<Finished, LockError> {
        let result = self.run(machine, step, whose).await;
        if result.is_err() {
            machine.reset(&self.cfg);
        }
        result
    }

    fn node_error(&self, node: usize, failures: &mut [Option<LockError>]) -> LockError {
        failures
            .get_mut(node)
            .and_then(Option::take)
            .unwrap_or_else(|| LockError::Unavailable {
                node,
                url: self
                    .nodes
                    .get(node)
                    .map(|n| n.shown_now())
                    .unwrap_or_default(),
            })
    }

    fn not_held(&self) -> LockError {
        LockError::NotHeld {
            key: self.cfg.key.clone(),
        }
    }

    /// The current session, if it still has a guard.
    pub(crate) fn current(&self) -> Option<Arc<Session>> {
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .upgrade()
    }

    pub(crate) fn is_current(&self, session: &Arc<Session>) -> bool {
        let current = self.session.lock().unwrap_or_else(|e| e.into_inner());
        std::ptr::eq(current.as_ptr(), Arc::as_ptr(session))
    }

    fn next_token(&self) -> String {
        use std::fmt::Write;
        let n = self.attempts.fetch_add(1, Ordering::Relaxed);
        // Sized once: a token is made per attempt.
        let mut token = String::with_capacity(self.client_id.len() + 21);
        token.push_str(&self.client_id);
        token.push(':');
        let _ = write!(token, "{n}");
        token
    }

    fn retry_pause(&self) -> Duration {
        let jitter = u64::try_from(self.policy.jitter.as_millis()).unwrap_or(u64::MAX);
        let extra = if jitter == 0 {
            0
        } else {
            self.rng
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .random_range(0..=jitter)
        };
        self.policy.delay + Duration::from_millis(extra)
    }

    /// The machine is mid-operation although nobody runs one: an operation was
    /// cancelled (its future dropped). Its hold, if any, is in an unknown state.
    fn recover_from_cancel(&self, machine: &mut LockMachine) -> bool {
        if !machine.busy() {
            return false;
        }
        machine.reset(&self.cfg);
        if let Some(session) = self.current() {
            session.end(true);
        }
        true
    }

    async fn try_acquire(self: &Arc<Self>) -> Result<Option<LockGuard>, LockError> {
        let mut machine = self.machine.lock().await;
        self.recover_from_cancel(&mut machine);
        let current = self.current().filter(|s| s.is_live());
        if current.is_some() && !self.cfg.reentrant() {
            return Err(LockError::AlreadyHeld {
                key: self.cfg.key.clone(),
                design: self.cfg.design,
            });
        }
        if current.is_none() && machine.grant().is_some() {
            // A hold whose guards were all dropped without release: the machine still
            // has it, Redis lets it expire. Start afresh with a new token.
            machine.reset(&self.cfg);
        }
        let token = self.next_token();
        let step = machine.acquire(&self.cfg, self.clock.now(), &token);
        let Finished {
            outcome,
            mut failures,
        } = match self
            .run_or_reset(&mut machine, step, Passage::Operation)
            .await
        {
            Ok(f) => f,
            Err(e) => {
                if let Some(s) = &current {
                    s.end(true);
                }
                return Err(e);
            }
        };
        let reentry = current.clone();
        let result = match outcome {
            Outcome::Acquired(grant) => {
                let session = match reentry {
                    Some(session) => {
                        session.set_grant(grant);
                        session
                    }
                    None => {
                        let session = Arc::new(Session::new(grant));
                        *self.session.lock().unwrap_or_else(|e| e.into_inner()) =
                            Arc::downgrade(&session);
                        if self.cfg.renews() {
                            self.renewer.hold_began(self);
                        }
                        session
                    }
                };
                return Ok(Some(LockGuard::new(self.clone(), session)));
            }
            Outcome::Denied(Denied::Held { .. }) if reentry.is_some() => Err(self.not_held()),
            Outcome::Denied(Denied::Held { .. }) => Ok(None),
            Outcome::Denied(Denied::NoValidity { granted }) => Err(LockError::NoValidity {
                key: self.cfg.key.clone(),
                granted,
                masters: self.cfg.masters,
            }),
            Outcome::Denied(Denied::NoQuorum { granted }) => {
                let masters = self.cfg.masters;
                let quorum = masters / 2 + 1;
                let failed: Vec<LockError> = failures.into_iter().flatten().collect();
                let held_elsewhere = masters.saturating_sub(granted + failed.len());
                if failed.is_empty() || held_elsewhere >= quorum {
                    Ok(None)
                } else {
                    Err(LockError::NoQuorum {
                        key: self.cfg.key.clone(),
                        granted,
                        masters,
                        quorum,
                        failures: failed,
                    })
                }
            }
            Outcome::Denied(Denied::NotReplicated { acks }) => Err(LockError::NotReplicated {
                acks,
                wanted: self.cfg.wait_replicas,
            }),
            Outcome::Denied(Denied::Unavailable { node }) => {
                Err(self.node_error(node, &mut failures))
            }
            other => Err(LockError::Internal(format!("acquire ended with {other:?}"))),
        };
        // A failed re-entry keeps the outer hold in the machine; should the machine have
        // given a hold up, its session is over.
        if let Some(session) = current {
            if machine.grant().is_none() {
                session.end(true);
            }
        }
        result
    }

    pub(crate) async fn release(&self, session: &Arc<Session>) -> Result<(), LockError> {
        let mut machine = self.machine.lock().await;
        if self.recover_from_cancel(&mut machine)
            || !self.is_current(session)
            || session.ended.load(Ordering::SeqCst)
        {
            return Err(self.not_held());
        }
        let step = machine.release(&self.cfg, self.clock.now());
        let mut finished = match self
            .run_or_reset(&mut machine, step, Passage::Operation)
            .await
        {
            Ok(f) => f,
            Err(e) => {
                session.end(true);
                return Err(e);
            }
        };
        match finished.outcome {
            Outcome::Released { holds_left: 0 } => {
                session.end(false);
                Ok(())
            }
            Outcome::Released { .. } => {
                if let Some(grant) = machine.grant() {
                    session.set_grant(grant);
                }
                Ok(())
            }
            Outcome::NotHeld => {
                session.end(true);
                Err(self.not_held())
            }
            Outcome::Unavailable { node } => {
                match machine.grant() {
                    // A reentrant inner unlock: the outer holds remain, still renewed.
                    Some(grant) => session.set_grant(grant),
                    // The machine gave the hold up; the key, if still there, expires by
                    // itself.
                    None => session.end(true),
                }
                Err(self.node_error(node, &mut finished.failures))
            }
            other => {
                session.end(true);
                Err(LockError::Internal(format!("release ended with {other:?}")))
            }
        }
    }

    /// Extend the lease (the `extend` call, an operation, and the watchdog's renewal,
    /// `whose` says which). `Ok` with the validity left.
    pub(crate) async fn renew(
        &self,
        session: &Arc<Session>,
        whose: Passage,
    ) -> Result<Duration, LockError> {
        if !super::builder::extends(&self.cfg) {
            return Err(LockError::Unsupported {
                design: self.cfg.design,
                what: "extend a lease",
            });
        }
        let mut machine = self.machine.lock().await;
        if self.recover_from_cancel(&mut machine) || !self.is_current(session) || !session.is_live()
        {
            return Err(self.not_held());
        }
        let step = machine.renew(&self.cfg, self.clock.now());
        let mut finished = match self.run_or_reset(&mut machine, step, whose).await {
            Ok(f) => f,
            Err(e) => {
                session.end(true);
                return Err(e);
            }
        };
        match finished.outcome {
            Outcome::Extended { lease_end } => {
                session.set_lease_end(lease_end);
                Ok(Duration::from_millis(
                    (lease_end - self.clock.now()).max(0) as u64
                ))
            }
            Outcome::NotHeld => {
                session.end(true);
                Err(self.not_held())
            }
            // Still ours as far as we know, with the old lease; the machine says whether
            // the watchdog goes on.
            Outcome::Unavailable { node } => {
                if !machine.renewing(&self.cfg) {
                    session.renewal_stopped.store(true, Ordering::SeqCst);
                }
                Err(self.node_error(node, &mut finished.failures))
            }
            other => {
                session.end(true);
                Err(LockError::Internal(format!("extend ended with {other:?}")))
            }
        }
    }
}

/// One client's handle on one lock. Build it with [`LockBuilder`](super::LockBuilder)
/// (or, for the pitfall designs, [`LockBuilder::pitfall`](crate::driver::LockBuilder::pitfall)).
///
/// Not `Clone`: a handle is one client with one state machine. Share it behind an `Arc`
/// if several tasks of the same client use it; its operations are serialized.
///
/// Dropping the handle stops the renewal task of a hold it has (the lease then runs out
/// within one ttl); so does dropping the hold's last guard.
pub struct Lock {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("config", &self.shared.cfg)
            .field("nodes", &self.shared.nodes)
            .field("client_id", &self.shared.client_id)
            .finish()
    }
}

impl Lock {
    pub(crate) fn new(
        cfg: LockConfig,
        nodes: Vec<Arc<Node>>,
        policy: RetryPolicy,
        rng: ChaCha8Rng,
        client_id: String,
        gate: PauseGate,
        clock: Clock,
    ) -> Self {
        let machine = LockMachine::new(&cfg);
        Lock {
            shared: Arc::new(Shared {
                cfg,
                nodes,
                machine: tokio::sync::Mutex::new(machine),
                clock,
                gate,
                session: Mutex::new(Weak::new()),
                client_id,
                attempts: AtomicU64::new(0),
                rng: Mutex::new(rng),
                policy,
                renewer: watchdog::Renewer::default(),
            }),
        }
    }

    /// One attempt: `Ok(Some(guard))` when acquired, `Ok(None)` when another client
    /// holds the lock, `Err` when a node failed (naming it), a Redlock quorum was missed
    /// because nodes failed ([`LockError::NoQuorum`]), a Redlock majority came too late
    /// to leave any validity ([`LockError::NoValidity`]), or `WAIT` saw too few replicas.
    ///
    /// A timed-out attempt may have taken the lock anyway; it is left to expire after
    /// the ttl (so retrying at once usually finds it held).
    ///
    /// While this handle holds the lock: the reentrant design re-enters (one more hold,
    /// one more guard; each guard is released once); other designs fail with
    /// [`LockError::AlreadyHeld`].
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>, LockError> {
        self.shared.try_acquire().await
    }

    /// Acquire with the builder's retry policy: up to `retry_count` more attempts after
    /// the first, each after `retry_delay` plus a random jitter. Retries when the lock is
    /// held ([`LockError::Busy`] after the last attempt) and after node failures (the
    /// last error is returned); other errors return at once.
    pub async fn acquire(&self) -> Result<LockGuard, LockError> {
        let attempts = self.shared.policy.retries.saturating_add(1);
        let mut last = None;
        for attempt in 1..=attempts {
            match self.try_acquire().await {
                Ok(Some(guard)) => return Ok(guard),
                Ok(None) => last = None,
                Err(e) if e.is_retryable() => last = Some(e),
                Err(e) => return Err(e),
            }
            if attempt < attempts {
                tokio::time::sleep(self.shared.retry_pause()).await;
            }
        }
        Err(last.unwrap_or_else(|| LockError::Busy {
            key: self.shared.cfg.key.clone(),
            attempts,
        }))
    }

    /// Release one hold: the guard's. `Err(NotHeld)` when the lock had already expired
    /// or been taken (the release then touched nothing of the new owner's, except with
    /// the pitfall designs, which is what they teach).
    pub async fn release(&self, guard: LockGuard) -> Result<(), LockError> {
        if !Arc::ptr_eq(guard.shared(), &self.shared) {
            return Err(LockError::WrongLock);
        }
        self.shared.release(guard.session()).await
    }

    /// Extend the lease by the ttl from now, if the lock is still ours; the new validity.
    /// Never re-acquires: after expiry it fails with [`LockError::NotHeld`] and the guard
    /// reports [`is_lost`](LockGuard::is_lost). A node failure leaves the old lease.
    pub async fn extend(&self, guard: &LockGuard) -> Result<Duration, LockError> {
        if !Arc::ptr_eq(guard.shared(), &self.shared) {
            return Err(LockError::WrongLock);
        }
        self.shared.renew(guard.session(), Passage::Operation).await
    }

    /// The configuration the machine runs with.
    pub fn config(&self) -> &LockConfig {
        &self.shared.cfg
    }

    /// The design.
    pub fn design(&self) -> DesignId {
        self.shared.cfg.design
    }

    /// The lock key.
    pub fn key(&self) -> &str {
        &self.shared.cfg.key
    }

    /// The nodes, in the builder's order.
    pub fn nodes(&self) -> &[Arc<Node>] {
        &self.shared.nodes
    }

    /// This client's id (the prefix of its tokens).
    pub fn client_id(&self) -> &str {
        &self.shared.client_id
    }

    /// The pause gate this lock obeys.
    pub fn pause_gate(&self) -> &PauseGate {
        &self.shared.gate
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        self.shared.renewer.stop();
    }
}
