//! TOML text to a [`Scenario`], table by table: each table's keys are read in a fixed
//! order, so a file with several mistakes always reports the same one first, and every
//! rule that ties keys together (several masters only for redlock, a failover needs a
//! replica, ...) lives here next to the keys it ties.

use std::ops::Range;
use std::path::Path;

use locklab::DesignId;

use crate::fault::FaultKind;
use toml::de::DeTable;

use super::error::{column_at, line_at};
use super::lock::LOCK_KEYS;
use super::read::{Field, Section};
use super::{
    Clients, Expect, Expectation, Faults, KeyErrorKind, Property, Renewal, Scenario, ScenarioError,
    Timing, Topology, DEFAULT_ATTEMPTS, DEFAULT_TICK_MS, MAX_ATTEMPTS, MAX_CLIENTS, MAX_HORIZON,
    MAX_MASTERS, MAX_REPLICAS, MAX_SENTINELS, MAX_WAIT_TIMEOUT,
};

const TOP_KEYS: &[&str] = &[
    "name",
    "design",
    "summary",
    "fencing",
    "wait_replicas",
    "watchdog",
    "renewal_on_error",
    "topology",
    "clients",
    "timing",
    "faults",
    "expect",
    "lock",
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
    "min_validity",
    "wait_timeout",
];
/// The keys of `[expect]`: a verdict per property, then what their violation needs.
pub(super) const EXPECT_KEYS: &[&str] = &[
    "mutual_exclusion",
    "owner_only_release",
    "no_orphaned_lock",
    "resource_safety",
    "cause",
];

pub(super) type Result<T, E = ScenarioError> = std::result::Result<T, E>;

/// Parses and validates scenario text ([`Scenario::parse`]).
pub(super) fn scenario(text: &str, path: &Path) -> Result<Scenario> {
    Parser { path, text }.scenario()
}

/// The text being parsed and the file it came from, for error messages.
pub(super) struct Parser<'p> {
    pub(super) path: &'p Path,
    pub(super) text: &'p str,
}

impl Parser<'_> {
    pub(super) fn line(&self, span: &Range<usize>) -> usize {
        line_at(self.text, span.start)
    }

    pub(super) fn err(
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
        // A key earlier versions read is refused with its reason.
        self.no_reduction(&root)?;
        self.check_unknown(&root)?;
        let topology = self.section(&root, "topology", TOPOLOGY_KEYS)?;
        let clients = self.section(&root, "clients", CLIENTS_KEYS)?;
        let timing = self.section(&root, "timing", TIMING_KEYS)?;
        let faults = self.section(&root, "faults", &FaultKind::KEYS)?;
        let expect = self.section(&root, "expect", EXPECT_KEYS)?;
        let lock = self.section(&root, "lock", LOCK_KEYS)?;
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
        // A custom lock renews when its [lock] table has a renew step.
        let renews = design.renews() || (design == DesignId::Custom && lock.get("renew").is_some());
        let watchdog = self.watchdog(&root, design, renews)?;
        let renewal_on_error = self.renewal_on_error(&root, design, renews)?;
        let renewal = renews.then_some(Renewal {
            watchdog,
            renewal_on_error,
        });

        let topology = self.topology(&topology, design)?;
        if wait_replicas.value > topology.replicas {
            return Err(self.err(
                wait_replicas.line,
                "wait_replicas".into(),
                KeyErrorKind::InvalidValue,
                format!(
                    "cannot wait for {} replicas when topology.replicas = {}",
                    wait_replicas.value, topology.replicas
                ),
            ));
        }
        let clients = self.clients(&clients)?;
        let timing_line = timing.line;
        let timing = self.timing(&timing, design, wait_replicas.value)?;
        let faults = self.faults(&faults, &topology)?;
        let expect = self.expect(&expect, &faults, timing.node_drift)?;
        let lock = match (design, lock.table) {
            (DesignId::Custom, _) => Some(self.lock(&lock, timing.tick_ms)?),
            (_, None) => None,
            (_, Some(_)) => {
                return Err(self.err(
                    lock.line,
                    "lock".into(),
                    KeyErrorKind::InvalidValue,
                    format!(
                        "[lock] gives a custom lock's steps; design `{design}` has its own: set design = \"custom\" or remove [lock]"
                    ),
                ))
            }
        };

        if timing.horizon.is_none() {
            let custom = lock.as_ref().map(|l| &l.lock);
            if let Some(why) = crate::relative_time::absolute_time(design, custom) {
                return Err(self.err(
                    timing_line,
                    "timing.horizon".into(),
                    KeyErrorKind::Missing,
                    format!(
                        "required here: {why}, and without a horizon the model keeps only \
                         times relative to its clock"
                    ),
                ));
            }
        }

        Ok(Scenario {
            name: name.value,
            design,
            summary,
            fencing,
            wait_replicas: wait_replicas.value,
            renewal,
            topology,
            clients,
            timing,
            faults,
            expect,
            lock,
            path: self.path.to_path_buf(),
        })
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

    /// `[topology]`.
    fn topology(&self, topology: &Section<'_, '_>, design: DesignId) -> Result<Topology> {
        let masters = self.u32_or(topology, "masters", 1)?;
        let replicas = self.u32_or(topology, "replicas", 0)?;
        self.at_least(topology, "masters", &masters, 1)?;
        self.at_most_cap(topology, "masters", &masters, MAX_MASTERS)?;
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
        self.at_most_cap(topology, "replicas", &replicas, MAX_REPLICAS)?;
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
        let promotion = self.promotion(topology)?;
        if let Some(promotion) = &promotion {
            if replicas.value == 0 {
                return Err(self.err(
                    promotion.line,
                    topology.dotted("promotion"),
                    KeyErrorKind::InvalidValue,
                    "a promotion rule picks a replica, but topology.replicas = 0; add a replica or \
                     remove promotion",
                ));
            }
        }
        let sentinels = self.u32_or(topology, "sentinels", 0)?;
        self.at_most_cap(topology, "sentinels", &sentinels, MAX_SENTINELS)?;
        if sentinels.value > 0 && replicas.value == 0 {
            return Err(self.err(
                sentinels.line,
                topology.dotted("sentinels"),
                KeyErrorKind::InvalidValue,
                "sentinels promote a replica, but topology.replicas = 0; add a replica or \
                 remove sentinels",
            ));
        }
        Ok(Topology {
            masters: masters.value,
            replicas: replicas.value,
            promotion: promotion.map(|p| p.value).unwrap_or_default(),
            sentinels: sentinels.value,
        })
    }

    /// `[clients]`.
    fn clients(&self, clients: &Section<'_, '_>) -> Result<Clients> {
        let count = self.required_u32(clients, "count")?;
        self.at_least(clients, "count", &count, 1)?;
        self.at_most_cap(clients, "count", &count, MAX_CLIENTS)?;
        let attempts = self.u32_or(clients, "attempts", DEFAULT_ATTEMPTS)?;
        self.at_least(clients, "attempts", &attempts, 1)?;
        self.at_most_cap(clients, "attempts", &attempts, MAX_ATTEMPTS)?;
        let arrival = self.arrival(clients)?;
        Ok(Clients {
            count: count.value,
            attempts: attempts.value,
            arrival,
        })
    }

    /// `[timing]`.
    fn timing(
        &self,
        timing: &Section<'_, '_>,
        design: DesignId,
        wait_replicas: u32,
    ) -> Result<Timing> {
        let ttl = self.required_u32(timing, "ttl")?;
        self.at_least(timing, "ttl", &ttl, 1)?;
        let work = self.required_u32(timing, "work")?;
        self.at_least(timing, "work", &work, 1)?;
        let max_step_delay = self.required_u32(timing, "max_step_delay")?;
        self.at_least(timing, "max_step_delay", &max_step_delay, 1)?;
        let horizon = self.u32_opt(timing, "horizon")?;
        if let Some(h) = &horizon {
            self.at_least(timing, "horizon", h, 1)?;
            self.at_most_cap(timing, "horizon", h, MAX_HORIZON)?;
        }
        let tick_ms = self.uint(timing, "tick_ms")?.unwrap_or(Field {
            value: DEFAULT_TICK_MS,
            line: timing.line,
        });
        self.tick_ms_in_range(timing, &tick_ms)?;
        let clock_jump = self.u32_or(timing, "clock_jump", ttl.value)?;
        let node_drift = self.u32_or(timing, "node_drift", 0)?;
        if let Some(h) = horizon.as_ref().filter(|h| node_drift.value > h.value) {
            return Err(self.err(
                node_drift.line,
                timing.dotted("node_drift"),
                KeyErrorKind::InvalidValue,
                format!(
                    "a clock gains at most one tick per tick: node_drift (got {}) must be at most \
                     horizon ({})",
                    node_drift.value, h.value
                ),
            ));
        }
        let drift_allowance = self.u32_or(timing, "drift_allowance", node_drift.value)?;
        // Every other design takes an allowance of 0, which a trace of a scenario with
        // drift writes (its default is the drift), so 0 is accepted.
        if timing.get("drift_allowance").is_some()
            && drift_allowance.value != 0
            && design != DesignId::Redlock
        {
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
        let min_validity = self.u32_opt(timing, "min_validity")?;
        if let Some(v) = &min_validity {
            if design != DesignId::Redlock {
                return Err(self.err(
                    v.line,
                    timing.dotted("min_validity"),
                    KeyErrorKind::InvalidValue,
                    format!("only redlock reports a validity to hold it against, not `{design}`"),
                ));
            }
            let most = ttl.value.saturating_sub(drift_allowance.value);
            if v.value >= most {
                return Err(self.err(
                    v.line,
                    timing.dotted("min_validity"),
                    KeyErrorKind::InvalidValue,
                    format!(
                        "must be less than ttl ({}) less drift_allowance ({}), or no lock is \
                         ever valid (got {})",
                        ttl.value, drift_allowance.value, v.value
                    ),
                ));
            }
        }
        self.at_least(timing, "clock_jump", &clock_jump, 1)?;
        let wait_timeout = self.wait_timeout(timing, wait_replicas)?;
        Ok(Timing {
            ttl: ttl.value,
            work: work.value,
            max_step_delay: max_step_delay.value,
            horizon: horizon.map(|h| h.value),
            tick_ms: tick_ms.value,
            clock_jump: clock_jump.value,
            node_drift: node_drift.value,
            drift_allowance: if design == DesignId::Redlock {
                drift_allowance.value
            } else {
                0
            },
            min_validity: min_validity.map(|v| v.value),
            wait_timeout,
        })
    }

    /// `timing.wait_timeout`: 0 to [`MAX_WAIT_TIMEOUT`] ticks, and above 0 only where
    /// the acquire sends a `WAIT` (`wait_replicas` above 0).
    fn wait_timeout(&self, timing: &Section<'_, '_>, wait_replicas: u32) -> Result<u32> {
        let Some(field) = self.u32_opt(timing, "wait_timeout")? else {
            return Ok(0);
        };
        if field.value > MAX_WAIT_TIMEOUT {
            return Err(self.err(
                field.line,
                timing.dotted("wait_timeout"),
                KeyErrorKind::InvalidValue,
                format!(
                    "must be at most {MAX_WAIT_TIMEOUT} (got {}); accepted range \
                     0..={MAX_WAIT_TIMEOUT} ticks",
                    field.value
                ),
            ));
        }
        if field.value > 0 && wait_replicas == 0 {
            return Err(self.err(
                field.line,
                timing.dotted("wait_timeout"),
                KeyErrorKind::InvalidValue,
                format!(
                    "a WAIT timeout of {} ticks, but wait_replicas = 0 sends no WAIT; set \
                     wait_replicas or remove wait_timeout",
                    field.value
                ),
            ));
        }
        Ok(field.value)
    }

    /// `[faults]`.
    fn faults(&self, faults: &Section<'_, '_>, topology: &Topology) -> Result<Faults> {
        let replicas = topology.replicas;
        let budgets = FaultKind::KEYS
            .iter()
            .map(|key| self.u32_or(faults, key, 0))
            .collect::<Result<Vec<_>>>()?;
        for (key, budget) in FaultKind::KEYS.iter().zip(&budgets) {
            self.budget_in_range(faults, key, budget)?;
        }
        let budget = |kind: FaultKind| &budgets[kind.index()];
        let (split_brains, restarts, failovers) = (
            budget(FaultKind::SplitBrain),
            budget(FaultKind::Restart),
            budget(FaultKind::Failover),
        );
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
        if split_brains.value > 0 && replicas == 0 {
            return Err(self.err(
                split_brains.line,
                faults.dotted("split_brains"),
                KeyErrorKind::InvalidValue,
                "a split brain promotes a replica, but topology.replicas = 0; add a replica or \
                 set split_brains = 0",
            ));
        }
        // With Sentinel watching, the harness scripts neither a second master nor a node
        // that goes down and comes back: Sentinel would act on either (a restart that
        // outlasts down-after-milliseconds is a failover) where the model does not.
        for (key, budget) in [("split_brains", split_brains), ("restarts", restarts)] {
            if budget.value > 0 && topology.sentinels > 0 {
                return Err(self.err(
                    budget.line,
                    faults.dotted(key),
                    KeyErrorKind::InvalidValue,
                    format!(
                        "a replay scripts this fault without Sentinel, but topology.sentinels = {}; \
                         set sentinels = 0 (scripted promotion) or {key} = 0",
                        topology.sentinels
                    ),
                ));
            }
        }
        if failovers.value > 0 && replicas == 0 {
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
        Ok(Faults::from_fn(|kind| budget(kind).value))
    }

    /// `[expect]`.
    fn expect(&self, expect: &Section<'_, '_>, faults: &Faults, drift: u32) -> Result<Expect> {
        let verdicts = Expect {
            mutual_exclusion: self.expectation(expect, "mutual_exclusion")?,
            owner_only_release: self.expectation(expect, "owner_only_release")?,
            no_orphaned_lock: self.expectation(expect, "no_orphaned_lock")?,
            resource_safety: self.expectation(expect, "resource_safety")?,
            cause: None,
        };
        let violated: Vec<Property> = verdicts
            .iter()
            .filter(|(_, e)| *e == Expectation::Violated)
            .map(|(p, _)| p)
            .collect();
        Ok(Expect {
            cause: self.cause(expect, faults, drift, &violated)?,
            ..verdicts
        })
    }
}
