//! `check --shard K/N`: a deterministic split of the scenarios for the jobs of a CI
//! matrix. The scenarios are ordered by file name (then path) and dealt round-robin:
//! shard K takes the K-th, the (K+N)-th, ... The same files and the same N give every
//! job the same split on any machine, every scenario lands in exactly one shard, and
//! neighbouring files (which are often of one design and of similar weight, such as the
//! `redlock-*` family) go to different shards.
//!
//! Each shard's `--json` and `--junit` record the shard and the positions of its
//! scenarios in the whole run, so that `locklab merge` ([`crate::cmd::merge`]) can put
//! the shards back together in the order the unsharded run has, and refuse a missing or
//! doubled shard.

use std::str::FromStr;

use locklab_model::scenario::Scenario;

/// Shard `index` (1-based) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}`: expected K/N with 1 <= K <= N, e.g. 2/4");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = k.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A shard's part of the run.
#[derive(Clone, Debug)]
pub struct Part {
    pub shard: Shard,
    /// Scenarios in the whole run.
    pub total: usize,
    /// The position in the whole run (its order without `--shard`) of each scenario
    /// this shard checks, ascending.
    pub positions: Vec<usize>,
}

/// The positions (in `names`' order) that `shard` takes: `names` sorted (ties keep
/// their order), then every `count`-th from the `index`-th.
pub fn positions(names: &[&str], shard: Shard) -> Vec<usize> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| names[a].cmp(names[b]));
    let mut taken: Vec<usize> = order
        .into_iter()
        .skip(shard.index - 1)
        .step_by(shard.count)
        .collect();
    taken.sort_unstable();
    taken
}

/// The scenarios of `shard`, in the order of the whole run, and its part.
pub fn select(scenarios: Vec<Scenario>, shard: Shard) -> (Vec<Scenario>, Part) {
    let keys: Vec<String> = scenarios
        .iter()
        .map(|s| {
            let file = s
                .path
                .file_name()
                .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
            // File name first, the whole path to settle equal names.
            format!("{file}\u{0}{}", s.path.display())
        })
        .collect();
    let names: Vec<&str> = keys.iter().map(String::as_str).collect();
    let positions = positions(&names, shard);
    let total = scenarios.len();
    let mut taken = positions.iter().peekable();
    let chosen = scenarios
        .into_iter()
        .enumerate()
        .filter(|(i, _)| taken.next_if(|&&p| p == *i).is_some())
        .map(|(_, s)| s)
        .collect();
    (
        chosen,
        Part {
            shard,
            total,
            positions,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_or_are_refused() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!("1/1".parse(), Ok(Shard { index: 1, count: 1 }));
        for bad in ["0/3", "4/3", "1/0", "3", "a/b", "1/2/3", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    /// For any number of scenarios and shards, the shards are disjoint and together
    /// take every scenario once; sizes differ by at most one.
    #[test]
    fn shards_partition_the_scenarios() {
        let names: Vec<String> = (0..23).map(|i| format!("s{:02}", (i * 7) % 23)).collect();
        for len in 0..names.len() {
            let names: Vec<&str> = names[..len].iter().map(String::as_str).collect();
            for count in 1..=8 {
                let mut all = Vec::new();
                let mut sizes = Vec::new();
                for index in 1..=count {
                    let p = positions(&names, Shard { index, count });
                    assert!(p.windows(2).all(|w| w[0] < w[1]), "ascending");
                    sizes.push(p.len());
                    all.extend(p);
                }
                all.sort_unstable();
                assert_eq!(all, (0..len).collect::<Vec<_>>(), "{len} in {count}");
                let (min, max) = (sizes.iter().min(), sizes.iter().max());
                assert!(max.unwrap() - min.unwrap() <= 1, "{sizes:?}");
            }
        }
    }

    /// The split follows the sorted names, not the order they were given in.
    #[test]
    fn the_split_is_by_sorted_name() {
        let names = ["c", "a", "d", "b"];
        let first = positions(&names, Shard { index: 1, count: 2 });
        // Sorted: a(1) b(3) c(0) d(2); shard 1 takes a and c.
        assert_eq!(first, [0, 1]);
        assert_eq!(positions(&names, Shard { index: 2, count: 2 }), [2, 3]);
    }
}
