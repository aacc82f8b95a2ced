//! Breadth-first search with symmetry reduction ([`crate::symmetry`]), reporting the
//! shortest counterexample to each property.
//!
//! stateright applies symmetry reduction only in depth-first search, and its breadth-first
//! checker may replace a first (shortest) discovery with a later, longer one. This search
//! runs the same [`stateright::Model`] level by level: every state of depth *d* is
//! checked before any of depth *d + 1*, a property's first violation is kept and never
//! replaced, and states are stored by the fingerprint of their symmetric representative.
//! A trace found in representative states is mapped back to the concrete clients and
//! masters.

use rustc_hash::{FxHashMap, FxHashSet};
use std::time::Instant;

use stateright::Model;

use crate::model::{fingerprint, Action, LockModel};
use crate::scenario::Property;
use crate::state::State;

/// Search settings.
#[derive(Clone, Debug)]
pub struct SearchOptions {
    /// Merge states that differ only by a renaming of clients (and of Redlock's masters,
    /// where they are interchangeable).
    pub symmetry: bool,
    /// Worker threads expanding each level.
    pub threads: usize,
    /// Explore counterexamples of at most this many steps.
    pub max_depth: Option<usize>,
    /// Stop after the first level that ends past this much wall time (benchmarks).
    pub time_limit: Option<std::time::Duration>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            symmetry: true,
            threads: 1,
            max_depth: None,
            time_limit: None,
        }
    }
}

/// Progress after each level.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Depth just finished.
    pub depth: usize,
    /// Unique states so far.
    pub unique: u64,
    /// States at the next depth.
    pub frontier: usize,
}

/// The result of a search.
#[derive(Clone, Debug)]
pub struct SearchResult {
    /// For each property (in [`Property::ALL`] order): its shortest counterexample, as
    /// the steps from the initial state, or `None` when it holds within the bound.
    pub counterexamples: Vec<(Property, Option<Vec<Action>>)>,
    /// Whether some state has a completed critical section (the vacuity guard).
    pub purchased: bool,
    /// Successor states generated.
    pub states: u64,
    /// Distinct (representative) states.
    pub unique_states: u64,
    /// Depth of the deepest level explored.
    pub depth: usize,
    /// False when the search stopped at `max_depth` with states left to explore.
    pub complete: bool,
    /// Wall time.
    pub seconds: f64,
    /// Wall time to the first counterexample of any property.
    pub first_counterexample_seconds: Option<f64>,
}

impl SearchResult {
    /// The shortest counterexample of `property`, if violated.
    pub fn counterexample(&self, property: Property) -> Option<&[Action]> {
        self.counterexamples
            .iter()
            .find(|(p, _)| *p == property)
            .and_then(|(_, c)| c.as_deref())
    }
}

struct Visit {
    parent: u64,
    action: Option<Action>,
}

/// Explore `model` breadth-first; `progress` is called after each level.
pub fn search(
    model: &LockModel,
    options: &SearchOptions,
    mut progress: impl FnMut(Progress),
) -> SearchResult {
    let start = Instant::now();
    let canon = |s: State| {
        if options.symmetry {
            let r = model.representative(s);
            (r.fingerprint, r.state)
        } else {
            (fingerprint(&s), s)
        }
    };
    // Keyed by fingerprints, which are hashes already: a cheap hasher is enough.
    let mut visited: FxHashMap<u64, Visit> = FxHashMap::default();
    let mut found: Vec<Option<u64>> = vec![None; Property::ALL.len()];
    let mut first_seconds = None;
    let mut purchased = false;
    let mut frontier = Vec::new();
    let mut states = 0u64;

    let mut check = |s: &State, fp: u64, found: &mut Vec<Option<u64>>, purchased: &mut bool| {
        for (k, p) in Property::ALL.iter().enumerate() {
            if found[k].is_none() && !model.holds(*p, s) {
                found[k] = Some(fp);
                first_seconds.get_or_insert(start.elapsed().as_secs_f64());
            }
        }
        *purchased |= LockModel::purchased(s);
    };

    for s in model.init_states() {
        let (fp, s) = canon(s);
        if visited
            .insert(
                fp,
                Visit {
                    parent: fp,
                    action: None,
                },
            )
            .is_none()
        {
            check(&s, fp, &mut found, &mut purchased);
            frontier.push((fp, s));
        }
    }

    let threads = options.threads.max(1);
    let mut depth = 0;
    let mut complete = true;
    while !frontier.is_empty() {
        if found.iter().all(Option::is_some) && purchased {
            break;
        }
        if options.max_depth.is_some_and(|max| depth >= max)
            || options.time_limit.is_some_and(|t| start.elapsed() > t)
        {
            complete = false;
            break;
        }
        // Workers drop successors already visited at an earlier depth, or twice in their
        // own chunk, so that only candidates for the next level are kept in memory.
        let visited_before = &visited;
        let expand = |chunk: &[(u64, State)]| {
            let mut out = Vec::new();
            let mut seen = FxHashSet::default();
            let mut generated = 0u64;
            let mut actions = Vec::new();
            for (parent, s) in chunk {
                let parent = *parent;
                actions.clear();
                model.actions(s, &mut actions);
                for &a in &actions {
                    let Some(next) = model.next_state(s, a) else {
                        continue;
                    };
                    if !model.within_boundary(&next) {
                        continue;
                    }
                    generated += 1;
                    let (fp, next) = canon(next);
                    if !visited_before.contains_key(&fp) && seen.insert(fp) {
                        out.push((fp, parent, a, next));
                    }
                }
            }
            (generated, out)
        };
        type Batch = (u64, Vec<(u64, u64, Action, State)>);
        let batches: Vec<Batch> = if threads == 1 || frontier.len() < 64 {
            vec![expand(&frontier)]
        } else {
            let size = frontier.len().div_ceil(threads);
            std::thread::scope(|scope| {
                let handles: Vec<_> = frontier
                    .chunks(size)
                    .map(|c| scope.spawn(move || expand(c)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("search worker panicked"))
                    .collect()
            })
        };
        let mut next_frontier = Vec::with_capacity(batches.iter().map(|b| b.1.len()).sum());
        for (generated, batch) in batches {
            states += generated;
            for (fp, parent, action, s) in batch {
                if let std::collections::hash_map::Entry::Vacant(v) = visited.entry(fp) {
                    v.insert(Visit {
                        parent,
                        action: Some(action),
                    });
                    check(&s, fp, &mut found, &mut purchased);
                    next_frontier.push((fp, s));
                }
            }
        }
        depth += 1;
        frontier = next_frontier;
        progress(Progress {
            depth,
            unique: visited.len() as u64,
            frontier: frontier.len(),
        });
    }

    let path_to = |fp: u64| -> Vec<Action> {
        let mut actions = Vec::new();
        let mut at = fp;
        while let Some(Visit {
            parent,
            action: Some(a),
        }) = visited.get(&at)
        {
            actions.push(*a);
            at = *parent;
        }
        actions.reverse();
        actions
    };
    let counterexamples = Property::ALL
        .iter()
        .zip(&found)
        .map(|(p, fp)| {
            let path = fp.map(|fp| {
                let steps = path_to(fp);
                if options.symmetry {
                    concretize(model, &steps)
                } else {
                    steps
                }
            });
            (*p, path)
        })
        .collect();
    SearchResult {
        counterexamples,
        purchased,
        states,
        unique_states: visited.len() as u64,
        depth,
        complete,
        seconds: start.elapsed().as_secs_f64(),
        first_counterexample_seconds: first_seconds,
    }
}

/// Map a path found between representative states to the same path for the concrete
/// clients and masters. Each step is replayed on the representative it was found from;
/// the renamings to the next representative are composed, so that each action can be
/// renamed back to the names of the initial state.
pub fn concretize(model: &LockModel, steps: &[Action]) -> Vec<Action> {
    let first = model.representative(model.init_states().remove(0));
    let mut state = first.state;
    // Names of the current representative -> names of the concrete run.
    let mut to_concrete = first.renaming.inverse();
    let mut out = Vec::with_capacity(steps.len());
    for &a in steps {
        out.push(to_concrete.action(a));
        let next = model
            .next_state(&state, a)
            .expect("a step of a found path applies to its representative");
        let r = model.representative(next);
        to_concrete = r.renaming.inverse().then(&to_concrete);
        state = r.state;
    }
    out
}

/// Replay a path from the initial state, returning every state along it.
pub fn replay(model: &LockModel, steps: &[Action]) -> Option<Vec<State>> {
    let mut states = vec![model.init_states().remove(0)];
    for &a in steps {
        let next = model.next_state(states.last()?, a)?;
        states.push(next);
    }
    Some(states)
}
