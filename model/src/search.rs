//! Breadth-first search with the state-space reductions, reporting the shortest
//! counterexample to each property.
//!
//! stateright applies symmetry reduction only in depth-first search, and its breadth-first
//! checker may replace a first (shortest) discovery with a later, longer one. This search
//! runs the same [`stateright::Model`] level by level: every state of depth *d* is
//! checked before any of depth *d + 1*, a property's first violation is kept and never
//! replaced, and states are stored by the fingerprint of their representative.
//! A trace found in representative states is mapped back to the concrete clients and
//! masters, then re-checked against the model ([`crate::recheck`]) before it is returned.
//!
//! Five reductions ([`Reduction`]), each switched by [`SearchOptions`]. Three merge states
//! that have the same behaviours, so they keep every verdict and every shortest
//! counterexample exactly: values no step reads again are forgotten
//! ([`crate::forget`]), tokens are known by their first appearance rather than their
//! names ([`crate::tokens`]), and clients (and Redlock's independent masters) by their
//! role rather than their number ([`crate::symmetry`]). The fourth takes the answers a
//! Redlock fan-out only records in one order, and overdue Redlock requests before the
//! steps that cannot touch them ([`crate::partial_order`]): it keeps every
//! verdict, and its counterexample lengths are compared with the unreduced search's by
//! the tests. The fifth begins pauses only just before a tick and ends them only just
//! after one ([`crate::pause_placement`]): it keeps verdicts and lengths, also compared
//! by the tests.
//!
//! The visited set keeps a 64-bit fingerprint per state, not the state: a collision
//! merges two states silently. Each result carries the birthday bound on that for the
//! run ([`SearchResult::collision_probability`]). With each fingerprint it keeps its
//! parent's, not the step between them (16 bytes a state, as TLC keeps them); a trace
//! is rebuilt by taking the search's steps again from each state on the way until one
//! reaches the next fingerprint.

use rustc_hash::{FxHashMap, FxHashSet};
use std::time::Instant;

use stateright::Model;

use crate::fault::PerFault;
use crate::frontier::{Block, Frontier};
use crate::model::{Action, FaultKind, LockModel};
use crate::recheck::{collision_probability, recheck, PathError};
use crate::scenario::Property;
use crate::state::State;
use crate::symmetry::{Renaming, Representative};

/// Search settings.
#[derive(Clone, Debug)]
pub struct SearchOptions {
    /// The reductions the search applies ([`Reduction`]; all by default).
    pub reductions: Reductions,
    /// Worker threads expanding each level.
    pub threads: usize,
    /// Explore counterexamples of at most this many steps.
    pub max_depth: Option<usize>,
    /// Stop after the first level that ends past this much wall time (benchmarks).
    pub time_limit: Option<std::time::Duration>,
    /// Stop after the first level that ends with more than this many unique states: a
    /// deterministic bound, for tests that compare searches small enough to run twice.
    pub state_limit: Option<usize>,
    /// Bits of each fingerprint the visited set keys on: 64, or fewer only to show in
    /// tests what collisions do.
    pub fingerprint_bits: u32,
    /// States of a level expanded at a time. Each block's states are dropped once
    /// expanded, so that a level and the next are not both held in full; the order of
    /// discovery (and so every result) is the same for any block size.
    pub block_states: usize,
    /// Keep each level waiting to be expanded as numbered parts in tables
    /// ([`crate::frontier::Level`], SPIN's `COLLAPSE`): less memory where the levels are
    /// large (a quarter on the SPIN mirror's plain search), for more time (1.65x there),
    /// every result the same.
    pub compact: bool,
    /// When not empty, stop as soon as each of these properties is violated (a search
    /// that asks only whether they still break, as [`crate::cause`]'s do).
    pub stop_when_violated: Vec<Property>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            reductions: Reductions::ALL,
            threads: 1,
            max_depth: None,
            time_limit: None,
            state_limit: None,
            fingerprint_bits: 64,
            block_states: 1 << 14,
            compact: false,
            stop_when_violated: Vec::new(),
        }
    }
}

impl SearchOptions {
    /// No reduction at all: every interleaving, every state as it is (what the
    /// reductions are tested against).
    pub fn plain() -> Self {
        SearchOptions {
            reductions: Reductions::NONE,
            ..SearchOptions::default()
        }
    }

    /// The same options with `reduction` switched off (`--no-symmetry` and the like).
    #[must_use]
    pub fn without(mut self, reduction: Reduction) -> Self {
        self.reductions = self.reductions.without(reduction);
        self
    }

    /// Whether `reduction` is on.
    pub fn reduces(&self, reduction: Reduction) -> bool {
        self.reductions.contains(reduction)
    }

    /// A state as the search stores it: its times relative to its clock when the
    /// scenario has no horizon ([`crate::relative_time`]), unread values forgotten, then the
    /// representative of its renamings (the state itself without symmetry), keyed by
    /// its fingerprint (tokens by their first appearance, with `token_names`).
    pub fn representative(&self, model: &LockModel, mut s: State) -> Representative {
        let (fingerprint, renaming) = self.canonicalize(model, &mut s);
        Representative {
            fingerprint,
            state: s,
            renaming,
        }
    }

    /// [`SearchOptions::representative`] in place: `s` becomes the state as the search
    /// stores it; its fingerprint and the renaming that took it there are returned.
    pub fn canonicalize(&self, model: &LockModel, s: &mut State) -> (u64, Renaming) {
        // Not a reduction: without a horizon, time is relative in every search.
        model.rebase(s);
        if self.reduces(Reduction::UnreadValues) {
            model.forget(s);
        }
        let token_names = self.reduces(Reduction::TokenNames);
        let fingerprint = |t: &State| model.state_fingerprint(t, token_names);
        if self.reduces(Reduction::Symmetry) {
            model.canonicalize(s, fingerprint)
        } else if !(token_names && model.renames_tokens()) {
            (
                model.parts_fingerprint(s),
                Renaming::identity(s.clients.len(), s.nodes.len()),
            )
        } else {
            (
                fingerprint(s),
                Renaming::identity(s.clients.len(), s.nodes.len()),
            )
        }
    }
}

/// A state-space reduction of the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// Values no step reads again are forgotten ([`crate::forget`]): exact.
    UnreadValues,
    /// Tokens known by their first appearance ([`crate::tokens`]): exact.
    TokenNames,
    /// Clients and interchangeable masters known by their role ([`crate::symmetry`]):
    /// exact.
    Symmetry,
    /// The answers a Redlock fan-out only records, read in one order, and overdue
    /// deliveries taken first ([`crate::partial_order`]): keeps verdicts; lengths
    /// tested.
    PartialOrder,
    /// Pauses begin just before a tick and end just after one
    /// ([`crate::pause_placement`]): keeps verdicts and lengths; tested.
    PausePlacement,
}

impl Reduction {
    /// Every reduction, in the order outputs list them.
    pub const ALL: [Reduction; 5] = [
        Reduction::UnreadValues,
        Reduction::TokenNames,
        Reduction::Symmetry,
        Reduction::PartialOrder,
        Reduction::PausePlacement,
    ];

    /// Its name in outputs (JSON `reductions`).
    pub fn as_str(self) -> &'static str {
        match self {
            Reduction::UnreadValues => "unread_values",
            Reduction::TokenNames => "token_names",
            Reduction::Symmetry => "symmetry",
            Reduction::PartialOrder => "partial_order",
            Reduction::PausePlacement => "pause_placement",
        }
    }

    /// Whether it merges only states with the same behaviours, and so keeps every
    /// verdict and shortest counterexample by construction.
    pub fn exact(self) -> bool {
        !matches!(self, Reduction::PartialOrder | Reduction::PausePlacement)
    }

    fn bit(self) -> u8 {
        match self {
            Reduction::UnreadValues => 1,
            Reduction::TokenNames => 2,
            Reduction::Symmetry => 4,
            Reduction::PartialOrder => 8,
            Reduction::PausePlacement => 16,
        }
    }
}

/// A set of [`Reduction`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reductions(u8);

impl Reductions {
    /// Every reduction (the default search).
    pub const ALL: Reductions = Reductions(31);
    /// None: the plain search.
    pub const NONE: Reductions = Reductions(0);

    /// Whether `r` is in the set.
    pub fn contains(self, r: Reduction) -> bool {
        self.0 & r.bit() != 0
    }

    /// The set without `r`.
    #[must_use]
    pub fn without(self, r: Reduction) -> Self {
        Reductions(self.0 & !r.bit())
    }

    /// The set with `r`.
    #[must_use]
    pub fn with(self, r: Reduction) -> Self {
        Reductions(self.0 | r.bit())
    }

    /// The reductions in the set, in [`Reduction::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Reduction> {
        Reduction::ALL
            .into_iter()
            .filter(move |&r| self.contains(r))
    }
}

/// How a result was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Every reachable state within the bounds (this module): "holds" is a proof.
    Exhaustive,
    /// Seeded random walks ([`crate::walk`]): a counterexample is real, its absence
    /// proves nothing.
    Random { walks: u64, seed: u64 },
}

impl Strategy {
    /// `"exhaustive"` or `"random"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Strategy::Exhaustive => "exhaustive",
            Strategy::Random { .. } => "random",
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

/// What the explored behaviours put to the test (the vacuity of a "holds" beyond the
/// purchase guard).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Per fault kind: some explored step strikes a
    /// hold with it: a client fault of a holder, a node fault of a node that keeps a
    /// holder's lock entry (a failover or split brain of its slot).
    faults_during_hold: PerFault<bool>,
    /// Some explored state has a holder that still believes it holds (in its critical
    /// section, or re-entering) while its lease is gone: it ran out, or its key vanished
    /// ([`LockModel::lease_lost`]).
    pub lease_lost: bool,
    /// Some client attempts to acquire while such a holder's lease is gone.
    pub attempt_after_loss: bool,
}

impl Coverage {
    /// Whether some explored step injects a fault of `kind` while a client holds.
    pub fn fault_during_hold(&self, kind: FaultKind) -> bool {
        self.faults_during_hold[kind]
    }

    fn merge(&mut self, other: &Coverage) {
        for kind in FaultKind::ALL {
            self.faults_during_hold[kind] |= other.faults_during_hold[kind];
        }
        self.lease_lost |= other.lease_lost;
        self.attempt_after_loss |= other.attempt_after_loss;
    }

    /// Whether a lease can be lost under a believing holder and no client ever
    /// attempts afterwards: a "holds" would not have tested what a late attempt does.
    pub fn no_attempt_after_loss(&self) -> bool {
        self.lease_lost && !self.attempt_after_loss
    }

    /// Record the step `action` taken from `s`.
    pub(crate) fn record(&mut self, model: &LockModel, s: &State, action: Action) {
        if let Some(kind) = FaultKind::of(&action) {
            if model.strikes_a_hold(s, action) {
                self.faults_during_hold[kind] = true;
            }
        }
        if !self.lease_lost {
            self.lease_lost = (0..s.clients.len()).any(|d| model.lease_lost(s, d));
        }
        if self.attempt_after_loss {
            return;
        }
        let attempting = match action {
            Action::Acquire(c) => Some(c),
            Action::Deliver(c, _)
                if s.clients[c as usize].core.phase == crate::client::Phase::Acquiring =>
            {
                Some(c)
            }
            _ => None,
        };
        if let Some(c) = attempting {
            self.attempt_after_loss =
                (0..s.clients.len()).any(|d| d != c as usize && model.lease_lost(s, d));
        }
    }
}

/// The result of a search.
#[derive(Clone, Debug)]
pub struct SearchResult {
    /// How it was found.
    pub strategy: Strategy,
    /// For each property (in [`Property::ALL`] order): its shortest counterexample, as
    /// the steps from the initial state, re-checked against the model; `None` when none
    /// was found (see [`SearchResult::unverified`] before reading that as "holds").
    pub counterexamples: Vec<(Property, Option<Vec<Action>>)>,
    /// Properties whose found path failed the re-check: no verdict can be given.
    pub unverified: Vec<(Property, PathError)>,
    /// Bits of the fingerprints the visited set was keyed on (0: no visited set).
    pub fingerprint_bits: u32,
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
    /// What the explored behaviours put to the test.
    pub coverage: Coverage,
}

impl SearchResult {
    /// The shortest counterexample of `property`, if violated.
    pub fn counterexample(&self, property: Property) -> Option<&[Action]> {
        self.counterexamples
            .iter()
            .find(|(p, _)| *p == property)
            .and_then(|(_, c)| c.as_deref())
    }

    /// Why the path found for `property` was rejected, if it was.
    pub fn unverified(&self, property: Property) -> Option<&PathError> {
        self.unverified
            .iter()
            .find(|(p, _)| *p == property)
            .map(|(_, e)| e)
    }

    /// The birthday bound on the chance that two distinct states of this run shared a
    /// fingerprint (which would have hidden one of them): n²/2^65 for n unique states.
    pub fn collision_probability(&self) -> f64 {
        if self.fingerprint_bits == 0 {
            0.0
        } else {
            collision_probability(self.unique_states, self.fingerprint_bits)
        }
    }

    /// Re-checks each counterexample (see [`crate::recheck`]); a failing one moves from
    /// `counterexamples` to `unverified`.
    pub fn recheck(&mut self, model: &LockModel) {
        for (p, c) in &mut self.counterexamples {
            if let Some(path) = c {
                if let Err(e) = recheck(model, *p, path) {
                    *c = None;
                    self.unverified.push((*p, e));
                }
            }
        }
    }
}

/// The most expanded states a search worker keeps to build successors in (see the
/// expansion in [`search`]): enough for a state with many new successors.
const SPARE_STATES: usize = 64;

/// The steps the search takes from `s`: the model's, narrowed by the reductions that
/// choose among steps (pause placement, then the partial order).
fn offered(model: &LockModel, options: &SearchOptions, s: &State, out: &mut Vec<Action>) {
    out.clear();
    model.actions(s, out);
    if options.reduces(Reduction::PausePlacement) && model.pause_placement_applies() {
        model.place_pauses(s, out);
    }
    if options.reduces(Reduction::PartialOrder) {
        model.reduce_to_ample(s, out);
    }
}

/// The state the search reaches from `s` by `a` (before it is stored as a
/// representative), or `None` where the model has none within the horizon.
fn step(model: &LockModel, options: &SearchOptions, s: &State, a: Action) -> Option<State> {
    let mut next = s.clone();
    step_into(model, options, s, a, &mut next, false).then_some(next)
}

/// [`step`] built in `out`, whatever it held before (most successors are states seen
/// before: one state per worker takes them all, and only a new one is copied out), or,
/// with `sibling`, where `out` holds the last successor of `s` built so (only what that
/// step changed is copied back); `false` where the model has none within the horizon.
fn step_into(
    model: &LockModel,
    options: &SearchOptions,
    s: &State,
    a: Action,
    out: &mut State,
    sibling: bool,
) -> bool {
    let taken = if sibling {
        model.sibling_into(s, a, out)
    } else {
        model.next_state_into(s, a, out)
    };
    if !taken {
        return false;
    }
    if options.reduces(Reduction::PausePlacement) && model.pause_placement_applies() {
        model.mark_pause_points(s, a, out);
    }
    model.within_boundary(out)
}

/// What the search reads of a candidate state, read by the worker that found it: which
/// of the properties not yet violated at the start of its level it breaks, and whether
/// a client completed its critical section.
struct Read {
    /// Bit `k`: `Property::ALL[k]` is violated (read only where it was open).
    violated: u8,
    purchased: bool,
}

impl Read {
    fn of(model: &LockModel, open: &[bool], s: &State) -> Read {
        let violated = Property::ALL
            .iter()
            .enumerate()
            .filter(|&(k, p)| open[k] && !model.holds(*p, s))
            .fold(0u8, |bits, (k, _)| bits | 1 << k);
        Read {
            violated,
            purchased: LockModel::purchased(s),
        }
    }

    /// Records a stored state's reading: its fingerprint as the first violation of each
    /// property it breaks that none before it broke.
    fn record(
        &self,
        fp: u64,
        found: &mut [Option<u64>],
        purchased: &mut bool,
        first_seconds: &mut Option<f64>,
        start: Instant,
    ) {
        for (k, f) in found.iter_mut().enumerate() {
            if f.is_none() && self.violated & 1 << k != 0 {
                *f = Some(fp);
                first_seconds.get_or_insert(start.elapsed().as_secs_f64());
            }
        }
        *purchased |= self.purchased;
    }
}

/// Explore `model` breadth-first; `progress` is called after each level.
pub fn search(
    model: &LockModel,
    options: &SearchOptions,
    mut progress: impl FnMut(Progress),
) -> SearchResult {
    let start = Instant::now();
    let bits = options.fingerprint_bits.clamp(1, 64);
    let mask = u64::MAX >> (64 - bits);
    let canon = |s: State| {
        let r = options.representative(model, s);
        (r.fingerprint & mask, r.state)
    };
    let canon_in_place = |s: &mut State| options.canonicalize(model, s).0 & mask;
    // Each state's fingerprint to its parent's (an initial state's to itself), as TLC
    // keeps them: 16 bytes a state. The step between the two is found again when a trace
    // is rebuilt ([`rebuild`]). Keyed by fingerprints, which are hashes already: a cheap
    // hasher is enough.
    let mut visited: FxHashMap<u64, u64> = FxHashMap::default();
    let mut found: Vec<Option<u64>> = vec![None; Property::ALL.len()];
    let mut first_seconds = None;
    let mut purchased = false;
    let mut frontier = Frontier::new(options.compact);
    let mut states = 0u64;
    let mut coverage = Coverage::default();

    for s in model.init_states() {
        let (fp, s) = canon(s);
        if visited.insert(fp, fp).is_none() {
            let open = [true; Property::ALL.len()];
            Read::of(model, &open, &s).record(
                fp,
                &mut found,
                &mut purchased,
                &mut first_seconds,
                start,
            );
            frontier.push(fp, s, &[]);
        }
    }

    let threads = options.threads.max(1);
    let mut depth = 0;
    let mut complete = true;
    while !frontier.is_empty() {
        if found.iter().all(Option::is_some) && purchased {
            break;
        }
        let wanted = |k: usize| options.stop_when_violated.contains(&Property::ALL[k]);
        if !options.stop_when_violated.is_empty()
            && (0..found.len()).all(|k| !wanted(k) || found[k].is_some())
        {
            break;
        }
        if options.max_depth.is_some_and(|max| depth >= max)
            || options.time_limit.is_some_and(|t| start.elapsed() > t)
            || options.state_limit.is_some_and(|n| visited.len() > n)
        {
            complete = false;
            break;
        }
        // Workers drop successors already visited (at an earlier depth, or by an
        // earlier block of this one) or twice in their own chunk, so that only
        // candidates for the next level are kept in memory, and read each candidate's
        // properties (those not yet violated) and purchase (and, in a compact level, the
        // parts it shares with its parent), so that the one thread that merges only
        // looks up and stores. Blocks and chunks are merged in frontier order: the first
        // discovery of a state is the same as in one pass. Each worker frees its own
        // chunk.
        let open: Vec<bool> = found.iter().map(Option::is_none).collect();
        let expand = |chunk: Block<'_>, visited_before: &FxHashMap<u64, u64>| {
            // About one new state a state expanded: sized so, the batch rarely moves.
            let mut out = Vec::with_capacity(chunk.len());
            let mut seen = FxHashSet::default();
            let mut generated = 0u64;
            let mut coverage = Coverage::default();
            let mut actions = Vec::new();
            // Every successor is built in `next`; a new one is moved out and `next` takes
            // a state expanded before (whose vectors a successor's copy reuses), so a
            // step allocates only where a state outgrows the one it is built in.
            let mut next: Option<State> = None;
            let mut spare: Vec<State> = Vec::new();
            chunk.each(|parent, s, origin| {
                offered(model, options, &s, &mut actions);
                let next = next.get_or_insert_with(|| s.clone());
                // Whether `next` holds a successor of `s` (built from it, changed since
                // only by its step and its canonical form).
                let mut sibling = false;
                for &a in &actions {
                    let taken = step_into(model, options, &s, a, next, sibling);
                    sibling = true;
                    if !taken {
                        continue;
                    }
                    generated += 1;
                    coverage.record(model, &s, a);
                    let fp = canon_in_place(next);
                    if !visited_before.contains_key(&fp) && seen.insert(fp) {
                        let read = Read::of(model, &open, next);
                        let stand_in = spare.pop().unwrap_or_else(|| s.clone());
                        let mut new = std::mem::replace(next, stand_in);
                        sibling = false;
                        let shared = origin.shared(&mut new);
                        out.push((fp, parent, new, read, shared));
                    }
                }
                if spare.len() < SPARE_STATES {
                    spare.push(s);
                }
            });
            (generated, coverage, out)
        };
        type Batch = (u64, Coverage, Vec<(u64, u64, State, Read, Vec<u32>)>);
        let mut level = frontier;
        let mut next_frontier = level.after();
        let mut blocks = level.blocks();
        while let Some(block) = blocks.next_block(options.block_states) {
            let visited_before = &visited;
            let batches: Vec<Batch> = if threads == 1 || block.len() < 64 {
                vec![expand(block, visited_before)]
            } else {
                let size = block.len().div_ceil(threads);
                let chunks = block.chunks(size);
                let expand = &expand;
                std::thread::scope(|scope| {
                    let handles: Vec<_> = chunks
                        .into_iter()
                        .map(|c| scope.spawn(move || expand(c, visited_before)))
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().expect("search worker panicked"))
                        .collect()
                })
            };
            for (generated, covered, batch) in batches {
                states += generated;
                coverage.merge(&covered);
                for (fp, parent, s, read, shared) in batch {
                    if let std::collections::hash_map::Entry::Vacant(v) = visited.entry(fp) {
                        v.insert(parent);
                        read.record(fp, &mut found, &mut purchased, &mut first_seconds, start);
                        next_frontier.push(fp, s, &shared);
                    }
                }
            }
        }
        drop(blocks);
        drop(level);
        depth += 1;
        frontier = next_frontier;
        progress(Progress {
            depth,
            unique: visited.len() as u64,
            frontier: frontier.len(),
        });
    }

    // The fingerprints from an initial state to `fp`.
    let chain_to = |fp: u64| -> Vec<u64> {
        let mut chain = vec![fp];
        let mut at = fp;
        while let Some(&parent) = visited.get(&at).filter(|&&p| p != at) {
            chain.push(parent);
            at = parent;
        }
        chain.reverse();
        chain
    };
    let mut unverified = Vec::new();
    let counterexamples = Property::ALL
        .iter()
        .zip(&found)
        .map(|(p, fp)| {
            let path = fp.and_then(|fp| {
                rebuild(model, options, mask, &chain_to(fp))
                    .map_err(|e| unverified.push((*p, e)))
                    .ok()
            });
            (*p, path)
        })
        .collect();
    let mut result = SearchResult {
        strategy: Strategy::Exhaustive,
        counterexamples,
        unverified,
        fingerprint_bits: bits,
        purchased,
        states,
        unique_states: visited.len() as u64,
        depth,
        complete,
        seconds: start.elapsed().as_secs_f64(),
        first_counterexample_seconds: first_seconds,
        coverage,
    };
    result.recheck(model);
    result
}

/// The steps of the concrete clients and masters that pass through the stored states
/// `chain` (fingerprints, an initial state's first, as masked by `mask`). The visited set
/// keeps no steps, only parents: from each representative the search's steps are taken
/// again until one reaches the next fingerprint; the renamings to the representatives
/// are composed, so that each step is renamed back to the names of the initial state.
/// No step reaching the next fingerprint (which a fingerprint collision could cause) is
/// an error.
fn rebuild(
    model: &LockModel,
    options: &SearchOptions,
    mask: u64,
    chain: &[u64],
) -> Result<Vec<Action>, PathError> {
    let first = model
        .init_states()
        .into_iter()
        .map(|s| options.representative(model, s))
        .find(|r| Some(&(r.fingerprint & mask)) == chain.first())
        .ok_or(PathError::Lost { step: 0 })?;
    let mut state = first.state;
    // Names of the current representative -> names of the concrete run.
    let mut to_concrete = first.renaming.inverse();
    let mut out = Vec::with_capacity(chain.len());
    let mut actions = Vec::new();
    for (k, &target) in chain.iter().enumerate().skip(1) {
        offered(model, options, &state, &mut actions);
        let (a, r) = actions
            .iter()
            .find_map(|&a| {
                let r = options.representative(model, step(model, options, &state, a)?);
                (r.fingerprint & mask == target).then_some((a, r))
            })
            .ok_or(PathError::Lost { step: k })?;
        out.push(to_concrete.action(a));
        to_concrete = r.renaming.inverse().then(&to_concrete);
        state = r.state;
    }
    Ok(out)
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
