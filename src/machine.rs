//! The sans-IO interface every design implements: calls in (acquire, release, renew, a
//! reply from node *i*), commands to send and outcomes out.
//!
//! A [`LockMachine`] never reads a clock and never does I/O. The caller passes the local
//! clock reading (`now`, in milliseconds on the caller's clock) with every call, sends the
//! commands it gets back, and feeds each reply (or the failure to get one) back in.
//! At most one command per node is outstanding at a time.

use std::sync::Arc;

use crate::command::{Command, Reply};
use crate::design::CustomLock;
use crate::design_id::DesignId;
use crate::text::Text;
use crate::{design, options, pitfalls};

/// A local clock reading in milliseconds. Signed: model clocks may jump backwards.
pub type Millis = i64;

/// Static configuration shared by every client of one lock. Not part of a machine's
/// state, so machines stay small values the model checker can store by the million.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockConfig {
    /// Which design.
    pub design: DesignId,
    /// The lock key.
    pub key: String,
    /// The fencing counter key (used when `fencing` is on).
    pub fence_key: String,
    /// Lease time in milliseconds.
    pub ttl: u64,
    /// Number of independent masters (Redlock); 1 otherwise.
    pub masters: usize,
    /// Clock drift allowance, parts per million of the ttl (Redlock uses 10 000 = 1 %).
    pub drift_ppm: u64,
    /// Fixed clock drift allowance in milliseconds (Redlock adds 2 ms).
    pub drift_ms: u64,
    /// Take a fencing token (`INCR fence_key` on node 0) with every acquire.
    pub fencing: bool,
    /// `WAIT` for this many replicas after acquiring; fewer acks fail the acquire.
    pub wait_replicas: u32,
    /// The `WAIT` timeout in milliseconds.
    pub wait_timeout_ms: u64,
    /// Whether `watchdog` and `reentrant` run their renewal while held. Off is Redisson's
    /// `lock(leaseTime, unit)`: with an explicit lease time no watchdog runs, and the
    /// lease ends after the ttl whatever the holder is doing.
    pub watchdog: bool,
    /// What the renewal of `watchdog` and `reentrant` does after a renewal that got no
    /// answer (a renewal answered "not ours" always stops it).
    pub renewal_on_error: RenewalOnError,
    /// The steps of design `custom` (a scenario's `[lock]`); `None` for the others.
    pub custom: Option<Arc<CustomLock>>,
    /// How often a renewing lock renews, in the ttl's unit; `None`: every ttl/3.
    pub renew_every: Option<u64>,
    /// Redlock: the validity the holder needs, in the ttl's unit. An acquire holds only
    /// when more validity than this is left (ttl − elapsed − drift); with less, the
    /// grants are given back (`Denied::NoValidity`). The client's side of the contract:
    /// the validity an acquire returns bounds the work the holder may do. 0: any
    /// validity left.
    pub min_validity: u64,
    /// Milliseconds of Redis's clock per unit of the times above, where a custom lock's
    /// `{ttl}` is filled in (Redis reads `PX` and `PEXPIRE` in ms): 1 in the driver,
    /// whose times are ms; the model's tick (`timing.tick_ms`) in the model, whose
    /// times are ticks.
    pub unit_ms: u64,
}

/// What a renewing design's watchdog does after a renewal that got no answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RenewalOnError {
    /// Stop renewing this hold after one renewal that got no answer (the driver sends
    /// each renewal once). The holder keeps its hold, and the lease runs out one ttl
    /// after the last renewal that ran. Redisson's `renewExpiration` stops so ("Can't
    /// update lock ... expiration") only once its command layer gave the renewal up,
    /// after resending it `retryAttempts` times: one lost reply does not stop it, a
    /// partition that outlasts the resends does.
    #[default]
    Stop,
    /// Try again at the next interval (the lease runs out by itself if none succeeds).
    Retry,
}

impl RenewalOnError {
    /// The name used in scenario files and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            RenewalOnError::Stop => "stop",
            RenewalOnError::Retry => "retry",
        }
    }
}

impl LockConfig {
    /// A configuration with the given design, key and ttl, one master, no options.
    pub fn new(design: DesignId, key: impl Into<String>, ttl: u64) -> Self {
        let key = key.into();
        LockConfig {
            design,
            fence_key: format!("{key}:fence"),
            key,
            ttl,
            masters: 1,
            drift_ppm: if design == DesignId::Redlock {
                10_000
            } else {
                0
            },
            drift_ms: if design == DesignId::Redlock { 2 } else { 0 },
            fencing: false,
            wait_replicas: 0,
            wait_timeout_ms: 100,
            watchdog: true,
            renewal_on_error: RenewalOnError::Stop,
            custom: None,
            renew_every: None,
            min_validity: 0,
            unit_ms: 1,
        }
    }

    /// A custom lock (design `custom`) with the given key and ttl.
    pub fn custom(lock: CustomLock, key: impl Into<String>, ttl: u64) -> Self {
        LockConfig {
            custom: Some(Arc::new(lock)),
            ..LockConfig::new(DesignId::Custom, key, ttl)
        }
    }

    /// The drift allowance subtracted from every validity, in milliseconds.
    pub fn drift(&self) -> u64 {
        self.ttl * self.drift_ppm / 1_000_000 + self.drift_ms
    }

    /// Local time at which a lease started at `started` must be considered lost.
    pub fn lease_end(&self, started: Millis) -> Millis {
        // Saturating: a ttl past i64::MAX ms is a lease that never ends.
        started
            .saturating_add(self.ttl_ms())
            .saturating_sub(Millis::try_from(self.drift()).unwrap_or(Millis::MAX))
    }

    /// The ttl as a signed ms count (saturating at `Millis::MAX`, a lease that never ends).
    pub fn ttl_ms(&self) -> Millis {
        Millis::try_from(self.ttl).unwrap_or(Millis::MAX)
    }

    /// Whether a holder may acquire again, adding a hold: the `reentrant` design, or a
    /// custom lock with a re-entry step.
    pub fn reentrant(&self) -> bool {
        match &self.custom {
            Some(lock) => lock.reenter.is_some(),
            None => self.design == DesignId::Reentrant,
        }
    }

    /// Whether holds are renewed while held: a design that renews, with its watchdog on.
    /// A custom lock renews when it has a renewal step.
    pub fn renews(&self) -> bool {
        let renews = match &self.custom {
            Some(lock) => lock.renew.is_some(),
            None => self.design.renews(),
        };
        renews && self.watchdog
    }

    /// How often a renewing design renews: every ttl/3, as Redisson's watchdog, unless
    /// a custom lock says `every`.
    pub fn renew_interval(&self) -> u64 {
        self.renew_every.unwrap_or(self.ttl / 3).max(1)
    }
}

/// A command for one node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    /// Index of the master the command is for (0 unless Redlock).
    pub node: usize,
    /// The command.
    pub command: Command,
}

/// A granted lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Grant {
    /// The value that identifies this holder in Redis (its token or owner field), kept
    /// in place ([`Text`]): the model copies every machine at every step.
    pub token: Text,
    /// Local time at which the lease must be taken as lost; `None` for a lock without
    /// expiry (`naive-setnx`).
    pub lease_end: Option<Millis>,
    /// The fencing token, when fencing is on.
    pub fence: Option<u64>,
    /// How many times the holder holds it (re-entries count, reentrant design only).
    pub holds: u32,
}

impl Grant {
    /// Zero the lease end, keeping whether there is one (see
    /// [`LockMachine::forget_reported_values`]).
    pub(crate) fn forget_lease_end(&mut self) {
        if let Some(end) = &mut self.lease_end {
            *end = 0;
        }
    }

    /// Move the lease end by `by`, holding it at `floor` at the least (see
    /// [`LockMachine::shift_times`]).
    pub(crate) fn shift_lease_end(&mut self, by: Millis, floor: Millis) {
        if let Some(end) = &mut self.lease_end {
            *end = shifted(*end, by, floor);
        }
    }

    /// Remaining validity at `now` in milliseconds (`None` without expiry).
    pub fn validity(&self, now: Millis) -> Option<Millis> {
        self.lease_end.map(|end| end - now)
    }
}

/// Why an acquire did not get the lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Denied {
    /// Somebody else holds it; `pttl` is the holder's remaining time when Redis said so.
    Held { pttl: Option<i64> },
    /// Redlock: fewer than a majority of masters granted it; partial grants were
    /// released.
    NoQuorum { granted: usize },
    /// Redlock: a majority granted it, but so late that no validity was left (the
    /// acquire took longer than the lease, less the drift allowance); the grants were
    /// released.
    NoValidity { granted: usize },
    /// `WAIT` saw fewer replicas than required; the grant was released.
    NotReplicated { acks: i64 },
    /// A node did not answer (timeout, connection error); the lock may or may not have
    /// been taken and is left to expire.
    Unavailable { node: usize },
}

/// What a call or a reply led to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The lock is held (also after a re-entry).
    Acquired(Grant),
    /// The acquire failed.
    Denied(Denied),
    /// The release went through; `holds_left` is non-zero after a reentrant partial unlock.
    Released { holds_left: u32 },
    /// The release or renewal found the lock no longer ours (expired, or taken).
    NotHeld,
    /// The lease was extended; the new local lease end.
    Extended { lease_end: Millis },
    /// A renewal or release could not reach a node; the lock state is unknown.
    Unavailable { node: usize },
}

/// The result of one call: commands to send now, and possibly an outcome.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Commands to send, at most one per node.
    pub sends: Vec<Request>,
    /// The outcome, when the operation finished.
    pub outcome: Option<Outcome>,
}

impl Step {
    /// Send one command to node 0.
    pub fn send(command: Command) -> Self {
        Step::send_to(0, command)
    }
    /// Send one command to a node.
    pub fn send_to(node: usize, command: Command) -> Self {
        Step {
            sends: vec![Request { node, command }],
            outcome: None,
        }
    }
    /// Finish with an outcome.
    pub fn done(outcome: Outcome) -> Self {
        Step {
            sends: Vec::new(),
            outcome: Some(outcome),
        }
    }
}

/// A reply as the machine sees it: Redis answered, or the command failed without an
/// answer (timeout, connection refused, partition).
pub type Answer = Result<Reply, NoAnswer>;

/// The command got no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NoAnswer;

/// The operations every design implements (one module per design under
/// [`crate::design`] and [`crate::pitfalls`]).
pub(crate) trait Protocol {
    fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step;
    fn release(&mut self, cfg: &LockConfig, now: Millis) -> Step;
    /// Extend the lease; designs without a renewal command refuse with `NotHeld`.
    fn renew(&mut self, cfg: &LockConfig, now: Millis) -> Step;
    fn on_answer(&mut self, cfg: &LockConfig, node: usize, answer: Answer, now: Millis) -> Step;
    /// Whether an operation is in flight.
    fn busy(&self) -> bool;
    /// The current grant, if held.
    fn grant(&self) -> Option<&Grant>;
}

/// Where a single-node design is in its protocol; shared by the designs' modules.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) enum Phase {
    #[default]
    Idle,
    /// An acquire is in flight; `step` counts its commands, `seen` is a value read on
    /// the way (getset-timestamp), `outer` the hold a re-entry started from (kept if
    /// the re-entry fails).
    Acquiring {
        token: Text,
        started: Millis,
        step: u8,
        seen: Option<Text>,
        outer: Option<Grant>,
    },
    Held(Grant),
    Releasing {
        grant: Grant,
        step: u8,
    },
    Renewing {
        grant: Grant,
        started: Millis,
    },
}

impl Phase {
    pub(crate) fn acquiring(token: &str, started: Millis) -> Phase {
        Phase::Acquiring {
            token: Text::new(token),
            started,
            step: 0,
            seen: None,
            outer: None,
        }
    }

    pub(crate) fn busy(&self) -> bool {
        !matches!(self, Phase::Idle | Phase::Held(_))
    }

    pub(crate) fn grant(&self) -> Option<&Grant> {
        match self {
            Phase::Held(g) => Some(g),
            _ => None,
        }
    }

    /// Zero the times this phase keeps only to report them: a grant's lease end, and
    /// the start of an acquire or a renewal, from which only the lease end it reports is
    /// computed. No single-node design reads them again (Redlock keeps its own phase).
    pub(crate) fn forget_reported_values(&mut self) {
        match self {
            Phase::Idle => {}
            Phase::Acquiring { started, outer, .. } => {
                *started = 0;
                if let Some(g) = outer {
                    g.forget_lease_end();
                }
            }
            Phase::Held(grant) | Phase::Releasing { grant, .. } => grant.forget_lease_end(),
            Phase::Renewing { grant, started } => {
                grant.forget_lease_end();
                *started = 0;
            }
        }
    }

    /// Move every time this phase keeps by `by`, holding each at `floor` at the least
    /// (see [`LockMachine::shift_times`]).
    pub(crate) fn shift_times(&mut self, by: Millis, floor: Millis) {
        match self {
            Phase::Idle => {}
            Phase::Acquiring { started, outer, .. } => {
                *started = shifted(*started, by, floor);
                if let Some(g) = outer {
                    g.shift_lease_end(by, floor);
                }
            }
            Phase::Held(grant) | Phase::Releasing { grant, .. } => {
                grant.shift_lease_end(by, floor);
            }
            Phase::Renewing { grant, started } => {
                grant.shift_lease_end(by, floor);
                *started = shifted(*started, by, floor);
            }
        }
    }

    /// Enter `Held` with a fresh grant and report it.
    pub(crate) fn hold(&mut self, token: Text, lease_end: Option<Millis>, holds: u32) -> Step {
        let grant = Grant {
            token,
            lease_end,
            fence: None,
            holds,
        };
        *self = Phase::Held(grant.clone());
        Step::done(Outcome::Acquired(grant))
    }

    /// Back to idle with an outcome.
    pub(crate) fn idle(&mut self, outcome: Outcome) -> Step {
        *self = Phase::Idle;
        Step::done(outcome)
    }

    /// Release: when held, move to `Releasing` and send `command`; otherwise `NotHeld`.
    pub(crate) fn start_release(&mut self, command: impl FnOnce(&Grant) -> Command) -> Step {
        match std::mem::take(self) {
            Phase::Held(grant) => {
                let step = Step::send(command(&grant));
                *self = Phase::Releasing { grant, step: 0 };
                step
            }
            other => {
                *self = other;
                Step::done(Outcome::NotHeld)
            }
        }
    }

    /// Renew: when held, move to `Renewing` and send `command`; otherwise `NotHeld`.
    pub(crate) fn start_renew(
        &mut self,
        now: Millis,
        command: impl FnOnce(&Grant) -> Command,
    ) -> Step {
        match std::mem::take(self) {
            Phase::Held(grant) => {
                let step = Step::send(command(&grant));
                *self = Phase::Renewing {
                    grant,
                    started: now,
                };
                step
            }
            other => {
                *self = other;
                Step::done(Outcome::NotHeld)
            }
        }
    }

    /// The answer to a renewal whose success is `Int(1)`.
    pub(crate) fn finish_renew(&mut self, cfg: &LockConfig, answer: Answer) -> Step {
        self.finish_renew_when(cfg, answer, |reply| *reply == Reply::Int(1))
    }

    /// The answer to a renewal whose success is the reply `renewed` accepts.
    pub(crate) fn finish_renew_when(
        &mut self,
        cfg: &LockConfig,
        answer: Answer,
        renewed: impl FnOnce(&Reply) -> bool,
    ) -> Step {
        let Phase::Renewing { grant, started } = std::mem::take(self) else {
            return Step::default();
        };
        match answer {
            Ok(reply) if renewed(&reply) => {
                let lease_end = cfg.lease_end(started);
                *self = Phase::Held(Grant {
                    lease_end: Some(lease_end),
                    ..grant
                });
                Step::done(Outcome::Extended { lease_end })
            }
            Ok(_) => self.idle(Outcome::NotHeld),
            // No answer: we may still hold it; keep the old lease, which runs out by itself.
            Err(NoAnswer) => {
                *self = Phase::Held(grant);
                Step::done(Outcome::Unavailable { node: 0 })
            }
        }
    }

    /// A denied acquire: idle, or for a failed re-entry back to the outer hold, as a
    /// reentrant client keeps it (the lock is still ours in Redis as far as we know, and
    /// the watchdog goes on).
    pub(crate) fn deny(&mut self, denied: Denied) -> Step {
        match std::mem::take(self) {
            Phase::Acquiring {
                outer: Some(grant), ..
            } => {
                *self = Phase::Held(grant);
                Step::done(Outcome::Denied(denied))
            }
            _ => self.idle(Outcome::Denied(denied)),
        }
    }

    /// The answer to a release of a lock that counts holds, as Redisson's client does: a
    /// reply `last` accepts ended the hold; one `partly` accepts took one hold off
    /// whatever the count in Redis (the last one ends the hold; a key with holds we did
    /// not know of expires by itself); another reply says the lock is not ours. Without
    /// an answer the release may or may not have run: one hold is taken off.
    pub(crate) fn finish_counted_release(
        &mut self,
        answer: Answer,
        last: impl FnOnce(&Reply) -> bool,
        partly: impl FnOnce(&Reply) -> bool,
    ) -> Step {
        let Phase::Releasing { grant, .. } = std::mem::take(self) else {
            return Step::default();
        };
        let left = grant.holds.saturating_sub(1);
        let outcome = match answer {
            Ok(reply) if last(&reply) => return self.idle(Outcome::Released { holds_left: 0 }),
            Ok(reply) if partly(&reply) => Outcome::Released { holds_left: left },
            Ok(_) => return self.idle(Outcome::NotHeld),
            Err(NoAnswer) => Outcome::Unavailable { node: 0 },
        };
        if left == 0 {
            return self.idle(outcome);
        }
        *self = Phase::Held(Grant {
            holds: left,
            ..grant
        });
        Step::done(outcome)
    }

    /// The answer to a one-command release whose reply counts deleted keys.
    pub(crate) fn finish_release(&mut self, answer: Answer) -> Step {
        match answer {
            Ok(Reply::Int(n)) if n >= 1 => self.idle(Outcome::Released { holds_left: 0 }),
            Ok(_) => self.idle(Outcome::NotHeld),
            Err(NoAnswer) => self.idle(Outcome::Unavailable { node: 0 }),
        }
    }
}

/// Time `t` moved by `by`, and at least `floor`; a lease that never ends (`Millis::MAX`)
/// stays so.
pub(crate) fn shifted(t: Millis, by: Millis, floor: Millis) -> Millis {
    if t == Millis::MAX {
        return t;
    }
    t.saturating_add(by).max(floor)
}

/// Designs without a renewal command refuse `renew` with `NotHeld` and change nothing.
pub(crate) fn no_renewal() -> Step {
    Step::done(Outcome::NotHeld)
}

/// One client's lock state machine, for any design: the value the driver runs on real
/// connections and the model stores in its states.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockMachine {
    core: Core,
    options: options::Options,
    /// A renewal is outstanding.
    renewal_in_flight: bool,
    /// A renewal of the current hold got no answer under [`RenewalOnError::Stop`]: the
    /// watchdog renews this hold no more.
    renewal_stopped: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Core {
    NaiveSetnx(pitfalls::NaiveSetnx),
    ExistsSet(pitfalls::ExistsSet),
    SetnxExpire(pitfalls::SetnxExpire),
    GetsetTimestamp(pitfalls::GetsetTimestamp),
    SetPxDel(pitfalls::SetPxDel),
    SetPxGetDel(pitfalls::SetPxGetDel),
    GetExpireRenewal(pitfalls::GetExpireRenewal),
    LuaRelease(design::LuaRelease),
    Watchdog(design::Watchdog),
    Reentrant(design::Reentrant),
    Redlock(design::Redlock),
    Custom(design::Custom),
}

macro_rules! dispatch {
    ($core:expr, $p:ident => $body:expr) => {
        match $core {
            Core::NaiveSetnx($p) => $body,
            Core::ExistsSet($p) => $body,
            Core::SetnxExpire($p) => $body,
            Core::GetsetTimestamp($p) => $body,
            Core::SetPxDel($p) => $body,
            Core::SetPxGetDel($p) => $body,
            Core::GetExpireRenewal($p) => $body,
            Core::LuaRelease($p) => $body,
            Core::Watchdog($p) => $body,
            Core::Reentrant($p) => $body,
            Core::Redlock($p) => $body,
            Core::Custom($p) => $body,
        }
    };
}

impl LockMachine {
    /// A fresh, idle machine for the configured design.
    pub fn new(cfg: &LockConfig) -> Self {
        let core = match cfg.design {
            DesignId::NaiveSetnx => Core::NaiveSetnx(Default::default()),
            DesignId::ExistsSet => Core::ExistsSet(Default::default()),
            DesignId::SetnxExpire => Core::SetnxExpire(Default::default()),
            DesignId::GetsetTimestamp => Core::GetsetTimestamp(Default::default()),
            DesignId::SetPxDel => Core::SetPxDel(Default::default()),
            DesignId::SetPxGetDel => Core::SetPxGetDel(Default::default()),
            DesignId::GetExpireRenewal => Core::GetExpireRenewal(Default::default()),
            DesignId::LuaRelease => Core::LuaRelease(Default::default()),
            DesignId::Watchdog => Core::Watchdog(Default::default()),
            DesignId::Reentrant => Core::Reentrant(Default::default()),
            DesignId::Redlock => Core::Redlock(design::Redlock::new(cfg.masters)),
            DesignId::Custom => Core::Custom(Default::default()),
        };
        LockMachine {
            core,
            options: Default::default(),
            renewal_in_flight: false,
            renewal_stopped: false,
        }
    }

    fn core(&mut self) -> &mut dyn Protocol {
        dispatch!(&mut self.core, p => p as &mut dyn Protocol)
    }

    fn core_ref(&self) -> &dyn Protocol {
        dispatch!(&self.core, p => p as &dyn Protocol)
    }

    /// Start an acquire (or, for a reentrant lock while held, a re-entry). `token`
    /// must be unique to this attempt (the reentrant design keeps its first one).
    pub fn acquire(&mut self, cfg: &LockConfig, now: Millis, token: &str) -> Step {
        if self.busy() {
            return Step::done(Outcome::Denied(Denied::Held { pttl: None }));
        }
        if self.core_ref().grant().is_none() {
            // A fresh hold is renewed again; a re-entry keeps the hold's renewal as it is.
            self.renewal_stopped = false;
        }
        let step = self.core().acquire(cfg, now, token);
        self.after_core(cfg, step)
    }

    /// Release the lock (one hold of it, for the reentrant design).
    pub fn release(&mut self, cfg: &LockConfig, now: Millis) -> Step {
        if self.busy() {
            return Step::default();
        }
        self.core().release(cfg, now)
    }

    /// Extend the lease by the ttl, if still ours (the watchdog's renewal; `extend`).
    pub fn renew(&mut self, cfg: &LockConfig, now: Millis) -> Step {
        if self.busy() {
            return Step::default();
        }
        let step = self.core().renew(cfg, now);
        self.renewal_in_flight = !step.sends.is_empty();
        step
    }

    /// Whether `reply` to the command outstanding on `node` would give this machine the
    /// lock (asked of a copy; the machine itself is unchanged). The model and the
    /// real-run engine use it to tell getset-timestamp's winning GETSET, an acquire,
    /// from a write that displaces another client's lock.
    pub fn acquires_with(&self, cfg: &LockConfig, node: usize, reply: &Reply, now: Millis) -> bool {
        let step = self.clone().on_answer(cfg, node, Ok(reply.clone()), now);
        matches!(step.outcome, Some(Outcome::Acquired(_)))
    }

    /// Feed the answer to the command outstanding on `node`.
    pub fn on_answer(
        &mut self,
        cfg: &LockConfig,
        node: usize,
        answer: Answer,
        now: Millis,
    ) -> Step {
        if self.options.busy() {
            let (step, release) = self.options.on_answer(cfg, answer);
            if release {
                let step = self.core().release(cfg, now);
                return self.after_core(cfg, step);
            }
            return step;
        }
        let step = self.core().on_answer(cfg, node, answer, now);
        if step.outcome.is_some() && std::mem::take(&mut self.renewal_in_flight) {
            // A renewal that got no answer leaves the hold in place.
            if matches!(step.outcome, Some(Outcome::Unavailable { .. }))
                && cfg.renewal_on_error == RenewalOnError::Stop
            {
                self.renewal_stopped = true;
            }
        }
        self.after_core(cfg, step)
    }

    /// Route a core outcome through the options (WAIT, fencing) before reporting it.
    fn after_core(&mut self, cfg: &LockConfig, step: Step) -> Step {
        if self.options.abandoning() {
            if let Some(outcome) = &step.outcome {
                return Step::done(self.options.abandoned(outcome));
            }
            return step;
        }
        match step.outcome {
            Some(Outcome::Acquired(grant)) => self.options.start(cfg, grant),
            _ => step,
        }
    }

    /// Whether the watchdog should go on renewing: the design renews while held, a
    /// grant is held, and no renewal of this hold has stopped it
    /// ([`LockConfig::renewal_on_error`]). The driver's renewal task and the model's
    /// renewal action both ask this.
    pub fn renewing(&self, cfg: &LockConfig) -> bool {
        cfg.renews() && !self.renewal_stopped && self.grant().is_some()
    }

    /// Whether a command is outstanding.
    pub fn busy(&self) -> bool {
        self.options.busy() || self.core_ref().busy()
    }

    /// The grant, once acquired (options such as fencing done).
    pub fn grant(&self) -> Option<Grant> {
        if self.options.busy() {
            return None;
        }
        let mut grant = self.core_ref().grant()?.clone();
        grant.fence = self.options.fence();
        Some(grant)
    }

    /// Rename node `i` to `perm[i]` in the machine's per-node bookkeeping. Only Redlock
    /// keeps any, and its masters are interchangeable; the options (WAIT, fencing) talk to
    /// node 0 only, so a caller may rename nodes only when no option is on. Single-node
    /// designs accept the identity.
    pub fn permute_nodes(&mut self, perm: &[usize]) {
        match &mut self.core {
            Core::Redlock(r) => r.permute_nodes(perm),
            _ => assert!(
                perm.iter().enumerate().all(|(i, &p)| i == p),
                "a single-node design has no nodes to rename"
            ),
        }
    }

    /// Whether swapping nodes `a` and `b` ([`LockMachine::permute_nodes`] with the two
    /// exchanged) leaves the machine as it is. A single-node design has one node.
    pub fn swap_keeps(&self, a: usize, b: usize) -> bool {
        match &self.core {
            Core::Redlock(r) => r.swap_keeps(a, b),
            _ => a == b,
        }
    }

    /// Set what the machine keeps only to report it, and no later call reads, to one
    /// fixed value: the times (a grant's lease end; the start of an operation when only
    /// the lease end it reports is computed from it) are zeroed, and what a Redlock
    /// release will report once every master answered is set to one value: not held
    /// (rather than released), or after a failed acquire one fixed denial (rather than
    /// how many masters granted and whether quorum or validity was missing). Two
    /// machines that differ only there answer every later call with the same requests,
    /// and with outcomes that differ only in what they report: the model checker, whose
    /// client program reads no lease end and takes a release's answer as an answer and a
    /// denial as a denial, stores them as one state.
    pub fn forget_reported_values(&mut self) {
        match &mut self.core {
            Core::Redlock(r) => r.forget_reported_values(),
            Core::NaiveSetnx(p) => p.phase.forget_reported_values(),
            Core::ExistsSet(p) => p.phase.forget_reported_values(),
            Core::SetnxExpire(p) => p.phase.forget_reported_values(),
            Core::GetsetTimestamp(p) => p.phase.forget_reported_values(),
            Core::SetPxDel(p) => p.phase.forget_reported_values(),
            Core::SetPxGetDel(p) => p.phase.forget_reported_values(),
            Core::GetExpireRenewal(p) => p.phase.forget_reported_values(),
            Core::LuaRelease(p) => p.phase.forget_reported_values(),
            Core::Watchdog(p) => p.inner.phase.forget_reported_values(),
            Core::Reentrant(p) => p.phase.forget_reported_values(),
            Core::Custom(p) => p.phase.forget_reported_values(),
        }
        self.options.forget_reported_values();
    }

    /// Whether every answer the machine still waits for is read only for what it will
    /// report, so that the answer's content changes nothing but the report (and
    /// [`LockMachine::forget_reported_values`] sets that to one value): a Redlock
    /// release's answers, which say only whether a master deleted the key. Whatever they
    /// say, the machine sends the same, and its outcome differs only between released
    /// and not held, or in the detail of a denial.
    pub fn awaits_only_reported(&self) -> bool {
        matches!(&self.core, Core::Redlock(r) if r.awaits_only_reported())
    }

    /// Move every time the machine keeps (lease ends, the starts of operations) by `by`,
    /// holding each at `floor` at the least. The caller moves its clock by `by` too, so
    /// the machine answers every later call as before: it reads a kept time only against
    /// the clock it is given (`now`) or another kept time. `floor` must be low enough that
    /// a time below it answers every such comparison as `floor` does: a start at least a
    /// ttl before any clock it will be compared with, a lease end before it. The model
    /// checker keeps its clock at 0 this way when a scenario has no horizon
    /// (`model/src/relative_time.rs`). Not for `getset-timestamp`, whose acquire also
    /// keeps a value read from Redis that is a time (`seen`): the model refuses that
    /// design without a horizon.
    pub fn shift_times(&mut self, by: Millis, floor: Millis) {
        match &mut self.core {
            Core::Redlock(r) => r.shift_times(by, floor),
            Core::NaiveSetnx(p) => p.phase.shift_times(by, floor),
            Core::ExistsSet(p) => p.phase.shift_times(by, floor),
            Core::SetnxExpire(p) => p.phase.shift_times(by, floor),
            Core::GetsetTimestamp(p) => p.phase.shift_times(by, floor),
            Core::SetPxDel(p) => p.phase.shift_times(by, floor),
            Core::SetPxGetDel(p) => p.phase.shift_times(by, floor),
            Core::GetExpireRenewal(p) => p.phase.shift_times(by, floor),
            Core::LuaRelease(p) => p.phase.shift_times(by, floor),
            Core::Watchdog(p) => p.inner.phase.shift_times(by, floor),
            Core::Reentrant(p) => p.phase.shift_times(by, floor),
            Core::Custom(p) => p.phase.shift_times(by, floor),
        }
        self.options.shift_times(by, floor);
    }

    /// Whether the answer to the command outstanding on `node`, whatever it says and
    /// whenever it comes, would only be recorded: no request, no outcome, the clock
    /// not read, the machine still busy. Such answers of one operation commute with each
    /// other (a Redlock fan-out waits for every master, then decides on the set of
    /// answers). The model checker uses it to take them in one order.
    pub fn records_only(&self, node: usize) -> bool {
        match &self.core {
            Core::Redlock(r) => !self.options.busy() && r.records_only(node),
            _ => false,
        }
    }

    /// Forget everything (a crashed process comes back without its lock state).
    pub fn reset(&mut self, cfg: &LockConfig) {
        *self = LockMachine::new(cfg);
    }
}
