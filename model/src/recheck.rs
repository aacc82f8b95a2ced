//! Re-checking a counterexample before it is reported, and the risk the visited set's
//! fingerprints leave.
//!
//! The exhaustive search stores states by a 64-bit fingerprint with a parent link (as
//! TLC does): two distinct states with the same fingerprint are one state for it. The
//! second is then never expanded, so a collision can hide a violation (a wrong "holds",
//! or a longer counterexample than the shortest); it cannot be detected after the fact,
//! only bounded: [`collision_probability`] is reported with every run. What a collision
//! (or any bug in the symmetry mapping, or a random walk) could also do is produce a
//! path that is not a behaviour of the model. That is caught here: every counterexample
//! is replayed from the initial state through the model, each step must be enabled, and
//! the property must break exactly at the last state and not before.

use stateright::Model;

use crate::model::{Action, LockModel};
use crate::scenario::Property;
use crate::state::State;

/// Why a path is not a counterexample.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Step `step` (1-based) is not among the actions the model offers in that state.
    #[error("step {step} ({action}) is not enabled in the state it is taken from")]
    NotEnabled { step: usize, action: Action },
    /// Step `step` is offered but the model has no successor for it.
    #[error("step {step} ({action}) has no successor state")]
    NoSuccessor { step: usize, action: Action },
    /// Step `step` leads past the scenario's horizon.
    #[error("step {step} ({action}) leads past the horizon")]
    OutOfBounds { step: usize, action: Action },
    /// Step `step` (1-based; 0 for the initial state) of a trace rebuilt from the visited
    /// set: no step the search takes from the state before it reaches the stored
    /// fingerprint (a fingerprint collision can cause it).
    #[error("step {step}: no step reaches the fingerprint the search stored (a collision)")]
    Lost { step: usize },
    /// The property is already broken after `step` steps, before the path's end.
    #[error("{property} is already broken after step {step}, before the path's end")]
    BrokenEarly { property: Property, step: usize },
    /// The property holds in the path's last state.
    #[error("{property} holds at the path's end")]
    NotBroken { property: Property },
}

/// Replays `steps` from the initial state and checks that they break `property` exactly
/// at the last step; returns every state along the path.
pub fn recheck(
    model: &LockModel,
    property: Property,
    steps: &[Action],
) -> Result<Vec<State>, PathError> {
    let mut states = vec![model.init_states().remove(0)];
    let mut offered = Vec::new();
    for (k, &action) in steps.iter().enumerate() {
        let step = k + 1;
        let s = states.last().expect("the initial state");
        if !model.holds(property, s) {
            return Err(PathError::BrokenEarly { property, step: k });
        }
        offered.clear();
        model.actions(s, &mut offered);
        if !offered.contains(&action) {
            return Err(PathError::NotEnabled { step, action });
        }
        let next = model
            .next_state(s, action)
            .ok_or(PathError::NoSuccessor { step, action })?;
        if !model.within_boundary(&next) {
            return Err(PathError::OutOfBounds { step, action });
        }
        states.push(next);
    }
    if model.holds(property, states.last().expect("the initial state")) {
        return Err(PathError::NotBroken { property });
    }
    Ok(states)
}

/// An upper bound on the probability that two of `unique` distinct states share a
/// fingerprint of `bits` bits (the birthday bound n²/2^(bits+1)), at most 1.
pub fn collision_probability(unique: u64, bits: u32) -> f64 {
    let n = unique as f64;
    (n * n / 2f64.powf(f64::from(bits) + 1.0)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn birthday_bound() {
        assert_eq!(collision_probability(0, 64), 0.0);
        // 2^32 states in 64 bits: 2^64 / 2^65.
        assert_eq!(collision_probability(1 << 32, 64), 0.5);
        assert_eq!(collision_probability(1000, 8), 1.0);
        let p = collision_probability(10_000_000, 64);
        assert!(p > 2.7e-6 && p < 2.8e-6, "{p}");
    }
}
