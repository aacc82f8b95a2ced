//! Token renaming: states that differ only by the names of their lock tokens are one
//! state for the search.
//!
//! The model names each acquire attempt's token `t1`, `t2`, ... in the order the
//! attempts start ([`State::next_token`]). Which number a token has says nothing a lock
//! can act on: the built-in designs and their scripts only compare tokens for equality
//! (is this entry mine?), so renaming every token of a state one-to-one gives a state
//! with the same behaviours, renamed. Two holds that burned a different number of
//! tokens on the way (a refused attempt, a re-entry), or took them in the other order,
//! are then the same state.
//!
//! The search keys such states alike by hashing each token as the order of its first
//! appearance in the state instead of its name ([`LockModel::state_fingerprint`]), and
//! leaves out the counter: a stored state keeps its own names and counter, so the tokens
//! it hands out later stay fresh. A custom lock (design `custom`) is hashed as it is: its
//! scripts may do anything with a token's text.

use std::hash::{Hash, Hasher};

use locklab::DesignId;

use crate::model::LockModel;
use crate::state::State;

/// The number of a model token's text (`t` and digits), if it is one.
pub(crate) fn token_number(bytes: &[u8]) -> Option<u32> {
    let digits = bytes.strip_prefix(b"t")?;
    if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        digits
            .iter()
            .fold(0u32, |n, d| n * 10 + u32::from(d - b'0')),
    )
}

/// The hasher of state fingerprints: it gathers the bytes a state's `Hash` writes
/// and hashes them in one piece at the end, which is several times faster than feeding
/// a hasher the hundreds of small writes one by one. The hash is XXH3-64: it passes
/// SMHasher's tests of distribution and collisions, as SipHash-1-3 (the standard
/// hasher, used before) does, and on a state's few hundred bytes it is several times
/// faster (the SPIN mirror searched with `--no-symmetry`: 9 % less time in all).
/// Neither is keyed at random, so the birthday bound a search reports assumes states
/// that nobody chose to collide, for both alike.
/// With `token_names`, every byte string that is a token is written as the order of its
/// first appearance instead. (A string comes as its bytes through `write`, then a `0xff`
/// through `write_u8`; integers come through their own methods, untouched.)
struct StateHasher<'a> {
    bytes: &'a mut Vec<u8>,
    token_names: bool,
    seen: FirstSeen,
}

/// Token numbers in the order of their first appearance. The first [`FirstSeen::INLINE`]
/// are kept in place: a state holds a few tokens, and a vector here was an allocation
/// for every fingerprint and every symmetry sort key (a five-master state takes a dozen
/// of those).
#[derive(Default)]
struct FirstSeen {
    len: usize,
    inline: [u32; FirstSeen::INLINE],
    more: Vec<u32>,
}

impl FirstSeen {
    const INLINE: usize = 8;

    /// The order of token `n`'s first appearance, counting from 0; a token not met
    /// before comes after every one met so far.
    fn order(&mut self, n: u32) -> usize {
        let kept = self.len.min(Self::INLINE);
        if let Some(k) = self.inline[..kept].iter().position(|&s| s == n) {
            return k;
        }
        if let Some(k) = self.more.iter().position(|&s| s == n) {
            return Self::INLINE + k;
        }
        if self.len < Self::INLINE {
            self.inline[self.len] = n;
        } else {
            self.more.push(n);
        }
        self.len += 1;
        self.len - 1
    }
}

/// `Hasher` methods that append an integer's little-endian bytes.
macro_rules! integers {
    ($($name:ident: $t:ty),*) => {
        $(fn $name(&mut self, i: $t) {
            self.bytes.extend_from_slice(&i.to_le_bytes())
        })*
    };
}

impl Hasher for StateHasher<'_> {
    fn write(&mut self, bytes: &[u8]) {
        match self.token_names.then(|| token_number(bytes)).flatten() {
            Some(n) => {
                let k = self.seen.order(n);
                // A marker no string of the state starts with, then the order.
                self.bytes.push(0xfe);
                self.bytes.extend_from_slice(&k.to_le_bytes());
            }
            None => {
                self.bytes.extend_from_slice(&bytes.len().to_le_bytes());
                self.bytes.extend_from_slice(bytes);
            }
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.bytes.push(i)
    }
    integers!(
        write_u16: u16,
        write_u32: u32,
        write_u64: u64,
        write_u128: u128,
        write_usize: usize,
        write_i8: i8,
        write_i16: i16,
        write_i32: i32,
        write_i64: i64,
        write_i128: i128,
        write_isize: isize
    );
    fn finish(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64(self.bytes)
    }
}

thread_local! {
    /// Each search thread's buffer for [`StateHasher`], kept between states.
    static BYTES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The hash of what `write` writes to a [`StateHasher`] (into this thread's buffer).
fn hash_with(token_names: bool, write: impl FnOnce(&mut StateHasher<'_>)) -> u64 {
    BYTES.with_borrow_mut(|bytes| {
        bytes.clear();
        let mut h = StateHasher {
            bytes,
            token_names,
            seen: FirstSeen::default(),
        };
        write(&mut h);
        h.finish()
    })
}

/// The plain hash of one part of a state: its bytes as a state's fingerprint writes
/// them, tokens by their names.
fn part_hash<T: Hash>(part: &T) -> u64 {
    hash_with(false, |h| part.hash(h))
}

/// A cheap hash of `value` with each token hashed as the order of its first appearance
/// in it: a sort key that two values differing only by token names share.
pub(crate) fn token_blind_key<T: Hash>(value: &T) -> u64 {
    struct Blind {
        inner: rustc_hash::FxHasher,
        seen: FirstSeen,
    }
    impl Hasher for Blind {
        fn write(&mut self, bytes: &[u8]) {
            match token_number(bytes) {
                Some(n) => {
                    let k = self.seen.order(n);
                    self.inner.write_u8(0xfe);
                    self.inner.write_usize(k);
                }
                None => self.inner.write(bytes),
            }
        }
        fn write_u8(&mut self, i: u8) {
            self.inner.write_u8(i)
        }
        fn write_u64(&mut self, i: u64) {
            self.inner.write_u64(i)
        }
        fn write_usize(&mut self, i: usize) {
            self.inner.write_usize(i)
        }
        fn finish(&self) -> u64 {
            self.inner.finish()
        }
    }
    let mut h = Blind {
        inner: rustc_hash::FxHasher::default(),
        seen: FirstSeen::default(),
    };
    value.hash(&mut h);
    h.finish()
}

impl LockModel {
    /// Whether the search names tokens by their first appearance: every design but
    /// `custom`.
    pub fn renames_tokens(&self) -> bool {
        self.scenario.design != DesignId::Custom
    }

    /// The key of `s` in the visited set. With `token_names`, its fingerprint with
    /// tokens known by their first appearance and the token counter left out (see the
    /// module documentation), except for a custom lock; otherwise the plain fingerprint.
    pub fn state_fingerprint(&self, s: &State, token_names: bool) -> u64 {
        let token_names = token_names && self.renames_tokens();
        hash_with(token_names, |h| {
            s.now.hash(h);
            s.clients.hash(h);
            s.nodes.hash(h);
            hash_rest(h, s, token_names);
        })
    }

    /// The plain fingerprint of `s` (tokens by their names, the counter included) from
    /// a hash of each client and node, kept with it until a step touches it
    /// ([`crate::parts`]): a step changes one or two parts, and only those are walked
    /// again. Another function of the state than [`LockModel::state_fingerprint`]
    /// without token names, and as good a hash (XXH3 of the parts' XXH3s and the rest);
    /// used where nothing picks a state by its fingerprint (no symmetry) and no token
    /// is renamed, since a token's order of first appearance depends on the parts
    /// before it.
    pub fn parts_fingerprint(&self, s: &mut State) -> u64 {
        let n = (s.clients.len(), s.nodes.len());
        let mut hashes = [0u64; 2 * crate::parts::Parts::<()>::CAPACITY];
        let (of_clients, of_nodes) = hashes.split_at_mut(n.0);
        for (k, h) in of_clients.iter_mut().enumerate() {
            *h = s.clients.hash_of(k, part_hash);
        }
        for (k, h) in of_nodes[..n.1].iter_mut().enumerate() {
            *h = s.nodes.hash_of(k, part_hash);
        }
        // The parts are hashed first: the buffer is this thread's one.
        hash_with(false, |h| {
            s.now.hash(h);
            n.hash(h);
            for part in &hashes[..n.0 + n.1] {
                h.write_u64(*part);
            }
            hash_rest(h, s, false);
        })
    }
}

/// What a state's fingerprint writes after its clock, clients and nodes (each field
/// named, so that a new field of `State` does not compile until it is written or left
/// out here): the token counter only without `token_names`, the pause marks only where
/// set (so that a search without pauses keeps its fingerprints).
fn hash_rest(h: &mut StateHasher<'_>, s: &State, token_names: bool) {
    let State {
        now: _,
        clients: _,
        nodes: _,
        serving,
        stock,
        spent,
        next_token,
        displaced_other,
        split,
        pausing,
        stepped,
    } = s;
    serving.hash(h);
    stock.hash(h);
    spent.hash(h);
    if !token_names {
        next_token.hash(h);
    }
    displaced_other.hash(h);
    split.hash(h);
    if *pausing || *stepped {
        (pausing, stepped).hash(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_model_tokens_are_numbers() {
        assert_eq!(token_number(b"t1"), Some(1));
        assert_eq!(token_number(b"t42"), Some(42));
        for other in [
            &b"t"[..],
            b"lock",
            b"lock:fence",
            b"500",
            b"tx1",
            b"t1a",
            b"",
        ] {
            assert_eq!(token_number(other), None, "{other:?}");
        }
    }

    /// Kept in place or beyond, a token's order is that of its first appearance, as a
    /// plain list gives it.
    #[test]
    fn first_seen_orders_tokens_by_first_appearance() {
        let met = [7, 3, 7, 9, 1, 2, 3, 4, 5, 6, 11, 12, 1, 12, 13, 9, 40, 13];
        let mut seen = FirstSeen::default();
        let mut list: Vec<u32> = Vec::new();
        for n in met {
            let expected = list.iter().position(|&s| s == n).unwrap_or_else(|| {
                list.push(n);
                list.len() - 1
            });
            assert_eq!(seen.order(n), expected, "token {n}");
        }
        assert!(
            list.len() > FirstSeen::INLINE,
            "the test reaches past the inline part"
        );
    }
}
