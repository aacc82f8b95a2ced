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
//!   `getset-timestamp`, `set-px-del`, `set-px-get-del`, `lua-release`,
//!   `watchdog`, `reentrant`, `redlock`).
//! - `summary` (string, default `""`): one sentence saying what the scenario shows.
//! - `fencing` (boolean or string, default `false`): `true` or `"all"` fences every
//!   access, `"writes"` only writes, `false` or `"off"` none.
//! - `wait_replicas` (integer, default 0): `WAIT n` after acquiring; at most
//!   `topology.replicas`.
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
//!   master and promote the replica themselves. Needs `replicas >= 1`.
//!
//! `[clients]`:
//! - `count` (required): number of clients, 1 to 4.
//! - `attempts` (default 2): acquire attempts per client (the first one plus
//!   retries), 1 to 8. Bounded so that retries cannot make the state space infinite.
//! - `arrival` (default `"start"`): `"start"`, every client makes its first attempt
//!   within `max_step_delay` ticks of the start; `"any"`, at any tick of the horizon.
//!
//! `[timing]` (logical ticks):
//! - `ttl` (required): lease length.
//! - `work` (required): length of the critical section.
//! - `max_step_delay` (required): a running client or an undelayed message
//!   takes its next step within this many ticks.
//! - `horizon` (required): the logical clock stops here; at most 64.
//! - `tick_ms` (default 100): real milliseconds per tick, for the harness.
//! - `clock_jump` (default `ttl`): size in ticks of one clock-jump fault.
//! - `node_drift` (default 0, at most `horizon`): ticks each node's clock may run ahead
//!   over the run, gained one tick at a time at any moment (a clock that runs fast).
//! - `drift_allowance` (`redlock` only; default `node_drift`; less than `ttl`): ticks
//!   Redlock takes off every validity for clock drift; 0 turns the allowance off.
//!
//! `[faults]` (budgets, all default 0): `pauses`, `crashes`, `failovers`
//! (needs `topology.replicas >= 1`), `restarts`, `partitions`, `clock_jumps`,
//! `lost_replies` (the reply to a command that ran is lost: the client times out).
//! `split_brains` (0 or 1; needs `topology.replicas >= 1`): a partition cuts the master
//! off from Sentinel and its replicas, a replica is promoted, and the old master stays
//! up serving every client that has not learnt of the new one (the partition lasts to
//! the horizon).
//!
//! `[expect]` (all required, `"holds"` or `"violated"`): `mutual_exclusion`,
//! `owner_only_release`, `no_orphaned_lock`, `resource_safety`.

use std::collections::HashSet;
use std::fmt;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use locklab::{DesignId, Fencing};
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

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
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scenario {
    /// `name`: equal to the file stem.
    pub name: String,
    /// `design`: which lock design runs.
    pub design: DesignId,
    /// `summary`: one sentence for reports (may be empty).
    pub summary: String,
    /// `fencing`: `true`/`"all"`, `"writes"`, or `false`/`"off"`.
    pub fencing: Fencing,
    /// `wait_replicas`: `WAIT n` after acquiring (0 = no WAIT).
    pub wait_replicas: u32,
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
    /// `"any"`: at any tick of the horizon (a real client arrives when it likes), so a
    /// single attempt can land just after another holder lost its lease.
    Any,
}

/// `[timing]`: logical time bounds, in ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Timing {
    /// `ttl` (required): lease length.
    pub ttl: u32,
    /// `work` (required): ticks a holder spends in its critical section.
    pub work: u32,
    /// `max_step_delay` (required): bound on a running client's or message's next step.
    pub max_step_delay: u32,
    /// `horizon` (required): the clock stops at this tick.
    pub horizon: u32,
    /// `tick_ms` (default 100): real milliseconds per tick in the harness.
    pub tick_ms: u64,
    /// `clock_jump` (default `ttl`): ticks one clock-jump fault moves a clock by.
    pub clock_jump: u32,
    /// `node_drift` (default 0): ticks each node's clock may run ahead over the run, one
    /// tick at a time at any moment (a clock that runs fast). Left out of JSON when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub node_drift: u32,
    /// `drift_allowance` (default `node_drift`; `redlock` only): ticks Redlock takes off
    /// every validity for clock drift. Left out of JSON when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub drift_allowance: u32,
}

/// `[faults]`: how many of each fault the checker may inject.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Faults {
    /// `pauses`: stop-the-world pauses of a client.
    pub pauses: u32,
    /// `crashes`: client crashes.
    pub crashes: u32,
    /// `failovers`: a master dies and a (possibly stale) replica is promoted.
    pub failovers: u32,
    /// `restarts`: a node comes back empty.
    pub restarts: u32,
    /// `partitions`: a client-to-node link is cut (and later healed).
    pub partitions: u32,
    /// `clock_jumps`: a node's or client's clock jumps by `timing.clock_jump`.
    pub clock_jumps: u32,
    /// `lost_replies`: the reply to a command that ran never reaches its client, whose
    /// timeout fires.
    pub lost_replies: u32,
    /// `split_brains` (0 or 1): a replica is promoted while the old master keeps
    /// serving the clients on its side of a partition. Left out of JSON when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub split_brains: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Faults {
    /// The whole budget: the sum of all counts.
    pub fn total(&self) -> u32 {
        self.pauses
            + self.crashes
            + self.failovers
            + self.restarts
            + self.partitions
            + self.clock_jumps
            + self.lost_replies
            + self.split_brains
    }
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

/// The four checked properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
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

/// `[expect]`: the expected verdict for each property (all four are required).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Expect {
    /// `mutual_exclusion`.
    pub mutual_exclusion: Expectation,
    /// `owner_only_release`.
    pub owner_only_release: Expectation,
    /// `no_orphaned_lock`.
    pub no_orphaned_lock: Expectation,
    /// `resource_safety`.
    pub resource_safety: Expectation,
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

fn fencing_str(fencing: Fencing) -> &'static str {
    match fencing {
        Fencing::Off => "off",
        Fencing::Writes => "writes",
        Fencing::All => "all",
    }
}

/// Serializes with the same keys as the file (`design` as its id, `fencing` as
/// `"off"`/`"writes"`/`"all"`), plus `path`: for JSON traces and reports.
impl Serialize for Scenario {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Scenario", 11)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("design", self.design.as_str())?;
        s.serialize_field("summary", &self.summary)?;
        s.serialize_field("fencing", fencing_str(self.fencing))?;
        s.serialize_field("wait_replicas", &self.wait_replicas)?;
        s.serialize_field("topology", &self.topology)?;
        s.serialize_field("clients", &self.clients)?;
        s.serialize_field("timing", &self.timing)?;
        s.serialize_field("faults", &self.faults)?;
        s.serialize_field("expect", &self.expect)?;
        s.serialize_field("path", &self.path)?;
        s.end()
    }
}

impl Scenario {
    /// Reads and validates one scenario file.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        let path = path.as_ref();
        let text = fs::read_to_string(path).map_err(|e| io_error(path, &e))?;
        Scenario::parse(&text, path)
    }

    /// Parses and validates scenario text; `path` is used in error messages, is
    /// stored in [`Scenario::path`], and its file stem must equal `name`
    /// (unless the path has no file name).
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        Parser {
            path: path.as_ref(),
            text,
        }
        .scenario()
    }
}

/// Loads every `*.toml` file directly in `dir` (not recursively), sorted by file
/// name. A directory without any is an error.
pub fn load_dir(dir: impl AsRef<Path>) -> Result<Vec<Scenario>, ScenarioError> {
    let dir = dir.as_ref();
    let entries = fs::read_dir(dir).map_err(|e| io_error(dir, &e))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dir, &e))?;
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "toml") && path.is_file() {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(ScenarioError::NoScenarios {
            path: dir.to_path_buf(),
        });
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    files.iter().map(Scenario::load).collect()
}

/// Loads scenario files and directories (a directory contributes its `*.toml`
/// files, as [`load_dir`]); no paths means [`DEFAULT_DIR`]. The same file given
/// twice is loaded once; two different files with the same `name` are an error.
pub fn load_paths(paths: &[PathBuf]) -> Result<Vec<Scenario>, ScenarioError> {
    let default = [PathBuf::from(DEFAULT_DIR)];
    let paths = if paths.is_empty() {
        &default[..]
    } else {
        paths
    };
    let mut out: Vec<Scenario> = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    for path in paths {
        let meta = fs::metadata(path).map_err(|e| io_error(path, &e))?;
        let found = if meta.is_dir() {
            load_dir(path)?
        } else {
            vec![Scenario::load(path)?]
        };
        for scenario in found {
            let canonical =
                fs::canonicalize(&scenario.path).unwrap_or_else(|_| scenario.path.clone());
            if !seen.insert(canonical) {
                continue;
            }
            if let Some(other) = out.iter().find(|o| o.name == scenario.name) {
                return Err(ScenarioError::Key {
                    line: name_line(&scenario.path),
                    path: scenario.path.clone(),
                    key: "name".to_string(),
                    kind: KeyErrorKind::DuplicateName,
                    message: format!(
                        "scenario `{}` is also defined in {}; names must be unique",
                        scenario.name,
                        other.path.display()
                    ),
                });
            }
            out.push(scenario);
        }
    }
    Ok(out)
}

/// The line of the top-level `name` key in a file that already loaded once.
fn name_line(path: &Path) -> usize {
    let Ok(text) = fs::read_to_string(path) else {
        return 1;
    };
    let Ok(doc) = DeTable::parse(&text) else {
        return 1;
    };
    match doc.get_ref().get_key_value("name") {
        Some((key, _)) => line_at(&text, key.span().start),
        None => 1,
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// What is wrong with a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyErrorKind {
    /// A key this table does not have.
    Unknown,
    /// A value of the wrong TOML type.
    WrongType,
    /// A required key is absent.
    Missing,
    /// `design` is not a known design id.
    UnknownDesign,
    /// A value out of range or inconsistent with another key.
    InvalidValue,
    /// `name` differs from the file stem.
    NameMismatch,
    /// Two loaded files use the same `name`.
    DuplicateName,
}

/// An error loading scenarios. `Display` is always one line that starts with
/// the file (and, for problems inside a file, the 1-based line).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    /// The file or directory cannot be read.
    #[error("{}: cannot read: {message}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// A directory holds no `*.toml` file.
    #[error("{}: no scenario files (*.toml) in this directory", path.display())]
    NoScenarios {
        /// The directory.
        path: PathBuf,
    },
    /// The file is not valid TOML.
    #[error("{}:{line}:{column}: not valid TOML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A key is unknown, mistyped, missing or has an impossible value.
    #[error("{}:{line}: key `{key}`: {message}", path.display())]
    Key {
        /// The file.
        path: PathBuf,
        /// 1-based line of the key (for a missing key: its table's header, or 1).
        line: usize,
        /// Dotted key, e.g. `timing.ttl`.
        key: String,
        /// What kind of problem.
        kind: KeyErrorKind,
        /// What is wrong and, where possible, what to write instead.
        message: String,
    },
}

impl ScenarioError {
    /// The file or directory the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ScenarioError::Io { path, .. }
            | ScenarioError::NoScenarios { path }
            | ScenarioError::Syntax { path, .. }
            | ScenarioError::Key { path, .. } => path,
        }
    }

    /// The 1-based line, for errors inside a file.
    pub fn line(&self) -> Option<usize> {
        match self {
            ScenarioError::Syntax { line, .. } | ScenarioError::Key { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// The dotted key, for errors about a key.
    pub fn key(&self) -> Option<&str> {
        match self {
            ScenarioError::Key { key, .. } => Some(key),
            _ => None,
        }
    }

    /// The kind of key error, for errors about a key.
    pub fn kind(&self) -> Option<KeyErrorKind> {
        match self {
            ScenarioError::Key { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

fn io_error(path: &Path, e: &std::io::Error) -> ScenarioError {
    ScenarioError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// 1-based line of a byte offset.
fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// 1-based column (in characters) of a byte offset.
fn column_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    let bytes = &text.as_bytes()[..end];
    let start = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    String::from_utf8_lossy(&bytes[start..]).chars().count() + 1
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

const TOP_KEYS: &[&str] = &[
    "name",
    "design",
    "summary",
    "fencing",
    "wait_replicas",
    "topology",
    "clients",
    "timing",
    "faults",
    "expect",
];
const TOPOLOGY_KEYS: &[&str] = &["masters", "replicas", "promotion", "sentinels"];
const CLIENTS_KEYS: &[&str] = &["count", "attempts", "arrival"];
const TIMING_KEYS: &[&str] = &[
    "ttl",
    "work",
    "max_step_delay",
    "horizon",
    "tick_ms",
    "clock_jump",
    "node_drift",
    "drift_allowance",
];
const FAULTS_KEYS: &[&str] = &[
    "pauses",
    "crashes",
    "failovers",
    "restarts",
    "partitions",
    "clock_jumps",
    "lost_replies",
    "split_brains",
];
const EXPECT_KEYS: &[&str] = &[
    "mutual_exclusion",
    "owner_only_release",
    "no_orphaned_lock",
    "resource_safety",
];

const CAP_REASON: &str =
    "the cap is there to keep the model's state space finite and small enough to check";

type Result<T, E = ScenarioError> = std::result::Result<T, E>;
type Entry<'i> = Spanned<DeValue<'i>>;

/// One table of the file: the root (name `""`) or a `[section]`.
struct Section<'a, 'i> {
    name: &'static str,
    /// `None` when the file has no such table.
    table: Option<&'a DeTable<'i>>,
    /// Line of the table's header (1 for the root or an absent table).
    line: usize,
    valid: &'static [&'static str],
}

impl<'a, 'i> Section<'a, 'i> {
    fn get(&self, key: &str) -> Option<&'a Entry<'i>> {
        self.table.and_then(|t| t.get(key))
    }

    fn dotted(&self, key: &str) -> String {
        if self.name.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.name)
        }
    }
}

/// A value with the line it was written on (or where it would have been).
#[derive(Clone, Debug)]
struct Field<T> {
    value: T,
    line: usize,
}

struct Parser<'p> {
    path: &'p Path,
    text: &'p str,
}

impl Parser<'_> {
    fn line(&self, span: &Range<usize>) -> usize {
        line_at(self.text, span.start)
    }

    fn err(
        &self,
        line: usize,
        key: String,
        kind: KeyErrorKind,
        message: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError::Key {
            path: self.path.to_path_buf(),
            line,
            key,
            kind,
            message: message.into(),
        }
    }

    fn syntax(&self, e: &toml::de::Error) -> ScenarioError {
        let offset = e.span().map_or(0, |s| s.start);
        let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
        ScenarioError::Syntax {
            path: self.path.to_path_buf(),
            line: line_at(self.text, offset),
            column: column_at(self.text, offset),
            message,
        }
    }

    fn scenario(&self) -> Result<Scenario> {
        let doc = DeTable::parse(self.text).map_err(|e| self.syntax(&e))?;
        let root = Section {
            name: "",
            table: Some(doc.get_ref()),
            line: 1,
            valid: TOP_KEYS,
        };

        // Unknown keys first: a misspelt key would otherwise show up as a missing one.
        self.check_unknown(&root)?;
        let topology = self.section(&root, "topology", TOPOLOGY_KEYS)?;
        let clients = self.section(&root, "clients", CLIENTS_KEYS)?;
        let timing = self.section(&root, "timing", TIMING_KEYS)?;
        let faults = self.section(&root, "faults", FAULTS_KEYS)?;
        let expect = self.section(&root, "expect", EXPECT_KEYS)?;
        for section in [&topology, &clients, &timing, &faults, &expect] {
            self.check_unknown(section)?;
        }

        // Top level.
        let name = self.required(&root, "name", self.string(&root, "name")?)?;
        self.check_name(&name)?;
        let design_field = self.required(&root, "design", self.string(&root, "design")?)?;
        let design: DesignId =
            design_field
                .value
                .parse()
                .map_err(|e: locklab::UnknownDesign| {
                    self.err(
                        design_field.line,
                        "design".into(),
                        KeyErrorKind::UnknownDesign,
                        e.to_string(),
                    )
                })?;
        let summary = self
            .string(&root, "summary")?
            .map(|f| f.value)
            .unwrap_or_default();
        let fencing = self.fencing(&root)?;
        let wait_replicas = self.u32_or(&root, "wait_replicas", 0)?;

        // [topology]
        let masters = self.u32_or(&topology, "masters", 1)?;
        let replicas = self.u32_or(&topology, "replicas", 0)?;
        self.at_least(&topology, "masters", &masters, 1)?;
        self.at_most_cap(&topology, "masters", &masters, MAX_MASTERS)?;
        if masters.value > 1 && !design.multi_master() {
            return Err(self.err(
                masters.line,
                topology.dotted("masters"),
                KeyErrorKind::InvalidValue,
                format!(
                    "design `{design}` uses a single master (got {}); only redlock uses several independent masters",
                    masters.value
                ),
            ));
        }
        self.at_most_cap(&topology, "replicas", &replicas, MAX_REPLICAS)?;
        if replicas.value > 0 && masters.value > 1 {
            return Err(self.err(
                replicas.line,
                topology.dotted("replicas"),
                KeyErrorKind::InvalidValue,
                format!(
                    "replicas (got {}) together with several masters (masters = {}) are not supported; \
                     redlock's masters are independent: set replicas = 0",
                    replicas.value, masters.value
                ),
            ));
        }
        if replicas.value > 0 && design.multi_master() {
            return Err(self.err(
                replicas.line,
                topology.dotted("replicas"),
                KeyErrorKind::InvalidValue,
                format!(
                    "design `{design}` with replicas (got {}) is not supported; redlock's masters are \
                     independent: set replicas = 0",
                    replicas.value
                ),
            ));
        }
        let promotion = self.promotion(&topology, replicas.value)?;
        let sentinels = self.u32_or(&topology, "sentinels", 0)?;
        self.at_most_cap(&topology, "sentinels", &sentinels, MAX_SENTINELS)?;
        if sentinels.value > 0 && replicas.value == 0 {
            return Err(self.err(
                sentinels.line,
                topology.dotted("sentinels"),
                KeyErrorKind::InvalidValue,
                "sentinels promote a replica, but topology.replicas = 0; add a replica or \
                 remove sentinels",
            ));
        }
        if wait_replicas.value > replicas.value {
            return Err(self.err(
                wait_replicas.line,
                "wait_replicas".into(),
                KeyErrorKind::InvalidValue,
                format!(
                    "cannot wait for {} replicas when topology.replicas = {}",
                    wait_replicas.value, replicas.value
                ),
            ));
        }

        // [clients]
        let count = self.required_u32(&clients, "count")?;
        self.at_least(&clients, "count", &count, 1)?;
        self.at_most_cap(&clients, "count", &count, MAX_CLIENTS)?;
        let attempts = self.u32_or(&clients, "attempts", DEFAULT_ATTEMPTS)?;
        self.at_least(&clients, "attempts", &attempts, 1)?;
        self.at_most_cap(&clients, "attempts", &attempts, MAX_ATTEMPTS)?;
        let arrival = match self.string(&clients, "arrival")? {
            None => Arrival::Start,
            Some(f) => match f.value.as_str() {
                "start" => Arrival::Start,
                "any" => Arrival::Any,
                other => {
                    return Err(self.err(
                        f.line,
                        clients.dotted("arrival"),
                        KeyErrorKind::InvalidValue,
                        format!("`{other}` is not an arrival; use \"start\" or \"any\""),
                    ))
                }
            },
        };

        // [timing]
        let ttl = self.required_u32(&timing, "ttl")?;
        self.at_least(&timing, "ttl", &ttl, 1)?;
        let work = self.required_u32(&timing, "work")?;
        self.at_least(&timing, "work", &work, 1)?;
        let max_step_delay = self.required_u32(&timing, "max_step_delay")?;
        self.at_least(&timing, "max_step_delay", &max_step_delay, 1)?;
        let horizon = self.required_u32(&timing, "horizon")?;
        self.at_least(&timing, "horizon", &horizon, 1)?;
        self.at_most_cap(&timing, "horizon", &horizon, MAX_HORIZON)?;
        let tick_ms = self.uint(&timing, "tick_ms")?.unwrap_or(Field {
            value: DEFAULT_TICK_MS,
            line: timing.line,
        });
        if tick_ms.value == 0 {
            return Err(self.err(
                tick_ms.line,
                timing.dotted("tick_ms"),
                KeyErrorKind::InvalidValue,
                "must be at least 1 (got 0)",
            ));
        }
        if tick_ms.value > MAX_TICK_MS {
            return Err(self.err(
                tick_ms.line,
                timing.dotted("tick_ms"),
                KeyErrorKind::InvalidValue,
                format!(
                    "must be at most {MAX_TICK_MS} (got {}); accepted range 1..={MAX_TICK_MS}",
                    tick_ms.value
                ),
            ));
        }
        let clock_jump = self.u32_or(&timing, "clock_jump", ttl.value)?;
        let node_drift = self.u32_or(&timing, "node_drift", 0)?;
        if node_drift.value > horizon.value {
            return Err(self.err(
                node_drift.line,
                timing.dotted("node_drift"),
                KeyErrorKind::InvalidValue,
                format!(
                    "a clock gains at most one tick per tick: node_drift (got {}) must be at most \
                     horizon ({})",
                    node_drift.value, horizon.value
                ),
            ));
        }
        let drift_allowance = self.u32_or(&timing, "drift_allowance", node_drift.value)?;
        if timing.get("drift_allowance").is_some() && design != DesignId::Redlock {
            return Err(self.err(
                drift_allowance.line,
                timing.dotted("drift_allowance"),
                KeyErrorKind::InvalidValue,
                format!("only redlock takes a drift allowance off its validity, not `{design}`"),
            ));
        }
        if design == DesignId::Redlock && drift_allowance.value >= ttl.value {
            return Err(self.err(
                drift_allowance.line,
                timing.dotted("drift_allowance"),
                KeyErrorKind::InvalidValue,
                format!(
                    "must be less than ttl ({}), or no lock is ever valid (got {})",
                    ttl.value, drift_allowance.value
                ),
            ));
        }
        self.at_least(&timing, "clock_jump", &clock_jump, 1)?;

        // [faults]
        let pauses = self.u32_or(&faults, "pauses", 0)?;
        let crashes = self.u32_or(&faults, "crashes", 0)?;
        let failovers = self.u32_or(&faults, "failovers", 0)?;
        let restarts = self.u32_or(&faults, "restarts", 0)?;
        let partitions = self.u32_or(&faults, "partitions", 0)?;
        let clock_jumps = self.u32_or(&faults, "clock_jumps", 0)?;
        let lost_replies = self.u32_or(&faults, "lost_replies", 0)?;
        let split_brains = self.u32_or(&faults, "split_brains", 0)?;
        // Each budget is counted down in the model's state as a u8.
        for (key, field) in [
            ("pauses", &pauses),
            ("crashes", &crashes),
            ("failovers", &failovers),
            ("restarts", &restarts),
            ("partitions", &partitions),
            ("clock_jumps", &clock_jumps),
            ("lost_replies", &lost_replies),
            ("split_brains", &split_brains),
        ] {
            if field.value > MAX_FAULTS {
                return Err(self.err(
                    field.line,
                    faults.dotted(key),
                    KeyErrorKind::InvalidValue,
                    format!(
                        "must be at most {MAX_FAULTS} (got {}); accepted range 0..={MAX_FAULTS}",
                        field.value
                    ),
                ));
            }
        }
        if split_brains.value > 1 {
            return Err(self.err(
                split_brains.line,
                faults.dotted("split_brains"),
                KeyErrorKind::InvalidValue,
                format!(
                    "must be 0 or 1 (got {}): a split brain lasts to the horizon",
                    split_brains.value
                ),
            ));
        }
        if split_brains.value > 0 && replicas.value == 0 {
            return Err(self.err(
                split_brains.line,
                faults.dotted("split_brains"),
                KeyErrorKind::InvalidValue,
                "a split brain promotes a replica, but topology.replicas = 0; add a replica or \
                 set split_brains = 0",
            ));
        }
        if failovers.value > 0 && replicas.value == 0 {
            return Err(self.err(
                failovers.line,
                faults.dotted("failovers"),
                KeyErrorKind::InvalidValue,
                format!(
                    "a failover promotes a replica, but topology.replicas = 0 (got failovers = {}); \
                     add a replica or set failovers = 0",
                    failovers.value
                ),
            ));
        }

        // [expect]
        let expect = Expect {
            mutual_exclusion: self.expectation(&expect, "mutual_exclusion")?,
            owner_only_release: self.expectation(&expect, "owner_only_release")?,
            no_orphaned_lock: self.expectation(&expect, "no_orphaned_lock")?,
            resource_safety: self.expectation(&expect, "resource_safety")?,
        };

        Ok(Scenario {
            name: name.value,
            design,
            summary,
            fencing,
            wait_replicas: wait_replicas.value,
            topology: Topology {
                masters: masters.value,
                replicas: replicas.value,
                promotion,
                sentinels: sentinels.value,
            },
            clients: Clients {
                count: count.value,
                attempts: attempts.value,
                arrival,
            },
            timing: Timing {
                ttl: ttl.value,
                work: work.value,
                max_step_delay: max_step_delay.value,
                horizon: horizon.value,
                tick_ms: tick_ms.value,
                clock_jump: clock_jump.value,
                node_drift: node_drift.value,
                drift_allowance: if design == DesignId::Redlock {
                    drift_allowance.value
                } else {
                    0
                },
            },
            faults: Faults {
                pauses: pauses.value,
                crashes: crashes.value,
                failovers: failovers.value,
                restarts: restarts.value,
                partitions: partitions.value,
                clock_jumps: clock_jumps.value,
                lost_replies: lost_replies.value,
                split_brains: split_brains.value,
            },
            expect,
            path: self.path.to_path_buf(),
        })
    }

    /// A sub-table of the root; absent is fine (its keys get defaults or are reported missing).
    fn section<'a, 'i>(
        &self,
        root: &Section<'a, 'i>,
        name: &'static str,
        valid: &'static [&'static str],
    ) -> Result<Section<'a, 'i>> {
        match root.get(name) {
            None => Ok(Section {
                name,
                table: None,
                line: 1,
                valid,
            }),
            Some(entry) => match entry.get_ref() {
                DeValue::Table(table) => Ok(Section {
                    name,
                    table: Some(table),
                    line: self.line(&entry.span()),
                    valid,
                }),
                other => Err(self.err(
                    self.line(&entry.span()),
                    name.to_string(),
                    KeyErrorKind::WrongType,
                    format!("expected a table ([{name}]), found {}", a_type(other)),
                )),
            },
        }
    }

    /// The first (in file order) key of `section` that it does not know.
    fn check_unknown(&self, section: &Section<'_, '_>) -> Result<()> {
        let Some(table) = section.table else {
            return Ok(());
        };
        let unknown = table
            .iter()
            .filter(|(key, _)| !section.valid.contains(&&**key.get_ref()))
            .min_by_key(|(key, _)| key.span().start);
        match unknown {
            None => Ok(()),
            Some((key, _)) => {
                let place = if section.name.is_empty() {
                    "valid top-level keys".to_string()
                } else {
                    format!("valid keys in [{}]", section.name)
                };
                Err(self.err(
                    self.line(&key.span()),
                    section.dotted(key.get_ref()),
                    KeyErrorKind::Unknown,
                    format!("unknown key; {place}: {}", section.valid.join(", ")),
                ))
            }
        }
    }

    fn required<T>(
        &self,
        section: &Section<'_, '_>,
        key: &str,
        field: Option<Field<T>>,
    ) -> Result<Field<T>> {
        field.ok_or_else(|| {
            let mut message = match (section.name, section.table) {
                ("", _) => "required key is missing".to_string(),
                (name, Some(_)) => format!("required key is missing from [{name}]"),
                (name, None) => format!("required key is missing (the file has no [{name}] table)"),
            };
            if section.name == "expect" {
                message.push_str("; state \"holds\" or \"violated\" for every property");
            }
            self.err(
                section.line,
                section.dotted(key),
                KeyErrorKind::Missing,
                message,
            )
        })
    }

    fn wrong_type(
        &self,
        section: &Section<'_, '_>,
        key: &str,
        entry: &Entry<'_>,
        expected: &str,
    ) -> ScenarioError {
        let value = entry.get_ref();
        let mut message = format!("expected {expected}, found {}", a_type(value));
        if let DeValue::String(s) = value {
            message.push_str(&format!(" (\"{s}\")"));
            if expected == "an integer" && s.trim().parse::<i64>().is_ok() {
                message.push_str(&format!("; write {key} = {} without quotes", s.trim()));
            }
        }
        self.err(
            self.line(&entry.span()),
            section.dotted(key),
            KeyErrorKind::WrongType,
            message,
        )
    }

    fn string(&self, section: &Section<'_, '_>, key: &str) -> Result<Option<Field<String>>> {
        let Some(entry) = section.get(key) else {
            return Ok(None);
        };
        match entry.get_ref() {
            DeValue::String(s) => Ok(Some(Field {
                value: s.to_string(),
                line: self.line(&entry.span()),
            })),
            _ => Err(self.wrong_type(section, key, entry, "a string")),
        }
    }

    fn uint(&self, section: &Section<'_, '_>, key: &str) -> Result<Option<Field<u64>>> {
        let Some(entry) = section.get(key) else {
            return Ok(None);
        };
        let line = self.line(&entry.span());
        let DeValue::Integer(int) = entry.get_ref() else {
            return Err(self.wrong_type(section, key, entry, "an integer"));
        };
        let bad = |message: String| {
            self.err(
                line,
                section.dotted(key),
                KeyErrorKind::InvalidValue,
                message,
            )
        };
        let n = i128::from_str_radix(int.as_str(), int.radix())
            .map_err(|_| bad(format!("`{}` is not an integer", int.as_str())))?;
        if n < 0 {
            return Err(bad(format!("must not be negative (got {n})")));
        }
        let value = u64::try_from(n).map_err(|_| bad(format!("too large (got {n})")))?;
        Ok(Some(Field { value, line }))
    }

    fn u32_opt(&self, section: &Section<'_, '_>, key: &str) -> Result<Option<Field<u32>>> {
        let Some(field) = self.uint(section, key)? else {
            return Ok(None);
        };
        let value = u32::try_from(field.value).map_err(|_| {
            self.err(
                field.line,
                section.dotted(key),
                KeyErrorKind::InvalidValue,
                format!("too large (got {})", field.value),
            )
        })?;
        Ok(Some(Field {
            value,
            line: field.line,
        }))
    }

    fn u32_or(&self, section: &Section<'_, '_>, key: &str, default: u32) -> Result<Field<u32>> {
        Ok(self.u32_opt(section, key)?.unwrap_or(Field {
            value: default,
            line: section.line,
        }))
    }

    fn required_u32(&self, section: &Section<'_, '_>, key: &str) -> Result<Field<u32>> {
        let field = self.u32_opt(section, key)?;
        self.required(section, key, field)
    }

    fn at_least(
        &self,
        section: &Section<'_, '_>,
        key: &str,
        field: &Field<u32>,
        min: u32,
    ) -> Result<()> {
        if field.value >= min {
            return Ok(());
        }
        Err(self.err(
            field.line,
            section.dotted(key),
            KeyErrorKind::InvalidValue,
            format!("must be at least {min} (got {})", field.value),
        ))
    }

    fn at_most_cap(
        &self,
        section: &Section<'_, '_>,
        key: &str,
        field: &Field<u32>,
        cap: u32,
    ) -> Result<()> {
        if field.value <= cap {
            return Ok(());
        }
        Err(self.err(
            field.line,
            section.dotted(key),
            KeyErrorKind::InvalidValue,
            format!("must be at most {cap} (got {}); {CAP_REASON}", field.value),
        ))
    }

    fn check_name(&self, name: &Field<String>) -> Result<()> {
        if name.value.trim().is_empty() {
            return Err(self.err(
                name.line,
                "name".into(),
                KeyErrorKind::InvalidValue,
                "must not be empty",
            ));
        }
        if let Some(stem) = self.path.file_stem().and_then(|s| s.to_str()) {
            if stem != name.value {
                return Err(self.err(
                    name.line,
                    "name".into(),
                    KeyErrorKind::NameMismatch,
                    format!(
                        "must equal the file name without .toml, `{stem}` (got `{}`); rename the file or the scenario",
                        name.value
                    ),
                ));
            }
        }
        Ok(())
    }

    fn fencing(&self, root: &Section<'_, '_>) -> Result<Fencing> {
        let Some(entry) = root.get("fencing") else {
            return Ok(Fencing::Off);
        };
        match entry.get_ref() {
            DeValue::Boolean(true) => Ok(Fencing::All),
            DeValue::Boolean(false) => Ok(Fencing::Off),
            DeValue::String(s) => match s.as_ref() {
                "all" => Ok(Fencing::All),
                "writes" => Ok(Fencing::Writes),
                "off" => Ok(Fencing::Off),
                other => Err(self.err(
                    self.line(&entry.span()),
                    "fencing".into(),
                    KeyErrorKind::InvalidValue,
                    format!("`{other}` is not a fencing mode; use true, false, \"all\", \"writes\" or \"off\""),
                )),
            },
            _ => Err(self.wrong_type(root, "fencing", entry, "a boolean or a string (\"all\", \"writes\", \"off\")")),
        }
    }

    fn promotion(&self, topology: &Section<'_, '_>, replicas: u32) -> Result<Promotion> {
        let Some(entry) = topology.get("promotion") else {
            return Ok(Promotion::Any);
        };
        let line = self.line(&entry.span());
        let promotion = match entry.get_ref() {
            DeValue::String(s) => match s.as_ref() {
                "any" => Promotion::Any,
                "most-advanced" => Promotion::MostAdvanced,
                other => {
                    return Err(self.err(
                        line,
                        topology.dotted("promotion"),
                        KeyErrorKind::InvalidValue,
                        format!(
                            "`{other}` is not a promotion rule; use \"any\" or \"most-advanced\""
                        ),
                    ))
                }
            },
            _ => {
                return Err(self.wrong_type(
                    topology,
                    "promotion",
                    entry,
                    "a string (\"any\" or \"most-advanced\")",
                ))
            }
        };
        if replicas == 0 {
            return Err(self.err(
                line,
                topology.dotted("promotion"),
                KeyErrorKind::InvalidValue,
                "a promotion rule picks a replica, but topology.replicas = 0; add a replica or \
                 remove promotion",
            ));
        }
        Ok(promotion)
    }

    fn expectation(&self, section: &Section<'_, '_>, key: &str) -> Result<Expectation> {
        let Some(entry) = section.get(key) else {
            return self
                .required(section, key, None::<Field<Expectation>>)
                .map(|f| f.value);
        };
        match entry.get_ref() {
            DeValue::String(s) => s.parse().map_err(|message: String| {
                self.err(
                    self.line(&entry.span()),
                    section.dotted(key),
                    KeyErrorKind::InvalidValue,
                    message,
                )
            }),
            _ => Err(self.wrong_type(section, key, entry, "a string (\"holds\" or \"violated\")")),
        }
    }
}

/// "a string", "an integer", ...
fn a_type(value: &DeValue<'_>) -> String {
    let name = value.type_str();
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full scenario file: every key, with comments (docs/ARCHITECTURE.md, "Scenarios").
    const EXAMPLE: &str = r#"name = "redlock-gc-pause"
design = "redlock"             # an id from the table
summary = "Kleppmann: a pause longer than the validity lets a second client in"
fencing = false

[topology]
masters = 5                    # independent masters (1 unless redlock)
replicas = 0                   # asynchronous replicas per master

[clients]
count = 2

[timing]                       # logical ticks; the harness maps 1 tick to tick_ms
ttl = 4
work = 1
max_step_delay = 1
horizon = 14
tick_ms = 100

[faults]                       # budgets: how many of each the checker may inject
pauses = 1
crashes = 0
failovers = 0
restarts = 0
partitions = 0
clock_jumps = 0

[expect]                       # "holds" | "violated"
mutual_exclusion = "violated"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "violated"
"#;

    const FILE: &str = "scenarios/redlock-gc-pause.toml";

    /// The example with the line that sets `key` replaced by `replacement`
    /// (which may be several lines, or empty to delete the line).
    fn set(text: &str, key: &str, replacement: &str) -> String {
        let mut found = false;
        let mut out = String::new();
        for line in text.lines() {
            let lhs = line.split('=').next().unwrap_or("").trim();
            if !found && (lhs == key || line.trim_start().starts_with(&format!("[{key}]"))) {
                found = true;
                if !replacement.is_empty() {
                    out.push_str(replacement);
                    out.push('\n');
                }
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        assert!(found, "no line for {key}");
        out
    }

    fn edit(edits: &[(&str, &str)]) -> String {
        edits
            .iter()
            .fold(EXAMPLE.to_string(), |text, (key, replacement)| {
                set(&text, key, replacement)
            })
    }

    /// Parses text that must fail; checks the one-line message names file, key and line.
    fn fail(text: &str, key: &str, line: usize, kind: KeyErrorKind) -> String {
        let err = Scenario::parse(text, FILE).expect_err("should fail");
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "not one line: {msg}");
        assert_eq!(err.key(), Some(key), "{msg}");
        assert_eq!(err.line(), Some(line), "{msg}");
        assert_eq!(err.kind(), Some(kind), "{msg}");
        assert_eq!(err.path(), Path::new(FILE));
        let prefix = format!("{FILE}:{line}: key `{key}`: ");
        assert!(
            msg.starts_with(&prefix),
            "{msg:?} does not start with {prefix:?}"
        );
        msg
    }

    #[test]
    fn design_md_example_parses() {
        let s = Scenario::parse(EXAMPLE, FILE).unwrap();
        assert_eq!(s.name, "redlock-gc-pause");
        assert_eq!(s.design, DesignId::Redlock);
        assert_eq!(
            s.summary,
            "Kleppmann: a pause longer than the validity lets a second client in"
        );
        assert_eq!(s.fencing, Fencing::Off);
        assert_eq!(s.wait_replicas, 0);
        assert_eq!(
            s.topology,
            Topology {
                masters: 5,
                replicas: 0,
                promotion: Promotion::Any,
                sentinels: 0,
            }
        );
        assert_eq!(s.topology.nodes(), 5);
        assert_eq!(
            s.clients,
            Clients {
                count: 2,
                attempts: DEFAULT_ATTEMPTS,
                arrival: Arrival::Start,
            }
        );
        assert_eq!(
            s.timing,
            Timing {
                ttl: 4,
                work: 1,
                max_step_delay: 1,
                horizon: 14,
                tick_ms: 100,
                clock_jump: 4,
                node_drift: 0,
                drift_allowance: 0,
            }
        );
        assert_eq!(
            s.faults,
            Faults {
                pauses: 1,
                ..Faults::default()
            }
        );
        assert_eq!(s.faults.total(), 1);
        use Expectation::*;
        assert_eq!(
            s.expect,
            Expect {
                mutual_exclusion: Violated,
                owner_only_release: Holds,
                no_orphaned_lock: Holds,
                resource_safety: Violated
            }
        );
        assert_eq!(s.expect.get(Property::MutualExclusion), Violated);
        assert_eq!(s.expect.get(Property::NoOrphanedLock), Holds);
        assert_eq!(
            s.expect.iter().map(|(_, e)| e).collect::<Vec<_>>(),
            vec![Violated, Holds, Holds, Violated]
        );
        assert_eq!(s.path, PathBuf::from(FILE));
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["design"], "redlock");
        assert_eq!(json["fencing"], "off");
        assert_eq!(json["expect"]["mutual_exclusion"], "violated");
        assert_eq!(json["timing"]["horizon"], 14);
    }

    #[test]
    fn optional_keys_and_defaults() {
        let text = edit(&[
            ("count", "count = 3\nattempts = 4"),
            ("tick_ms", "clock_jump = 2"),
            ("fencing", "fencing = \"writes\""),
            ("design", "design = \"lua-release\""),
            ("masters", "masters = 1"),
            ("replicas", "replicas = 2"),
            ("summary", "wait_replicas = 1"),
            ("failovers", "failovers = 1"),
        ]);
        let s = Scenario::parse(&text, FILE).unwrap();
        assert_eq!(
            s.clients,
            Clients {
                count: 3,
                attempts: 4,
                arrival: Arrival::Start,
            }
        );
        assert_eq!(s.timing.clock_jump, 2);
        assert_eq!(s.timing.tick_ms, DEFAULT_TICK_MS);
        assert_eq!(s.fencing, Fencing::Writes);
        assert_eq!(s.summary, "");
        assert_eq!(s.wait_replicas, 1);
        assert_eq!(
            s.topology,
            Topology {
                masters: 1,
                replicas: 2,
                promotion: Promotion::Any,
                sentinels: 0,
            }
        );
        assert_eq!(s.topology.nodes(), 3);
        assert_eq!(s.faults.failovers, 1);

        // Tables of defaults may be left out entirely.
        let text = edit(&[
            ("topology", ""),
            ("masters", ""),
            ("replicas", ""),
            ("faults", ""),
            ("pauses", ""),
            ("crashes", ""),
            ("failovers", ""),
            ("restarts", ""),
            ("partitions", ""),
            ("clock_jumps", ""),
        ]);
        let s = Scenario::parse(&text, FILE).unwrap();
        assert_eq!(
            s.topology,
            Topology {
                masters: 1,
                replicas: 0,
                promotion: Promotion::Any,
                sentinels: 0,
            }
        );
        assert_eq!(s.faults, Faults::default());
    }

    #[test]
    fn split_brains_need_a_replica_and_are_at_most_one() {
        let with = |replicas: &str, split: &str| {
            edit(&[
                ("design", "design = \"lua-release\""),
                ("masters", "masters = 1"),
                ("replicas", &format!("replicas = {replicas}")),
                ("clock_jumps", &format!("clock_jumps = 0\n{split}")),
            ])
        };
        let s = Scenario::parse(&with("1", "split_brains = 1"), FILE).unwrap();
        assert_eq!(s.faults.split_brains, 1);
        assert_eq!(s.faults.total(), 2);
        let msg = fail(
            &with("1", "split_brains = 2"),
            "faults.split_brains",
            27,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.contains("must be 0 or 1 (got 2)"), "{msg}");
        let msg = fail(
            &with("0", "split_brains = 1"),
            "faults.split_brains",
            27,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.contains("topology.replicas = 0"), "{msg}");
    }

    #[test]
    fn node_drift_and_drift_allowance() {
        let with = |extra: &str| set(EXAMPLE, "tick_ms", &format!("tick_ms = 100\n{extra}"));
        let s = Scenario::parse(&with("node_drift = 1"), FILE).unwrap();
        assert_eq!((s.timing.node_drift, s.timing.drift_allowance), (1, 1));
        let s = Scenario::parse(&with("node_drift = 1\ndrift_allowance = 0"), FILE).unwrap();
        assert_eq!((s.timing.node_drift, s.timing.drift_allowance), (1, 0));
        let msg = fail(
            &with("node_drift = 15"),
            "timing.node_drift",
            19,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.contains("at most horizon (14)"), "{msg}");
        let msg = fail(
            &with("node_drift = 1\ndrift_allowance = 4"),
            "timing.drift_allowance",
            20,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.contains("less than ttl (4)"), "{msg}");
        let text = set(
            &with("node_drift = 1\ndrift_allowance = 1"),
            "design",
            "design = \"lua-release\"",
        );
        let text = set(&text, "masters", "masters = 1");
        let msg = fail(
            &text,
            "timing.drift_allowance",
            20,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.contains("only redlock"), "{msg}");
    }

    #[test]
    fn promotion_forms() {
        let with = |replicas: &str, promotion: &str| {
            edit(&[
                ("design", "design = \"lua-release\""),
                ("masters", "masters = 1"),
                ("replicas", &format!("replicas = {replicas}\n{promotion}")),
            ])
        };
        let s = Scenario::parse(&with("2", ""), FILE).unwrap();
        assert_eq!(s.topology.promotion, Promotion::Any);
        for (written, rule) in [
            ("\"any\"", Promotion::Any),
            ("\"most-advanced\"", Promotion::MostAdvanced),
        ] {
            let text = with("2", &format!("promotion = {written}"));
            assert_eq!(
                Scenario::parse(&text, FILE).unwrap().topology.promotion,
                rule
            );
        }
        let msg = fail(
            &with("2", "promotion = \"best\""),
            "topology.promotion",
            9,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.contains("`best` is not a promotion rule"), "{msg}");
        fail(
            &with("2", "promotion = 1"),
            "topology.promotion",
            9,
            KeyErrorKind::WrongType,
        );
        let msg = fail(
            &with("0", "promotion = \"any\""),
            "topology.promotion",
            9,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.contains("topology.replicas = 0"), "{msg}");
    }

    #[test]
    fn fencing_forms() {
        for (written, fencing) in [
            ("true", Fencing::All),
            ("false", Fencing::Off),
            ("\"all\"", Fencing::All),
            ("\"writes\"", Fencing::Writes),
            ("\"off\"", Fencing::Off),
        ] {
            let text = set(EXAMPLE, "fencing", &format!("fencing = {written}"));
            assert_eq!(
                Scenario::parse(&text, FILE).unwrap().fencing,
                fencing,
                "{written}"
            );
        }
        let msg = fail(
            &set(EXAMPLE, "fencing", "fencing = \"reads\""),
            "fencing",
            4,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.contains("`reads` is not a fencing mode"), "{msg}");
        let msg = fail(
            &set(EXAMPLE, "fencing", "fencing = 1"),
            "fencing",
            4,
            KeyErrorKind::WrongType,
        );
        assert!(msg.contains("found an integer"), "{msg}");
    }

    #[test]
    fn syntax_error_names_file_and_line() {
        let text = set(EXAMPLE, "ttl", "ttl = = 4");
        let err = Scenario::parse(&text, FILE).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, ScenarioError::Syntax { line: 14, .. }),
            "{msg}"
        );
        assert!(msg.starts_with(&format!("{FILE}:14:")), "{msg}");
        assert!(msg.contains("not valid TOML"), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");

        // Duplicate keys are the parser's to catch, too.
        let text = set(EXAMPLE, "work", "work = 1\nwork = 2");
        let err = Scenario::parse(&text, FILE).unwrap_err();
        assert!(
            matches!(err, ScenarioError::Syntax { line: 16, .. }),
            "{err}"
        );
    }

    #[test]
    fn unknown_top_level_key() {
        let text = set(EXAMPLE, "fencing", "fencing = false\ncolour = \"red\"");
        let msg = fail(&text, "colour", 5, KeyErrorKind::Unknown);
        assert!(
            msg.contains("valid top-level keys: name, design, summary, fencing, wait_replicas"),
            "{msg}"
        );
    }

    #[test]
    fn unknown_key_in_table_beats_missing() {
        let text = set(EXAMPLE, "ttl", "tll = 4");
        let msg = fail(&text, "timing.tll", 14, KeyErrorKind::Unknown);
        assert!(
            msg.contains(
                "valid keys in [timing]: ttl, work, max_step_delay, horizon, tick_ms, clock_jump"
            ),
            "{msg}"
        );
        // The first unknown key in file order is reported, not the first alphabetically.
        let text = edit(&[("pauses", "zzz = 1"), ("clock_jumps", "aaa = 1")]);
        fail(&text, "faults.zzz", 21, KeyErrorKind::Unknown);
        let text = set(
            EXAMPLE,
            "mutual_exclusion",
            "mutual_exclusion = \"violated\"\nliveness = \"holds\"",
        );
        fail(&text, "expect.liveness", 30, KeyErrorKind::Unknown);
    }

    #[test]
    fn wrong_types() {
        let msg = fail(
            &set(EXAMPLE, "ttl", "ttl = \"4\""),
            "timing.ttl",
            14,
            KeyErrorKind::WrongType,
        );
        assert!(
            msg.contains(
                "expected an integer, found a string (\"4\"); write ttl = 4 without quotes"
            ),
            "{msg}"
        );
        let msg = fail(
            &set(EXAMPLE, "horizon", "horizon = 14.0"),
            "timing.horizon",
            17,
            KeyErrorKind::WrongType,
        );
        assert!(msg.contains("found a float"), "{msg}");
        let msg = fail(
            &set(EXAMPLE, "design", "design = 3"),
            "design",
            2,
            KeyErrorKind::WrongType,
        );
        assert!(msg.contains("expected a string, found an integer"), "{msg}");
        let msg = fail(
            &set(EXAMPLE, "mutual_exclusion", "mutual_exclusion = false"),
            "expect.mutual_exclusion",
            29,
            KeyErrorKind::WrongType,
        );
        assert!(msg.contains("found a boolean"), "{msg}");
        // A table given as a plain value.
        let text = edit(&[
            ("clients", ""),
            ("count", ""),
            ("summary", "summary = \"\"\nclients = 2"),
        ]);
        let msg = fail(&text, "clients", 4, KeyErrorKind::WrongType);
        assert!(
            msg.contains("expected a table ([clients]), found an integer"),
            "{msg}"
        );
    }

    #[test]
    fn bad_expectation_value() {
        let text = set(EXAMPLE, "resource_safety", "resource_safety = \"maybe\"");
        let msg = fail(
            &text,
            "expect.resource_safety",
            32,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.contains("use \"holds\" or \"violated\""), "{msg}");
    }

    #[test]
    fn missing_required_keys() {
        // In a table that exists: the line of its header.
        let msg = fail(
            &set(EXAMPLE, "ttl", ""),
            "timing.ttl",
            13,
            KeyErrorKind::Missing,
        );
        assert!(
            msg.contains("required key is missing from [timing]"),
            "{msg}"
        );
        fail(
            &set(EXAMPLE, "count", ""),
            "clients.count",
            10,
            KeyErrorKind::Missing,
        );
        let msg = fail(
            &set(EXAMPLE, "no_orphaned_lock", ""),
            "expect.no_orphaned_lock",
            28,
            KeyErrorKind::Missing,
        );
        assert!(
            msg.contains("\"holds\" or \"violated\" for every property"),
            "{msg}"
        );
        // Top-level keys: line 1.
        fail(
            &set(EXAMPLE, "design", ""),
            "design",
            1,
            KeyErrorKind::Missing,
        );
        fail(&set(EXAMPLE, "name", ""), "name", 1, KeyErrorKind::Missing);
        // A missing table: line 1.
        let text = edit(&[
            ("expect", ""),
            ("mutual_exclusion", ""),
            ("owner_only_release", ""),
            ("no_orphaned_lock", ""),
            ("resource_safety", ""),
        ]);
        let msg = fail(&text, "expect.mutual_exclusion", 1, KeyErrorKind::Missing);
        assert!(msg.contains("no [expect] table"), "{msg}");
    }

    #[test]
    fn unknown_design_lists_known_ones() {
        let msg = fail(
            &set(EXAMPLE, "design", "design = \"redlok\""),
            "design",
            2,
            KeyErrorKind::UnknownDesign,
        );
        assert!(msg.contains("unknown design `redlok`"), "{msg}");
        for d in DesignId::ALL {
            assert!(msg.contains(d.as_str()), "{msg} lacks {d}");
        }
    }

    #[test]
    fn zero_values_are_rejected() {
        for (key, dotted, line) in [
            ("count", "clients.count", 11),
            ("ttl", "timing.ttl", 14),
            ("work", "timing.work", 15),
            ("max_step_delay", "timing.max_step_delay", 16),
            ("horizon", "timing.horizon", 17),
            ("tick_ms", "timing.tick_ms", 18),
            ("masters", "topology.masters", 7),
        ] {
            let msg = fail(
                &set(EXAMPLE, key, &format!("{key} = 0")),
                dotted,
                line,
                KeyErrorKind::InvalidValue,
            );
            assert!(msg.ends_with("must be at least 1 (got 0)"), "{msg}");
        }
        let text = set(EXAMPLE, "count", "count = 2\nattempts = 0");
        fail(&text, "clients.attempts", 12, KeyErrorKind::InvalidValue);
        let text = set(EXAMPLE, "tick_ms", "tick_ms = 100\nclock_jump = 0");
        fail(&text, "timing.clock_jump", 19, KeyErrorKind::InvalidValue);
    }

    #[test]
    fn negative_and_huge_numbers() {
        let msg = fail(
            &set(EXAMPLE, "ttl", "ttl = -1"),
            "timing.ttl",
            14,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.ends_with("must not be negative (got -1)"), "{msg}");
        let msg = fail(
            &set(EXAMPLE, "work", "work = 5_000_000_000"),
            "timing.work",
            15,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.ends_with("too large (got 5000000000)"), "{msg}");
        // tick_ms is a u64 and accepts hex like any integer.
        let s = Scenario::parse(&set(EXAMPLE, "tick_ms", "tick_ms = 0x1F4"), FILE).unwrap();
        assert_eq!(s.timing.tick_ms, 500);
    }

    #[test]
    fn caps_keep_the_state_space_finite() {
        for (edits, dotted, line, cap) in [
            (
                vec![("count", "count = 5")],
                "clients.count",
                11,
                MAX_CLIENTS,
            ),
            (
                vec![("masters", "masters = 8")],
                "topology.masters",
                7,
                MAX_MASTERS,
            ),
            (
                vec![
                    ("design", "design = \"lua-release\""),
                    ("masters", "masters = 1"),
                    ("replicas", "replicas = 4"),
                ],
                "topology.replicas",
                8,
                MAX_REPLICAS,
            ),
            (
                vec![("horizon", "horizon = 65")],
                "timing.horizon",
                17,
                MAX_HORIZON,
            ),
            (
                vec![("count", "count = 2\nattempts = 9")],
                "clients.attempts",
                12,
                MAX_ATTEMPTS,
            ),
        ] {
            let msg = fail(&edit(&edits), dotted, line, KeyErrorKind::InvalidValue);
            assert!(
                msg.contains(&format!("must be at most {cap} (got {})", cap + 1)),
                "{msg}"
            );
            assert!(msg.contains("keep the model's state space finite"), "{msg}");
        }
    }

    #[test]
    fn several_masters_only_for_redlock() {
        let text = set(EXAMPLE, "design", "design = \"lua-release\"");
        let msg = fail(&text, "topology.masters", 7, KeyErrorKind::InvalidValue);
        assert!(
            msg.contains("design `lua-release` uses a single master (got 5)"),
            "{msg}"
        );
    }

    #[test]
    fn redlock_with_replicas_is_not_supported() {
        let text = edit(&[("masters", "masters = 1"), ("replicas", "replicas = 1")]);
        let msg = fail(&text, "topology.replicas", 8, KeyErrorKind::InvalidValue);
        assert!(
            msg.contains("design `redlock` with replicas (got 1) is not supported"),
            "{msg}"
        );
    }

    #[test]
    fn replicas_with_several_masters_is_not_supported() {
        let text = set(EXAMPLE, "replicas", "replicas = 1");
        let msg = fail(&text, "topology.replicas", 8, KeyErrorKind::InvalidValue);
        assert!(
            msg.contains("together with several masters (masters = 5)"),
            "{msg}"
        );
    }

    #[test]
    fn wait_replicas_needs_that_many_replicas() {
        let text = edit(&[
            ("design", "design = \"lua-release\""),
            ("masters", "masters = 1"),
            ("replicas", "replicas = 1"),
            ("fencing", "fencing = false\nwait_replicas = 2"),
        ]);
        let msg = fail(&text, "wait_replicas", 5, KeyErrorKind::InvalidValue);
        assert!(
            msg.ends_with("cannot wait for 2 replicas when topology.replicas = 1"),
            "{msg}"
        );
    }

    #[test]
    fn failover_needs_a_replica() {
        let msg = fail(
            &set(EXAMPLE, "failovers", "failovers = 1"),
            "faults.failovers",
            23,
            KeyErrorKind::InvalidValue,
        );
        assert!(
            msg.contains("a failover promotes a replica, but topology.replicas = 0"),
            "{msg}"
        );
    }

    #[test]
    fn name_must_be_non_empty_and_match_the_file() {
        let msg = fail(
            &set(EXAMPLE, "name", "name = \"\""),
            "name",
            1,
            KeyErrorKind::InvalidValue,
        );
        assert!(msg.ends_with("must not be empty"), "{msg}");

        let text = format!("# a comment\n{EXAMPLE}");
        let err = Scenario::parse(&text, "scenarios/other.toml").unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.kind(), Some(KeyErrorKind::NameMismatch));
        assert!(
            msg.starts_with("scenarios/other.toml:2: key `name`: must equal the file name without .toml, `other` (got `redlock-gc-pause`)"),
            "{msg}"
        );
    }

    #[test]
    fn properties_and_expectations() {
        assert_eq!(
            Property::ALL.map(Property::as_str),
            [
                "mutual_exclusion",
                "owner_only_release",
                "no_orphaned_lock",
                "resource_safety"
            ]
        );
        assert_eq!(
            Property::ALL.map(Property::as_str).to_vec(),
            EXPECT_KEYS.to_vec()
        );
        for p in Property::ALL {
            assert_eq!(p.as_str().parse::<Property>(), Ok(p));
            assert_eq!(p.to_string(), p.as_str());
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
        assert!("liveness".parse::<Property>().is_err());
        assert_eq!("holds".parse::<Expectation>(), Ok(Expectation::Holds));
        assert_eq!(Expectation::Violated.to_string(), "violated");
    }

    /// A fresh, empty directory under the system temp dir.
    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("locklab-scenario-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write_scenario(dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(format!("{name}.toml"));
        fs::write(&path, set(EXAMPLE, "name", &format!("name = \"{name}\""))).unwrap();
        path
    }

    #[test]
    fn load_dir_sorts_by_file_name_and_skips_other_files() {
        let dir = temp_dir("sorted");
        write_scenario(&dir, "b-second");
        write_scenario(&dir, "a-first");
        fs::write(dir.join("README.md"), "not a scenario").unwrap();
        let names: Vec<_> = load_dir(&dir)
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["a-first", "b-second"]);

        // load: the same, from a file.
        let s = Scenario::load(dir.join("a-first.toml")).unwrap();
        assert_eq!(s.path, dir.join("a-first.toml"));

        // A file and the directory holding it: loaded once.
        let all = load_paths(&[dir.join("b-second.toml"), dir.clone()]).unwrap();
        let names: Vec<_> = all.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["b-second", "a-first"]);

        // An error in one file is reported with that file's path.
        fs::write(
            dir.join("c-bad.toml"),
            set(EXAMPLE, "name", "name = \"c-bad\"\nbogus = 1"),
        )
        .unwrap();
        let err = load_dir(&dir).unwrap_err();
        assert_eq!(err.path(), dir.join("c-bad.toml"));
        assert_eq!(err.line(), Some(2));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn load_paths_errors() {
        let dir = temp_dir("errors");
        // Missing path.
        let err = load_paths(&[dir.join("nope.toml")]).unwrap_err();
        assert!(matches!(err, ScenarioError::Io { .. }), "{err}");
        assert!(err.to_string().starts_with(&format!(
            "{}: cannot read: ",
            dir.join("nope.toml").display()
        )));
        // Empty directory.
        let err = load_dir(&dir).unwrap_err();
        assert_eq!(err, ScenarioError::NoScenarios { path: dir.clone() });
        // Same name in two directories.
        let (one, two) = (dir.join("one"), dir.join("two"));
        fs::create_dir_all(&one).unwrap();
        fs::create_dir_all(&two).unwrap();
        write_scenario(&one, "same");
        write_scenario(&two, "same");
        let err = load_paths(&[one.clone(), two.clone()]).unwrap_err();
        assert_eq!(err.kind(), Some(KeyErrorKind::DuplicateName));
        assert_eq!(err.line(), Some(1));
        assert_eq!(err.path(), two.join("same.toml"));
        assert!(
            err.to_string().contains(&format!(
                "also defined in {}",
                one.join("same.toml").display()
            )),
            "{err}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
