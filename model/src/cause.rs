//! What a violation needs. A counterexample shows one way to break a property, and the
//! faults it happens to contain need not be why: the shortest path may pause an idle
//! client while the holder outlives its lease by ordinary step delays. So the cause is
//! computed, not read off the path: each fault kind of the budget, the masters' clock
//! drift (`timing.node_drift`) and the step delays (`max_step_delay`) is *needed* when
//! the property holds with that budget (the drift, the delays) set to zero, each a
//! search of its own with the same bounds and reductions.
//! Which client a needed fault struck (the holder, or a client waiting for the lock) is
//! then read from the counterexample itself.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::model::{Action, FaultKind, LockModel};
use crate::scenario::{Property, Scenario};
use crate::search::{replay, search, SearchOptions, SearchResult};
use crate::state::{Phase, State};

/// One thing a violation may need: a fault kind of the budget, the masters' clock
/// drift, or the step delays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ingredient {
    Fault(FaultKind),
    /// Master clocks that run fast (`timing.node_drift > 0`): a key expires early by
    /// the clock of the client that holds it.
    NodeDrift,
    /// The partial synchrony of `max_step_delay > 0`: a step or a message may wait.
    StepDelays,
}

impl Ingredient {
    /// Every ingredient, in the order of the `[faults]` keys, then the drift, the step
    /// delays last.
    pub const ALL: [Ingredient; FaultKind::ALL.len() + 2] = {
        let mut all = [Ingredient::StepDelays; FaultKind::ALL.len() + 2];
        let mut k = 0;
        while k < FaultKind::ALL.len() {
            all[k] = Ingredient::Fault(FaultKind::ALL[k]);
            k += 1;
        }
        all[k] = Ingredient::NodeDrift;
        all
    };

    /// Its name in `[expect] cause`: the `[faults]` key, `node_drift` (the `[timing]`
    /// key) or `step_delays`.
    pub fn key(self) -> &'static str {
        match self {
            Ingredient::Fault(kind) => kind.key(),
            Ingredient::NodeDrift => "node_drift",
            Ingredient::StepDelays => "step_delays",
        }
    }

    /// Whether the scenario has it at all: a budget above zero, a drift, a step delay.
    pub fn present(self, scenario: &Scenario) -> bool {
        match self {
            Ingredient::Fault(kind) => kind.budget(&scenario.faults) > 0,
            Ingredient::NodeDrift => scenario.timing.node_drift > 0,
            Ingredient::StepDelays => scenario.timing.max_step_delay > 0,
        }
    }

    /// The scenario without it: that budget, the drift or the step delay set to zero.
    pub fn without(self, scenario: &Scenario) -> Scenario {
        let mut s = scenario.clone();
        let f = &mut s.faults;
        match self {
            Ingredient::Fault(kind) => f[kind] = 0,
            Ingredient::NodeDrift => s.timing.node_drift = 0,
            Ingredient::StepDelays => s.timing.max_step_delay = 0,
        }
        s
    }

    /// A noun for the ingredient, singular: "a pause", "step delays".
    fn noun(self) -> &'static str {
        match self {
            Ingredient::Fault(kind) => kind.noun(),
            Ingredient::NodeDrift => "a master clock that runs fast",
            Ingredient::StepDelays => "step delays",
        }
    }
}

impl fmt::Display for Ingredient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

impl FromStr for Ingredient {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ingredient::ALL
            .into_iter()
            .find(|i| i.key() == s)
            .ok_or_else(|| {
                format!(
                    "`{s}` is not a cause; causes: {}",
                    Ingredient::ALL.map(Ingredient::key).join(", ")
                )
            })
    }
}

impl Serialize for Ingredient {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.key())
    }
}

impl<'de> Deserialize<'de> for Ingredient {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Which client a client fault struck, as the counterexample has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Struck {
    /// A client that believes it holds the lock (in its critical section or releasing).
    Holder,
    /// A client with an acquire in flight.
    Acquiring,
    /// A client waiting for the lock between attempts, or before its first.
    Waiting,
    /// A client that has finished (released or given up) or crashed.
    Finished,
}

impl Struck {
    fn of(phase: &Phase) -> Struck {
        match phase {
            Phase::Critical { .. } | Phase::Waiting { .. } => Struck::Holder,
            Phase::Acquiring => Struck::Acquiring,
            Phase::Idle => Struck::Waiting,
            Phase::Done | Phase::Crashed => Struck::Finished,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Struck::Holder => "the holder",
            Struck::Acquiring => "a client acquiring",
            Struck::Waiting => "a waiting client",
            Struck::Finished => "a finished client",
        }
    }
}

/// One needed ingredient, with the client its first fault in the counterexample struck.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Need {
    pub ingredient: Ingredient,
    /// For a client fault: whom it struck in the counterexample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub struck: Option<Struck>,
}

/// What one violated property needs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// The ingredients without which the property holds, in [`Ingredient::ALL`] order.
    pub needs: Vec<Need>,
    /// The ingredients whose search stopped before deciding (`--max-depth`, a time
    /// limit) or found only a path that failed its re-check: needed or not, unknown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<Ingredient>,
}

impl Cause {
    /// The needed ingredients, without whom they struck.
    pub fn ingredients(&self) -> Vec<Ingredient> {
        self.needs.iter().map(|n| n.ingredient).collect()
    }

    /// `needs: a pause of the holder`, `needs: only step delays`.
    pub fn text(&self) -> String {
        let needs: Vec<String> = self
            .needs
            .iter()
            .map(|n| match n.struck {
                Some(s) => format!("{} of {}", n.ingredient.noun(), s.words()),
                None => n.ingredient.noun().to_string(),
            })
            .collect();
        let mut t = match needs.as_slice() {
            [] if self.undecided.is_empty() => {
                "needs: none of its faults, nor step delays, on their own (it breaks without \
                 each)"
                    .to_string()
            }
            [] => "needs: nothing decided".to_string(),
            [one] if self.needs[0].ingredient == Ingredient::StepDelays => {
                format!("needs: only {one}")
            }
            [one] => format!("needs: {one}"),
            [init @ .., last] => format!("needs: {} and {last}", init.join(", ")),
        };
        if !self.undecided.is_empty() {
            let undecided: Vec<&str> = self.undecided.iter().map(|i| i.key()).collect();
            t.push_str(&format!(
                " (undecided, the search was bounded: {})",
                undecided.join(", ")
            ));
        }
        t
    }
}

/// The search of the scenario without one ingredient.
pub struct Without {
    pub ingredient: Ingredient,
    pub result: SearchResult,
}

/// The searches of `scenario` without each ingredient it has, for the properties in
/// `violated` (each stops once all of them are broken again). `progress` hears of each
/// before it starts.
pub fn searches(
    scenario: &Scenario,
    violated: &[Property],
    options: &SearchOptions,
    mut progress: impl FnMut(Ingredient),
) -> Vec<Without> {
    if violated.is_empty() {
        return Vec::new();
    }
    let options = SearchOptions {
        stop_when_violated: violated.to_vec(),
        ..options.clone()
    };
    Ingredient::ALL
        .into_iter()
        .filter(|i| i.present(scenario))
        .map(|ingredient| {
            progress(ingredient);
            let model = LockModel::new(&ingredient.without(scenario));
            Without {
                ingredient,
                result: search(&model, &options, |_| {}),
            }
        })
        .collect()
}

/// The cause of `property`'s violation by `counterexample` in `model`, from the
/// searches without each ingredient.
pub fn of(
    model: &LockModel,
    property: Property,
    counterexample: &[Action],
    without: &[Without],
) -> Cause {
    let states = replay(model, counterexample).unwrap_or_default();
    let mut cause = Cause::default();
    for w in without {
        let r = &w.result;
        if r.counterexample(property).is_some() {
            continue;
        }
        if !r.complete || r.unverified(property).is_some() {
            cause.undecided.push(w.ingredient);
            continue;
        }
        cause.needs.push(Need {
            ingredient: w.ingredient,
            struck: struck(w.ingredient, counterexample, &states),
        });
    }
    cause
}

/// The client the first fault of `ingredient` in the path struck, for a client fault.
fn struck(ingredient: Ingredient, path: &[Action], states: &[State]) -> Option<Struck> {
    let Ingredient::Fault(kind) = ingredient else {
        return None;
    };
    path.iter().zip(states).find_map(|(a, before)| {
        if FaultKind::of(a) != Some(kind) {
            return None;
        }
        // A client fault names its client; a node fault none.
        let client = a.client()?;
        Some(Struck::of(&before.clients[usize::from(client)].core.phase))
    })
}
