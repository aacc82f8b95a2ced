//! The replay files the report shows beside a counterexample:
//! `reports/replays/<scenario>.<property>.json`, written by `locklab replay`.
//!
//! ```json
//! { "scenario": "lua-release-pause", "property": "mutual_exclusion",
//!   "trace": "reports/traces/lua-release-pause.mutual_exclusion.json", "tick_ms": 100,
//!   "reproduced": true, "model_violations": ["mutual_exclusion"],
//!   "real_violations": ["mutual_exclusion"], "emulations": [],
//!   "timeline": [ { "ms": 0.4, "actor": "client1", "event": "SET lock t1 NX PX 400",
//!                   "reply": "OK" }, ... ] }
//! ```

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::Failure;

/// One real event, at its monotonic time since the replay started.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Event {
    pub ms: f64,
    pub actor: String,
    pub event: String,
    #[serde(default)]
    pub reply: Option<String>,
}

/// The outcome of replaying one counterexample against real Redis.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Replay {
    pub scenario: String,
    pub property: String,
    #[serde(default)]
    pub trace: String,
    pub tick_ms: f64,
    pub reproduced: bool,
    #[serde(default)]
    pub model_violations: Vec<String>,
    #[serde(default)]
    pub real_violations: Vec<String>,
    /// Faults that were emulated rather than real (named in the docs).
    #[serde(default)]
    pub emulations: Vec<String>,
    pub timeline: Vec<Event>,
}

/// `DIR/replays/<scenario>.<property>.json`.
pub fn path(reports: &Path, scenario: &str, property: &str) -> PathBuf {
    reports
        .join("replays")
        .join(format!("{scenario}.{property}.json"))
}

/// The replay of a counterexample, if one was recorded; a file that is not a replay is
/// bad input naming the file.
pub fn load(reports: &Path, scenario: &str, property: &str) -> Result<Option<Replay>, Failure> {
    let path = path(reports, scenario, property);
    if !path.exists() {
        return Ok(None);
    }
    let text = fs::read_to_string(&path).map_err(|e| Failure::io(&path, "cannot read", e))?;
    serde_json::from_str(&text).map(Some).map_err(|e| {
        Failure::BadInput(format!(
            "{}:{}: not a replay file: {e}",
            path.display(),
            e.line()
        ))
    })
}

/// Milliseconds with one decimal, as the timeline shows them.
pub fn ms(value: f64) -> String {
    format!("{value:.1}")
}
