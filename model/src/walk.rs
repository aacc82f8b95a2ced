//! Seeded random walks through the model, for state spaces beyond exhaustive reach.
//!
//! Each walk starts at the initial state and takes, at every state, one of the enabled
//! steps that stays within the horizon, chosen uniformly by a SplitMix64 generator seeded
//! from the seed and the walk's number (the same seed gives the same walks on every
//! machine), until no step is left. The first state of a walk that breaks a property ends
//! that property's path; the shortest such path over all walks is kept, re-checked
//! against the model ([`crate::recheck`]) like every counterexample. A walk sees one
//! behaviour: a property no walk breaks is "not found in N walks", never "holds".

use std::time::{Duration, Instant};

use stateright::Model;

use crate::model::{Action, LockModel};
use crate::scenario::Property;
use crate::search::{Coverage, SearchResult, Strategy};

/// Random-walk settings.
#[derive(Clone, Debug)]
pub struct WalkOptions {
    /// Number of walks.
    pub walks: u64,
    /// Seed of the first walk; walk `k` is seeded from it and `k`.
    pub seed: u64,
    /// Stop a walk after this many steps (a guard: the horizon ends every walk).
    pub max_steps: usize,
    /// Stop after the walk that ends past this much wall time.
    pub time_limit: Option<Duration>,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            walks: 1000,
            seed: 0,
            max_steps: 10_000,
            time_limit: None,
        }
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a small, well-mixed generator, enough to pick
/// among a few dozen steps.
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by rejection so that no index is favoured.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next();
            if x < zone {
                return usize::try_from(x % n).expect("below n, which is a usize");
            }
        }
    }
}

/// Runs the walks. The result's `strategy` is [`Strategy::Random`] with the walks
/// actually run; `states` counts steps taken, `depth` the longest walk, `complete` is
/// false and there is no visited set (`unique_states` 0, `fingerprint_bits` 0).
pub fn random_walks(model: &LockModel, options: &WalkOptions) -> SearchResult {
    let start = Instant::now();
    let mut best: Vec<Option<Vec<Action>>> = vec![None; Property::ALL.len()];
    let mut first_seconds = None;
    let mut purchased = false;
    let mut steps_taken = 0u64;
    let mut longest = 0;
    let mut walks = 0;
    let mut offered = Vec::new();
    let mut successors = Vec::new();
    let mut coverage = Coverage::default();
    while walks < options.walks {
        if options.time_limit.is_some_and(|t| start.elapsed() > t) {
            break;
        }
        let mut rng = SplitMix64(options.seed ^ walks.wrapping_mul(0xd1b5_4a32_d192_ed03));
        walks += 1;
        let mut state = model.init_states().remove(0);
        let mut path: Vec<Action> = Vec::new();
        let mut broken = [false; Property::ALL.len()];
        loop {
            purchased |= LockModel::purchased(&state);
            for (k, p) in Property::ALL.iter().enumerate() {
                if broken[k] || model.holds(*p, &state) {
                    continue;
                }
                broken[k] = true;
                if best[k].as_ref().is_none_or(|b| path.len() < b.len()) {
                    best[k] = Some(path.clone());
                    first_seconds.get_or_insert(start.elapsed().as_secs_f64());
                }
            }
            if path.len() >= options.max_steps {
                break;
            }
            offered.clear();
            model.actions(&state, &mut offered);
            successors.clear();
            successors.extend(offered.iter().filter_map(|&a| {
                model
                    .next_state(&state, a)
                    .filter(|n| model.within_boundary(n))
                    .map(|n| (a, n))
            }));
            if successors.is_empty() {
                break;
            }
            let (a, next) = successors.swap_remove(rng.below(successors.len()));
            coverage.record(model, &state, a);
            path.push(a);
            state = next;
            steps_taken += 1;
        }
        longest = longest.max(path.len());
    }
    let mut result = SearchResult {
        strategy: Strategy::Random {
            walks,
            seed: options.seed,
        },
        counterexamples: Property::ALL.iter().copied().zip(best).collect(),
        unverified: Vec::new(),
        fingerprint_bits: 0,
        purchased,
        states: steps_taken,
        unique_states: 0,
        depth: longest,
        complete: false,
        seconds: start.elapsed().as_secs_f64(),
        first_counterexample_seconds: first_seconds,
        coverage,
    };
    result.recheck(model);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_is_in_range_and_uses_every_value() {
        let mut rng = SplitMix64(7);
        let mut seen = [0u32; 5];
        for _ in 0..5000 {
            seen[rng.below(5)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
    }
}
