//! Expanding each level in blocks (dropping a block's states once expanded) is a memory
//! saving only: on every shipped scenario small enough for a test, the search gives the
//! same states, counterexamples (step for step) and verdicts as expanding each level in
//! one pass, with one thread and with two.

use std::path::PathBuf;
use std::time::Duration;

use locklab_model::model::LockModel;
use locklab_model::scenario::{load_paths, Property};
use locklab_model::search::{search, SearchOptions};

#[test]
#[ignore = "second tier (minutes): `bash .ci/run` runs it, as does `cargo test --workspace --release -- --ignored`"]
fn blocks_change_nothing_but_memory() {
    blocks_agree_on_searches_within(Duration::from_secs(3), 10);
}

/// The same on the scenarios searched in half a second.
#[test]
fn blocks_change_nothing_but_memory_on_small_searches() {
    blocks_agree_on_searches_within(Duration::from_millis(500), 5);
}

/// Blocks against one pass on every shipped scenario whose one-pass search ends within
/// `limit`; at least `floor` of them.
fn blocks_agree_on_searches_within(limit: Duration, floor: usize) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let scenarios = load_paths(&[dir]).expect("the shipped scenarios load");
    let mut compared = Vec::new();
    let mut too_big = Vec::new();
    for sc in &scenarios {
        let model = LockModel::new(sc);
        let one_pass = SearchOptions {
            block_states: usize::MAX,
            time_limit: Some(limit),
            ..SearchOptions::default()
        };
        let whole = search(&model, &one_pass, |_| {});
        if !whole.complete {
            too_big.push(sc.name.clone());
            continue;
        }
        for (block_states, threads) in [(1, 1), (97, 2), (1 << 16, 2)] {
            let blocks = search(
                &model,
                &SearchOptions {
                    block_states,
                    threads,
                    ..SearchOptions::default()
                },
                |_| {},
            );
            let what = format!("{} in blocks of {block_states}, {threads} threads", sc.name);
            assert_eq!(blocks.unique_states, whole.unique_states, "{what}");
            assert_eq!(blocks.states, whole.states, "{what}");
            assert_eq!(blocks.depth, whole.depth, "{what}");
            assert_eq!(blocks.purchased, whole.purchased, "{what}");
            for p in Property::ALL {
                assert_eq!(
                    blocks.counterexample(p),
                    whole.counterexample(p),
                    "{what}: {p}"
                );
            }
        }
        compared.push(sc.name.clone());
    }
    eprintln!(
        "compared {} scenarios; searched in more than {limit:?}, left out: {too_big:?}",
        compared.len()
    );
    // A floor, not a share of the suite: which scenarios finish in time depends on the
    // machine's load (14 of 36 within 3 s on a loaded two-core machine).
    assert!(compared.len() >= floor, "{compared:?}");
}
