//! The verdicts of a check: per scenario and property, what the search found, what the
//! scenario expects and whether they match. Every command that checks (`check`,
//! `report`) produces them, and every renderer (the table, `--json`,
//! `--junit`, the gallery) reads them; this module depends on neither.

use std::path::PathBuf;

use locklab_model::cause::{self, Cause, Ingredient, Without};
use locklab_model::model::{Action, FaultKind, LockModel};
use locklab_model::scenario::{Expectation, Property, Scenario};
use locklab_model::search::{Reduction, SearchOptions, SearchResult, Strategy};
use locklab_model::trace::{self, Trace};

/// What the search found for one property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// No counterexample within the bound.
    Holds,
    /// A shortest counterexample of this many steps.
    Violated { steps: usize },
    /// No counterexample, but no client ever completed its critical section either:
    /// the "holds" would mean nothing (the vacuity guard).
    Vacuous,
    /// No counterexample, and the random walks never reached what a verdict needs (a
    /// completed critical section, a fault striking a hold, an attempt after a lost
    /// lease): more walks may, the scenario need not be wrong.
    NotReached { walks: u64 },
    /// No counterexample in this many random walks: not a proof of anything.
    NoneInWalks { walks: u64 },
    /// The path the search found failed its re-check against the model.
    Unverified { reason: String },
}

/// The verdict on one property of one scenario.
#[derive(Clone, Debug)]
pub struct PropertyOutcome {
    pub property: Property,
    pub expected: Expectation,
    pub found: Found,
    /// The search stopped at `--max-depth` with states left: "holds" is only within
    /// that many steps.
    pub bound: Option<usize>,
    /// The scenario's horizon: a "holds" is a proof up to that tick; `None`, for all
    /// time.
    pub horizon: Option<u32>,
    /// The trace, if violated.
    pub trace: Option<Trace>,
    /// Where the trace was written.
    pub trace_path: Option<PathBuf>,
    /// What the violation needs, once computed ([`attach_causes`]).
    pub cause: Option<Cause>,
    /// The scenario's `[expect] cause`, for a property it expects violated.
    pub expected_cause: Option<Vec<Ingredient>>,
}

/// Whether a verdict matches its expectation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Match,
    Mismatch,
    Error,
    /// Expected to hold, and random walks found no counterexample: not proven.
    Unproven,
}

impl PropertyOutcome {
    pub fn status(&self) -> Status {
        match (&self.found, self.expected) {
            (Found::Vacuous | Found::NotReached { .. } | Found::Unverified { .. }, _) => {
                Status::Error
            }
            (Found::NoneInWalks { .. }, Expectation::Holds) => Status::Unproven,
            (Found::Holds, Expectation::Holds) => Status::Match,
            (Found::Violated { .. }, Expectation::Violated) if self.cause_differs() => {
                Status::Mismatch
            }
            (Found::Violated { .. }, Expectation::Violated) => Status::Match,
            _ => Status::Mismatch,
        }
    }

    /// The cause was computed and is not the one the scenario states: another set of
    /// ingredients, or one the search could not decide.
    pub fn cause_differs(&self) -> bool {
        match (&self.cause, &self.expected_cause) {
            (Some(found), Some(expected)) => {
                !found.undecided.is_empty() || found.ingredients() != *expected
            }
            _ => false,
        }
    }

    /// `expected cause [pauses], found needs: only step delays`, when the cause differs.
    pub fn cause_mismatch_text(&self) -> Option<String> {
        let (Some(found), Some(expected)) = (&self.cause, &self.expected_cause) else {
            return None;
        };
        self.cause_differs().then(|| {
            let expected: Vec<&str> = expected.iter().map(|i| i.key()).collect();
            format!(
                "expected cause [{}], found {}",
                expected.join(", "),
                found.text()
            )
        })
    }

    /// `"holds"`, `"violated"`, `"not_found"` (random walks) or `"error"`.
    pub fn verdict(&self) -> &'static str {
        match self.found {
            Found::Holds => "holds",
            Found::Violated { .. } => "violated",
            Found::NoneInWalks { .. } => "not_found",
            Found::Vacuous | Found::NotReached { .. } | Found::Unverified { .. } => "error",
        }
    }

    /// The verdict as the table shows it.
    pub fn found_text(&self) -> String {
        match (&self.found, self.bound) {
            (Found::Holds, None) => match self.horizon {
                Some(h) => format!("holds (to tick {h})"),
                None => "holds (for all time)".to_string(),
            },
            (Found::Holds, Some(n)) => format!("holds (within {n} steps)"),
            (Found::Violated { .. }, _) => "violated".to_string(),
            (Found::Vacuous, _) => "error: vacuous".to_string(),
            (Found::NotReached { walks }, _) => format!("error: not reached in {walks} walks"),
            (Found::NoneInWalks { walks }, _) => format!("not found in {walks} walks"),
            (Found::Unverified { reason }, _) => format!("error: path failed re-check: {reason}"),
        }
    }

    pub fn steps(&self) -> Option<usize> {
        match self.found {
            Found::Violated { steps } => Some(steps),
            _ => None,
        }
    }
}

/// The check of one scenario.
#[derive(Clone, Debug)]
pub struct ScenarioOutcome {
    pub scenario: Scenario,
    pub properties: Vec<PropertyOutcome>,
    pub purchased: bool,
    pub complete: bool,
    pub depth: usize,
    pub max_depth: Option<usize>,
    pub states: u64,
    pub unique_states: u64,
    pub seconds: f64,
    pub first_counterexample_seconds: Option<f64>,
    /// The `[faults]` keys with a budget whose faults no explored behaviour injects while
    /// a client holds the lock.
    pub faults_never_during_hold: Vec<&'static str>,
    /// The `[faults]` keys whose faults some explored behaviour injects while a client
    /// holds the lock: what a "holds" verdict was tested against.
    pub faults_struck_a_hold: Vec<&'static str>,
    /// Some holder's lease can be lost while it still believes it holds the lock.
    pub lease_lost: bool,
    /// Some client attempts while another believes it holds a lock whose lease is gone.
    pub attempt_after_loss: bool,
    /// How the verdicts were found.
    pub strategy: Strategy,
    /// Birthday bound on a fingerprint collision in the visited set (0 for walks).
    pub collision_probability: f64,
    /// The state-space reductions the search ran with (each tested against the plain
    /// search in model/tests/reductions.rs).
    pub reductions: Vec<Reduction>,
}

impl ScenarioOutcome {
    /// A scenario-level error (the vacuity guards), as a sentence. After random walks
    /// the scenario is not blamed: what no walk reached, more walks may reach.
    pub fn error(&self) -> Option<String> {
        let holds = self.properties.iter().any(|p| p.steps().is_none());
        let walks = match self.strategy {
            Strategy::Random { walks, .. } => Some(walks),
            Strategy::Exhaustive => None,
        };
        let not_reached = |what: String| {
            let walks = walks.expect("random walks");
            format!(
                "{what}: not reached in {walks} walks, try more walks (--walks); no verdict \
                 until then"
            )
        };
        if self.purchased && holds && !self.faults_never_during_hold.is_empty() {
            let faults = self.faults_never_during_hold.join(", ");
            if walks.is_some() {
                return Some(not_reached(format!("{faults} striking a hold")));
            }
            return Some(format!(
                "faults never touch a hold: no explored behaviour injects {faults} while a \
                 client holds the lock, so a \"holds\" verdict would not test them: check the \
                 scenario's timing, attempts and horizon"
            ));
        }
        let tested_by_late_attempts = self
            .properties
            .iter()
            .any(|p| p.steps().is_none() && p.property.tested_by_late_attempts());
        if self.purchased && tested_by_late_attempts && self.lease_lost && !self.attempt_after_loss
        {
            if walks.is_some() {
                return Some(not_reached("an attempt after a lost lease".to_string()));
            }
            return Some(
                "no attempt after a lost lease: a holder's lease can run out or vanish while \
                 it still believes it holds the lock, but no client ever attempts afterwards, \
                 so a \"holds\" verdict would not test what a late attempt does: raise \
                 [clients] attempts or set arrival = \"any\""
                    .to_string(),
            );
        }
        if !self.purchased && walks.is_some() {
            return Some(not_reached(
                "a client completing its critical section".to_string(),
            ));
        }
        (!self.purchased).then(|| {
            let within = match (self.complete, self.max_depth) {
                (false, Some(n)) => format!(" within {n} steps"),
                _ => String::new(),
            };
            format!(
                "no client ever completed its critical section{within}, so a \"holds\" verdict \
                 would mean nothing: check the scenario's timing, attempts and horizon"
            )
        })
    }

    /// A note when the search was cut short by `--max-depth`.
    pub fn note(&self) -> Option<String> {
        if let Strategy::Random { walks, seed } = self.strategy {
            return Some(format!(
                "{walks} random walks (seed {seed}), longest {} steps: a property no walk \
                 broke is unproven, and a counterexample found need not be the shortest",
                self.depth
            ));
        }
        (!self.complete).then(|| {
            format!(
                "search stopped at depth {} with states left (--max-depth or --time-limit): \
                 its \"holds\" verdicts are bounded",
                self.depth
            )
        })
    }

    pub fn name(&self) -> &str {
        &self.scenario.name
    }

    /// What a "holds" of this scenario was tested against, in a few words: the fault
    /// kinds that struck a hold, and whether a lease was lost under a believing holder
    /// and some client attempted afterwards. Empty for random walks (they keep no
    /// coverage of what they did not walk).
    pub fn coverage_text(&self) -> String {
        if self.strategy != Strategy::Exhaustive {
            return String::new();
        }
        let faults = if self.faults_struck_a_hold.is_empty() {
            "no fault struck a hold".to_string()
        } else {
            format!("struck a hold: {}", self.faults_struck_a_hold.join(", "))
        };
        let lease = match (self.lease_lost, self.attempt_after_loss) {
            (false, _) => "no lease lost",
            (true, true) => "lost lease, attempt after",
            (true, false) => "lost lease, no attempt after",
        };
        format!("{faults}; {lease}")
    }
}

/// The verdicts of one scenario, traces built (not yet written).
pub fn outcome(
    scenario: &Scenario,
    model: &LockModel,
    r: &SearchResult,
    options: &SearchOptions,
) -> ScenarioOutcome {
    // The depth a search stopped at (by --max-depth or a time limit); walks have none.
    let bound = (!r.complete && r.strategy == Strategy::Exhaustive).then_some(r.depth);
    let faults_never_during_hold: Vec<&'static str> = FaultKind::ALL
        .into_iter()
        .filter(|k| k.budget(&scenario.faults) > 0 && !r.coverage.fault_during_hold(*k))
        .map(FaultKind::key)
        .collect();
    let faults_struck_a_hold: Vec<&'static str> = FaultKind::ALL
        .into_iter()
        .filter(|k| r.coverage.fault_during_hold(*k))
        .map(FaultKind::key)
        .collect();
    let properties = scenario
        .expect
        .iter()
        .map(|(property, expected)| {
            let counterexample = r.counterexample(property).map(<[Action]>::to_vec);
            let found = match (&counterexample, r.strategy) {
                (Some(c), _) => Found::Violated { steps: c.len() },
                (None, _) if r.unverified(property).is_some() => Found::Unverified {
                    reason: r.unverified(property).expect("checked").to_string(),
                },
                (None, _)
                    if !r.purchased
                        || !faults_never_during_hold.is_empty()
                        || (r.coverage.no_attempt_after_loss()
                            && property.tested_by_late_attempts()) =>
                {
                    match r.strategy {
                        Strategy::Random { walks, .. } => Found::NotReached { walks },
                        Strategy::Exhaustive => Found::Vacuous,
                    }
                }
                (None, Strategy::Random { walks, .. }) => Found::NoneInWalks { walks },
                (None, Strategy::Exhaustive) => Found::Holds,
            };
            let trace = counterexample
                .as_ref()
                .map(|c| trace::build(model, property, c));
            PropertyOutcome {
                property,
                expected,
                found,
                bound,
                horizon: scenario.timing.horizon,
                trace,
                trace_path: None,
                cause: None,
                expected_cause: scenario
                    .expect
                    .cause
                    .as_ref()
                    .and_then(|c| c.of(property))
                    .map(<[Ingredient]>::to_vec),
            }
        })
        .collect();
    ScenarioOutcome {
        scenario: scenario.clone(),
        properties,
        purchased: r.purchased,
        complete: r.complete,
        depth: r.depth,
        max_depth: options.max_depth,
        states: r.states,
        unique_states: r.unique_states,
        seconds: r.seconds,
        first_counterexample_seconds: r.first_counterexample_seconds,
        faults_never_during_hold,
        faults_struck_a_hold,
        lease_lost: r.coverage.lease_lost,
        attempt_after_loss: r.coverage.attempt_after_loss,
        strategy: r.strategy,
        collision_probability: r.collision_probability(),
        reductions: reductions(model, options, r.strategy),
    }
}

/// The violated properties of an outcome (those [`attach_causes`] asks about).
pub fn violated(outcome: &ScenarioOutcome) -> Vec<Property> {
    outcome
        .properties
        .iter()
        .filter(|p| p.trace.is_some())
        .map(|p| p.property)
        .collect()
}

/// Puts the cause of each violated property, from the searches without each
/// ingredient, on its outcome and its trace.
pub fn attach_causes(outcome: &mut ScenarioOutcome, model: &LockModel, without: &[Without]) {
    for p in &mut outcome.properties {
        let Some(trace) = &mut p.trace else {
            continue;
        };
        let c = cause::of(model, p.property, &trace.actions, without);
        trace.cause = Some(c.clone());
        p.cause = Some(c);
    }
}

/// The reductions an exhaustive search of `model` ran with and that can act on it:
/// `options`' reductions, less token names for a custom lock (its scripts may read a
/// token's text), the partial order where no machine's answers can be only recorded
/// (every design but Redlock) and pause placement where the scenario has no pause.
/// Walks keep no visited set and read every step, so none.
pub fn reductions(
    model: &LockModel,
    options: &SearchOptions,
    strategy: Strategy,
) -> Vec<Reduction> {
    if strategy != Strategy::Exhaustive {
        return Vec::new();
    }
    options
        .reductions
        .iter()
        .filter(|r| match r {
            Reduction::TokenNames => model.renames_tokens(),
            Reduction::PartialOrder => model.partial_order_applies(),
            Reduction::PausePlacement => model.pause_placement_applies(),
            Reduction::UnreadValues | Reduction::Symmetry => true,
        })
        .collect()
}

/// 0 when every verdict matches, else 1.
pub fn exit_code(outcomes: &[ScenarioOutcome]) -> i32 {
    exit_code_allowing(outcomes, false)
}

/// 0 when every verdict matches (or, with `allow_unproven`, is an unproven "holds"), else 1.
pub fn exit_code_allowing(outcomes: &[ScenarioOutcome], allow_unproven: bool) -> i32 {
    let ok = |s: Status| s == Status::Match || (allow_unproven && s == Status::Unproven);
    let all_match = outcomes
        .iter()
        .all(|o| o.error().is_none() && o.properties.iter().all(|p| ok(p.status())));
    i32::from(!all_match)
}
