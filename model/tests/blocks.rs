//! Expanding each level in blocks (dropping a block's states once expanded) is a memory
//! saving only: on every shipped scenario small enough for a test, the search gives the
//! same states, counterexamples (step for step) and verdicts as expanding each level in
//! one pass, with one thread and with two.

use std::path::PathBuf;

use locklab_model::model::LockModel;
use locklab_model::scenario::{load_paths, Property};
use locklab_model::search::{search, SearchOptions};

/// Blocks against one pass on the shipped scenarios below 400,000 unique states (35 of
/// the 44 files, up to redlock-gc-pause's 145,600), in two tests over alternate files
/// that run side by side.
#[test]
#[ignore = "second tier (minutes): `bash .ci/run` runs it, as does `cargo test --workspace --release -- --ignored`"]
fn blocks_change_nothing_but_memory_first_of_two() {
    let compared = blocks_agree_on_searches_within(400_000, (0, 2));
    assert!(compared.len() >= 15, "{compared:?}");
}

/// The other half of the files.
#[test]
#[ignore = "second tier (minutes): `bash .ci/run` runs it, as does `cargo test --workspace --release -- --ignored`"]
fn blocks_change_nothing_but_memory_second_of_two() {
    let compared = blocks_agree_on_searches_within(400_000, (1, 2));
    assert!(compared.len() >= 15, "{compared:?}");
}

/// The same on the scenarios below 100,000 unique states (33 of the 44 files, the
/// largest redlock-clock-jump's 99,670 states; the next is redlock5-no-faults's 101,837),
/// in two tests over alternate files that run side by side.
#[test]
fn blocks_change_nothing_but_memory_on_small_searches_first_of_two() {
    let compared = blocks_agree_on_searches_within(100_000, (0, 2));
    assert!(compared.len() >= 12, "{compared:?}");
}

/// The other half of the files.
#[test]
fn blocks_change_nothing_but_memory_on_small_searches_second_of_two() {
    let compared = blocks_agree_on_searches_within(100_000, (1, 2));
    assert!(compared.len() >= 12, "{compared:?}");
}

/// Blocks against one pass on the shipped scenarios of part `part` of `parts` (every
/// `parts`-th file from the `part`-th, from 0) whose one-pass search completes within
/// `states` unique states: a bound in states, not in seconds, so that the scenarios
/// compared are the same on any machine and under any load. Returns those compared.
fn blocks_agree_on_searches_within(states: usize, (part, parts): (usize, usize)) -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let scenarios = load_paths(&[dir]).expect("the shipped scenarios load");
    let mut compared = Vec::new();
    let mut too_big = Vec::new();
    for sc in scenarios.iter().skip(part).step_by(parts) {
        let model = LockModel::new(sc);
        let one_pass = SearchOptions {
            block_states: usize::MAX,
            state_limit: Some(states),
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
        "compared {} scenarios; more than {states} states, left out: {too_big:?}",
        compared.len()
    );
    compared
}
