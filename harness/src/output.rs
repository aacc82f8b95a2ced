//! The `--json` report of `check` (docs/ARCHITECTURE.md, "Command line").
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
//!                               "trace": "reports/traces/....mutual_exclusion.json",
//!                               "cause": { "needs": [{ "ingredient": "pauses",
//!                                                      "struck": "holder" }],
//!                                          "undecided": [],
//!                                          "text": "needs: a pause of the holder" },
//!                               "expected_cause": ["pauses"] },
//!         ...
//!       },
//!       "states": 1234, "unique_states": 567, "seconds": 0.01, "depth": 14,
//!       "complete": true, "horizon": 10, "purchased": true,
//!       "first_counterexample_seconds": 0.001,
//!       "error": null, "strategy": "exhaustive", "walks": null, "seed": null,
//!       "fingerprint_collision_probability": 8.7e-15,
//!       "reductions": ["unread_values", "token_names", "symmetry", "partial_order",
//!                      "pause_placement"] }
//!   ]
//! }
//! ```
//!
//! `verdict` is `"holds"`, `"violated"`, `"not_found"` (random walks found no
//! counterexample: never a proof) or `"error"` (vacuous scenario, or a path that failed
//! its re-check against the model: `unverified` says why); `within_steps` is the depth
//! the search stopped at (`--max-depth`) with states left. `horizon` is the scenario's:
//! its "holds" verdicts are proofs up to that tick, or for all time where it is `null`
//! (a scenario without one, whose clock the model keeps relative). Each scenario and property
//! names its `strategy` (`"exhaustive"` or `"random"`, with `walks` and `seed`), and
//! `fingerprint_collision_probability` bounds the chance that the visited set merged two
//! states by a 64-bit fingerprint collision (n²/2^65 for n unique states; the summary
//! sums the scenarios'; 0 for walks, which keep no visited set). `summary.unproven`
//! counts expected "holds" that walks only did not break. A shard's report (`check
//! --shard K/N`) adds `"shard": {"index": K, "count": N, "scenarios": <in the whole
//! run>, "positions": [<of its scenarios in the whole run>]}`; `locklab merge` joins
//! the shards into the report of the whole run.
//!
//! `cause` (null unless computed: `check --cause`, `report`) is what a violation needs:
//! each fault kind of the budget (its `[faults]` key), `node_drift` and `step_delays`, without which
//! the property holds, with whom a client fault struck in the trace (`holder`,
//! `acquiring`, `waiting`, `finished`); `undecided` lists those a bounded search left
//! open. `expected_cause` is the scenario's `[expect] cause` for a property it expects
//! violated; a computed cause that differs from it makes `match` false.

use serde_json::{json, Map, Value};

use locklab_model::search::Strategy;

use crate::shard::Part;
use crate::verdict::{Found, ScenarioOutcome, Status};

/// The report; a shard's (`check --shard`) also carries `shard`: its index and count,
/// the number of scenarios in the whole run and the positions of its own in that run
/// (what `locklab merge` puts the shards back together by).
pub fn json(outcomes: &[ScenarioOutcome], exit_code: i32, part: Option<&Part>) -> Value {
    let scenarios: Vec<Value> = outcomes.iter().map(scenario).collect();
    let statuses: Vec<Status> = outcomes
        .iter()
        .flat_map(|o| o.properties.iter().map(|p| p.status()))
        .collect();
    let count = |s: Status| statuses.iter().filter(|&&v| v == s).count();
    let mut report = json!({
        "exit_code": exit_code,
        "summary": {
            "scenarios": outcomes.len(),
            "verdicts": statuses.len(),
            "matched": count(Status::Match),
            "mismatched": count(Status::Mismatch),
            "errors": outcomes.iter().filter(|o| o.error().is_some()).count(),
            "unproven": count(Status::Unproven),
            "fingerprint_collision_probability": crate::table::collision_probability(outcomes),
        },
        "scenarios": scenarios,
    });
    if let Some(part) = part {
        report["shard"] = json!({
            "index": part.shard.index,
            "count": part.shard.count,
            "scenarios": part.total,
            "positions": part.positions,
        });
    }
    report
}

fn scenario(o: &ScenarioOutcome) -> Value {
    let mut properties = Map::new();
    for p in &o.properties {
        properties.insert(
            p.property.as_str().to_string(),
            json!({
                "verdict": p.verdict(),
                "strategy": o.strategy.as_str(),
                "expected": p.expected.as_str(),
                "match": p.status() == Status::Match,
                "within_steps": p.bound,
                "steps": p.steps(),
                "trace": p.trace_path.as_ref().map(|t| t.display().to_string()),
                "unverified": match &p.found {
                    Found::Unverified { reason } => Some(reason),
                    _ => None,
                },
                "cause": p.cause.as_ref().map(|c| json!({
                    "needs": c.needs,
                    "undecided": c.undecided,
                    "text": c.text(),
                })),
                "expected_cause": p.expected_cause,
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
        "horizon": o.scenario.timing.horizon,
        "purchased": o.purchased,
        "first_counterexample_seconds": o.first_counterexample_seconds,
        "error": o.error(),
        "coverage": {
            "faults_never_during_hold": o.faults_never_during_hold,
            "faults_struck_a_hold": o.faults_struck_a_hold,
            "lease_lost": o.lease_lost,
            "attempt_after_loss": o.attempt_after_loss,
        },
        "strategy": o.strategy.as_str(),
        "walks": match o.strategy {
            Strategy::Random { walks, .. } => Some(walks),
            Strategy::Exhaustive => None,
        },
        "seed": match o.strategy {
            Strategy::Random { seed, .. } => Some(seed),
            Strategy::Exhaustive => None,
        },
        "fingerprint_collision_probability": o.collision_probability,
        "reductions": o.reductions.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
    })
}
