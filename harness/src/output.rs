//! The `--json` report of `check` (DESIGN.md, "CLI contract").
//!
//! ```json
//! {
//!   "exit_code": 0,
//!   "summary": { "scenarios": 1, "verdicts": 4, "matched": 4, "mismatched": 0, "errors": 0 },
//!   "scenarios": [
//!     { "name": "...", "design": "lua-release", "path": "scenarios/....toml",
//!       "properties": {
//!         "mutual_exclusion": { "verdict": "violated", "expected": "violated", "match": true,
//!                               "within_steps": null, "steps": 9,
//!                               "trace": "reports/traces/....mutual_exclusion.json" },
//!         ...
//!       },
//!       "states": 1234, "unique_states": 567, "seconds": 0.01, "depth": 14,
//!       "complete": true, "purchased": true, "first_counterexample_seconds": 0.001,
//!       "error": null }
//!   ]
//! }
//! ```
//!
//! `verdict` is `"holds"`, `"violated"` or `"error"` (vacuous scenario); `within_steps`
//! is the `--max-depth` bound when the search stopped there with states left.

use serde_json::{json, Map, Value};

use crate::check::{ScenarioOutcome, Status};

pub fn json(outcomes: &[ScenarioOutcome], exit_code: i32) -> Value {
    let scenarios: Vec<Value> = outcomes.iter().map(scenario).collect();
    let statuses: Vec<Status> = outcomes
        .iter()
        .flat_map(|o| o.properties.iter().map(|p| p.status()))
        .collect();
    let count = |s: Status| statuses.iter().filter(|&&v| v == s).count();
    json!({
        "exit_code": exit_code,
        "summary": {
            "scenarios": outcomes.len(),
            "verdicts": statuses.len(),
            "matched": count(Status::Match),
            "mismatched": count(Status::Mismatch),
            "errors": outcomes.iter().filter(|o| o.error().is_some()).count(),
        },
        "scenarios": scenarios,
    })
}

fn scenario(o: &ScenarioOutcome) -> Value {
    let mut properties = Map::new();
    for p in &o.properties {
        properties.insert(
            p.property.as_str().to_string(),
            json!({
                "verdict": p.verdict(),
                "expected": p.expected.as_str(),
                "match": p.status() == Status::Match,
                "within_steps": p.bound,
                "steps": p.steps(),
                "trace": p.trace_path.as_ref().map(|t| t.display().to_string()),
            }),
        );
    }
    json!({
        "name": o.scenario.name,
        "design": o.scenario.design.as_str(),
        "path": o.scenario.path.display().to_string(),
        "properties": properties,
        "states": o.states,
        "unique_states": o.unique_states,
        "seconds": o.seconds,
        "depth": o.depth,
        "complete": o.complete,
        "purchased": o.purchased,
        "first_counterexample_seconds": o.first_counterexample_seconds,
        "error": o.error(),
    })
}
