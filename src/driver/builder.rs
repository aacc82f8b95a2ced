//! [`LockBuilder`]: the lock's settings, checked, and its connections.

use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::clock::{Clock, ClockShift};
use super::connections::Connections;
use super::error::LockError;
use super::gate::PauseGate;
use super::lock::{Lock, RetryPolicy};
use super::node::{sentinel_key, Node, NodeTimeouts};
use crate::design::CustomLock;
use crate::design_id::DesignId;
use crate::machine::{LockConfig, Millis, RenewalOnError};

/// Whether `design` is one of the designs offered for use (the others are pitfalls).
pub(crate) fn is_safe(design: DesignId) -> bool {
    matches!(
        design,
        DesignId::LuaRelease | DesignId::Watchdog | DesignId::Reentrant | DesignId::Redlock
    )
}

/// Whether the lock has a renewal command the driver may send (the safe designs, the
/// hand-rolled renewal pitfall, and a custom lock with a renewal step).
pub(crate) fn extends(cfg: &LockConfig) -> bool {
    match &cfg.custom {
        Some(lock) => lock.renew.is_some(),
        None => is_safe(cfg.design) || cfg.design.renews(),
    }
}

/// Settings for a [`Lock`]. Start from a design ([`LockBuilder::lua_release`],
/// [`watchdog`](LockBuilder::watchdog), [`reentrant`](LockBuilder::reentrant),
/// [`redlock`](LockBuilder::redlock)) or from a team's own lock
/// ([`custom`](LockBuilder::custom)), set at least the key and the node(s), then
/// [`build`](LockBuilder::build).
///
/// Defaults: ttl 10 s, 3 retries 200 ms apart plus up to 100 ms of jitter, 250 ms per
/// command, 1 s to connect, no fencing, no `WAIT`, Redlock's drift (1 % of the ttl +
/// 2 ms) for `redlock` and none otherwise.
#[derive(Clone, Debug)]
pub struct LockBuilder {
    design: DesignId,
    allow_pitfall: bool,
    key: Option<String>,
    ttl: Duration,
    nodes: Vec<String>,
    /// Sentinel URLs and the service name, instead of `nodes`.
    sentinel: Option<(Vec<String>, String)>,
    retry_count: u32,
    retry_delay: Duration,
    retry_jitter: Duration,
    timeouts: NodeTimeouts,
    drift_factor: Option<f64>,
    drift_fixed: Option<Duration>,
    min_validity: Duration,
    fencing: bool,
    wait_replicas: u32,
    wait_timeout: Duration,
    renewal_on_error: RenewalOnError,
    watchdog_enabled: bool,
    seed: Option<u64>,
    client_id: Option<String>,
    gate: PauseGate,
    clock_shift: ClockShift,
    connections: Option<Connections>,
    /// The steps of design `custom`.
    custom: Option<Arc<CustomLock>>,
    renew_interval: Option<Duration>,
}

impl LockBuilder {
    /// A builder for one of the safe designs (`lua-release`, `watchdog`, `reentrant`,
    /// `redlock`). [`build`](Self::build) refuses the pitfall designs with
    /// [`LockError::PitfallDesign`]: those are reachable only through
    /// [`LockBuilder::pitfall`].
    pub fn new(design: DesignId) -> Self {
        LockBuilder {
            design,
            allow_pitfall: false,
            key: None,
            ttl: Duration::from_secs(10),
            nodes: Vec::new(),
            sentinel: None,
            retry_count: 3,
            retry_delay: Duration::from_millis(200),
            retry_jitter: Duration::from_millis(100),
            timeouts: NodeTimeouts::default(),
            drift_factor: None,
            drift_fixed: None,
            min_validity: Duration::ZERO,
            fencing: false,
            wait_replicas: 0,
            wait_timeout: Duration::from_millis(100),
            renewal_on_error: RenewalOnError::Stop,
            watchdog_enabled: true,
            seed: None,
            client_id: None,
            gate: PauseGate::new(),
            clock_shift: ClockShift::new(),
            connections: None,
            custom: None,
            renew_interval: None,
        }
    }

    /// A builder for any design, the pitfalls included (`crate::pitfalls`): for
    /// teaching, the model's counterexamples and the harness. [`LockBuilder::new`]
    /// refuses those designs.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), locklab::driver::LockError> {
    /// use locklab::driver::LockBuilder;
    /// use locklab::DesignId;
    /// let lock = LockBuilder::pitfall(DesignId::SetPxDel)
    ///     .key("demo")
    ///     .node("redis://127.0.0.1:6379")
    ///     .build()
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn pitfall(design: DesignId) -> Self {
        LockBuilder {
            allow_pitfall: true,
            ..LockBuilder::new(design)
        }
    }

    /// `lua-release`: `SET NX PX`, compare-and-delete release, explicit `extend`.
    pub fn lua_release() -> Self {
        LockBuilder::new(DesignId::LuaRelease)
    }

    /// `watchdog`: `lua-release` renewed every ttl/3 by a background task while held.
    pub fn watchdog() -> Self {
        LockBuilder::new(DesignId::Watchdog)
    }

    /// `reentrant`: Redisson's hash lock; the same [`Lock`] may acquire it again while
    /// holding it, and renews it every ttl/3 while held.
    pub fn reentrant() -> Self {
        LockBuilder::new(DesignId::Reentrant)
    }

    /// `redlock`: the lock on N independent masters (give N node URLs), majority quorum.
    pub fn redlock() -> Self {
        LockBuilder::new(DesignId::Redlock)
    }

    /// `custom`: a team's own lock, its acquire, release and optional renewal given as
    /// commands or Lua scripts with placeholders (`{key}`, `{token}`, `{ttl}`), each
    /// with the reply that means success — the steps a scenario's `[lock]` table
    /// gives, so the lock that `locklab check` verified is the one that runs. With a
    /// renewal step, a task renews the lease while held, every ttl/3 unless
    /// [`renew_interval`](Self::renew_interval) says otherwise.
    ///
    /// ```
    /// use locklab::design::custom::{CustomLock, Expected, LockStep};
    /// use locklab::driver::LockBuilder;
    ///
    /// const RELEASE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then \
    ///     return redis.call('del', KEYS[1]) end return 0";
    /// let lock = CustomLock::new(
    ///     LockStep::command(
    ///         ["SET", "{key}", "{token}", "NX", "PX", "{ttl}"],
    ///         Expected::Str("OK".into()),
    ///     ),
    ///     LockStep::script("release", RELEASE, ["{key}"], ["{token}"], Expected::Int(1)),
    /// );
    /// let builder = LockBuilder::custom(lock).key("orders").node("redis://127.0.0.1:6379");
    /// assert!(builder.config().is_ok());
    /// ```
    pub fn custom(lock: CustomLock) -> Self {
        LockBuilder {
            custom: Some(Arc::new(lock)),
            ..LockBuilder::new(DesignId::Custom)
        }
    }

    /// How often a renewing lock renews while held (default ttl/3, as Redisson's
    /// watchdog); must be shorter than the ttl.
    pub fn renew_interval(mut self, every: Duration) -> Self {
        self.renew_interval = Some(every);
        self
    }

    /// The design this builder builds.
    pub fn design(&self) -> DesignId {
        self.design
    }

    /// The lock key (required). The fencing counter lives at `{key}:fence`.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The lease time (whole milliseconds; at least 1 ms).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Add a node URL, e.g. `redis://127.0.0.1:6379`. One node, except for `redlock`,
    /// which takes N independent masters (1 to 16).
    pub fn node(mut self, url: impl Into<String>) -> Self {
        self.nodes.push(url.into());
        self
    }

    /// Add several node URLs.
    pub fn nodes<I, S>(mut self, urls: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.nodes.extend(urls.into_iter().map(Into::into));
        self
    }

    /// Run on the master of `service_name` as Redis Sentinel names it, instead of a
    /// fixed node URL: `sentinel_urls` are the sentinels (e.g.
    /// `redis://127.0.0.1:26379`), asked in order. For the designs that run on one
    /// master (every design but `redlock`, pitfalls, fencing and `WAIT` included).
    ///
    /// The lock asks the sentinels for the master when it connects, and again after a
    /// connection error, a timeout or a `READONLY` reply from the node it used (a
    /// master demoted by a failover): the command that failed so fails the operation
    /// (naming the master, or [`LockError::NoMaster`] naming each sentinel), and the
    /// next one — [`Lock::acquire`]'s next attempt — goes to the new master, with
    /// nothing for the caller to do. A lock taken on the old master is not carried over:
    /// what the promoted replica had not received is lost, which is the failover
    /// pitfall `WAIT` narrows.
    ///
    /// ```no_run
    /// # use locklab::driver::{LockBuilder, LockError};
    /// # async fn run() -> Result<(), LockError> {
    /// let lock = LockBuilder::watchdog()
    ///     .key("job:nightly")
    ///     .sentinel(["redis://10.0.0.1:26379", "redis://10.0.0.2:26379"], "mymaster")
    ///     .build()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn sentinel<I, S>(mut self, sentinel_urls: I, service_name: impl Into<String>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.sentinel = Some((
            sentinel_urls.into_iter().map(Into::into).collect(),
            service_name.into(),
        ));
        self
    }

    /// How many times [`Lock::acquire`] tries again after a failed attempt (0: once only).
    pub fn retry_count(mut self, retries: u32) -> Self {
        self.retry_count = retries;
        self
    }

    /// The pause between attempts, before jitter.
    pub fn retry_delay(mut self, delay: Duration) -> Self {
        self.retry_delay = delay;
        self
    }

    /// The most random extra pause added to each retry delay (uniform, from the
    /// builder's seeded RNG), so that contending clients do not retry in lockstep.
    pub fn retry_jitter(mut self, jitter: Duration) -> Self {
        self.retry_jitter = jitter;
        self
    }

    /// Seed the jitter RNG (a ChaCha8 generator) for reproducible runs; by default it is
    /// seeded from the OS. Lock tokens do not come from this RNG.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The per-command timeout: how long one node may take to answer one command.
    /// For Redlock keep it small against the ttl.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.command = timeout;
        self
    }

    /// How long connecting to a node may take.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.connect = timeout;
        self
    }

    /// The clock drift allowance as a fraction of the ttl (Redlock's default 0.01).
    pub fn drift_factor(mut self, factor: f64) -> Self {
        self.drift_factor = Some(factor);
        self
    }

    /// The fixed clock drift allowance added to the proportional one (Redlock's 2 ms).
    pub fn drift_fixed(mut self, drift: Duration) -> Self {
        self.drift_fixed = Some(drift);
        self
    }

    /// Redlock: the validity the holder needs for its work. An acquire that leaves no
    /// more than this (ttl − elapsed − drift) gives its grants back and fails
    /// (`Denied::NoValidity`), so a holder never starts work its lease cannot cover.
    /// Default: zero (any validity left).
    pub fn min_validity(mut self, needed: Duration) -> Self {
        self.min_validity = needed;
        self
    }

    /// Take a fencing token (`INCR {key}:fence` on node 0) with every acquire; the guard
    /// shows it as [`LockGuard::fencing_token`](super::LockGuard::fencing_token).
    pub fn fencing(mut self, on: bool) -> Self {
        self.fencing = on;
        self
    }

    /// After acquiring, `WAIT` for this many replicas (0: don't); fewer acks fail the
    /// attempt ([`LockError::NotReplicated`]) after releasing the grant.
    pub fn wait_replicas(mut self, replicas: u32) -> Self {
        self.wait_replicas = replicas;
        self
    }

    /// The `WAIT` timeout.
    pub fn wait_timeout(mut self, timeout: Duration) -> Self {
        self.wait_timeout = timeout;
        self
    }

    /// Whether `watchdog` and `reentrant` renew the lease while held (default on). Off is
    /// Redisson's `lock(leaseTime, unit)`: the lease then ends after the ttl whatever the
    /// holder is doing.
    pub fn watchdog_enabled(mut self, on: bool) -> Self {
        self.watchdog_enabled = on;
        self
    }

    /// What the renewal task of `watchdog` and `reentrant` does after a renewal that
    /// got no answer: stop renewing this hold (the default, as Redisson's watchdog) or
    /// try again at the next interval.
    pub fn renewal_on_error(mut self, on_error: RenewalOnError) -> Self {
        self.renewal_on_error = on_error;
        self
    }

    /// This client's id, the prefix of its lock tokens (`{id}:{attempt}`). It must be
    /// unique among the lock's clients; by default it is 128 random bits from the OS.
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// The pause gate the lock's operations and renewal task obey (see [`PauseGate`]).
    /// Each builder starts with a gate of its own; clones of a builder share it, so give
    /// each client its own gate when they must pause separately.
    pub fn pause_gate(mut self, gate: PauseGate) -> Self {
        self.gate = gate;
        self
    }

    /// The shift of the lock's clock (see [`ClockShift`]): a harness jumps it to emulate
    /// a jump of this client's clock. Each builder starts with a shift of its own, at 0.
    pub fn clock_shift(mut self, shift: ClockShift) -> Self {
        self.clock_shift = shift;
        self
    }

    /// Share node connections with the other locks built with `connections` (see
    /// [`Connections`]); by default a lock opens connections of its own. Ignored when
    /// the lock `WAIT`s for replicas.
    pub fn connections(mut self, connections: &Connections) -> Self {
        self.connections = Some(connections.clone());
        self
    }

    /// The [`LockConfig`] these settings give, checked.
    pub fn config(&self) -> Result<LockConfig, LockError> {
        let bad = |m: String| Err(LockError::Config(m));
        if self.design == DesignId::Custom {
            match &self.custom {
                None => {
                    return bad(
                        "design `custom` needs its steps: start from LockBuilder::custom(lock)"
                            .into(),
                    )
                }
                Some(lock) => {
                    if let Err(why) = lock.check() {
                        return bad(format!("custom lock: {why}"));
                    }
                }
            }
        } else if !self.allow_pitfall && !is_safe(self.design) {
            return Err(LockError::PitfallDesign {
                design: self.design,
            });
        }
        let key = match &self.key {
            Some(k) if !k.is_empty() => k.clone(),
            _ => return bad("the lock needs a key: call .key(...)".into()),
        };
        let ttl = self.ttl.as_millis();
        if ttl == 0 || ttl > u64::MAX as u128 / 2 {
            return bad(format!("ttl must be at least 1 ms, got {:?}", self.ttl));
        }
        let mut n = self.nodes.len();
        if let Some((sentinels, service)) = &self.sentinel {
            if n != 0 {
                return bad("give either node URLs or sentinels, not both".into());
            }
            if self.design.multi_master() {
                return bad(format!(
                    "`{}` runs on independent masters, not on one master behind Sentinel",
                    self.design
                ));
            }
            if sentinels.is_empty() {
                return bad("Sentinel needs at least one sentinel URL".into());
            }
            if service.is_empty() {
                return bad("Sentinel needs the service (master) name".into());
            }
            n = 1;
        }
        if n == 0 {
            return bad("the lock needs a node: call .node(\"redis://...\")".into());
        }
        if self.design.multi_master() {
            if n > 16 {
                return bad(format!("redlock supports 1 to 16 masters, got {n}"));
            }
        } else if n != 1 {
            return bad(format!(
                "`{}` runs on one node, got {n} node URLs",
                self.design
            ));
        }
        if self.timeouts.command.is_zero() || self.timeouts.connect.is_zero() {
            return bad("timeouts must be positive".into());
        }
        let Ok(ttl) = Millis::try_from(ttl).map(Millis::unsigned_abs) else {
            return bad(format!("the ttl ({ttl} ms) is too long"));
        };
        let mut cfg = LockConfig::new(self.design, key, ttl);
        cfg.custom.clone_from(&self.custom);
        if let Some(every) = self.renew_interval {
            let ms = every.as_millis();
            if ms == 0 || ms >= u128::from(cfg.ttl) {
                return bad(format!(
                    "the renewal interval must be at least 1 ms and shorter than the {} ms ttl, \
                     got {every:?}",
                    cfg.ttl
                ));
            }
            cfg.renew_every = u64::try_from(ms).ok();
        }
        cfg.masters = n;
        if let Some(f) = self.drift_factor {
            if !(0.0..1.0).contains(&f) {
                return bad(format!("drift factor must be in [0, 1), got {f}"));
            }
            // f is in [0, 1): the product is at most 1_000_000.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let ppm = (f * 1_000_000.0).round() as u64;
            cfg.drift_ppm = ppm;
        }
        if let Some(d) = self.drift_fixed {
            cfg.drift_ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        }
        if cfg.drift() >= cfg.ttl {
            return bad(format!(
                "the drift allowance ({} ms) leaves no validity of the {} ms ttl",
                cfg.drift(),
                cfg.ttl
            ));
        }
        if !self.min_validity.is_zero() {
            if !self.design.multi_master() {
                return bad(format!(
                    "min_validity is Redlock's; `{}` reports no validity",
                    self.design
                ));
            }
            let needed = u64::try_from(self.min_validity.as_millis()).unwrap_or(u64::MAX);
            if needed >= cfg.ttl - cfg.drift() {
                return bad(format!(
                    "min_validity ({needed} ms) is not below the {} ms ttl less the {} ms drift \
                     allowance: no acquire could hold",
                    cfg.ttl,
                    cfg.drift()
                ));
            }
            cfg.min_validity = needed;
        }
        cfg.fencing = self.fencing;
        cfg.wait_replicas = self.wait_replicas;
        cfg.wait_timeout_ms = u64::try_from(self.wait_timeout.as_millis()).unwrap_or(u64::MAX);
        cfg.renewal_on_error = self.renewal_on_error;
        cfg.watchdog = self.watchdog_enabled;
        Ok(cfg)
    }

    /// Check the settings and connect.
    ///
    /// A single-node lock connects now (through Sentinel: asks the sentinels for the
    /// master, then connects to it) and fails with the node's error
    /// ([`LockError::Unreachable`], [`LockError::Timeout`]) when it cannot. Redlock
    /// tries every master in parallel but builds even when some are down: it must run
    /// with a minority of masters unreachable, which reconnect on later operations.
    pub async fn build(self) -> Result<Lock, LockError> {
        let cfg = self.config()?;
        // WAIT counts the writes of its own connection and blocks it: no sharing then.
        let shared = self.connections.as_ref().filter(|_| cfg.wait_replicas == 0);
        let slot = |url: &str| match shared {
            Some(c) => c.slot(url, self.timeouts),
            None => Arc::default(),
        };
        let nodes = match &self.sentinel {
            Some((sentinels, service)) => {
                let slot = slot(&sentinel_key(sentinels, service));
                vec![Arc::new(Node::sentinel_with_slot(
                    0,
                    sentinels,
                    service,
                    self.timeouts,
                    slot,
                )?)]
            }
            None => self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, url)| Node::with_slot(i, url, self.timeouts, slot(url)).map(Arc::new))
                .collect::<Result<Vec<_>, _>>()?,
        };
        let mut set = tokio::task::JoinSet::new();
        for node in &nodes {
            let node = node.clone();
            set.spawn(async move { node.connect().await });
        }
        while let Some(joined) = set.join_next().await {
            let result = joined.map_err(|e| LockError::Internal(format!("connect task: {e}")))?;
            if let Err(e) = result {
                if !cfg.design.multi_master() {
                    return Err(e);
                }
            }
        }
        let rng = match self.seed {
            Some(seed) => ChaCha8Rng::seed_from_u64(seed),
            None => ChaCha8Rng::from_rng(&mut rand::rng()),
        };
        let client_id = self
            .client_id
            .unwrap_or_else(|| format!("{:032x}", rand::random::<u128>()));
        let policy = RetryPolicy {
            retries: self.retry_count,
            delay: self.retry_delay,
            jitter: self.retry_jitter,
        };
        let clock = Clock::new(self.clock_shift);
        Ok(Lock::new(
            cfg, nodes, policy, rng, client_id, self.gate, clock,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one() -> LockBuilder {
        LockBuilder::lua_release()
            .key("k")
            .node("redis://127.0.0.1:1")
    }

    #[test]
    fn the_plain_builder_refuses_pitfalls() {
        for d in DesignId::ALL {
            let r = LockBuilder::new(d)
                .key("k")
                .node("redis://127.0.0.1:1")
                .config();
            assert_eq!(is_safe(d), r.is_ok(), "{d}");
            if !is_safe(d) {
                assert!(matches!(r, Err(LockError::PitfallDesign { .. })));
            }
            assert!(LockBuilder::pitfall(d)
                .key("k")
                .node("redis://127.0.0.1:1")
                .config()
                .is_ok());
        }
    }

    #[test]
    fn settings_are_checked() {
        assert!(one().config().is_ok());
        assert!(LockBuilder::lua_release()
            .node("redis://x")
            .config()
            .is_err());
        assert!(LockBuilder::lua_release().key("k").config().is_err());
        assert!(one().node("redis://127.0.0.1:2").config().is_err());
        assert!(one().ttl(Duration::ZERO).config().is_err());
        assert!(one().drift_factor(1.5).config().is_err());
        let cfg = LockBuilder::redlock()
            .key("k")
            .nodes(["redis://a", "redis://b", "redis://c"])
            .ttl(Duration::from_millis(1000))
            .fencing(true)
            .config()
            .unwrap();
        assert_eq!((cfg.masters, cfg.drift(), cfg.fencing), (3, 12, true));
        let cfg = one()
            .drift_factor(0.1)
            .drift_fixed(Duration::from_millis(5))
            .ttl(Duration::from_millis(1000))
            .config()
            .unwrap();
        assert_eq!(cfg.drift(), 105);
    }

    #[test]
    fn sentinel_settings_are_checked() {
        let s = || LockBuilder::watchdog().key("k");
        let cfg = s()
            .sentinel(["redis://127.0.0.1:26379"], "m0")
            .config()
            .unwrap();
        assert_eq!(cfg.masters, 1);
        let no: [&str; 0] = [];
        for bad in [
            s().sentinel(no, "m0"),
            s().sentinel(["redis://127.0.0.1:26379"], ""),
            s().node("redis://127.0.0.1:1")
                .sentinel(["redis://127.0.0.1:26379"], "m0"),
            LockBuilder::redlock()
                .key("k")
                .sentinel(["redis://127.0.0.1:26379"], "m0"),
        ] {
            assert!(matches!(bad.config(), Err(LockError::Config(_))));
        }
        // the pitfalls, WAIT and fencing run behind Sentinel too
        let cfg = LockBuilder::pitfall(DesignId::NaiveSetnx)
            .key("k")
            .wait_replicas(1)
            .fencing(true)
            .sentinel(["redis://127.0.0.1:26379"], "m0")
            .config()
            .unwrap();
        assert!(cfg.fencing && cfg.wait_replicas == 1);
    }
}
