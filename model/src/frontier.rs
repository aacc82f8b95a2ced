//! A level of the breadth-first search as it waits to be expanded ([`Frontier`]): whole
//! states in [`Segments`], or with [`crate::search::SearchOptions::compact`] a compact
//! [`Level`].
//!
//! The states of one level share most of their parts: a level of a million states may
//! hold a few thousand distinct clients and nodes. A [`Level`] keeps each distinct
//! client, node and rest of a state (its clock, stock, faults spent and the other
//! globals) once, in tables of the level, and each state as the numbers of its parts,
//! as SPIN's `COLLAPSE` compression does. A state of three clients and one node takes
//! 28 bytes with its fingerprint instead of about 1.6 KB of structs and heap. Parts are
//! told apart by equality, not by hash, so a state comes back exactly as it was stored,
//! in the same order: the search explores the same states in the same order either way,
//! and finds the same results. What it costs is time: a state is copied out of the
//! tables to be expanded, and each new part is looked up in them (reports/bench-checker.md,
//! "A compact frontier").

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use rustc_hash::FxBuildHasher;

use crate::state::{Client, Node, State};

/// Distinct values of one kind, each numbered by its first appearance.
struct Table<T> {
    numbers: HashMap<T, u32, FxBuildHasher>,
    values: Vec<T>,
}

impl<T: Clone + Eq + Hash> Table<T> {
    fn new() -> Self {
        Table {
            numbers: HashMap::default(),
            values: Vec::new(),
        }
    }

    /// The number of `value`, which is stored if it is new.
    fn intern(&mut self, value: T) -> u32 {
        if let Some(&n) = self.numbers.get(&value) {
            return n;
        }
        let n = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct parts a level");
        self.values.push(value.clone());
        self.numbers.insert(value, n);
        n
    }

    fn get(&self, n: u32) -> &T {
        &self.values[n as usize]
    }
}

/// The number in `table` of `value`, equal to the part numbered `before` in the level
/// before (or [`NONE`]): looked up in `carried` when that part was stored already.
fn carry<T: Clone + Eq + Hash>(
    table: &mut Table<T>,
    carried: &mut [u32],
    before: u32,
    value: T,
) -> u32 {
    if before == NONE {
        return table.intern(value);
    }
    let slot = &mut carried[before as usize];
    if *slot == NONE {
        *slot = table.intern(value);
    }
    *slot
}

/// The states of one level, in the order they were pushed, each with its fingerprint.
pub struct Level {
    /// Each state without its clients and nodes.
    rests: Table<State>,
    clients: Table<Client>,
    nodes: Table<Node>,
    fingerprints: Vec<u64>,
    /// Per state: its rest's number, then its clients', then its nodes'.
    parts: Vec<u32>,
    /// Clients and nodes a state has (the same for every state of a search).
    shape: Option<(usize, usize)>,
    /// For the parts of the level before this one: the number the same part has here,
    /// once known ([`Level::after`]).
    carried: Carried,
}

/// Numbers of the parts of one level in the next ([`NONE`]: not yet stored there).
#[derive(Default)]
struct Carried {
    rests: Vec<u32>,
    clients: Vec<u32>,
    nodes: Vec<u32>,
}

/// No part: in [`Level::shared`]'s answer, a part of a new state that its parent does not
/// have.
pub const NONE: u32 = u32::MAX;

impl Default for Level {
    fn default() -> Self {
        Level::new()
    }
}

impl Level {
    /// An empty level.
    pub fn new() -> Self {
        Level {
            rests: Table::new(),
            clients: Table::new(),
            nodes: Table::new(),
            fingerprints: Vec::new(),
            parts: Vec::new(),
            shape: None,
            carried: Carried::default(),
        }
    }

    /// An empty level for the successors of `prev`'s states: a part they share with
    /// their parent ([`Level::shared`]) is looked up in `prev`'s numbering, not hashed.
    pub fn after(prev: &Level) -> Self {
        Level {
            shape: prev.shape,
            carried: Carried {
                rests: vec![NONE; prev.rests.values.len()],
                clients: vec![NONE; prev.clients.values.len()],
                nodes: vec![NONE; prev.nodes.values.len()],
            },
            ..Level::new()
        }
    }

    /// For each part of `state` (its rest, then its clients, then its nodes): the number
    /// in this level of an equal part of the `parent`-th state, or [`NONE`]. A step
    /// changes a part or two of a state; comparing the others with the parent's is
    /// cheaper than hashing them again, and it is done by the worker that found `state`.
    pub fn shared(&self, parent: usize, state: &mut State) -> Vec<u32> {
        let (theirs, clients) = self.parts_of(parent);
        let mut out = Vec::with_capacity(theirs.len());
        let own_clients = std::mem::take(&mut state.clients);
        let own_nodes = std::mem::take(&mut state.nodes);
        out.push(if self.rests.get(theirs[0]) == state {
            theirs[0]
        } else {
            NONE
        });
        state.clients = own_clients;
        state.nodes = own_nodes;
        // The same position first: a renaming moves few parts.
        let find = |k: usize, ids: &[u32], equal: &dyn Fn(u32) -> bool| {
            std::iter::once(ids[k])
                .chain(ids.iter().copied())
                .find(|&id| equal(id))
                .unwrap_or(NONE)
        };
        let client_ids = &theirs[1..=clients];
        for (k, c) in state.clients.iter().enumerate() {
            out.push(find(k, client_ids, &|id| self.clients.get(id) == c));
        }
        let node_ids = &theirs[1 + clients..];
        for (k, n) in state.nodes.iter().enumerate() {
            out.push(find(k, node_ids, &|id| self.nodes.get(id) == n));
        }
        out
    }

    /// The numbers of the `i`-th state's parts (rest, clients, nodes), and how many
    /// clients a state has.
    fn parts_of(&self, i: usize) -> (&[u32], usize) {
        let (clients, nodes) = self.shape.expect("a state was stored");
        let stride = 1 + clients + nodes;
        (&self.parts[i * stride..(i + 1) * stride], clients)
    }

    /// States stored.
    pub fn len(&self) -> usize {
        self.fingerprints.len()
    }

    /// No state stored.
    pub fn is_empty(&self) -> bool {
        self.fingerprints.is_empty()
    }

    /// Distinct clients, nodes and rests stored (for tests and measurements).
    pub fn distinct_parts(&self) -> (usize, usize, usize) {
        (
            self.clients.values.len(),
            self.nodes.values.len(),
            self.rests.values.len(),
        )
    }

    /// Stores `state` with its fingerprint `fp` after the states stored before it, with
    /// the parts it shares with its parent in the level before ([`Level::shared`] of
    /// that level; empty: none known).
    pub fn push(&mut self, fp: u64, mut state: State, shared: &[u32]) {
        let shape = (state.clients.len(), state.nodes.len());
        assert_eq!(
            *self.shape.get_or_insert(shape),
            shape,
            "every state of a search has the same clients and nodes"
        );
        let mut shared = shared.iter().copied();
        let mut known = || shared.next().unwrap_or(NONE);
        let clients = std::mem::take(&mut state.clients);
        let nodes = std::mem::take(&mut state.nodes);
        let n = carry(&mut self.rests, &mut self.carried.rests, known(), state);
        self.parts.push(n);
        for c in clients {
            let n = carry(&mut self.clients, &mut self.carried.clients, known(), c);
            self.parts.push(n);
        }
        for node in nodes {
            let n = carry(&mut self.nodes, &mut self.carried.nodes, known(), node);
            self.parts.push(n);
        }
        self.fingerprints.push(fp);
    }

    /// The `i`-th state stored, with its fingerprint: an equal copy of what was pushed.
    pub fn get(&self, i: usize) -> (u64, State) {
        let (parts, clients) = self.parts_of(i);
        let mut state = self.rests.get(parts[0]).clone();
        state.clients = parts[1..=clients]
            .iter()
            .map(|&n| self.clients.get(n).clone())
            .collect();
        state.nodes = parts[1 + clients..]
            .iter()
            .map(|&n| self.nodes.get(n).clone())
            .collect();
        (self.fingerprints[i], state)
    }
}

/// The states of a level waiting to be expanded, each with its fingerprint, in the order
/// they were found.
pub enum Frontier {
    /// Each state as it is, in segments.
    Whole(Segments),
    /// Each state as the numbers of its parts (boxed: one a level, and its tables are
    /// larger than a vector).
    Compact(Box<Level>),
}

/// A level's whole states are stored in segments of at most [`SEGMENT`] states, each
/// allocated at its full size once. A level grows without moving what it holds (one
/// vector would double again and again, copying every state it holds and touching new
/// pages each time), and it is handed out for expansion as its segments: only where a
/// block or a worker's chunk ends inside a segment are the states taken moved.
const SEGMENT: usize = 1 << 12;

/// A level of whole states, in segments, in the order they were pushed.
#[derive(Default)]
pub struct Segments {
    segments: Vec<Vec<(u64, State)>>,
    len: usize,
}

impl Segments {
    fn push(&mut self, fp: u64, state: State) {
        match self.segments.last_mut() {
            Some(last) if last.len() < SEGMENT => last.push((fp, state)),
            _ => {
                let mut segment = Vec::with_capacity(SEGMENT);
                segment.push((fp, state));
                self.segments.push(segment);
            }
        }
        self.len += 1;
    }
}

/// Consecutive states of a segment not yet handed out.
type Segment = std::vec::IntoIter<(u64, State)>;

/// The first at most `n` states (`n` at least 1) of `segments`: whole segments, but for
/// a last one cut where a segment holds more than `n` leaves room for (only the states
/// taken are moved).
fn take_front(segments: &mut VecDeque<Segment>, n: usize) -> Vec<Segment> {
    let mut taken = Vec::new();
    let mut room = n;
    while let Some(first) = segments.front_mut().filter(|_| room > 0) {
        if first.len() <= room {
            room -= first.len();
            taken.extend(segments.pop_front());
        } else {
            let part: Vec<(u64, State)> = first.by_ref().take(room).collect();
            room = 0;
            taken.push(part.into_iter());
        }
    }
    taken
}

impl Frontier {
    /// An empty first level.
    pub fn new(compact: bool) -> Self {
        if compact {
            Frontier::Compact(Box::default())
        } else {
            Frontier::Whole(Segments::default())
        }
    }

    /// An empty level for the successors of this one's states.
    pub fn after(&self) -> Self {
        match self {
            Frontier::Whole(_) => Frontier::Whole(Segments::default()),
            Frontier::Compact(level) => Frontier::Compact(Box::new(Level::after(level))),
        }
    }

    /// States stored.
    pub fn len(&self) -> usize {
        match self {
            Frontier::Whole(states) => states.len,
            Frontier::Compact(level) => level.len(),
        }
    }

    /// No state stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stores `state` after the others, with the parts it shares with its parent
    /// ([`Origin::shared`]; empty when none are known).
    pub fn push(&mut self, fp: u64, state: State, shared: &[u32]) {
        match self {
            Frontier::Whole(states) => states.push(fp, state),
            Frontier::Compact(level) => level.push(fp, state, shared),
        }
    }

    /// The level's states in blocks, to be expanded in order. Whole states are moved
    /// out block by block, so that each block is freed once expanded and a level and
    /// the next are not both held in full.
    pub fn blocks(&mut self) -> Blocks<'_> {
        match self {
            Frontier::Whole(states) => {
                let Segments { segments, .. } = std::mem::take(states);
                Blocks::Whole(segments.into_iter().map(Vec::into_iter).collect())
            }
            Frontier::Compact(level) => Blocks::Compact(level, 0),
        }
    }
}

/// The blocks of a [`Frontier`], in order.
pub enum Blocks<'a> {
    Whole(VecDeque<Segment>),
    /// The level and the first state not yet handed out.
    Compact(&'a Level, usize),
}

impl<'a> Blocks<'a> {
    /// The next block of at most `n` states.
    pub fn next_block(&mut self, n: usize) -> Option<Block<'a>> {
        let n = n.max(1);
        match self {
            Blocks::Whole(segments) => {
                let block = take_front(segments, n);
                (!block.is_empty()).then_some(Block::Whole(block))
            }
            Blocks::Compact(level, next) => {
                let first = *next;
                *next = (first + n).min(level.len());
                (first < *next).then_some(Block::Compact(level, first..*next))
            }
        }
    }
}

/// Consecutive states of a level.
pub enum Block<'a> {
    /// Whole states, in segments.
    Whole(Vec<Segment>),
    Compact(&'a Level, std::ops::Range<usize>),
}

/// Where a state being expanded is stored: what [`Origin::shared`] needs.
#[derive(Clone, Copy)]
pub struct Origin<'a> {
    at: Option<(&'a Level, usize)>,
}

impl Origin<'_> {
    /// The parts `state`, a successor of the state being expanded, shares with it
    /// ([`Level::shared`]); empty for whole states.
    pub fn shared(&self, state: &mut State) -> Vec<u32> {
        match self.at {
            Some((level, i)) => level.shared(i, state),
            None => Vec::new(),
        }
    }
}

impl<'a> Block<'a> {
    /// States in the block.
    pub fn len(&self) -> usize {
        match self {
            Block::Whole(segments) => segments.iter().map(ExactSizeIterator::len).sum(),
            Block::Compact(_, range) => range.len(),
        }
    }

    /// No state in the block.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The block cut into consecutive chunks of at most `size` states. Whole segments
    /// go to a chunk as they are; a segment is split only where a chunk ends inside it.
    pub fn chunks(self, size: usize) -> Vec<Block<'a>> {
        let size = size.max(1);
        match self {
            Block::Whole(segments) => {
                let mut rest = VecDeque::from(segments);
                std::iter::from_fn(|| {
                    let c = take_front(&mut rest, size);
                    (!c.is_empty()).then_some(Block::Whole(c))
                })
                .collect()
            }
            Block::Compact(level, range) => range
                .clone()
                .step_by(size)
                .map(|a| Block::Compact(level, a..(a + size).min(range.end)))
                .collect(),
        }
    }

    /// Calls `f` with each state of the block (handed over: the caller may keep its
    /// storage for states it builds), its fingerprint and where it is stored, in order.
    pub fn each(self, mut f: impl FnMut(u64, State, Origin<'_>)) {
        match self {
            Block::Whole(segments) => {
                for (fp, s) in segments.into_iter().flatten() {
                    f(fp, s, Origin { at: None });
                }
            }
            Block::Compact(level, range) => {
                for i in range {
                    let (fp, s) = level.get(i);
                    f(
                        fp,
                        s,
                        Origin {
                            at: Some((level, i)),
                        },
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LockModel;
    use crate::scenario::Scenario;
    use stateright::Model;

    /// The model of `name` in `scenarios/`.
    fn model_of(name: &str) -> LockModel {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios")
            .join(name);
        LockModel::new(&Scenario::load(&path).unwrap())
    }

    /// A search that keeps its levels compact finds what one that keeps them whole
    /// finds: the same states, counterexamples and coverage, on one thread and on two.
    #[test]
    fn a_compact_search_finds_what_a_whole_one_finds() {
        use crate::search::{search, SearchOptions};
        for name in [
            "lua-release-pause.toml",
            "redlock-restart.toml",
            "lua-release-split-brain.toml",
            "fencing-watchdog-pause.toml",
        ] {
            let model = model_of(name);
            for threads in [1, 2] {
                // Small blocks, so that a level is expanded in several blocks and chunks.
                let whole = SearchOptions {
                    threads,
                    block_states: 500,
                    ..SearchOptions::default()
                };
                let compact = SearchOptions {
                    compact: true,
                    ..whole.clone()
                };
                let (a, b) = (
                    search(&model, &whole, |_| {}),
                    search(&model, &compact, |_| {}),
                );
                assert_eq!(a.states, b.states, "{name}");
                assert_eq!(a.unique_states, b.unique_states, "{name}");
                assert_eq!(a.depth, b.depth, "{name}");
                assert_eq!(a.counterexamples, b.counterexamples, "{name}");
                assert_eq!(a.purchased, b.purchased, "{name}");
                assert_eq!(a.coverage, b.coverage, "{name}");
                assert!(
                    a.unique_states > 1_000,
                    "{name}: {} states",
                    a.unique_states
                );
            }
        }
    }

    /// Whole states come out of blocks and chunks of any size in the order they were
    /// stored, each block and chunk within its size, across segment boundaries.
    #[test]
    fn segments_hand_out_states_in_order() {
        let model = model_of("lua-release-pause.toml");
        let state = model.init_states().into_iter().next().unwrap();
        let n = 2 * SEGMENT + 1_000;
        for (block_states, chunk) in [
            (1, 1),
            (97, 13),
            (SEGMENT, SEGMENT / 2),
            (usize::MAX, 5_000),
        ] {
            let mut frontier = Frontier::new(false);
            for fp in 0..n as u64 {
                frontier.push(fp, state.clone(), &[]);
            }
            assert_eq!(frontier.len(), n);
            let mut out = Vec::new();
            let mut blocks = frontier.blocks();
            while let Some(block) = blocks.next_block(block_states) {
                assert!(block.len() <= block_states && !block.is_empty());
                for c in block.chunks(chunk) {
                    assert!(c.len() <= chunk && !c.is_empty());
                    c.each(|fp, s, _| {
                        assert_eq!(s, state);
                        out.push(fp);
                    });
                }
            }
            assert_eq!(
                out,
                (0..n as u64).collect::<Vec<_>>(),
                "blocks of {block_states}"
            );
        }
    }

    /// Every state of the first levels of three scenarios comes back equal, in order,
    /// and the tables hold far fewer parts than the states have.
    #[test]
    fn states_come_back_as_stored() {
        for name in [
            "lua-release-pause.toml",
            "redlock-restart.toml",
            "lua-release-split-brain.toml",
        ] {
            let model = model_of(name);
            let mut level = Level::new();
            let mut all = Vec::new();
            for states in crate::model::levels(&model, 9) {
                for (k, s) in states.into_iter().enumerate() {
                    let fp = k as u64 * 7919;
                    level.push(fp, s.clone(), &[]);
                    all.push((fp, s));
                }
            }
            assert_eq!(level.len(), all.len());
            for (i, want) in all.iter().enumerate() {
                assert_eq!(&level.get(i), want, "{name}: state {i}");
            }
            let (clients, nodes, rests) = level.distinct_parts();
            let stored = all.len() * (all[0].1.clients.len() + all[0].1.nodes.len() + 1);
            eprintln!(
                "{name}: {} states, {clients} clients, {nodes} nodes, {rests} rests",
                all.len()
            );
            assert!(clients + nodes + rests < stored / 4, "{name}: parts shared");
        }
    }
}
