//! The fix for a broken property: which design or option makes it hold, and why.
//!
//! One table of (design, property, culprit) → text, read by `explain` and by the report.
//! The culprit is the fault the violation needs, because the same design breaks the
//! same property for different reasons (a slow holder, a pause, a failover) and each has
//! a different remedy. It comes from the computed cause ([`locklab_model::cause`]) and
//! the trace, never from the budget: a fault the counterexample contains but the
//! violation does not need (a pause of a client waiting for the lock while the holder
//! outlives its lease by step delays) names no remedy. A row with no culprit or no
//! design is a fallback.

use std::borrow::Cow;

use locklab::{DesignId, Fencing};
use locklab_model::cause::{Ingredient, Struck};
use locklab_model::model::{Action, FaultKind};
use locklab_model::scenario::Property;
use locklab_model::trace::Trace;

/// What made the counterexample possible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Culprit {
    /// No fault: ordinary step delays outlasted the lease.
    Timing,
    /// A master clock that runs fast (`timing.node_drift`): keys expire early.
    Drift,
    /// A fault of the budget.
    Fault(FaultKind),
}

impl Culprit {
    /// What the violation needs, from the trace's computed cause: the first fault in
    /// the trace of a kind the violation needs, or [`Culprit::Timing`] when it needs
    /// none (only step delays, or no one ingredient); a master clock that runs fast,
    /// when the drift is needed. A pause needed but taken by a
    /// client that did not hold the lock is timing too: the holder outlived its lease
    /// on its own. Without a computed cause, the first fault of the trace.
    pub fn of(trace: &Trace) -> Culprit {
        let Some(cause) = &trace.cause else {
            return trace
                .actions
                .iter()
                .find_map(|&a| Culprit::of_action(a))
                .unwrap_or(Timing);
        };
        let needed = |kind: FaultKind| {
            cause.needs.iter().any(|n| {
                n.ingredient == Ingredient::Fault(kind)
                    && !(kind == FaultKind::Pause && n.struck.is_some_and(|s| s != Struck::Holder))
            })
        };
        let drift = cause
            .needs
            .iter()
            .any(|n| n.ingredient == Ingredient::NodeDrift);
        trace
            .actions
            .iter()
            .find_map(|&a| {
                let wanted = match a {
                    Action::NodeDrift(_) => drift,
                    a => FaultKind::of(&a).is_some_and(needed),
                };
                wanted.then(|| Culprit::of_action(a)).flatten()
            })
            .unwrap_or(Timing)
    }

    /// The culprit an action stands for, if it is a fault.
    fn of_action(action: Action) -> Option<Culprit> {
        match action {
            Action::NodeDrift(_) => Some(Drift),
            a => FaultKind::of(&a).map(Fault),
        }
    }
}

/// A fix: the remedy in a few words, then why it works.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    pub remedy: Cow<'static, str>,
    pub why: Cow<'static, str>,
}

use Culprit::*;
use DesignId::*;
use FaultKind::*;
use Property::*;

/// Design, property, culprit, fencing mode; None matches any.
type Key = (Option<DesignId>, Property, Option<Culprit>, Option<Fencing>);

const ATOMIC_EXPIRY: Fix = Fix {
    remedy: Cow::Borrowed(
        "take the lock and its expiry in one command: SET key token NX PX ttl \
             (design lua-release)",
    ),
    why: Cow::Borrowed(
        "With SETNX alone, or SETNX followed by a separate EXPIRE, there is a moment in \
          which the key exists without a time to live; a holder that crashes then, or \
          gives up on a command that ran (its reply lost, a timeout), leaves it forever. \
          One SET NX PX command sets value and expiry atomically, so a lock nobody \
          releases always expires after ttl.",
    ),
};

const ONE_COMMAND_ACQUIRE: Fix = Fix {
    remedy: Cow::Borrowed(
        "check and take the lock in one command: SET key token NX PX ttl (design \
             lua-release)",
    ),
    why: Cow::Borrowed(
        "EXISTS followed by SET leaves a round trip between the check and the act: \
          another client can check in between, see no key either, and both set it. NX \
          makes Redis do the check and the set as one step, so exactly one of them gets \
          OK.",
    ),
};

const RENEW_OWN_LOCK: Fix = Fix {
    remedy: Cow::Borrowed(
        "renew with the Lua compare-and-pexpire script (design watchdog): extend the \
             key only if its value is still my token",
    ),
    why: Cow::Borrowed(
        "A renewal that only checks that some key exists (GET is not null, then \
          EXPIRE) extends whatever lock is there: a holder whose lease already ran out \
          renews the next holder's lock and believes its own lease extended. The script \
          checks the owner and extends in one atomic step, so a renewal fails once the \
          lock is no longer ours.",
    ),
};

const COMPARE_AND_DELETE: Fix = Fix {
    remedy: Cow::Borrowed(
        "release with the Lua compare-and-delete script (design lua-release): delete \
             the key only if its value is still my token",
    ),
    why: Cow::Borrowed(
        "A plain DEL deletes whatever entry is there, and a GET followed by DEL can see \
          my token and then delete another client's entry if the lock expired and was \
          taken in between. The script runs the check and the delete as one atomic step \
          inside Redis, so a client can only ever remove its own entry.",
    ),
};

const FENCE_ALL: Fix = Fix {
    remedy: Cow::Borrowed("fencing tokens checked on every access (fencing = \"all\")"),
    why: Cow::Borrowed(
        "Once the lock has let two holders in (whatever let them in), only the protected \
          resource can refuse the stale one: each acquire takes an increasing token from \
          INCR, every read and write carries it, and the store rejects any access older \
          than the newest token it has seen. The stale holder's read-modify-write is rejected instead of \
          applied, so no update is lost.",
    ),
};

const LEASE_OUTLIVED: Fix = Fix {
    remedy: Cow::Borrowed(
        "renew the lease while the critical section runs (design watchdog), or make \
             the ttl longer than the worst-case critical section, delays included; and \
             fence the resource (fencing = \"all\") for the cases no ttl covers",
    ),
    why: Cow::Borrowed(
        "The holder was still working when its ttl ran out, so Redis let the next client \
          in. A watchdog renews the key every ttl/3 (compare-and-pexpire) for as long as \
          the holder's process runs; a longer ttl only moves the bound. Mutual exclusion \
          by lease holds only while the holder stays within it.",
    ),
};

const RENEWAL_MARGIN: Fix = Fix {
    remedy: Cow::Borrowed(
        "give the renewal room: a ttl longer than the renewal interval (ttl/3) plus \
             three step delays (the grant's reply, the renewal's send and its arrival; \
             in ticks, ttl > interval + 3 x max_step_delay), or renew more often",
    ),
    why: Cow::Borrowed(
        "The watchdog did renew, but its renewal reached Redis after the key had already \
          expired, and by then another client had the lock. The renewal timer starts when \
          the grant's reply arrives, a renewal can be sent a step late and travel a step \
          more: renewal keeps a lease only if each renewal lands before the previous \
          lease ends, all of that included.",
    ),
};

const RENEWAL_STOPPED: Fix = Fix {
    remedy: Cow::Borrowed(
        "keep renewing after a failed renewal (renewal_on_error = \"retry\"; in \
             Redisson, a watchdog that reschedules itself on error), and fence the \
             resource (fencing = \"all\")",
    ),
    why: Cow::Borrowed(
        "One renewal got no answer and the watchdog, which sends each renewal once, \
          stopped (Redisson's renewExpiration stops so, logging \"Can't update lock ... \
          expiration\", once its command layer has given the renewal up after its \
          resends). The holder went on working, its lease ran out one ttl after the last renewal that \
          ran, and the next client got in. A watchdog that tries again at the next \
          interval keeps the lease while any renewal gets through.",
    ),
};

const EXPLICIT_LEASE: Fix = Fix {
    remedy: Cow::Borrowed(
        "take the lock without an explicit lease time, so that the watchdog renews it \
             (watchdog = true; in Redisson, lock() rather than lock(leaseTime, unit), \
             which also takes the lockWatchdogTimeout of 30 s as its lease) with a lease \
             that leaves a renewal room to land (ttl > ttl/3 + three step delays), or a \
             lease longer than the worst-case critical section; and fence the resource",
    ),
    why: Cow::Borrowed(
        "With an explicit leaseTime Redisson schedules no renewal: the lease ends after \
          leaseTime whatever the holder is doing, and a critical section that runs longer \
          shares the lock with the next client.",
    ),
};

const PAUSE_BEYOND_LEASE: Fix = Fix {
    remedy: Cow::Borrowed(
        "no lock option restores mutual exclusion here; make the resource safe with \
             fencing tokens on every access (fencing = \"all\")",
    ),
    why: Cow::Borrowed(
        "A stop-the-world pause longer than the ttl stops the holder between any two \
          instructions, checks and renewals included: when it resumes it cannot know that \
          its lease ended and another client holds the lock. A watchdog runs inside the \
          same paused process and stops with it. Only the resource can tell the stale \
          holder apart, by its older fencing token.",
    ),
};

const FAILOVER_WAIT: Fix = Fix {
    remedy: Cow::Borrowed(
        "wait for the replica before using the lock: wait_replicas = 1 (WAIT 1 after \
             acquiring; fewer acks count as a failed acquire)",
    ),
    why: Cow::Borrowed(
        "Replication is asynchronous: the master acknowledged the lock, died before \
          sending it to its replica, and the promoted replica had no lock to refuse the \
          next client with. With WAIT the acquire succeeds only once the key is on the \
          replica, so the replica that takes over already holds it. (WAIT does not make \
          replication synchronous in general: with several replicas, promote one that \
          acknowledged.)",
    ),
};

const FAILOVER_WAIT_MORE: Fix = Fix {
    remedy: Cow::Borrowed(
        "WAIT for every replica (wait_replicas = the number of replicas), or promote \
             the replica that acknowledged (promotion = \"most-advanced\", Sentinel's \
             own rule when no replica-priority or partition overrides it)",
    ),
    why: Cow::Borrowed(
        "The acquire waited for one replica, and it was not the one promoted: the \
          promoted replica lacked the lock and granted it to the next client, while the \
          replica that had acknowledged it followed the new master and acknowledged the \
          second client's WAIT too. A WAIT protects a lock only on the replicas that \
          acknowledged it, so either all of them must have it, or the promotion must pick \
          one that does.",
    ),
};

const WAIT_IN_LEASE: Fix = Fix {
    remedy: Cow::Borrowed(
        "count the WAIT into the lease: a ttl longer than the worst-case critical \
             section plus the WAIT's timeout (wait_timeout), or renew the lease while the \
             critical section runs (design watchdog); and fence the resource \
             (fencing = \"all\")",
    ),
    why: Cow::Borrowed(
        "The lease runs from before the SET, and a WAIT that blocks until a lagging \
          replica acknowledges takes up to its timeout of it before the holder may work. \
          Here that was the time the lease was short of: the key expired while the holder \
          still worked, and the next client took it. A WAIT makes a lock survive a \
          failover; the time it blocks is part of the critical section.",
    ),
};

const SPLIT_BRAIN_WAIT: Fix = Fix {
    remedy: Cow::Borrowed(
        "acquire only with a replica's acknowledgement: wait_replicas = 1 \
             (min-replicas-to-write on the master only shortens the window: it keeps \
             accepting writes for min-replicas-max-lag seconds after its replicas are gone)",
    ),
    why: Cow::Borrowed(
        "A partition left two masters: the old one kept serving the clients on its side \
          while Sentinel promoted a replica on the other, and each granted the lock. When \
          the old master is cut off from every replica, nothing acknowledges a WAIT 1 of \
          a lock taken there and the client on its side gives up.",
    ),
};

const SPLIT_BRAIN_WAIT_MORE: Fix = Fix {
    remedy: Cow::Borrowed(
        "WAIT for more replicas than the old master's side of a partition can keep: \
             a majority of them at least (wait_replicas = the number of replicas holds \
             any split)",
    ),
    why: Cow::Borrowed(
        "The partition left a replica on the old master's side: it kept following the \
          old master and acknowledged the WAIT of a lock taken there, while a replica on \
          Sentinel's side acknowledged the other client's. Each side had as many replicas \
          as one WAIT asked for; a WAIT for more than either side can hold fails on the \
          side that is not the majority.",
    ),
};

const FENCE_SURVIVES_FAILOVER: Fix = Fix {
    remedy: Cow::Borrowed(
        "fence the resource with tokens from a counter that never goes back and is one \
             counter for everybody (a store with synchronous, consensus-based \
             replication, or one that persists every INCR before it answers); a counter \
             on the lock's own Redis node does not survive this fault",
    ),
    why: Cow::Borrowed(
        "Fencing tokens from INCR on the lock's Redis master are only as safe as that \
          counter: a failover to an asynchronous replica loses the last INCR and hands \
          out the same token again, a split brain gives each side a counter of its own, \
          a restart without persistence starts it again at 1. Then two holders present \
          the same token and the store cannot tell them apart. Fencing is only as strong \
          as the monotonicity of its tokens.",
    ),
};

const FENCE_READS_TOO: Fix = Fix {
    remedy: Cow::Borrowed("fence reads as well as writes (fencing = \"all\")"),
    why: Cow::Borrowed(
        "With only writes checked, the stale holder read the stock, the new holder wrote \
          with a newer token, and the stale holder's write was rejected only if it came \
          after; a read-modify-write needs its read fenced too. A fenced read raises the \
          store's newest token, so the stale holder's later write is rejected and its \
          decision based on an old value never lands.",
    ),
};

const SERVER_CLOCK: Fix = Fix {
    remedy: Cow::Borrowed(
        "let Redis keep the time: SET key token NX PX ttl expires the key on the \
             server's clock (design lua-release)",
    ),
    why: Cow::Borrowed(
        "With GETSET timestamps every client decides by its own clock whether a lock has \
          expired: a client whose clock runs ahead (or two stealers racing) takes a lock \
          that is still held. With PX the one server clock decides, and no client \
          judges another's lease.",
    ),
};

const TOKEN_NOT_TIMESTAMP: Fix = Fix {
    remedy: Cow::Borrowed(
        "store a unique token per holder instead of a timestamp, and release with the \
             Lua compare-and-delete (design lua-release)",
    ),
    why: Cow::Borrowed(
        "A timestamp says nothing about who holds the lock: GETSET overwrites the current \
          entry whoever owns it, and DEL removes it. With a token per acquire and an \
          atomic compare-and-delete, only the owner can change its own entry.",
    ),
};

const CLOCK_JUMP: Fix = Fix {
    remedy: Cow::Borrowed(
        "keep clocks from jumping (slewing time sync, no manual changes) and fence the \
             resource (fencing = \"all\"), since no lock option can see a jump",
    ),
    why: Cow::Borrowed(
        "A lease is measured on a clock: when the node's clock jumps forward the key \
          expires early, and when a client's clock jumps it misjudges its own lease. The \
          lock then admits a second holder while the first is still inside; only a check \
          at the resource (an older fencing token) catches the stale one.",
    ),
};

const REDLOCK_RESTART: Fix = Fix {
    remedy: Cow::Borrowed(
        "persist the lock keys (appendfsync always) or keep a restarted master out for \
             a ttl before it takes requests (Redlock's delayed restart)",
    ),
    why: Cow::Borrowed(
        "A master that restarts empty forgets the locks it granted: the holder's \
          majority shrinks to a minority without its knowing, and another client wins a \
          majority of its own. Redlock's safety argument assumes masters keep their keys \
          for a ttl; with persistence, or a restarted master kept out until every lock it \
          could have held has expired, a majority always overlaps the holder's.",
    ),
};

const RESTART_EMPTY: Fix = Fix {
    remedy: Cow::Borrowed(
        "persist the lock key before Redis answers (appendonly yes, appendfsync always), \
             or keep a restarted Redis out of service for a ttl (a delayed restart); and \
             fence the resource with tokens from a counter that survives the restart",
    ),
    why: Cow::Borrowed(
        "A Redis without persistence comes back from a restart empty: the lock key is \
          gone while its holder is still inside by its own lease, and the next SET NX \
          finds nothing to refuse. No ttl and no renewal helps, since the key is not \
          expired but lost. With every write on disk before the reply, or a restarted \
          node kept out until every lease it granted has run out, a key outlives the \
          crash of its process.",
    ),
};

const REDLOCK_DRIFT: Fix = Fix {
    remedy: Cow::Borrowed(
        "take a drift allowance off every validity (drift_allowance; the Redlock spec's \
             clock drift factor) of at least what a master's clock can gain within a lease",
    ),
    why: Cow::Borrowed(
        "A master whose clock runs fast expires the key before the holder's own clock \
          says the lease is over: the holder still counts validity the masters no longer \
          grant, and another client wins a majority. Redlock subtracts the drift the \
          clocks may gain from the validity it hands the holder, so the holder stops in \
          time.",
    ),
};

const CLOCK_DRIFT: Fix = Fix {
    remedy: Cow::Borrowed(
        "keep the node's clock from running fast (time sync that slews within a known \
             bound) and leave that bound in the ttl, over the worst-case critical \
             section; and fence the resource (fencing = \"all\")",
    ),
    why: Cow::Borrowed(
        "Redis expires keys by its own clock: one that runs fast ends the lease early by \
          the holder's clock, and the next client gets in while the holder still works. \
          A lease holds only as long as the server's clock and the holder's agree on its \
          length.",
    ),
};

const REDLOCK_TIMING: Fix = Fix {
    remedy: Cow::Borrowed(
        "fencing tokens on every access (fencing = \"all\"), from a counter that \
             survives the masters' faults",
    ),
    why: Cow::Borrowed(
        "Redlock's safety argument assumes bounded pauses and clocks that neither jump \
          nor drift beyond its drift allowance, and nodes that keep their keys. A pause or \
          a clock jump breaks that assumption and two clients each see a quorum; only a \
          check at the resource catches the stale one.",
    ),
};

/// The table, most specific rows first within each property.
const TABLE: &[(Key, Fix)] = &[
    // A lock entry with no expiry left behind by a crash.
    ((None, NoOrphanedLock, None, None), ATOMIC_EXPIRY),
    // Deleting or overwriting another client's entry.
    (
        (Some(GetsetTimestamp), OwnerOnlyRelease, None, None),
        TOKEN_NOT_TIMESTAMP,
    ),
    (
        (Some(GetExpireRenewal), OwnerOnlyRelease, None, None),
        RENEW_OWN_LOCK,
    ),
    ((None, OwnerOnlyRelease, None, None), COMPARE_AND_DELETE),
    // Two holders at once.
    (
        (Some(GetsetTimestamp), MutualExclusion, Some(Timing), None),
        LEASE_OUTLIVED,
    ),
    (
        (Some(GetsetTimestamp), MutualExclusion, None, None),
        SERVER_CLOCK,
    ),
    (
        (Some(Redlock), MutualExclusion, Some(Fault(Restart)), None),
        REDLOCK_RESTART,
    ),
    (
        (Some(Redlock), MutualExclusion, Some(Drift), None),
        REDLOCK_DRIFT,
    ),
    ((Some(Redlock), MutualExclusion, None, None), REDLOCK_TIMING),
    (
        (Some(ExistsSet), MutualExclusion, Some(Timing), None),
        ONE_COMMAND_ACQUIRE,
    ),
    (
        (Some(GetExpireRenewal), MutualExclusion, Some(Timing), None),
        RENEWAL_MARGIN,
    ),
    (
        (Some(GetExpireRenewal), MutualExclusion, None, None),
        RENEW_OWN_LOCK,
    ),
    (
        (Some(Watchdog), MutualExclusion, Some(Timing), None),
        RENEWAL_MARGIN,
    ),
    (
        (Some(Reentrant), MutualExclusion, Some(Timing), None),
        RENEWAL_MARGIN,
    ),
    (
        (
            Some(Watchdog),
            MutualExclusion,
            Some(Fault(LostReply)),
            None,
        ),
        RENEWAL_STOPPED,
    ),
    (
        (
            Some(Reentrant),
            MutualExclusion,
            Some(Fault(LostReply)),
            None,
        ),
        RENEWAL_STOPPED,
    ),
    (
        (None, MutualExclusion, Some(Fault(Failover)), None),
        FAILOVER_WAIT,
    ),
    (
        (None, MutualExclusion, Some(Fault(SplitBrain)), None),
        SPLIT_BRAIN_WAIT,
    ),
    (
        (None, MutualExclusion, Some(Fault(Pause)), None),
        PAUSE_BEYOND_LEASE,
    ),
    (
        (None, MutualExclusion, Some(Fault(ClockJump)), None),
        CLOCK_JUMP,
    ),
    ((None, MutualExclusion, Some(Drift), None), CLOCK_DRIFT),
    (
        (None, MutualExclusion, Some(Fault(Restart)), None),
        RESTART_EMPTY,
    ),
    ((None, MutualExclusion, None, None), LEASE_OUTLIVED),
    // Lost updates on the protected resource: where the fault resets the fencing
    // counter too (it lives on the lock's Redis node), tokens from that node cannot help.
    (
        (None, ResourceSafety, Some(Fault(Failover)), None),
        FENCE_SURVIVES_FAILOVER,
    ),
    (
        (None, ResourceSafety, Some(Fault(SplitBrain)), None),
        FENCE_SURVIVES_FAILOVER,
    ),
    (
        (None, ResourceSafety, Some(Fault(Restart)), None),
        FENCE_SURVIVES_FAILOVER,
    ),
    (
        (None, ResourceSafety, None, Some(Fencing::Writes)),
        FENCE_READS_TOO,
    ),
    ((None, ResourceSafety, None, None), FENCE_ALL),
];

/// The fix for `property` broken under `design` by `culprit`, with the scenario's
/// fencing mode (when tokens are in use, the question is why they did not suffice).
pub fn fix(design: DesignId, property: Property, culprit: Culprit, fencing: Fencing) -> Fix {
    TABLE
        .iter()
        .find(|((d, p, c, f), _)| {
            *p == property
                && d.is_none_or(|d| d == design)
                && c.is_none_or(|c| c == culprit)
                && f.is_none_or(|f| f == fencing)
        })
        .map(|(_, fix)| fix.clone())
        .expect("every property has a fallback row")
}

/// The fix for the property a trace breaks (design, fencing and culprit read from it).
pub fn for_trace(trace: &Trace) -> Option<Fix> {
    let design = trace.scenario.design;
    if design == Custom {
        if let Some(fix) = custom::for_trace(trace) {
            return Some(fix);
        }
    }
    let fencing = trace.scenario.fencing;
    let property = trace.property;
    let culprit = Culprit::of(trace);
    let watchdog = trace.scenario.renewal.map(|r| r.watchdog);
    if design.renews() && watchdog == Some(false) && property == MutualExclusion {
        // The design's watchdog is off: no renewal failed, none ran.
        return Some(EXPLICIT_LEASE);
    }
    if property == MutualExclusion {
        if displaced_before(trace) {
            // The second holder got in because a command deleted or overwrote the
            // first holder's entry (a late DEL, a blind renewal): whatever made it late,
            // the owner check is what keeps the lock.
            return Some(fix(design, OwnerOnlyRelease, culprit, fencing));
        }
        if culprit == Timing && trace.steps.iter().any(|s| s.blocks) {
            // No fault: a WAIT that blocked took the time the lease was short of.
            return Some(WAIT_IN_LEASE);
        }
        if trace.scenario.wait_replicas > 0 {
            // The scenario waits for a replica already: the fix is more of them, or
            // promoting one that acknowledged.
            match culprit {
                Fault(FaultKind::Failover) => return Some(FAILOVER_WAIT_MORE),
                Fault(FaultKind::SplitBrain) => return Some(SPLIT_BRAIN_WAIT_MORE),
                _ => {}
            }
        }
    }
    Some(fix(design, property, culprit, fencing))
}

/// Whether a step of the trace deleted or overwrote a lock entry of another client
/// that still held it or was acquiring it (`owner_only_release` broke on the way).
fn displaced_before(trace: &Trace) -> bool {
    let model = locklab_model::model::LockModel::new(&trace.scenario);
    locklab_model::search::replay(&model, &trace.actions)
        .is_some_and(|states| states.iter().any(|s| s.displaced_other))
}

/// A custom lock's fix: the step and command the counterexample blames
/// ([`locklab_model::blame`]), and what that step must do instead.
mod custom {
    use std::borrow::Cow;

    use locklab::design::custom::StepName;
    use locklab_model::blame::{blame, Blame, Harm};
    use locklab_model::ids::ClientId;
    use locklab_model::model::LockModel;
    use locklab_model::trace::Trace;

    use super::{fix, Culprit, FaultKind, Fix, LEASE_OUTLIVED, RENEWAL_STOPPED};

    fn whose(victim: Option<ClientId>) -> String {
        victim.map_or_else(|| "another client".into(), |c| c.to_string())
    }

    /// Where the blamed request ran, as a sentence's opening.
    fn at(b: &Blame) -> String {
        format!(
            "At step {}, {}'s `{}` step ({}) ran on {}",
            b.step, b.client, b.name, b.command, b.node
        )
    }

    pub(super) fn for_trace(trace: &Trace) -> Option<Fix> {
        let scenario = &trace.scenario;
        let model = LockModel::new(scenario);
        let property = trace.property;
        let b = blame(&model, &trace.actions, property)?;
        let step = b.name;
        let reentrant = model.cfg.reentrant();
        let (remedy, why) = match (&b.harm, step) {
            (&Harm::Displaced { victim, deleted }, _) => {
                let did = if deleted { "deleted" } else { "rewrote" };
                let remedy = match step {
                    StepName::Release => format!(
                        "make the `{step}` step delete the key only while it holds this \
                         client's token, compared and deleted in one script \
                         (if redis.call('get', KEYS[1]) == ARGV[1] then return \
                         redis.call('del', KEYS[1]) end return 0)"
                    ),
                    StepName::Renew => format!(
                        "make the `{step}` step extend the key only while it holds this \
                         client's token, compared and extended in one script \
                         (compare-and-pexpire)"
                    ),
                    StepName::Acquire(_) | StepName::Reenter => format!(
                        "make the `{step}` step write the key only when it is absent (SET \
                         ... NX) or, for a re-entry, only when it holds this client's token"
                    ),
                };
                let why = format!(
                    "{} and {did} the entry {} held. A step that acts on the key without \
                     checking, in the same atomic step, that it still holds this client's \
                     token acts on whatever entry is there: once its own lease has run out \
                     (or its request arrives late), that is the next holder's lock.",
                    at(&b),
                    whose(victim)
                );
                (remedy, why)
            }
            (&Harm::GrantedOverLive { holder }, StepName::Reenter) => (
                "make the `reenter` step add a hold only when the entry's owner is this \
                 client's token"
                    .into(),
                format!(
                    "{} and granted a re-entry while the entry was {}'s: a re-entry that \
                     does not check the owner lets a client that no longer holds the lock \
                     (its lease ran out) believe it still does.",
                    at(&b),
                    whose(holder)
                ),
            ),
            (&Harm::GrantedOverLive { holder }, _) => (
                format!(
                    "make the `{step}` step take the lock only when the key is absent (SET \
                     key token NX PX ttl, or check and write in one script)"
                ),
                format!(
                    "{} and granted the lock while {}'s entry was still there: a step that \
                     does not refuse a held lock in the same atomic step lets two clients \
                     in.",
                    at(&b),
                    whose(holder)
                ),
            ),
            (Harm::GrantedAfterDelete { by: Some(by) }, _) => {
                let remedy = match (by.name, reentrant) {
                    (StepName::Release, true) => format!(
                        "make the `{}` step count holds: take one off (HINCRBY key token -1), \
                         delete the key only when none is left, and answer `released_partly` \
                         until then",
                        by.name
                    ),
                    _ => format!(
                        "make the `{}` step leave the key alone while its holder is still \
                         inside",
                        by.name
                    ),
                };
                let (inner, lesson) = if reentrant && by.name == StepName::Release {
                    (
                        " (an inner release of a lock it had re-entered)",
                        " A release that ends the hold whatever the count frees the lock \
                         under its holder's feet.",
                    )
                } else {
                    ("", "")
                };
                let why = format!(
                    "{} and deleted the key while {} was still inside{inner}. {} and found no \
                     entry, so a second client got in.{lesson}",
                    at(by),
                    by.client,
                    at(&b)
                );
                (remedy, why)
            }
            (Harm::GrantedAfterDelete { by: None }, _) | (Harm::GrantedAfterLoss { .. }, _) => {
                let paused = matches!(b.harm, Harm::GrantedAfterLoss { paused: true });
                let culprit = Culprit::of(trace);
                let renews = scenario
                    .lock
                    .as_ref()
                    .is_some_and(|l| l.lock.renew.is_some());
                let general = match culprit {
                    Culprit::Timing => lease_outlived(renews),
                    Culprit::Fault(FaultKind::LostReply) if renews => RENEWAL_STOPPED,
                    _ => fix(scenario.design, property, culprit, scenario.fencing),
                };
                let why = format!(
                    "{} and found no entry there: the first holder's had {}{}. {}",
                    at(&b),
                    match culprit {
                        Culprit::Fault(
                            FaultKind::Failover | FaultKind::SplitBrain | FaultKind::Restart,
                        ) => {
                            "been lost with its node"
                        }
                        _ => "expired while it was still inside",
                    },
                    if paused {
                        " (its process paused, stop-the-world)"
                    } else {
                        ""
                    },
                    general.why
                );
                (general.remedy.into_owned(), why)
            }
            (Harm::LeftWithoutExpiry, _) => {
                let later = match step {
                    StepName::Acquire(Some(k)) if usize::from(k) < scenario_steps(&model) => {
                        format!(
                            "; its expiry was to come from a later step (`acquire[{}]`)",
                            k + 1
                        )
                    }
                    _ => String::new(),
                };
                (
                    format!(
                        "make the `{step}` step set the key and its expiry in one command (SET \
                         key token NX PX ttl) or one script"
                    ),
                    format!(
                        "{} and wrote the entry without an expiry{later}. A client that dies \
                         before the key gets one leaves it forever, and nobody takes the lock \
                         again.",
                        at(&b)
                    ),
                )
            }
        };
        Some(Fix {
            remedy: Cow::Owned(remedy),
            why: Cow::Owned(why),
        })
    }

    /// How many steps the custom lock's acquire has.
    fn scenario_steps(model: &LockModel) -> usize {
        model.cfg.custom.as_ref().map_or(1, |l| l.acquire.len())
    }

    /// A lease outlived by ordinary delays, for a custom lock: renew with a step of its
    /// own, or renew sooner.
    fn lease_outlived(renews: bool) -> Fix {
        if !renews {
            return Fix {
                remedy: Cow::Borrowed(
                    "add a `renew` step that extends the key while held (compare-and-pexpire \
                     every ttl/3), or a ttl longer than the worst-case critical section, \
                     delays included; and fence the resource (fencing = \"all\")",
                ),
                why: LEASE_OUTLIVED.why.clone(),
            };
        }
        Fix {
            remedy: Cow::Borrowed(
                "renew sooner (a smaller `renew.every`) or with a longer ttl, so that each \
                 renewal lands before the lease it extends ends, delays included; and fence \
                 the resource (fencing = \"all\") for a holder stopped longer than a lease",
            ),
            why: Cow::Borrowed(
                "The `renew` step keeps a lease only while each renewal lands before the \
                 lease it extends ends; a renewal that arrives late, or none at all from a \
                 stopped holder, lets the key expire under a holder that is still inside.",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_design_property_and_cause_has_a_fix() {
        let causes = [
            Timing,
            Drift,
            Fault(FaultKind::Pause),
            Fault(FaultKind::Crash),
            Fault(FaultKind::Failover),
            Fault(FaultKind::SplitBrain),
            Fault(FaultKind::Restart),
            Fault(FaultKind::Partition),
            Fault(FaultKind::LostReply),
            Fault(FaultKind::ClockJump),
        ];
        for d in DesignId::ALL {
            for p in Property::ALL {
                for c in causes {
                    for f in [Fencing::Off, Fencing::Writes, Fencing::All] {
                        let fix = fix(d, p, c, f);
                        assert!(!fix.remedy.is_empty() && !fix.why.is_empty());
                    }
                }
            }
        }
    }

    #[test]
    fn the_culprit_is_a_needed_fault_else_timing() {
        use locklab_model::cause::{Cause, Need};
        use locklab_model::model::{Action as A, LockModel};
        use locklab_model::scenario::Scenario;
        let text = "name = \"p\"\ndesign = \"lua-release\"\n[clients]\ncount = 2\n\
                    [timing]\nttl = 4\nwork = 1\nmax_step_delay = 1\nhorizon = 10\n\
                    [faults]\npauses = 1\ncrashes = 1\n[expect]\n\
                    mutual_exclusion = \"violated\"\nowner_only_release = \"holds\"\n\
                    no_orphaned_lock = \"holds\"\nresource_safety = \"violated\"\n";
        let model = LockModel::new(&Scenario::parse(text, "p.toml").unwrap());
        let need = |ingredient, struck| Need { ingredient, struck };
        let culprit = |path: &[A], needs: Option<Vec<Need>>| {
            let mut t = locklab_model::trace::build(&model, MutualExclusion, path);
            assert_eq!(t.steps.len(), path.len(), "the path applies");
            t.cause = needs.map(|needs| Cause {
                needs,
                undecided: Vec::new(),
            });
            Culprit::of(&t)
        };
        let pause = Ingredient::Fault(FaultKind::Pause);
        let crash = Ingredient::Fault(FaultKind::Crash);
        let both = [A::Acquire(0), A::Crash(1), A::Pause(0)];
        // Not computed: the first fault of the trace.
        assert_eq!(
            culprit(&[A::Acquire(0), A::Deliver(0, 0), A::Tick], None),
            Timing
        );
        assert_eq!(
            culprit(&[A::Acquire(0), A::Pause(0), A::Crash(1)], None),
            Fault(Pause)
        );
        assert_eq!(culprit(&both, None), Fault(Crash));
        // Computed: the first fault of a needed kind, whatever came before it.
        let holder = Some(Struck::Holder);
        assert_eq!(
            culprit(&both, Some(vec![need(pause, holder)])),
            Fault(Pause)
        );
        assert_eq!(culprit(&both, Some(vec![need(crash, None)])), Fault(Crash));
        // Only step delays needed: the faults in the trace name no remedy.
        let delays = need(Ingredient::StepDelays, None);
        assert_eq!(culprit(&both, Some(vec![delays])), Timing);
        assert_eq!(culprit(&both, Some(Vec::new())), Timing);
        // A needed pause that struck a client waiting for the lock is not the pause
        // beyond the lease the remedy speaks of.
        let waiting = Some(Struck::Waiting);
        assert_eq!(culprit(&both, Some(vec![need(pause, waiting)])), Timing);
    }

    #[test]
    fn the_culprit_selects_the_remedy() {
        let me = |c| fix(LuaRelease, MutualExclusion, c, Fencing::Off).remedy;
        assert!(me(Fault(Failover)).contains("wait_replicas"));
        assert!(me(Fault(SplitBrain)).contains("wait_replicas = 1"));
        assert!(me(Drift).contains("clock"));
        assert!(fix(Redlock, MutualExclusion, Drift, Fencing::Off)
            .remedy
            .contains("drift_allowance"));
        assert!(fix(Redlock, MutualExclusion, Fault(Restart), Fencing::Off)
            .remedy
            .contains("appendfsync always"));
        assert!(me(Fault(Pause)).contains("fencing"));
        assert!(me(Timing).contains("watchdog"));
        // A lock key lost with its node's process is no lease run out: no renewal helps.
        for design in [LuaRelease, Watchdog, Reentrant] {
            let restart = fix(design, MutualExclusion, Fault(Restart), Fencing::Off);
            assert!(restart.remedy.contains("appendfsync always"), "{design:?}");
            assert!(!restart.remedy.contains("watchdog"), "{design:?}");
            assert!(!restart.why.contains("ttl ran out"), "{design:?}");
        }
        assert!(fix(SetPxGetDel, OwnerOnlyRelease, Timing, Fencing::Off)
            .remedy
            .contains("compare-and-delete"));
        assert!(fix(NaiveSetnx, NoOrphanedLock, Fault(Crash), Fencing::Off)
            .remedy
            .contains("SET key token NX PX"));
        assert!(
            fix(LuaRelease, ResourceSafety, Fault(Pause), Fencing::Writes)
                .remedy
                .contains("fence reads")
        );
        assert!(
            fix(LuaRelease, ResourceSafety, Fault(Failover), Fencing::All)
                .remedy
                .contains("never goes back")
        );
        assert!(fix(LuaRelease, ResourceSafety, Fault(Pause), Fencing::Off)
            .remedy
            .contains("fencing = \"all\""));
    }

    /// A custom lock's fix names the step and the command the counterexample blames, and
    /// none of the built-in designs' advice.
    #[test]
    fn a_lease_short_by_a_blocked_wait_names_the_wait() {
        use locklab_model::model::LockModel;
        use locklab_model::scenario::Scenario;
        use locklab_model::search::{search, SearchOptions};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/lua-release-wait-blocks.toml");
        let sc = Scenario::load(&path).unwrap();
        let fix_of = |sc: &Scenario| {
            let model = LockModel::new(sc);
            let r = search(&model, &SearchOptions::default(), |_| {});
            let path = r.counterexample(MutualExclusion).expect("violated");
            for_trace(&locklab_model::trace::build(&model, MutualExclusion, path)).unwrap()
        };
        assert!(fix_of(&sc).remedy.contains("wait_timeout"));
        // The same lease short by step delays alone, no WAIT blocking: the lease's fix.
        let mut short = sc.clone();
        short.timing.wait_timeout = 0;
        short.timing.ttl = 6;
        let f = fix_of(&short);
        assert!(
            !f.remedy.contains("wait_timeout") && f.remedy.contains("watchdog"),
            "{f:?}"
        );
    }

    #[test]
    fn a_custom_locks_fix_names_the_step_and_command_the_trace_blames() {
        use locklab_model::model::LockModel;
        use locklab_model::scenario::Scenario;
        use locklab_model::search::{search, SearchOptions};
        let fix_of = |file: &str, property: Property| {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../examples/custom")
                .join(file);
            let model = LockModel::new(&Scenario::load(&path).unwrap());
            let opts = SearchOptions {
                threads: 1,
                ..SearchOptions::default()
            };
            let r = search(&model, &opts, |_| {});
            let path = r.counterexample(property).expect("violated");
            let fix = for_trace(&locklab_model::trace::build(&model, property, path)).unwrap();
            assert!(!fix.remedy.contains("(design "), "{fix:?}");
            fix
        };
        let f = fix_of("release-deletes-any.toml", OwnerOnlyRelease);
        assert!(
            f.remedy
                .contains("make the `release` step delete the key only"),
            "{f:?}"
        );
        assert!(
            f.why
                .contains("'s `release` step (EVALSHA release 1 lock t")
                && f.why.contains("and deleted the entry client"),
            "{f:?}"
        );
        let f = fix_of("setnx-then-pexpire.toml", NoOrphanedLock);
        assert!(f
            .remedy
            .contains("make the `acquire[1]` step set the key and its expiry"));
        assert!(
            f.why.contains("step (SETNX lock t") && f.why.contains("(`acquire[2]`)"),
            "{f:?}"
        );
        let f = fix_of("reentrant-counting-bug.toml", MutualExclusion);
        assert!(
            f.remedy.contains("make the `release` step count holds"),
            "{f:?}"
        );
        assert!(
            f.why
                .contains("an inner release of a lock it had re-entered")
                && f.why.contains("'s `acquire` step (EVALSHA acquire"),
            "{f:?}"
        );
        // A lease outlived under a pause: the pause's remedy, and where it showed.
        let f = fix_of("redis-py-lock-pause.toml", MutualExclusion);
        assert_eq!(f.remedy, PAUSE_BEYOND_LEASE.remedy);
        assert!(f.why.contains("step (SET lock t") && f.why.contains("found no entry"));
    }
}
