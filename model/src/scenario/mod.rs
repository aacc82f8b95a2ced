//! Scenario files: one TOML file per scenario, loaded and checked here.
//!
//! A scenario names a lock design, a topology, timing bounds, a fault budget and
//! the verdict expected for each property. Every tool (the model checker, the
//! harness, the CLI) reads scenarios through this module, so a mistake in a file
//! is reported the same way everywhere: one line naming the file, the line and
//! the dotted key, e.g.
//!
//! ```text
//! scenarios/redlock-gc-pause.toml:14: key `timing.ttl`: must be at least 1 (got 0)
//! ```
//!
//! # Keys
//!
//! Top level:
//! - `name` (string, required): the scenario's name; must equal the file name
//!   without `.toml`, so that a name printed in a report finds its file.
//! - `design` (string, required): a design id (`naive-setnx`, `setnx-expire`,
//!   `exists-set`, `getset-timestamp`, `set-px-del`, `set-px-get-del`,
//!   `get-expire-renewal`, `lua-release`,
//!   `watchdog`, `reentrant`, `redlock`), or `custom` with a `[lock]` table.
//! - `summary` (string, default `""`): one sentence saying what the scenario shows.
//! - `fencing` (boolean or string, default `false`): `true` or `"all"` fences every
//!   access, `"writes"` only writes, `false` or `"off"` none.
//! - `wait_replicas` (integer, default 0): `WAIT n` after acquiring; at most
//!   `topology.replicas`. Its timeout is `[timing] wait_timeout`.
//! - `watchdog` (boolean, default `true`; designs that renew only): `false` is
//!   Redisson's `lock(leaseTime, unit)`, an explicit lease time with no watchdog.
//! - `renewal_on_error` (string, default `"stop"`; designs that renew only): what the
//!   watchdog does after a renewal that got no answer. `"stop"`: it renews that hold no
//!   more, as Redisson's watchdog; `"retry"`: it tries again at the next interval.
//! - `reduction` is refused: the search needs no opt-in any more (its reductions keep
//!   every verdict; [`crate::search`]), and the unsound `"receive_first"` it used to
//!   select is gone.
//!
//! `[topology]`:
//! - `masters` (default 1): independent masters; more than 1 only for `redlock`; at most 7.
//! - `replicas` (default 0): asynchronous replicas per master; at most 3; not with `redlock`.
//! - `promotion` (default `"any"`): which replica a failover may promote. `"any"`: any
//!   live replica (an operator script, or a partition that hides the best one);
//!   `"most-advanced"`: Sentinel's rule, a replica with the greatest replication offset
//!   (all replicas have equal priority). Needs `replicas >= 1`.
//! - `sentinels` (default 0): for replays on real Redis only (the model ignores it):
//!   0, the harness scripts a failover's promotion; 1 to 7, Redis Sentinels watch the
//!   master and promote the replica themselves. Needs `replicas >= 1`, and no
//!   `restarts` or `split_brains` (the harness scripts those without Sentinel, which
//!   would act on them where the model does not).
//!
//! `[clients]`:
//! - `count` (required): number of clients, 1 to 4.
//! - `attempts` (default 2): acquire attempts per client (the first one plus
//!   retries), 1 to 8. Bounded so that retries cannot make the state space infinite.
//! - `arrival` (default `"start"`): `"start"`, every client makes its first attempt
//!   within `max_step_delay` ticks of the start; `"any"`, at any tick (of the horizon,
//!   if there is one).
//!
//! `[timing]` (logical ticks):
//! - `ttl` (required): lease length.
//! - `work` (required): length of the critical section.
//! - `max_step_delay` (required): a running client or an undelayed message
//!   takes its next step within this many ticks.
//! - `horizon` (optional; at most 64): the logical clock stops here, and "holds" means
//!   "holds up to this tick". Without it time never stops: the model keeps every time
//!   relative to its clock ([`crate::relative_time`]), and "holds" means "holds for all
//!   time". Refused for `getset-timestamp` and for a custom lock that reads the clock
//!   (`TIME`) or sets an absolute expiry (`EXPIREAT`, `PEXPIREAT`, `SET ... EXAT/PXAT`):
//!   those put an absolute time in Redis, which only a bounded clock keeps finite.
//! - `tick_ms` (default 100): real milliseconds per tick, for the harness.
//! - `clock_jump` (default `ttl`): size in ticks of one clock-jump fault.
//! - `node_drift` (default 0, at most `horizon`): ticks each node's clock may run ahead
//!   over the run (over all time without a horizon), gained one tick at a time at any moment (a clock that runs fast).
//! - `drift_allowance` (`redlock` only; default `node_drift`; less than `ttl`): ticks
//!   Redlock takes off every validity for clock drift; 0 turns the allowance off. Every
//!   other design takes 0, and accepts only 0.
//! - `min_validity` (`redlock` only; default `work + 2 × max_step_delay`; less than
//!   `ttl - drift_allowance`): the validity, in ticks, an acquire must leave (ttl less
//!   the time the acquire took less the allowance) for the client to hold the lock;
//!   with less it gives its grants back (`LockConfig::min_validity`). The default is the
//!   client's side of Redlock's contract, a validity that covers the slowest critical
//!   section; `0` takes any positive validity, as the Redlock spec, pottery and redsync
//!   do.
//! - `wait_timeout` (default 0; 0 to 255; above 0 only with `wait_replicas`): the
//!   `WAIT`'s timeout, in ticks. 0: the WAIT answers at its delivery with the replicas in
//!   sync then (the harness sends it with a fifth of a tick, so that it answers within its
//!   step; not Redis's `WAIT n 0`, which blocks for ever). Above 0: a WAIT delivered short
//!   of replicas blocks on its node until a replica's catch-up brings enough (it answers
//!   their number) or its timeout runs out (it answers fewer), at the latest at the tick
//!   that ends the `wait_timeout`-th tick after the one it was delivered in; the harness
//!   sends `wait_timeout × tick_ms` ms. In `[timing]` rather than beside `wait_replicas`:
//!   it is a duration in ticks, as `ttl` and `work` are, that the harness turns into ms
//!   with `tick_ms`, and `[timing]` is where a scenario's times are read and bounded.
//!
//! `[faults]` (budgets, all default 0): `pauses`, `crashes`, `failovers`
//! (needs `topology.replicas >= 1`), `restarts`, `partitions`, `clock_jumps`,
//! `lost_replies` (the reply to a command that ran is lost: the client times out).
//! `split_brains` (0 or 1; needs `topology.replicas >= 1`): a partition cuts the master
//! off from Sentinel and its replicas, a replica is promoted, and the old master stays
//! up serving every client that has not learnt of the new one (the partition lasts to
//! the horizon, or for ever without one).
//!
//! `[expect]` (all required, `"holds"` or `"violated"`): `mutual_exclusion`,
//! `owner_only_release`, `no_orphaned_lock`, `resource_safety`; and optionally `cause`,
//! what each violation the scenario expects needs: a list of `[faults]` keys,
//! `node_drift` and `step_delays`, each one without which the property would hold (`[]`: none of them;
//! see [`crate::cause`]), for every property expected violated, or a table of such
//! lists by property (`{ no_orphaned_lock = ["crashes"], owner_only_release =
//! ["step_delays"] }`) naming each property expected violated.
//!
//! `[lock]` (design `custom` only; see `lock.rs`): `acquire` and `release` (required),
//! `renew` and `reenter`, each `{ command = [...] }`, `{ script = "...", keys = [...],
//! args = [...] }` or `{ script_file = "...", ... }` with its success reply `granted`,
//! `released`, `renewed` or `reentered` (a string, an integer or `"nil"`); `acquire` may
//! be an array of such steps, sent one after another; `reenter = "acquire"` re-sends the
//! acquire's step with the held token; `release.released_partly` (with `reenter` only) is
//! the reply of a release that took one hold of several off; `renew.every` in ticks
//! (default ttl/3). Placeholders `{key}`, `{token}`, `{ttl}`.
//!
//! # Modules
//!
//! - this one: the types a loaded scenario is made of, and the functions that load it;
//! - `parse`: TOML text to a [`Scenario`], table by table, with the rules that tie keys
//!   together (a failover needs a replica, ...);
//! - `read`: reading one key of one table: unknown, missing and mistyped keys, words
//!   (`fencing`, `arrival`, ...);
//! - `ranges`: integers and the range each number key accepts;
//! - `lock`: `[lock]`, a custom lock's steps, its scripts compiled and scanned;
//! - `load`: files and directories;
//! - `json`: a scenario read back from its JSON (a trace's), through the same parser;
//! - `error`: [`ScenarioError`], one line naming file, line and key.

mod error;
mod json;
mod load;
mod lock;
mod parse;
mod ranges;
mod read;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use locklab::design::custom::{Action, CustomLock, Expected, LockStep};
use locklab::{DesignId, Fencing, RenewalOnError};
use serde::{Deserialize, Serialize, Serializer};

pub use error::{KeyErrorKind, ScenarioError};

use crate::cause::Ingredient;
pub use load::{load_dir, load_paths};

/// The directory scanned when no path is given.
pub const DEFAULT_DIR: &str = "scenarios";
/// Most clients a scenario may have (keeps the state space finite and checkable).
pub const MAX_CLIENTS: u32 = 4;
/// Most independent masters (Redlock) a scenario may have.
pub const MAX_MASTERS: u32 = 7;
/// Most replicas per master.
pub const MAX_REPLICAS: u32 = 3;
/// Most sentinels of a replay.
pub const MAX_SENTINELS: u32 = 7;
/// Largest logical horizon, in ticks.
pub const MAX_HORIZON: u32 = 64;
/// Most acquire attempts per client.
pub const MAX_ATTEMPTS: u32 = 8;
/// Longest `WAIT` timeout, in ticks.
pub const MAX_WAIT_TIMEOUT: u32 = u8::MAX as u32;
/// Largest budget of any one fault kind.
pub const MAX_FAULTS: u32 = u8::MAX as u32;
/// Acquire attempts per client when `[clients] attempts` is not given.
pub const DEFAULT_ATTEMPTS: u32 = 2;
/// Real milliseconds per tick when `[timing] tick_ms` is not given.
pub const DEFAULT_TICK_MS: u64 = 100;
/// Longest real tick, in ms (one minute): keeps every tick count times `tick_ms` well
/// inside an i64 of milliseconds.
pub const MAX_TICK_MS: u64 = 60_000;

// ---------------------------------------------------------------------------
// The scenario
// ---------------------------------------------------------------------------

/// One scenario file, loaded and validated.
///
/// Serializes with the same keys as the file (`design` as its id, `fencing` as
/// `"off"`/`"writes"`/`"all"`), plus `path`: for JSON traces and reports.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Scenario {
    /// `name`: equal to the file stem.
    pub name: String,
    /// `design`: which lock design runs.
    #[serde(serialize_with = "design_str")]
    pub design: DesignId,
    /// `summary`: one sentence for reports (may be empty).
    pub summary: String,
    /// `fencing`: `true`/`"all"`, `"writes"`, or `false`/`"off"`.
    #[serde(serialize_with = "fencing_str")]
    pub fencing: Fencing,
    /// `wait_replicas`: `WAIT n` after acquiring (0 = no WAIT).
    pub wait_replicas: u32,
    /// `watchdog` and `renewal_on_error`, for a design that renews; `None` (and no such
    /// keys in JSON) for the others.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub renewal: Option<Renewal>,
    /// `[topology]`.
    pub topology: Topology,
    /// `[clients]`.
    pub clients: Clients,
    /// `[timing]`.
    pub timing: Timing,
    /// `[faults]`.
    pub faults: Faults,
    /// `[expect]`.
    pub expect: Expect,
    /// `[lock]`: the steps of design `custom` (`None` for the built-in designs).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "lock_json")]
    pub lock: Option<ScenarioLock>,
    /// The file this scenario was read from (as given, not canonicalized).
    pub path: PathBuf,
}

/// `[topology]`: how many Redis nodes and how they relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Topology {
    /// `masters` (default 1): independent masters; more than one only for `redlock`.
    pub masters: u32,
    /// `replicas` (default 0): asynchronous replicas per master.
    pub replicas: u32,
    /// `promotion` (default `"any"`): which replica a failover may promote. Left out
    /// of JSON when it is the default (a file without replicas may not name it).
    #[serde(skip_serializing_if = "Promotion::is_any")]
    pub promotion: Promotion,
    /// `sentinels` (default 0): Redis Sentinels in replays (the model ignores it).
    /// Left out of JSON when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub sentinels: u32,
}

/// `[topology] promotion`: the rule that picks the replica a failover promotes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Promotion {
    /// Any live replica of the dead master (an operator script; a partition that hides
    /// the most advanced one from Sentinel).
    #[default]
    Any,
    /// Sentinel's rule with equal priorities: a replica with the greatest replication
    /// offset.
    MostAdvanced,
}

impl Promotion {
    fn is_any(&self) -> bool {
        *self == Promotion::Any
    }

    /// The value as written in a scenario file.
    pub fn as_str(self) -> &'static str {
        match self {
            Promotion::Any => "any",
            Promotion::MostAdvanced => "most-advanced",
        }
    }
}

impl Topology {
    /// Every Redis node: masters and their replicas.
    pub fn nodes(&self) -> u32 {
        self.masters * (1 + self.replicas)
    }
}

/// `[clients]`: the lock users.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Clients {
    /// `count` (required): how many clients compete for the lock.
    pub count: u32,
    /// `attempts` (default 2): acquire attempts per client, retries included.
    pub attempts: u32,
    /// `arrival` (default `"start"`): when a client makes its first attempt.
    pub arrival: Arrival,
}

/// `[clients] arrival`: when a client's first acquire attempt comes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// `"start"`: within `max_step_delay` ticks of the start.
    #[default]
    Start,
    /// `"any"`: at any tick (of the horizon, if any) (a real client arrives when it likes), so a
    /// single attempt can land just after another holder lost its lease.
    Any,
}

/// `[timing]`: logical time bounds, in ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "TimingJson")]
pub struct Timing {
    /// `ttl` (required): lease length.
    pub ttl: u32,
    /// `work` (required): ticks a holder spends in its critical section.
    pub work: u32,
    /// `max_step_delay` (required): bound on a running client's or message's next step.
    pub max_step_delay: u32,
    /// `horizon` (optional): the clock stops at this tick, and a "holds" is a proof up to
    /// it. Without one, time has no end: the model keeps times relative to its clock
    /// ([`crate::relative_time`]) and a "holds" holds for all time.
    pub horizon: Option<u32>,
    /// `tick_ms` (default 100): real milliseconds per tick in the harness.
    pub tick_ms: u64,
    /// `clock_jump` (default `ttl`): ticks one clock-jump fault moves a clock by.
    pub clock_jump: u32,
    /// `node_drift` (default 0): ticks each node's clock may run ahead over the run, one
    /// tick at a time at any moment (a clock that runs fast). Left out of JSON when 0.
    pub node_drift: u32,
    /// `drift_allowance` (default `node_drift`; `redlock` only): ticks Redlock takes off
    /// every validity for clock drift. Left out of JSON when it and `node_drift` are 0.
    pub drift_allowance: u32,
    /// `min_validity` (`redlock` only): the validity an acquire must leave for the
    /// client to hold the lock; `None`, the default, is `work + 2 × max_step_delay`
    /// ([`Timing::min_validity`]). Left out of JSON when not given.
    pub min_validity: Option<u32>,
    /// `wait_timeout` (default 0; with `wait_replicas` only): ticks a `WAIT` may block
    /// waiting for its replicas; 0 answers it at its delivery. Left out of JSON when 0.
    pub wait_timeout: u32,
}

impl Timing {
    /// The validity a Redlock acquire must leave, in ticks: the scenario's
    /// `min_validity`, or by default the slowest critical section (the read within
    /// the step bound, the work, the write within the step bound).
    pub fn min_validity(&self) -> u64 {
        self.min_validity.map_or_else(
            || u64::from(self.work) + 2 * u64::from(self.max_step_delay),
            u64::from,
        )
    }
}

/// [`Timing`] as JSON (a trace embeds it, and a trace's scenario is read back from it):
/// `node_drift` only when not 0, and `drift_allowance` whenever it is not 0 or
/// `node_drift` is not, since its default is `node_drift` (an allowance of 0 under drift
/// left out would read back as an allowance equal to the drift, another scenario);
/// `wait_timeout` only when not 0 (its default), so that every trace of a scenario
/// without it reads as before.
#[derive(Serialize)]
struct TimingJson {
    ttl: u32,
    work: u32,
    max_step_delay: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    horizon: Option<u32>,
    tick_ms: u64,
    clock_jump: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    node_drift: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    drift_allowance: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_validity: Option<u32>,
    #[serde(skip_serializing_if = "is_zero")]
    wait_timeout: u32,
}

impl From<Timing> for TimingJson {
    fn from(t: Timing) -> Self {
        TimingJson {
            ttl: t.ttl,
            work: t.work,
            max_step_delay: t.max_step_delay,
            horizon: t.horizon,
            tick_ms: t.tick_ms,
            clock_jump: t.clock_jump,
            node_drift: (t.node_drift != 0).then_some(t.node_drift),
            drift_allowance: (t.drift_allowance != 0 || t.node_drift != 0)
                .then_some(t.drift_allowance),
            min_validity: t.min_validity,
            wait_timeout: t.wait_timeout,
        }
    }
}

pub use crate::fault::Faults;

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The verdict a scenario expects for one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Expectation {
    /// The property holds in every explored behaviour.
    Holds,
    /// Some explored behaviour breaks the property.
    Violated,
}

impl Expectation {
    /// `"holds"` or `"violated"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Expectation::Holds => "holds",
            Expectation::Violated => "violated",
        }
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Expectation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "holds" => Ok(Expectation::Holds),
            "violated" => Ok(Expectation::Violated),
            _ => Err(format!(
                "`{s}` is not a verdict; use \"holds\" or \"violated\""
            )),
        }
    }
}

/// The four checked properties; serde names them as [`Property::as_str`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Property {
    /// Never two clients in their critical section at once.
    MutualExclusion,
    /// No client deletes or overwrites a lock entry another client owns.
    OwnerOnlyRelease,
    /// A lock whose owner crashed always has a finite expiry.
    NoOrphanedLock,
    /// No lost update on the protected resource.
    ResourceSafety,
}

impl Property {
    /// All properties, in report order.
    pub const ALL: [Property; 4] = [
        Property::MutualExclusion,
        Property::OwnerOnlyRelease,
        Property::NoOrphanedLock,
        Property::ResourceSafety,
    ];

    /// The snake_case name used in scenario files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Property::MutualExclusion => "mutual_exclusion",
            Property::OwnerOnlyRelease => "owner_only_release",
            Property::NoOrphanedLock => "no_orphaned_lock",
            Property::ResourceSafety => "resource_safety",
        }
    }

    /// Whether an attempt after a holder lost its lease can break it: a second holder
    /// (mutual exclusion, the stock), or the old holder's release or renewal reaching
    /// the new holder's lock. Whether a key can be orphaned does not depend on who
    /// attempts afterwards.
    pub fn tested_by_late_attempts(self) -> bool {
        self != Property::NoOrphanedLock
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Property {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Property::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown property `{s}`; properties: {}",
                    Property::ALL.map(Property::as_str).join(", ")
                )
            })
    }
}

/// `[expect]`: the expected verdict for each property (all four are required), and what
/// their violation needs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Expect {
    /// `mutual_exclusion`.
    pub mutual_exclusion: Expectation,
    /// `owner_only_release`.
    pub owner_only_release: Expectation,
    /// `no_orphaned_lock`.
    pub no_orphaned_lock: Expectation,
    /// `resource_safety`.
    pub resource_safety: Expectation,
    /// `cause` (optional): what each violation the scenario expects needs, as
    /// [`crate::cause`] computes it; `None` when the file does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<ExpectedCauses>,
}

/// `[expect] cause`: per property expected violated, the ingredients its violation
/// needs (sorted by property, each list in [`Ingredient::ALL`] order). Serializes as
/// the table form, which reads back as the same value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExpectedCauses(pub Vec<(Property, Vec<Ingredient>)>);

impl ExpectedCauses {
    /// The stated cause of `property`'s violation.
    pub fn of(&self, property: Property) -> Option<&[Ingredient]> {
        self.0
            .iter()
            .find(|(p, _)| *p == property)
            .map(|(_, c)| c.as_slice())
    }
}

impl Serialize for ExpectedCauses {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (p, causes) in &self.0 {
            map.serialize_entry(p.as_str(), causes)?;
        }
        map.end()
    }
}

impl Expect {
    /// The expectation for one property.
    pub fn get(&self, property: Property) -> Expectation {
        match property {
            Property::MutualExclusion => self.mutual_exclusion,
            Property::OwnerOnlyRelease => self.owner_only_release,
            Property::NoOrphanedLock => self.no_orphaned_lock,
            Property::ResourceSafety => self.resource_safety,
        }
    }

    /// Every property with its expectation, in [`Property::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (Property, Expectation)> + '_ {
        Property::ALL.into_iter().map(|p| (p, self.get(p)))
    }
}

fn design_str<S: Serializer>(design: &DesignId, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(design.as_str())
}

/// `[lock]`: a custom lock, and how often it renews.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ScenarioLock {
    /// The steps.
    pub lock: CustomLock,
    /// `renew.every`, in ticks; `None`: every ttl/3.
    pub every: Option<u32>,
}

/// A success reply as a file writes it.
fn reply_json(reply: &Expected) -> serde_json::Value {
    match reply {
        Expected::Str(s) => serde_json::Value::from(s.as_str()),
        Expected::Int(i) => serde_json::Value::from(*i),
        Expected::Nil => serde_json::Value::from("nil"),
    }
}

/// One `[lock]` step as its file writes it; `success` is the key of its success reply
/// (`granted`, `released`, `renewed`), so that the JSON reads back as the same scenario.
fn step_json(step: &LockStep, success: &str) -> serde_json::Value {
    let reply = reply_json(&step.success);
    let mut json = match &step.action {
        Action::Command(words) => serde_json::json!({ "command": words }),
        Action::Script { script, keys, args } => serde_json::json!({
            "script": &*script.text, "keys": keys, "args": args,
        }),
    };
    json[success] = reply;
    json
}

fn lock_json<S: Serializer>(lock: &Option<ScenarioLock>, serializer: S) -> Result<S::Ok, S::Error> {
    let Some(l) = lock else {
        return serializer.serialize_none();
    };
    let acquire = match l.lock.acquire.as_slice() {
        [one] => step_json(one, "granted"),
        steps => steps.iter().map(|s| step_json(s, "granted")).collect(),
    };
    let mut json = serde_json::json!({
        "acquire": acquire,
        "release": step_json(&l.lock.release, "released"),
    });
    if let Some(partly) = &l.lock.released_partly {
        json["release"]["released_partly"] = reply_json(partly);
    }
    if let Some(renew) = &l.lock.renew {
        let mut renew = step_json(renew, "renewed");
        if let Some(every) = l.every {
            renew["every"] = every.into();
        }
        json["renew"] = renew;
    }
    if let Some(reenter) = &l.lock.reenter {
        json["reenter"] = step_json(reenter, "reentered");
    }
    json.serialize(serializer)
}

/// How a renewing design renews.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Renewal {
    /// `watchdog`: whether the watchdog runs (`false`: an explicit lease time).
    pub watchdog: bool,
    /// `renewal_on_error`: the watchdog after a renewal that got no answer.
    #[serde(serialize_with = "renewal_str")]
    pub renewal_on_error: RenewalOnError,
}

impl Scenario {
    /// Whether the design's watchdog runs (`false` also for designs that do not renew).
    pub fn watchdog(&self) -> bool {
        self.renewal.is_some_and(|r| r.watchdog)
    }
}

fn renewal_str<S: Serializer>(r: &RenewalOnError, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(r.name())
}

fn fencing_str<S: Serializer>(fencing: &Fencing, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(match fencing {
        Fencing::Off => "off",
        Fencing::Writes => "writes",
        Fencing::All => "all",
    })
}

impl Scenario {
    /// Reads and validates one scenario file.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        load::file(path.as_ref())
    }

    /// Parses and validates scenario text; `path` is used in error messages, is
    /// stored in [`Scenario::path`], and its file stem must equal `name`
    /// (unless the path has no file name).
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        parse::scenario(text, path.as_ref())
    }
}
