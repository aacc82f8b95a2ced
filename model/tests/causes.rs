//! Every scenario in scenarios/ that expects a violation states its cause (`[expect]
//! cause`), and the cause is the one the searches compute: each named fault kind (or the
//! step delays) is one without which the property holds, and each one the file leaves
//! out is one the violation does without. The pause scenarios of the gallery need a
//! pause of the holder. The heavy scenarios, whose searches
//! take minutes, are named below and left to `locklab check --cause` (README,
//! "Causes").

use std::path::PathBuf;

use locklab_model::cause::{self, Cause, Ingredient, Struck};
use locklab_model::model::{FaultKind, LockModel};
use locklab_model::scenario::{load_paths, Expectation, Property, Scenario};
use locklab_model::search::{search, SearchOptions};

/// Scenarios whose cause searches take minutes: `locklab check --cause --threads 1` on
/// them checks their causes.
const HEAVY: &[&str] = &[
    "redlock5-clock-jump",
    "redlock5-gc-pause",
    "redlock5-restart",
    "lua-release-split-brain-wait-both-sides",
    "redlock-drift-no-allowance",
    "redlock-clock-jump",
];

/// The pause scenarios of the gallery: the pause their violations need is the holder's.
const HOLDER_PAUSED: &[&str] = &[
    "lua-release-pause",
    "fencing-pause",
    "redlock-gc-pause",
    "watchdog-pause",
    "fencing-watchdog-pause",
];

fn shipped() -> Vec<Scenario> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    load_paths(&[dir]).expect("the shipped scenarios load")
}

/// The computed cause of each violated property.
fn causes(sc: &Scenario) -> Vec<(Property, Cause)> {
    let model = LockModel::new(sc);
    let options = SearchOptions::default();
    let r = search(&model, &options, |_| {});
    let violated: Vec<_> = r
        .counterexamples
        .iter()
        .filter(|(_, c)| c.is_some())
        .map(|(p, _)| *p)
        .collect();
    let without = cause::searches(sc, &violated, &options, |_| {});
    r.counterexamples
        .iter()
        .filter_map(|(p, c)| Some((*p, cause::of(&model, *p, c.as_ref()?, &without))))
        .collect()
}

#[test]
fn every_scenario_expecting_a_violation_states_its_cause() {
    let missing: Vec<String> = shipped()
        .into_iter()
        .filter(|sc| sc.expect.iter().any(|(_, e)| e == Expectation::Violated))
        .filter(|sc| sc.expect.cause.is_none())
        .map(|sc| sc.name)
        .collect();
    assert!(missing.is_empty(), "no [expect] cause in {missing:?}");
}

/// The stated causes of every other file that states one (`part` 0 or 1 of two), but the
/// heavy ones: the two tests below take alternate files so that they run side by side.
/// Returns how many files were checked and what was found wrong.
fn stated_causes_checked(part: usize) -> (usize, Vec<String>) {
    let mut wrong = Vec::new();
    let mut checked = 0;
    let stating = shipped()
        .into_iter()
        .filter(|sc| sc.expect.cause.is_some() && !HEAVY.contains(&sc.name.as_str()));
    for sc in stating.skip(part).step_by(2) {
        let Some(stated) = &sc.expect.cause else {
            continue;
        };
        checked += 1;
        for (property, found) in causes(&sc) {
            let Some(expected) = stated.of(property) else {
                continue;
            };
            let pause = Ingredient::Fault(FaultKind::Pause);
            let pause_struck = found.needs.iter().find(|n| n.ingredient == pause);
            if HOLDER_PAUSED.contains(&sc.name.as_str())
                && pause_struck.is_none_or(|n| n.struck != Some(Struck::Holder))
            {
                wrong.push(format!("{} {property}: {}", sc.name, found.text()));
            }
            if found.ingredients() != expected || !found.undecided.is_empty() {
                wrong.push(format!(
                    "{} {property}: states {expected:?}, computed {}",
                    sc.name,
                    found.text()
                ));
            }
        }
    }
    (checked, wrong)
}

#[test]
fn every_stated_cause_is_the_computed_one_first_of_two() {
    let (checked, wrong) = stated_causes_checked(0);
    assert!(checked > 10, "only {checked} scenarios checked");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_stated_cause_is_the_computed_one_second_of_two() {
    let (checked, wrong) = stated_causes_checked(1);
    assert!(checked > 10, "only {checked} scenarios checked");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
