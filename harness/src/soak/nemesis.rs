//! The soak's nemesis: a seeded schedule of faults of the kinds the scenario enables,
//! one at a time, each aimed at the holder; and the observer of the lock key.
//!
//! Placement (detection power): a fault that strikes a client (a pause, a crash, a cut
//! link) waits for a client in its critical section and strikes it there; a failover
//! or a restart waits for a fresh acquire and strikes right after it, before the
//! replica caught up; a node clock jump strikes while a client holds. A fault that
//! lasts (pause, cut link, container pause) lasts 0.5 to 2.5 ttls, drawn from the seed,
//! so that about half outlast the lease. Quiet gaps of 1 to 3 ttls separate faults. A
//! target that does not show up within four ttls is drawn at random instead (the
//! fault is then recorded as not aimed).
//!
//! The faults, on the run engine's [`Nemesis`]:
//!
//! - `pause`: the client's [`PauseGate`](locklab::driver::PauseGate), and an adapter
//!   client's process stopped ([`Clients::pause`]) (scenario `pauses`);
//! - `crash`: the client's task is aborted, and the client comes back as a new process
//!   after the drawn length (`crashes`). Every other crash strikes a client in the
//!   middle of an acquire instead of a holder: its gate is closed first, so that it
//!   stops at its next send or reply (between two of the acquire's commands, or after
//!   one that ran), and it dies there;
//! - `failover`: the replicas catch up with the master (the run engine keeps them off
//!   the network between catch-ups: replication lags until then) and one ttl passes
//!   (the lock entry they copied expires, as if they had copied its deletion), then
//!   right after an acquire a replica is promoted, the slot's other replicas follow it,
//!   every client's link moves to it, and the old master is `docker kill`ed (the
//!   replicas are re-pointed first, as Sentinel does before it names the new master,
//!   so that one that must resynchronise does so while the holder still works); it
//!   comes back empty as a lagging replica for the next one
//!   (`failovers`, with `replicas` at least 1). When the scenario's acquires `WAIT` for
//!   `wait_replicas` replicas, that many replicas of each master stay on the network and
//!   replicate continuously (else no acquire would ever be acknowledged); the others
//!   lag as above. The promoted replica is then one that lags if any does (aimed: it
//!   missed the last acquire), or, with `promotion = "most-advanced"`, one in sync, as
//!   Sentinel would choose;
//! - `restart`: the serving master's Redis process restarts in place, empty, in
//!   milliseconds (`Node::restart_in_place`: the model's restart is instant, a new
//!   container takes about 450 ms, longer than a hold) (`restarts`); with several
//!   masters, one that holds the key of a holder on a bare majority, as for a clock
//!   jump (`key_target`);
//! - `partition`: the holder's link proxy to a master is cut for the drawn length, or the
//!   master's container is paused (`docker pause`: no client reaches it) (`partitions`);
//!   two more shapes of a partition, from the world rather than from the model: the
//!   model's partition keeps a request its client gave up on on the wire and delivers
//!   it after the heal (`DeliverLate`), and so do these:
//! - `late-request` (`partitions`): the link proxy holds its bytes (`LinkState::Hold`:
//!   the connections stay up, nothing is forwarded) for the drawn length, at least
//!   twice the driver's command timeout, so that the driver gives up on what it sent;
//!   then the link opens and what waited in it is delivered in order: the request runs
//!   after its client gave up, and nobody reads the reply. Aimed at the holder (its
//!   release or a renewal is held), or every fourth time at a client outside its
//!   critical section (its next acquire);
//! - `renewal-race` (`partitions`, where the lock renews): the holder's renewal is kept
//!   on the link while the holder releases, then delivered, so that it lands after the
//!   release. The driver renews and releases one at a time (the machine's mutex), so a
//!   renewal races the release only once the driver gave up on it, as in the model: the
//!   nemesis waits for a holder whose work spans one more renewal, half an interval
//!   before it is due has the link keep the next request back
//!   ([`LinkProxy::keep_next_request`]: taken off its connection, which drops, so the
//!   driver gives up on the renewal at once and goes on over a new connection), waits
//!   for the release, and sends the very bytes kept to the node over a fresh
//!   connection ([`KeptRequest::deliver`], as the run engine's `DeliverLate`);
//! - `clock-jump`: the serving master's wall clock jumps by `clock_jump × tick_ms`
//!   (libclockshift, [`NODE_CLOCK_EMULATION`](crate::run::nemesis::NODE_CLOCK_EMULATION))
//!   (`clock_jumps`). With several masters it strikes one that holds a holder's key,
//!   and waits (up to four ttls) for a holder that won a bare majority: the master
//!   losing the key leaves it a minority, and the rival has or can take the rest
//!   (`key_target`). With `getset-timestamp`, whose clients compare their own clocks'
//!   timestamps, it is a client's clock that jumps, as in the model: while one client
//!   holds, another client's clock jumps forward through its lock's
//!   [`ClockShift`](locklab::driver::ClockShift)
//!   ([`CLIENT_CLOCK_EMULATION`](crate::run::nemesis::CLIENT_CLOCK_EMULATION));
//! - `lost-reply`: the holder's link proxy to a master throws away a reply and closes
//!   the connection ([`LinkProxy::lose_reply`]): the command ran on the node, the
//!   driver sees the connection drop (`lost_replies`). Drawn: the holder's next reply
//!   (a renewal's or the release's) or the one after it (after a release, that of its
//!   next acquire: a client that just released tries again at once).
//!
//! - `split-brain`: prepared as a failover (the replicas catch up, the entry they
//!   copied expires), then right after an acquire the replica is promoted while the old
//!   master stays up: the holder's link still leads to the old master, every other
//!   client's to the promoted one, which lacks the holder's acquire (as clients on two
//!   sides of a partition, each side with a master). With two spare replicas or more,
//!   the replicas are on both sides, drawn (`old_side`): one up to all but one stay
//!   with the old master and keep replicating from it (`Nemesis::split_brain_with`:
//!   any spare replica, a former master that rejoined as one too), those in sync
//!   first, so that the old side keeps acknowledging `WAIT`;
//!   the promoted replica is one the sentinels reach (with `most-advanced`, the most
//!   advanced of those), and as many of the rest as acquires `WAIT` for replicate from
//!   it as they go. After the drawn length every link leads to the promoted node, the
//!   replicas of the old side follow it, and the old master is killed; it comes back
//!   empty as a lagging replica, and replicas in sync beyond `wait_replicas` lag again
//!   (`split_brains`, with `replicas` at least 1).
//!
//! - `slow-steps` (every scenario: the model lets each step of a client, and each leg
//!   of a command, take up to `timing.max_step_delay` ticks), beside the schedule above
//!   ([`slow_steps`]) so that they meet its faults, as in the model; after a quiet 1 to
//!   3 ttls, a client that is not in its critical section turns slow for 2 to 4 ttls — every passage through its
//!   [`PauseGate`](locklab::driver::PauseGate) (before each send, after each reply
//!   arrives — a fan-out's legs side by side, as the model's legs travel — before
//!   its read and its write) takes 0.5 to 0.9 of `max_step_delay × tick_ms` (at most
//!   the horizon), drawn once per stretch. With several masters the legs are uneven,
//!   as the model delays each leg on its own: the slow client's legs to a bare
//!   majority of the masters (drawn) take no time, and the other clients' legs only to
//!   the rest (`PauseGate::fast_legs`), so that when two of them race each wins its
//!   fast masters: the slow client a bare majority, its lease started there while the
//!   slow masters had not answered, its rival the rest. Its next hold is slow from
//!   the acquire on, within the model's bound (an emulation of a loaded machine or a
//!   slow network, [`SLOW_STEPS_EMULATION`]). The other clients are as slow until it
//!   acquires (else a rival that just released, trying again at once, always wins),
//!   then fast again: a slow holder among fast rivals; a hold that began slow stays
//!   slow to its end (within 4 more ttls). Aimed: it acquired. Where the
//!   lock has a renewal task, half the stretches (drawn) leave the renewals on time
//!   (`PauseGate::slow_operations`): the model delays each step on its own, so a
//!   holder's read can lag while its watchdog renews on time.
//!
//! - `clock-drift` (scenario `timing.node_drift`): every master's wall clock runs fast,
//!   in one-tick steps, never two steps of one node within `horizon / node_drift` ticks
//!   of real time (the model's bound, each node on its own)
//!   (libclockshift, [`NODE_DRIFT_EMULATION`](crate::run::nemesis::NODE_DRIFT_EMULATION));
//!   it runs beside the schedule above ([`drift`]) for the whole soak. Its steps are
//!   aimed (`drift-step`): a node that may step again waits, up to as long again, for a
//!   holder (a slow one, with slow clients) that won a bare majority with its oldest
//!   key there, and steps then: that key expires a tick early while the holder still
//!   counts on it.
//!
//! Every fault kind of a scenario is injected, except that failovers of a scenario with
//! sentinels are scripted here, not left to Sentinel ([`not_injected`]).
//!
//! [`LinkProxy::lose_reply`]: crate::run::proxy::LinkProxy::lose_reply
//! [`LinkProxy::keep_next_request`]: crate::run::proxy::LinkProxy::keep_next_request
//! [`KeptRequest::deliver`]: crate::run::proxy::KeptRequest::deliver

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use locklab::DesignId;
use locklab_model::fault::FaultKind;
use locklab_model::scenario::{Promotion, Scenario};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::Mutex;

use super::fleet::Clients;
use super::{FaultRecord, Recorder, SoakOptions};
use crate::run::history::Event;
use crate::run::nemesis::{Nemesis, Strike};
use crate::run::RunError;

/// A kind of fault the soak injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Pause,
    Crash,
    Failover,
    Restart,
    Partition,
    ContainerPause,
    ClockJump,
    LostReply,
    SplitBrain,
    /// A shape of a partition: the link holds its bytes past the driver's timeout.
    LateRequest,
    /// A shape of a partition: a renewal kept on the link lands after the release.
    RenewalRace,
    /// Not drawn by the schedule: [`slow_steps`] runs beside it.
    SlowSteps,
    /// Not drawn by the schedule: [`drift`] runs beside it.
    ClockDrift,
    /// One step of [`drift`], aimed at a holder.
    DriftStep,
}

impl Kind {
    /// The name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Pause => "pause",
            Kind::Crash => "crash",
            Kind::Failover => "failover",
            Kind::Restart => "restart",
            Kind::Partition => "partition",
            Kind::ContainerPause => "container-pause",
            Kind::ClockJump => "clock-jump",
            Kind::LostReply => "lost-reply",
            Kind::SplitBrain => "split-brain",
            Kind::LateRequest => "late-request",
            Kind::RenewalRace => "renewal-race",
            Kind::SlowSteps => "slow-steps",
            Kind::ClockDrift => "clock-drift",
            Kind::DriftStep => "drift-step",
        }
    }
}

/// The fault kinds a scenario enables, as the soak injects them (`slow_steps`: with
/// slow clients).
pub fn kinds(scenario: &Scenario, slow_steps: bool) -> Vec<Kind> {
    let f = &scenario.faults;
    let mut kinds = Vec::new();
    if f[FaultKind::Pause] > 0 {
        kinds.push(Kind::Pause);
    }
    if f[FaultKind::Crash] > 0 {
        kinds.push(Kind::Crash);
    }
    if f[FaultKind::LostReply] > 0 {
        kinds.push(Kind::LostReply);
    }
    if f[FaultKind::Failover] > 0 && scenario.topology.replicas > 0 {
        kinds.push(Kind::Failover);
    }
    if f[FaultKind::SplitBrain] > 0 && scenario.topology.replicas > 0 {
        kinds.push(Kind::SplitBrain);
    }
    if f[FaultKind::Restart] > 0 {
        kinds.push(Kind::Restart);
    }
    if f[FaultKind::Partition] > 0 {
        kinds.push(Kind::Partition);
        kinds.push(Kind::ContainerPause);
        kinds.push(Kind::LateRequest);
        if crate::run::lock_config(scenario, scenario.timing.tick_ms).renews() {
            kinds.push(Kind::RenewalRace);
        }
    }
    if f[FaultKind::ClockJump] > 0 {
        kinds.push(Kind::ClockJump);
    }
    // Step delays are part of every scenario's timing, not a declared fault.
    if slow_steps {
        kinds.push(Kind::SlowSteps);
    }
    if scenario.timing.node_drift > 0 {
        kinds.push(Kind::ClockDrift);
    }
    kinds
}

/// How a soak's slow steps are made, named in the docs and the fault records.
pub const SLOW_STEPS_EMULATION: &str = "emulated: the client's pause gate delays every send, every reply it reads, and its own read and write";

/// The scenario's fault kinds a soak does not inject.
pub fn not_injected(scenario: &Scenario) -> Vec<&'static str> {
    let mut out = Vec::new();
    if scenario.topology.sentinels > 0 {
        out.push("Sentinel's own promotion (a soak scripts its failovers; sentinels are for replay and chaos)");
    }
    out
}

/// The nemesis' schedule settings.
#[derive(Clone, Debug)]
pub struct Plan {
    kinds: Vec<Kind>,
    seed: u64,
    ttl_ms: u64,
    clock_jump_ms: i64,
    /// The lock key the clients use.
    key: String,
    masters: usize,
    replicas: usize,
    /// Replicas per master that replicate continuously (the scenario's `wait_replicas`).
    in_sync: usize,
    /// Sentinel's rule: only a replica in sync may be promoted.
    most_advanced: bool,
    /// Clock jumps strike a client's clock (the design compares client timestamps).
    client_clocks: bool,
    first_fault: Option<Duration>,
    lengths: (f64, f64),
    /// The range of slow steps, as fractions of `step_delay_ms`.
    step_fractions: (f64, f64),
    /// The model's bound on one step or leg, in ms (`max_step_delay × tick_ms`, at most
    /// the horizon).
    step_delay_ms: u64,
    /// The lock has a renewal task (a watchdog, or a custom lock's renewal step).
    renews: bool,
    /// How often it renews, in ms.
    renew_every_ms: u64,
    /// A holder's work in its critical section, in ms.
    work_ms: u64,
    /// How long the driver waits for a command before it gives up on it.
    command_timeout: Duration,
    /// Slow clients run beside the schedule.
    slow_clients: bool,
    tick_ms: u64,
    /// The least time between two clock-drift steps of one node: `horizon / node_drift`
    /// ticks (the whole horizon when the scenario has no drift; a ttl in place of the
    /// horizon when it has none).
    drift_every: Duration,
}

impl Plan {
    /// The schedule of `scenario` under `options`.
    pub fn of(scenario: &Scenario, options: &SoakOptions) -> Plan {
        let tick_ms = scenario.timing.tick_ms;
        let ttl_ms = u64::from(scenario.timing.ttl)
            .saturating_mul(tick_ms)
            .max(1);
        let jump = u64::from(scenario.timing.clock_jump).saturating_mul(tick_ms);
        Plan {
            kinds: kinds(scenario, options.slow_steps),
            seed: options.seed,
            ttl_ms,
            clock_jump_ms: i64::try_from(jump).unwrap_or(i64::MAX),
            key: super::client::KEY.to_string(),
            masters: scenario.topology.masters as usize,
            replicas: scenario.topology.replicas as usize,
            in_sync: (scenario.wait_replicas as usize).min(scenario.topology.replicas as usize),
            most_advanced: scenario.topology.promotion == Promotion::MostAdvanced,
            client_clocks: scenario.design == DesignId::GetsetTimestamp,
            first_fault: options.first_fault,
            lengths: options.fault_ttls,
            step_fractions: options.step_delays,
            step_delay_ms: u64::from(
                scenario
                    .timing
                    .horizon
                    .map_or(scenario.timing.max_step_delay, |h| {
                        scenario.timing.max_step_delay.min(h)
                    }),
            )
            .saturating_mul(tick_ms),
            renews: crate::run::lock_config(scenario, tick_ms).renews(),
            renew_every_ms: crate::run::lock_config(scenario, tick_ms).renew_interval(),
            work_ms: u64::from(scenario.timing.work).saturating_mul(tick_ms),
            command_timeout: super::client::Spec::command_timeout(ttl_ms),
            slow_clients: options.slow_steps,
            tick_ms,
            drift_every: Duration::from_millis(
                (u64::from(scenario.timing.horizon.unwrap_or(scenario.timing.ttl))
                    .saturating_mul(tick_ms)
                    / u64::from(scenario.timing.node_drift.max(1)))
                .max(1),
            ),
        }
    }

    /// The schedule aimed at the key a library writes (an adapter's, which may carry
    /// the library's prefix) instead of the driver's.
    pub fn with_key(mut self, key: &str) -> Plan {
        self.key = key.to_string();
        self
    }

    /// Redlock's majority of the masters: N/2 + 1.
    fn quorum(&self) -> usize {
        self.masters / 2 + 1
    }

    /// The replicas that replicate continuously from the start.
    pub fn in_sync_replicas(&self) -> Vec<usize> {
        (0..self.masters)
            .flat_map(|m| (0..self.in_sync).map(move |j| self.masters + m * self.replicas + j))
            .collect()
    }

    /// `lo..hi` ttls, drawn.
    fn ttls(&self, rng: &mut ChaCha8Rng, lo: f64, hi: f64) -> Duration {
        let k = if hi > lo {
            rng.random_range(lo..hi)
        } else {
            lo
        };
        Duration::from_secs_f64(self.ttl_ms as f64 / 1000.0 * k.max(0.0))
    }
}

/// Sleep `d`, or less when the soak stops; whether it stopped.
async fn sleep_or_stop(d: Duration, stop: &AtomicBool) -> bool {
    let end = tokio::time::Instant::now() + d;
    loop {
        if stop.load(Ordering::SeqCst) {
            return true;
        }
        let now = tokio::time::Instant::now();
        if now >= end {
            return false;
        }
        tokio::time::sleep((end - now).min(Duration::from_millis(20))).await;
    }
}

/// The target of a fault: a client in its critical section (`Some`, aimed) within
/// `limit`, chosen among them.
async fn holder(
    rec: &Recorder,
    rng: &mut ChaCha8Rng,
    limit: Duration,
    stop: &AtomicBool,
) -> Option<usize> {
    first_of(rng, limit, stop, || {
        rec.inside().into_iter().map(|(c, _)| c).collect()
    })
    .await
}

/// The target of a crash mid-acquire: a client in the middle of an acquire attempt
/// (`Some`, aimed) within `limit`.
async fn acquirer(
    rec: &Recorder,
    rng: &mut ChaCha8Rng,
    limit: Duration,
    stop: &AtomicBool,
) -> Option<usize> {
    first_of(rng, limit, stop, || rec.acquiring()).await
}

/// A client outside its critical section (`Some`, aimed) within `limit`: its next
/// request is an acquire's.
async fn outsider(
    rec: &Recorder,
    rng: &mut ChaCha8Rng,
    limit: Duration,
    stop: &AtomicBool,
) -> Option<usize> {
    let (_, holding) = rec.holding();
    first_of(rng, limit, stop, || {
        let inside = rec.inside();
        (0..holding.len())
            .filter(|c| inside.iter().all(|(i, _)| i != c))
            .collect()
    })
    .await
}

/// A holder whose hold spans one more renewal (`Some`, aimed) within `limit`: once one
/// shows up, wait until its last renewal before the end of its work is half an
/// interval away. The renewal is due one interval after another from the acquire.
async fn renewal_due(
    plan: &Plan,
    rec: &Recorder,
    limit: Duration,
    stop: &AtomicBool,
) -> Option<usize> {
    let every = plan.renew_every_ms.max(1) as f64;
    let end = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < end && !stop.load(Ordering::SeqCst) {
        let now = rec.ms();
        for (c, since) in rec.inside() {
            // The last renewal due while it still works (a quarter interval spare).
            let work_end = since + plan.work_ms as f64 - every / 4.0;
            let k = ((work_end - since) / every).floor();
            let due = since + k * every;
            if k >= 1.0 && due - every / 2.0 > now {
                let wait = Duration::from_secs_f64((due - every / 2.0 - now) / 1000.0);
                if sleep_or_stop(wait, stop).await {
                    return None;
                }
                return rec
                    .inside()
                    .iter()
                    .any(|&(i, s)| i == c && s == since)
                    .then_some(c);
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    None
}

/// When a request kept back lands.
#[derive(Clone, Copy, Debug)]
enum Landing {
    /// Once this long has passed, at a moment when a later hold has just entered its
    /// critical section: another client's, or the sender's own next one (a late release
    /// or renewal deletes or extends that hold's lock). A client that releases and at
    /// once acquires again is often the first to get the lock back, and may keep it for
    /// the rest of the soak while the others back off: its own next hold is then the
    /// only one its late request can land under. Early in the hold, so that a lock the
    /// request deletes stays deleted while the others retry (a quarter to half a tick)
    /// and the holder still works: landed in a hold's last milliseconds, it deletes a
    /// lock nobody gets to take beside it.
    AnotherInside(Duration),
    /// Once this long has passed, at a moment when no client is in its critical section
    /// (a late acquire takes the lock for nobody).
    NobodyInside(Duration),
    /// Once the client that sent it has released.
    AfterRelease,
}

/// Client `c`'s next request on its link to master slot `m` is kept back, its
/// connection silent for `silent` and then dropped (`LinkProxy::keep_next_request`):
/// the driver gives up on it and goes on over a new connection. At its `landing`
/// (waited for up to `limit`), the request kept is delivered over a fresh connection:
/// it runs after its client gave up, and nobody reads the reply. What was done, and
/// whether it landed as aimed.
#[allow(clippy::too_many_arguments)]
async fn keep_and_deliver(
    plan: &Plan,
    (cluster, clients): (&Mutex<Nemesis>, &Clients),
    rec: &Recorder,
    (c, m): (usize, usize),
    silent: Duration,
    landing: Landing,
    limit: Duration,
    stop: &AtomicBool,
) -> (String, bool) {
    let keep = Strike::KeepRequest {
        client: c,
        slot: m,
        silent,
    };
    if let Err(e) = strike(cluster, clients, keep).await {
        return (format!("the link could not keep a request: {e}"), false);
    }
    let link = cluster.lock().await.link_name(c, m);
    let end = tokio::time::Instant::now() + limit;
    // The request kept, and its client's state then.
    let mut kept = None;
    while kept.is_none() && tokio::time::Instant::now() < end && !stop.load(Ordering::SeqCst) {
        let inside = rec.inside().iter().any(|(i, _)| *i == c);
        let (at, holding) = rec.holding();
        let sent = match (inside, holding[c].0) {
            (true, _) => "sent in its critical section",
            (false, true) => "sent while it acquired or released",
            (false, false) => "sent between its attempts",
        };
        kept = cluster
            .lock()
            .await
            .link(c, m)
            .kept_request()
            .map(|name| (name, sent, holding[c].1, at));
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let Some((name, sent, generation, kept_at)) = kept else {
        // Nothing to keep: the link must not keep a later request.
        let _ = cluster.lock().await.link(c, m).take_kept();
        return (format!("{link} saw no request to keep"), false);
    };
    let kept_when = tokio::time::Instant::now();
    let end = end.max(kept_when + limit);
    let landed = loop {
        if tokio::time::Instant::now() >= end || stop.load(Ordering::SeqCst) {
            break None;
        }
        let (now, holding) = rec.holding();
        let inside = rec.inside();
        let due = |after: Duration| tokio::time::Instant::now() >= kept_when + after;
        let at = match landing {
            Landing::AnotherInside(after) => {
                // Entered within the first quarter of its work.
                let fresh = |since: f64| now - since <= (plan.work_ms as f64 / 4.0).max(1.0);
                let fresh_others = inside.iter().any(|&(i, s)| i != c && fresh(s));
                let own_next =
                    holding[c].1 != generation && inside.iter().any(|&(i, s)| i == c && fresh(s));
                match (due(after), fresh_others, own_next) {
                    (true, true, _) => Some(format!("under another holder at {now:.0} ms")),
                    (true, false, true) => Some(format!(
                        "under client{}'s own next hold at {now:.0} ms",
                        c + 1
                    )),
                    _ => None,
                }
            }
            Landing::NobodyInside(after) => (due(after) && inside.is_empty())
                .then(|| format!("while nobody held, at {now:.0} ms")),
            Landing::AfterRelease => (holding[c].1 != generation)
                .then(|| format!("after client{} released, at {now:.0} ms", c + 1)),
        };
        if at.is_some() {
            break at;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    let request = cluster.lock().await.link(c, m).take_kept();
    let timeout = plan.command_timeout.max(Duration::from_millis(500));
    let delivered = match request {
        Some(request) => request.deliver(timeout).await,
        None => Err(std::io::Error::other("nothing kept")),
    };
    let gave_up = if silent.is_zero() {
        "its connection dropped at once".to_string()
    } else {
        format!(
            "its connection silent for {} ms (the command timeout is {} ms), then dropped",
            silent.as_millis(),
            plan.command_timeout.as_millis()
        )
    };
    let outcome = match (&delivered, &landed) {
        (Ok(()), Some(at)) => format!("delivered {at}: it ran, its reply read by nobody"),
        (Ok(()), None) => {
            "delivered at the end of the wait: it ran, its reply read by nobody".to_string()
        }
        (Err(e), _) => format!("not delivered ({e}): lost with its connection"),
    };
    let what = format!(
        "{link} kept {name} ({sent}) back at {kept_at:.0} ms, {gave_up}: the client gave up on it; {outcome}"
    );
    (what, delivered.is_ok() && landed.is_some())
}

/// One of the clients `candidates` lists, polled every millisecond for `limit`.
async fn first_of(
    rng: &mut ChaCha8Rng,
    limit: Duration,
    stop: &AtomicBool,
    candidates: impl Fn() -> Vec<usize>,
) -> Option<usize> {
    let end = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < end && !stop.load(Ordering::SeqCst) {
        if let Some(&c) = candidates().choose(rng) {
            return Some(c);
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    None
}

/// The master slots whose lock key client `h` owns in `looks`, with their PTTLs.
fn held_by(looks: &[Option<(Option<usize>, i64)>], h: usize) -> Vec<(usize, i64)> {
    looks
        .iter()
        .enumerate()
        .filter_map(|(m, look)| match look {
            Some((Some(o), pttl)) if *o == h => Some((m, *pttl)),
            _ => None,
        })
        .collect()
}

/// Where a node fault at the holder's key (a clock jump, a restart) strikes, with
/// several masters: a holder and a master slot whose key it owns (`None` when no
/// holder showed up within `limit`). A holder that won a bare majority is waited for,
/// up to `limit`: one of its masters losing the key leaves it a minority, and the
/// rival has the rest or can take them. Failing that, a master of the last holder seen.
async fn key_target(
    plan: &Plan,
    cluster: &Mutex<Nemesis>,
    rec: &Recorder,
    lookout: &mut Lookout,
    rng: &mut ChaCha8Rng,
    limit: Duration,
    stop: &AtomicBool,
) -> Option<(usize, usize)> {
    let end = tokio::time::Instant::now() + limit;
    let mut last_seen = None;
    while tokio::time::Instant::now() < end && !stop.load(Ordering::SeqCst) {
        let holders = rec.inside();
        if !holders.is_empty() {
            let looks = lookout.looks(cluster, plan.masters, &plan.key).await;
            for (h, _) in holders {
                let slots = held_by(&looks, h);
                let Some(&(m, _)) = slots.choose(rng) else {
                    continue;
                };
                if slots.len() == plan.quorum() {
                    return Some((h, m));
                }
                last_seen = Some((h, m));
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    last_seen
}

/// Wait for an acquire after now (within `limit`): the client that acquired.
async fn fresh_acquire(rec: &Recorder, limit: Duration, stop: &AtomicBool) -> Option<usize> {
    let since = rec.ms();
    let end = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < end && !stop.load(Ordering::SeqCst) {
        if let Some((c, at)) = rec.last_acquire() {
            if at >= since {
                return Some(c);
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    None
}

/// Record a fault that began at `start` and ends now.
fn record(
    rec: &Recorder,
    kind: Kind,
    client: Option<usize>,
    start: f64,
    what: String,
    aimed: bool,
) {
    rec.fault(FaultRecord {
        kind: kind.as_str().into(),
        client,
        start_ms: start,
        end_ms: rec.ms(),
        what,
        aimed,
    });
}

/// Run the schedule until the soak stops; a fault in progress then ends at once.
pub async fn run(
    plan: Plan,
    cluster: Arc<Mutex<Nemesis>>,
    clients: Arc<Clients>,
    rec: Arc<Recorder>,
    stop: Arc<AtomicBool>,
) -> Result<(), RunError> {
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed);
    // Per master slot: the replicas that may still be promoted.
    let mut spare: Vec<Vec<usize>> = (0..plan.masters)
        .map(|m| {
            (0..plan.replicas)
                .map(|j| plan.masters + m * plan.replicas + j)
                .collect()
        })
        .collect();
    let first = plan
        .first_fault
        .unwrap_or_else(|| plan.ttls(&mut rng, 1.0, 3.0));
    if sleep_or_stop(first, &stop).await {
        return Ok(());
    }
    let limit = Duration::from_millis(plan.ttl_ms.saturating_mul(4)) + Duration::from_secs(1);
    let n_clients = clients.len();
    let mut lookout = Lookout::of(&rec);
    loop {
        let available: Vec<Kind> = plan
            .kinds
            .iter()
            .copied()
            .filter(|k| match k {
                Kind::Failover | Kind::SplitBrain => spare.iter().any(|s| !s.is_empty()),
                // Not drawn: they run beside the schedule.
                Kind::ClockDrift | Kind::DriftStep | Kind::SlowSteps => false,
                _ => true,
            })
            .collect();
        let Some(&kind) = available.choose(&mut rng) else {
            // Nothing to inject: the clients run undisturbed to the end.
            while !sleep_or_stop(Duration::from_secs(1), &stop).await {}
            return Ok(());
        };
        let length = plan.ttls(&mut rng, plan.lengths.0, plan.lengths.1);
        let random_client = rng.random_range(0..n_clients);
        let slot = rng.random_range(0..plan.masters);
        match kind {
            Kind::Pause | Kind::Crash | Kind::Partition => {
                // Every other crash strikes mid-acquire: between the acquire's commands,
                // or after one that ran, is where a multi-command acquire breaks.
                let mid_acquire = kind == Kind::Crash && rng.random_bool(0.5);
                let target = if mid_acquire {
                    acquirer(&rec, &mut rng, limit, &stop).await
                } else {
                    holder(&rec, &mut rng, limit, &stop).await
                };
                let c = target.unwrap_or(random_client);
                let start = rec.ms();
                let what = match kind {
                    Kind::Pause => {
                        let what = strike(&cluster, &clients, Strike::Pause(c)).await?;
                        rec.push(Event::Pause { client: c });
                        sleep_or_stop(length, &stop).await;
                        strike(&cluster, &clients, Strike::Resume(c)).await?;
                        rec.push(Event::Resume { client: c });
                        what
                    }
                    Kind::Crash => {
                        // At once: an acquire lasts about a round trip per command.
                        strike(&cluster, &clients, Strike::Crash(c)).await?;
                        sleep_or_stop(length, &stop).await;
                        // Not a fault: the fleet keeps its clients running.
                        clients.restart(c);
                        format!(
                            "client{} crashed{}, back as a new process",
                            c + 1,
                            match (mid_acquire, target.is_some()) {
                                (true, true) => " in the middle of an acquire",
                                (false, true) => " in its critical section",
                                _ => "",
                            }
                        )
                    }
                    _ => {
                        let link = (c, slot);
                        let cut = strike(&cluster, &clients, Strike::cut(link)).await?;
                        sleep_or_stop(length, &stop).await;
                        strike(&cluster, &clients, Strike::heal(link)).await?;
                        cut
                    }
                };
                record(&rec, kind, Some(c), start, what, target.is_some());
            }
            Kind::ContainerPause => {
                let target = holder(&rec, &mut rng, limit, &stop).await;
                let n = cluster.lock().await.serving(slot);
                let start = rec.ms();
                strike(&cluster, &clients, Strike::Freeze(n)).await?;
                let stopped = sleep_or_stop(length, &stop).await;
                strike(&cluster, &clients, Strike::Thaw(n)).await?;
                record(
                    &rec,
                    kind,
                    None,
                    start,
                    format!(
                        "docker pause node{}{}",
                        n + 1,
                        if stopped { " (ended by the stop)" } else { "" }
                    ),
                    target.is_some(),
                );
            }
            Kind::LostReply => {
                // The holder's next reply (a renewal's, or the release's), or by turns
                // the one after it (its next acquire's, once it released).
                let target = holder(&rec, &mut rng, limit, &stop).await;
                let c = target.unwrap_or(random_client);
                let k = rng.random_range(1..=2u32);
                let start = rec.ms();
                let lose = Strike::LoseReply {
                    client: c,
                    slot,
                    nth: k,
                };
                strike(&cluster, &clients, lose).await?;
                let link = cluster.lock().await.link_name(c, slot);
                let end = tokio::time::Instant::now() + limit;
                let lost = loop {
                    let lost = cluster.lock().await.link(c, slot).lost_reply();
                    if lost.is_some() || stop.load(Ordering::SeqCst) {
                        break lost;
                    }
                    if tokio::time::Instant::now() >= end {
                        break None;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                };
                let nth = if k == 1 { "next reply" } else { "second reply" };
                let what = match lost {
                    Some(command) => {
                        format!("{link} lost its {nth}, to {command}; connection closed")
                    }
                    None => {
                        // Nothing came back in time: the link must not lose a later reply.
                        strike(&cluster, &clients, Strike::heal((c, slot))).await?;
                        format!("{link} saw no {nth} to lose")
                    }
                };
                record(&rec, kind, Some(c), start, what, target.is_some());
            }
            Kind::ClockJump if plan.client_clocks => {
                // While one client holds, another's clock jumps ahead: its lock's
                // timestamp looks expired to it.
                let target = holder(&rec, &mut rng, limit, &stop).await;
                let others: Vec<usize> = (0..n_clients).filter(|c| Some(*c) != target).collect();
                let c = others.choose(&mut rng).copied().unwrap_or(random_client);
                let start = rec.ms();
                let jump = Strike::ClientClockJump {
                    client: c,
                    ms: plan.clock_jump_ms,
                };
                let what = strike(&cluster, &clients, jump).await?;
                record(&rec, kind, Some(c), start, what, target.is_some());
            }
            Kind::ClockJump | Kind::Restart => {
                // A node fault at a holder's key. A restart is in place, in
                // milliseconds, as the model's is instant: a new container would take
                // longer than a holder's critical section.
                let (target, slot) = if plan.masters > 1 {
                    match key_target(&plan, &cluster, &rec, &mut lookout, &mut rng, limit, &stop)
                        .await
                    {
                        Some((h, m)) => (Some(h), m),
                        None => (None, slot),
                    }
                } else if kind == Kind::ClockJump {
                    (holder(&rec, &mut rng, limit, &stop).await, slot)
                } else {
                    (fresh_acquire(&rec, limit, &stop).await, slot)
                };
                let mut nem = cluster.lock().await;
                let n = nem.serving(slot);
                let start = rec.ms();
                let fault = if kind == Kind::ClockJump {
                    Strike::NodeClockJump {
                        node: n,
                        ms: plan.clock_jump_ms,
                    }
                } else {
                    Strike::Restart {
                        node: n,
                        in_place: true,
                    }
                };
                let what = nem.carry_out(&fault, &mut clients.as_ref()).await?;
                drop(nem);
                record(&rec, kind, None, start, what, target.is_some());
            }
            Kind::LateRequest | Kind::RenewalRace => {
                let (target, silent, landing) = if kind == Kind::RenewalRace {
                    // Dropped at once: the driver gives up on the renewal in time to
                    // release.
                    let target = renewal_due(&plan, &rec, limit, &stop).await;
                    (target, Duration::ZERO, Landing::AfterRelease)
                } else {
                    // Mostly the holder's next request, its release or a renewal,
                    // landing under a later hold; every fourth time that of a client
                    // outside its critical section, an acquire, landing while nobody
                    // holds.
                    let acquire = rng.random_bool(0.25);
                    let target = if acquire {
                        outsider(&rec, &mut rng, limit, &stop).await
                    } else {
                        holder(&rec, &mut rng, limit, &stop).await
                    };
                    // Silent past the driver's command timeout: it gives up on it.
                    let silent = plan.command_timeout * 2;
                    let after = length.max(silent);
                    let landing = if acquire {
                        Landing::NobodyInside(after)
                    } else {
                        Landing::AnotherInside(after)
                    };
                    (target, silent, landing)
                };
                let c = target.unwrap_or(random_client);
                let start = rec.ms();
                let (what, landed) = keep_and_deliver(
                    &plan,
                    (&cluster, &clients),
                    &rec,
                    (c, slot),
                    silent,
                    landing,
                    limit,
                    &stop,
                )
                .await;
                record(&rec, kind, Some(c), start, what, target.is_some() && landed);
            }
            // Run beside the schedule ([`drift`], [`slow_steps`]), never drawn.
            Kind::ClockDrift | Kind::DriftStep | Kind::SlowSteps => {}
            Kind::Failover | Kind::SplitBrain => {
                let m = (0..plan.masters)
                    .filter(|m| !spare[*m].is_empty())
                    .collect::<Vec<_>>()
                    .choose(&mut rng)
                    .copied()
                    .unwrap_or(0);
                // A split brain's replicas on the old master's side: out of the
                // sentinels' reach, never promoted.
                let old_side = if kind == Kind::SplitBrain {
                    old_side(&cluster, &spare[m], &mut rng).await
                } else {
                    Vec::new()
                };
                let Some(r) = prepare_promotion(
                    &plan,
                    &cluster,
                    &rec,
                    &mut spare[m],
                    &old_side,
                    m,
                    &mut rng,
                    &stop,
                )
                .await?
                else {
                    return Ok(());
                };
                let target = fresh_acquire(&rec, limit, &stop).await;
                let start = rec.ms();
                let old = if kind == Kind::Failover {
                    let mut nem = cluster.lock().await;
                    let old = nem.serving(m);
                    let failover = Strike::Failover {
                        slot: m,
                        replica: r,
                        clients_first: true,
                    };
                    let what = nem.carry_out(&failover, &mut clients.as_ref()).await?;
                    drop(nem);
                    record(&rec, kind, None, start, what, target.is_some());
                    old
                } else {
                    // The holder stays with the old master; every other client learns
                    // the new one, which lacks the holder's acquire.
                    let mut nem = cluster.lock().await;
                    let old = nem.serving(m);
                    let split = Strike::SplitBrain {
                        slot: m,
                        replica: r,
                        old_side: old_side.clone(),
                    };
                    let mut what = nem.carry_out(&split, &mut clients.as_ref()).await?;
                    // The replicas on the promoted node's side replicate from it as
                    // they go, as many as acquires wait for.
                    let mut synced = spare[m]
                        .iter()
                        .filter(|&&n| !old_side.contains(&n) && nem.in_sync(n))
                        .count();
                    for &n in spare[m].iter().filter(|n| !old_side.contains(n)) {
                        if synced >= plan.in_sync {
                            break;
                        }
                        if !nem.in_sync(n) {
                            what.push_str(&format!("; {}", nem.keep_in_sync(n).await?));
                            synced += 1;
                        }
                    }
                    for c in (0..n_clients).filter(|c| Some(*c) != target) {
                        let redirect = Strike::Redirect { client: c, slot: m };
                        let moved = nem.carry_out(&redirect, &mut clients.as_ref()).await?;
                        what.push_str(&format!("; client{} {moved}", c + 1));
                    }
                    drop(nem);
                    sleep_or_stop(length, &stop).await;
                    let mut nem = cluster.lock().await;
                    let end = Strike::EndSplit { slot: m };
                    let ended = nem.carry_out(&end, &mut clients.as_ref()).await?;
                    drop(nem);
                    record(
                        &rec,
                        kind,
                        target,
                        start,
                        format!("{what}; then {ended}"),
                        target.is_some(),
                    );
                    old
                };
                recover(&plan, &cluster, &rec, &mut spare[m], old, m).await?;
            }
        }
        let quiet = plan.ttls(&mut rng, 1.0, 3.0);
        if sleep_or_stop(quiet, &stop).await {
            return Ok(());
        }
    }
}

/// Slow clients, beside the schedule until the soak stops: after a quiet 1 to 3 ttls, a
/// client not in its critical section turns slow for 2 to 4 ttls (see the module doc).
pub async fn slow_steps(
    plan: Plan,
    clients: Arc<Clients>,
    rec: Arc<Recorder>,
    stop: Arc<AtomicBool>,
) {
    // Its own stream, so that the schedule's draws are the same with or without it.
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed ^ 0x5105_7e95);
    let n_clients = clients.len();
    let kind = Kind::SlowSteps;
    let mut first = plan.first_fault;
    loop {
        let quiet = first
            .take()
            .unwrap_or_else(|| plan.ttls(&mut rng, 1.0, 3.0));
        if sleep_or_stop(quiet, &stop).await {
            return;
        }
        let random_client = rng.random_range(0..n_clients);
        // A client about to acquire, so that its next hold is slow throughout.
        let inside = rec.inside();
        let outside: Vec<usize> = (0..n_clients)
            .filter(|c| inside.iter().all(|(i, _)| i != c))
            .collect();
        let c = outside.choose(&mut rng).copied().unwrap_or(random_client);
        let (lo, hi) = plan.step_fractions;
        let f = if hi > lo {
            rng.random_range(lo..hi)
        } else {
            lo
        };
        let delay = Duration::from_secs_f64(plan.step_delay_ms as f64 / 1000.0 * f.max(0.0));
        // The model delays each step on its own: with a renewal task, half the
        // stretches leave it on time while the holder's own steps lag.
        let renewals_on_time = plan.renews && rng.random_bool(0.5);
        let stretch = plan.ttls(&mut rng, 2.0, 4.0);
        let end = tokio::time::Instant::now() + stretch;
        let start = rec.ms();
        // Uneven legs, with several masters (the model delays each leg on its own):
        // `c`'s legs to a bare majority of the masters, drawn, take no time, and the
        // other clients' legs only to the rest. When `c` and a rival race, each wins
        // its fast masters: `c` holds a bare majority, its lease started on the fast
        // masters while the slow ones had not answered, and the rival has the rest.
        let fast: Vec<Vec<usize>> = if plan.masters < 2 {
            vec![Vec::new(); n_clients]
        } else {
            let mut order: Vec<usize> = (0..plan.masters).collect();
            order.shuffle(&mut rng);
            let (mine, rest) = order.split_at(plan.quorum().min(plan.masters - 1));
            (0..n_clients)
                .map(|k| if k == c { mine.to_vec() } else { rest.to_vec() })
                .collect()
        };
        // Every client is slow until `c` acquires, so that it wins the lock as
        // often as they do (a fast rival that released tries again at once);
        // then the others are fast again: a slow holder among fast rivals.
        for (k, fast) in fast.iter().enumerate() {
            let gate = clients.gate(k);
            if renewals_on_time {
                gate.slow_operations(delay);
            } else {
                gate.slow_steps(delay);
            }
            gate.fast_legs(fast);
        }
        let mut acquired_at = None;
        // A hold that began slow stays slow to its end (as the model's slow holder is),
        // within 4 more ttls.
        let last = end + Duration::from_millis(plan.ttl_ms.saturating_mul(4));
        loop {
            let now = tokio::time::Instant::now();
            let holding = acquired_at.is_some() && rec.inside().iter().any(|(i, _)| *i == c);
            if stop.load(Ordering::SeqCst) || now >= last || (now >= end && !holding) {
                break;
            }
            if acquired_at.is_none() {
                if let Some((who, at)) = rec.last_acquire() {
                    if who == c && at >= start {
                        acquired_at = Some(at);
                        for k in (0..n_clients).filter(|&k| k != c) {
                            clients.gate(k).steady();
                        }
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for k in 0..n_clients {
            clients.gate(k).steady();
        }
        let rivals = match acquired_at {
            Some(at) => format!("the others until it acquired at {:.0} ms", at),
            None => "the others too (it did not acquire)".to_string(),
        };
        let renewals = if renewals_on_time {
            " (its renewals on time)"
        } else {
            ""
        };
        let legs = if fast[c].is_empty() {
            String::new()
        } else {
            let names: Vec<String> = fast[c].iter().map(|m| format!("master{}", m + 1)).collect();
            format!(", its legs to {} fast", names.join(", "))
        };
        let what = format!(
            "client{} slow: every step {:.0} ms{renewals}{legs} (bound {} ms), {rivals}; {SLOW_STEPS_EMULATION}",
            c + 1,
            delay.as_secs_f64() * 1000.0,
            plan.step_delay_ms
        );
        record(&rec, kind, Some(c), start, what, acquired_at.is_some());
    }
}

/// A step of the nemesis' own upkeep (replication, recovery), in the history.
/// Does `fault` ([`Nemesis::carry_out`]) and says what was done.
async fn strike(
    cluster: &Mutex<Nemesis>,
    clients: &Clients,
    fault: Strike,
) -> Result<String, RunError> {
    let mut processes = clients;
    Ok(cluster
        .lock()
        .await
        .carry_out(&fault, &mut processes)
        .await?)
}

fn note(rec: &Recorder, step: &str, what: &str) {
    rec.push(Event::Fault {
        what: format!("{step}: {what}"),
    });
}

/// The replicas of a master slot (of its `spare` ones) that a split brain leaves on the old
/// master's side, drawn: with two spare replicas or more, one up to all but one (one
/// is left to promote; with one, the old shape: every replica on the new side). Aimed: those in sync first, so that the old side keeps
/// acknowledging `WAIT` while the sentinels promote one that lags.
async fn old_side(cluster: &Mutex<Nemesis>, spare: &[usize], rng: &mut ChaCha8Rng) -> Vec<usize> {
    if spare.len() < 2 {
        return Vec::new();
    }
    let mut candidates = spare.to_vec();
    let k = rng.random_range(1..candidates.len());
    candidates.shuffle(rng);
    let nem = cluster.lock().await;
    candidates.sort_by_key(|&n| !nem.in_sync(n));
    candidates.truncate(k);
    candidates
}

/// Choose the replica of master slot `m` to promote and get the slot ready for it:
/// the replicas catch up, then the lock entry they copied expires (a replica that keeps
/// up would have copied its deletion), so that what the promoted one lacks is the
/// acquires since, the next one above all. Aimed: a replica that lags, unless only one
/// in sync may be promoted (Sentinel's rule) or none lags. Those of `old_side` are out
/// of reach (a split brain's on the old master's side). `None` when the soak stopped.
#[allow(clippy::too_many_arguments)]
async fn prepare_promotion(
    plan: &Plan,
    cluster: &Mutex<Nemesis>,
    rec: &Recorder,
    spare: &mut Vec<usize>,
    old_side: &[usize],
    m: usize,
    rng: &mut ChaCha8Rng,
    stop: &AtomicBool,
) -> Result<Option<usize>, RunError> {
    let (synced, lagging): (Vec<usize>, Vec<usize>) = {
        let nem = cluster.lock().await;
        spare
            .iter()
            .filter(|n| !old_side.contains(n))
            .partition(|&&n| nem.in_sync(n))
    };
    let pool = match (plan.most_advanced, synced.is_empty(), lagging.is_empty()) {
        (true, false, _) | (false, false, true) => synced,
        _ => lagging,
    };
    let r = pool[rng.random_range(0..pool.len())];
    spare.retain(|&n| n != r);
    // Replication catches up now; what comes after lags until the promotion. (Replicas
    // in sync need no catching up, and must stay on the network.)
    for n in spare.iter().copied().chain([r]) {
        if cluster.lock().await.in_sync(n) {
            continue;
        }
        let what = cluster.lock().await.catch_up(n, m).await?;
        note(rec, "replication", &what);
    }
    let expired = Duration::from_millis(plan.ttl_ms + plan.ttl_ms / 4);
    if sleep_or_stop(expired, stop).await {
        return Ok(None);
    }
    Ok(Some(r))
}

/// After a promotion on slot `m`, the old master `old` comes back empty as a replica,
/// for the next one, kept in sync when the acquires `WAIT` for more replicas in sync.
async fn recover(
    plan: &Plan,
    cluster: &Mutex<Nemesis>,
    rec: &Recorder,
    spare: &mut Vec<usize>,
    old: usize,
    m: usize,
) -> Result<(), RunError> {
    let what = cluster.lock().await.rejoin_as_replica(old, m).await?;
    note(rec, "recovery", &what);
    spare.push(old);
    let mut nem = cluster.lock().await;
    let synced: Vec<usize> = spare.iter().copied().filter(|&n| nem.in_sync(n)).collect();
    if synced.len() < plan.in_sync {
        let what = nem.keep_in_sync(old).await?;
        note(rec, "recovery", &what);
    }
    // A split brain may have left more in sync (one on each side): the rest lag again.
    for &n in synced.iter().skip(plan.in_sync) {
        let what = nem.lag(n).await?;
        note(rec, "recovery", &what);
    }
    Ok(())
}

/// Node clock drift for the whole soak: each master's wall clock runs fast, one tick
/// (`tick_ms`) at a time, never two steps of one node within `every` (the model's
/// `node_drift` ticks per horizon, each node on its own). A step is aimed: once a node
/// may step again, it waits up to another `every` for a holder that won a bare majority
/// (with one master: any holder; with `slow_steps`, a slow one) among whose masters it
/// is the one with the oldest key (the least PTTL: granted first, as through a fast
/// leg), and steps then, so that the key expires a tick early while its holder still
/// counts on it; a node not aimed at by then steps anyway. Each aimed step is recorded
/// (`drift-step`), and the whole as one `clock-drift` fault from the first step to the
/// stop.
pub async fn drift(
    plan: Plan,
    cluster: Arc<Mutex<Nemesis>>,
    clients: Arc<Clients>,
    rec: Arc<Recorder>,
    stop: Arc<AtomicBool>,
) -> Result<(), RunError> {
    let (masters, key, tick_ms) = (plan.masters, &plan.key, plan.tick_ms);
    let every = plan.drift_every;
    let slow_steps = plan.slow_clients;
    let step = i64::try_from(tick_ms).unwrap_or(i64::MAX);
    // Per master slot: from when it may step again.
    let mut next = vec![tokio::time::Instant::now() + every; masters];
    let mut lookout = Lookout::of(&rec);
    let mut start = None;
    let (mut steps, mut aimed) = (0u64, 0u64);
    while !stop.load(Ordering::SeqCst) {
        let now = tokio::time::Instant::now();
        let mut struck: Vec<(usize, Option<String>)> = Vec::new();
        let holders = rec.inside();
        if next.iter().any(|&t| now >= t) && !holders.is_empty() {
            let looks = lookout.looks(&cluster, masters, key).await;
            for (h, _) in holders {
                // With slow clients, a slow holder: a fast one is done before the key.
                if slow_steps && clients.gate(h).step_delay().is_zero() {
                    continue;
                }
                let mine: Vec<(usize, i64)> = held_by(&looks, h)
                    .into_iter()
                    .filter(|(_, pttl)| *pttl >= 0)
                    .collect();
                // With one master, the quorum is that one: any holder.
                let bare = mine.len() == plan.quorum();
                let oldest = mine.iter().min_by_key(|(_, pttl)| *pttl).copied();
                if let (true, Some((m, pttl))) = (bare, oldest) {
                    if now >= next[m] {
                        let held: Vec<String> = mine
                            .iter()
                            .map(|(m, _)| format!("master{}", m + 1))
                            .collect();
                        let why = format!(
                            "aimed at client{}, holding {} ({} ms left on master{})",
                            h + 1,
                            held.join(", "),
                            pttl,
                            m + 1
                        );
                        struck.push((m, Some(why)));
                        break;
                    }
                }
            }
        }
        for (m, &at) in next.iter().enumerate() {
            if now >= at + every && struck.iter().all(|(s, _)| *s != m) {
                struck.push((m, None));
            }
        }
        for (m, why) in struck {
            let at = rec.ms();
            let mut nem = cluster.lock().await;
            let n = nem.serving(m);
            let what = if nem.alive(n) {
                let jump = Strike::NodeClockJump { node: n, ms: step };
                Some(nem.carry_out(&jump, &mut clients.as_ref()).await?)
            } else {
                None
            };
            drop(nem);
            next[m] = tokio::time::Instant::now() + every;
            start.get_or_insert(at);
            steps += 1;
            if let (Some(why), Some(what)) = (why, what) {
                aimed += 1;
                record(
                    &rec,
                    Kind::DriftStep,
                    None,
                    at,
                    format!("{what}; {why}"),
                    true,
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    if let Some(start) = start {
        record(
            &rec,
            Kind::ClockDrift,
            None,
            start,
            format!(
                "every master's wall clock ran fast: +{tick_ms} ms at most once every {} ms per master, {steps} steps, {aimed} of them aimed at a holder (libclockshift)",
                every.as_millis()
            ),
            false,
        );
    }
    Ok(())
}

/// The observer's look at the lock key, in one step (a script, so that no command of
/// a client falls between reading the owner and the PTTL): the string value or the
/// first hash field, and the PTTL (-2: no key).
const LOOK: &str = "local t = redis.call('type', KEYS[1]).ok \
    if t == 'string' then return {redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1])} end \
    if t == 'hash' then return {redis.call('hkeys', KEYS[1])[1] or '', redis.call('pttl', KEYS[1])} end \
    if t == 'none' then return {'', -2} end \
    return {'', redis.call('pttl', KEYS[1])}";

/// Connections to the nodes, for looking at the lock key (the observer's, and the
/// aiming of node clock jumps); a connection that fails is dropped and made anew. The
/// recorder names the owner of a value ([`Recorder::owner`]).
struct Lookout {
    conns: HashMap<SocketAddr, redis::aio::MultiplexedConnection>,
    rec: Arc<Recorder>,
}

impl Lookout {
    const TIMEOUT: Duration = Duration::from_millis(200);

    fn of(rec: &Arc<Recorder>) -> Lookout {
        Lookout {
            conns: HashMap::new(),
            rec: rec.clone(),
        }
    }

    /// The lock key on the node at `addr`, in one step: its owner and PTTL (-2: no key);
    /// `None` when the node did not answer in time.
    async fn look(&mut self, addr: SocketAddr, key: &str) -> Option<(Option<usize>, i64)> {
        let conn = match self.conns.entry(addr) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let client = redis::Client::open(format!("redis://{addr}")).ok()?;
                let connect = client.get_multiplexed_async_connection();
                match tokio::time::timeout(Self::TIMEOUT, connect).await {
                    Ok(Ok(conn)) => e.insert(conn),
                    _ => return None,
                }
            }
        };
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(LOOK).arg(1).arg(key);
        // Bytes: a library may write a value that is not UTF-8 (rslock's random bytes).
        let looked = cmd.query_async::<(Vec<u8>, i64)>(conn);
        match tokio::time::timeout(Self::TIMEOUT, looked).await {
            Ok(Ok((value, pttl))) => Some((self.rec.owner(&String::from_utf8_lossy(&value)), pttl)),
            _ => {
                self.conns.remove(&addr);
                None
            }
        }
    }

    /// The lock key on each master slot's serving node now: its owner and PTTL
    /// (`None`: a node down or silent).
    async fn looks(
        &mut self,
        cluster: &Mutex<Nemesis>,
        masters: usize,
        key: &str,
    ) -> Vec<Option<(Option<usize>, i64)>> {
        let addrs: Vec<Option<SocketAddr>> = {
            let nem = cluster.lock().await;
            (0..masters)
                .map(|m| nem.serving(m))
                .map(|n| nem.alive(n).then(|| nem.addr(n)))
                .collect()
        };
        let mut looks = Vec::with_capacity(masters);
        for addr in addrs {
            looks.push(match addr {
                Some(addr) => self.look(addr, key).await,
                None => None,
            });
        }
        looks
    }
}

/// Every half tick, look at the lock key on each serving master (and the old master of
/// a split brain, which its side still writes to) and record it
/// ([`Event::KeyObserved`]) when it changed or has no expiry: the checker's evidence of
/// orphaned locks. Runs until aborted.
pub async fn observe(cluster: Arc<Mutex<Nemesis>>, rec: Arc<Recorder>, tick_ms: u64, key: String) {
    let every = Duration::from_millis((tick_ms / 2).clamp(10, 500));
    let mut lookout = Lookout::of(&rec);
    let mut seen: HashMap<usize, (Option<usize>, bool)> = HashMap::new();
    loop {
        let targets: Vec<(usize, SocketAddr)> = {
            let nem = cluster.lock().await;
            (0..nem.nodes())
                .filter(|&n| nem.serves(n) && nem.alive(n))
                .map(|n| (n, nem.addr(n)))
                .collect()
        };
        for (n, addr) in targets {
            // The owner's state before and after the look: the key was read at some
            // moment in between.
            let (start, before) = rec.holding();
            let Some((owner, pttl)) = lookout.look(addr, &key).await else {
                continue;
            };
            let (end, after) = rec.holding();
            if pttl == -2 {
                seen.remove(&n);
                continue;
            }
            // Recorded at a moment when the owner's state is what the look may have
            // seen: while it held (at the start or the end of the look), or at the end
            // when it held at no point of it. A look during which the owner started or
            // ended a hold and held at neither end says nothing for sure: left out.
            let at = match owner.and_then(|o| Some((before.get(o)?, after.get(o)?))) {
                None => end,
                Some((_, a)) if a.0 => end,
                Some((b, _)) if b.0 => start,
                Some((b, a)) if b.1 == a.1 => end,
                Some(_) => continue,
            };
            let state = (owner, pttl >= 0);
            if seen.get(&n) != Some(&state) || pttl == -1 {
                seen.insert(n, state);
                rec.push_at(
                    at,
                    Event::KeyObserved {
                        node: n,
                        owner,
                        pttl_ms: pttl,
                    },
                );
            }
        }
        tokio::time::sleep(every).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(name: &str) -> Scenario {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios")
            .join(format!("{name}.toml"));
        Scenario::load(&path).unwrap()
    }

    #[test]
    fn a_partition_budget_brings_its_late_shapes_and_a_renewal_race_where_the_lock_renews() {
        let late = kinds(&scenario("set-px-del-late-release"), false);
        assert_eq!(
            late,
            [Kind::Partition, Kind::ContainerPause, Kind::LateRequest]
        );
        let mut watchdog = scenario("watchdog-long-work");
        assert!(!kinds(&watchdog, false).contains(&Kind::LateRequest));
        watchdog.faults[FaultKind::Partition] = 1;
        let shapes = kinds(&watchdog, false);
        assert!(shapes.contains(&Kind::LateRequest) && shapes.contains(&Kind::RenewalRace));
        // An explicit lease renews nothing: no renewal to race.
        let mut lease = scenario("reentrant-explicit-lease");
        lease.faults[FaultKind::Partition] = 1;
        assert!(!kinds(&lease, false).contains(&Kind::RenewalRace));
        assert_eq!(Kind::LateRequest.as_str(), "late-request");
        assert_eq!(Kind::RenewalRace.as_str(), "renewal-race");
    }
}
