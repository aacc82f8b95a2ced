//! `Parts`: a state's clients or nodes, with what the search needs to know of each
//! without walking it: whether a step may have changed it, and its hash.
//!
//! The search builds every successor of a state in one spare state by copying the
//! parent into it and taking the step ([`crate::model::LockModel::next_state_into`]). A
//! step changes one or two parts; the copy and the fingerprint walked all of them. A
//! `Parts` marks an item *touched* whenever it is reached mutably (an `IndexMut`, a
//! mutable iteration, a swap), so:
//! - [`Parts::restore_from`] copies back only the items touched since the last copy
//!   from the same source (the next sibling is built from the parent at the cost of
//!   what the last step changed);
//! - [`Parts::hash_of`] keeps each item's hash until the item is touched, so that a
//!   fingerprint of the parts hashes only the ones a step changed
//!   ([`crate::tokens`], the plain fingerprint).
//!
//! Reading goes through `Deref` to a slice. There is no `DerefMut`: every way to change
//! an item goes through a method here that marks it, so a change the marks miss does
//! not compile.

use std::hash::{Hash, Hasher};

/// The first items whose hashes are kept (every client; the masters of most scenarios).
const CACHED: usize = 4;

/// A state's clients or nodes.
pub struct Parts<T> {
    items: Vec<T>,
    /// Bit `k`: item `k` may differ from the source of the last copy (all bits after a
    /// fresh clone or a construction: nothing is known of it).
    touched: u32,
    /// The hash of item `k` ([`Parts::hash_of`]) while it is not touched; 0 for not
    /// known.
    hashes: [u64; CACHED],
}

const ALL: u32 = u32::MAX;

impl<T> Parts<T> {
    /// How many items a `Parts` holds at most (a bit each).
    pub const CAPACITY: usize = 32;

    fn touch(&mut self, k: usize) {
        self.touched |= 1 << k;
        if let Some(h) = self.hashes.get_mut(k) {
            *h = 0;
        }
    }

    fn touch_all(&mut self) {
        self.touched = ALL;
        self.hashes = [0; CACHED];
    }

    /// The items, each marked as changed.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.touch_all();
        self.items.iter_mut()
    }

    /// Items `a` and `b` swapped.
    pub fn swap(&mut self, a: usize, b: usize) {
        self.touch(a);
        self.touch(b);
        self.items.swap(a, b);
    }

    /// An item added at the end.
    pub fn push(&mut self, item: T) {
        assert!(self.items.len() < Self::CAPACITY, "at most 32 parts");
        self.touch(self.items.len());
        self.items.push(item);
    }

    /// Item `k`, marked as changed, if there is one.
    pub fn get_mut(&mut self, k: usize) -> Option<&mut T> {
        if k < self.items.len() {
            self.touch(k);
        }
        self.items.get_mut(k)
    }

    /// The items, which the caller may change in any way: every one is marked.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.touch_all();
        &mut self.items
    }

    /// The hash `hash` gives item `k`, kept until the item is touched.
    pub fn hash_of(&mut self, k: usize, hash: impl FnOnce(&T) -> u64) -> u64 {
        match self.hashes.get(k) {
            Some(&h) if h != 0 => h,
            Some(_) => {
                let h = hash(&self.items[k]).max(1);
                self.hashes[k] = h;
                h
            }
            None => hash(&self.items[k]),
        }
    }
}

impl<T: Clone> Parts<T> {
    /// `self` made equal to `source` again, where it was last copied (`clone_from` or
    /// this) from `source` and changed only since: only the items touched since are
    /// copied. The caller guarantees that `source` is that state, unchanged.
    pub fn restore_from(&mut self, source: &Parts<T>) {
        if self.touched == 0 {
            return;
        }
        if self.items.len() != source.items.len() || self.touched == ALL {
            self.clone_from(source);
            return;
        }
        let mut t = self.touched;
        while t != 0 {
            let k = t.trailing_zeros() as usize;
            t &= t - 1;
            self.items[k].clone_from(&source.items[k]);
            if k < CACHED {
                self.hashes[k] = source.hashes[k];
            }
        }
        self.touched = 0;
    }
}

impl<T> From<Vec<T>> for Parts<T> {
    fn from(items: Vec<T>) -> Self {
        assert!(items.len() <= Self::CAPACITY, "at most 32 parts");
        Parts {
            items,
            touched: ALL,
            hashes: [0; CACHED],
        }
    }
}

impl<T> FromIterator<T> for Parts<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        items.into_iter().collect::<Vec<T>>().into()
    }
}

impl<T> Default for Parts<T> {
    fn default() -> Self {
        Vec::new().into()
    }
}

impl<T> IntoIterator for Parts<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<T> std::ops::Deref for Parts<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.items
    }
}

impl<T> std::ops::Index<usize> for Parts<T> {
    type Output = T;
    fn index(&self, k: usize) -> &T {
        &self.items[k]
    }
}

impl<T> std::ops::IndexMut<usize> for Parts<T> {
    fn index_mut(&mut self, k: usize) -> &mut T {
        self.touch(k);
        &mut self.items[k]
    }
}

impl<'a, T> IntoIterator for &'a Parts<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut Parts<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

/// A fresh copy knows nothing of what it was copied from: every item is touched (a
/// state cloned and changed elsewhere, then moved into a spare, must be copied whole).
/// `clone_from` makes `self` equal to `source`: nothing touched.
impl<T: Clone> Clone for Parts<T> {
    fn clone(&self) -> Self {
        Parts {
            items: self.items.clone(),
            touched: ALL,
            hashes: self.hashes,
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.items.clone_from(&source.items);
        self.touched = 0;
        self.hashes = source.hashes;
    }
}

/// As the items' vector: the marks and hashes are bookkeeping, not state.
impl<T: PartialEq> PartialEq for Parts<T> {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

impl<T: Eq> Eq for Parts<T> {}

/// As the items' vector hashes (so fingerprints that walk the state are unchanged).
impl<T: Hash> Hash for Parts<T> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.items.hash(h)
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Parts<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.items.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::Parts;

    /// Restored from its source, a copy changed by any of the marking ways is the source
    /// again, its kept hashes the source's.
    #[test]
    fn a_restored_copy_is_its_source() {
        let source: Parts<Vec<u8>> = vec![vec![1], vec![2, 2], vec![3], vec![4], vec![5]].into();
        let mut copy = source.clone();
        copy.clone_from(&source);
        let h = |v: &Vec<u8>| v.len() as u64 * 7;
        for k in 0..source.len() {
            copy.hash_of(k, h);
        }
        copy[1].push(9);
        assert_ne!(copy, source);
        assert_eq!(copy.hash_of(1, h), 21, "a touched item is hashed again");
        copy.restore_from(&source);
        assert_eq!(copy, source);
        // Untouched items keep their hash through a restore.
        assert_eq!(copy.hash_of(2, |_| unreachable!("kept")), 7);
        copy.swap(0, 4);
        copy.restore_from(&source);
        assert_eq!(copy, source);
        for v in copy.iter_mut() {
            v.clear();
        }
        copy.restore_from(&source);
        assert_eq!(copy, source);
    }

    /// In the search's way: every successor of a state built in one spare, each from
    /// the last (only what its step touched copied back), is the successor a fresh copy
    /// gives, and its fingerprint from kept hashes is the one a copy that keeps none
    /// gives.
    #[test]
    fn siblings_built_from_the_last_are_the_successors() {
        use crate::model::{levels, LockModel};
        use crate::scenario::Scenario;
        use stateright::Model;
        let mut checked = 0;
        for name in [
            "set-px-del-late-release.toml",
            "lua-release-split-brain-wait-both-sides.toml",
            "redlock-restart.toml",
            "watchdog-pause.toml",
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../scenarios")
                .join(name);
            let model = LockModel::new(&Scenario::load(&path).unwrap());
            for s in levels(&model, 9).into_iter().flatten().step_by(53) {
                let mut parent = s.clone();
                model.parts_fingerprint(&mut parent);
                let mut actions = Vec::new();
                model.actions(&parent, &mut actions);
                let mut spare = parent.clone();
                let mut sibling = false;
                for &a in &actions {
                    let taken = if sibling {
                        model.sibling_into(&parent, a, &mut spare)
                    } else {
                        model.next_state_into(&parent, a, &mut spare)
                    };
                    sibling = true;
                    let fresh = model.next_state(&parent, a);
                    assert_eq!(taken, fresh.is_some(), "{a:?}");
                    if let Some(fresh) = fresh {
                        assert_eq!(spare, fresh, "{a:?} from {parent:?}");
                        let mut cold: crate::state::State = fresh.clone();
                        cold.clients = cold.clients.iter().cloned().collect();
                        cold.nodes = cold.nodes.iter().cloned().collect();
                        assert_eq!(
                            model.parts_fingerprint(&mut spare),
                            model.parts_fingerprint(&mut cold),
                            "{a:?}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 500, "{checked} successors");
    }
}
