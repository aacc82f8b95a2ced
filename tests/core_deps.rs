//! The sans-IO core has no async runtime and no Redis client in its dependency tree:
//! without the `driver` feature, `cargo tree` lists neither tokio nor redis-rs, for the
//! root crate and for the model checker that depends on it. With the feature on, both
//! show up, which proves the check sees them.

use std::process::Command;

/// Crates only the driver may pull in (any crate of their families counts too).
const DRIVER_ONLY: [&str; 2] = ["tokio", "redis"];

/// The package names in the normal-dependency tree `cargo tree` prints for `args`.
fn tree(args: &[&str]) -> Vec<String> {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "-e", "normal", "--prefix", "none"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        output.status.success(),
        "cargo tree {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let names: Vec<String> = String::from_utf8(output.stdout)
        .expect("cargo tree prints UTF-8")
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(!names.is_empty(), "cargo tree {args:?} printed nothing");
    names
}

/// The names in `names` that belong to the driver only.
fn driver_crates(names: &[String]) -> Vec<&str> {
    let mut found: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|name| {
            DRIVER_ONLY
                .iter()
                .any(|d| name == d || name.starts_with(&format!("{d}-")))
        })
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

#[test]
fn the_core_has_neither_tokio_nor_redis() {
    let names = tree(&["-p", "locklab", "--no-default-features"]);
    assert_eq!(names[0], "locklab", "the tree starts at the root crate");
    assert_eq!(driver_crates(&names), Vec::<&str>::new());
}

#[test]
fn the_model_has_neither_tokio_nor_redis() {
    let names = tree(&["-p", "locklab-model"]);
    assert_eq!(names[0], "locklab-model");
    assert!(
        names.iter().any(|n| n == "locklab"),
        "the model depends on the core: {names:?}"
    );
    assert_eq!(driver_crates(&names), Vec::<&str>::new());
}

#[test]
fn the_driver_feature_brings_tokio_and_redis() {
    let names = tree(&["-p", "locklab", "--features", "driver"]);
    let found = driver_crates(&names);
    assert!(found.contains(&"tokio"), "{found:?}");
    assert!(found.contains(&"redis"), "{found:?}");
}
