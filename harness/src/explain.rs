//! `locklab explain SCENARIO`: the narrated shortest counterexample of each violated
//! property.

use std::path::PathBuf;

use locklab_model::scenario::{Property, Scenario, DEFAULT_DIR};
use locklab_model::trace;

use crate::check::{self, search_options, Reporter};
use crate::cli::ExplainArgs;
use crate::Failure;

/// A scenario argument: a file path, or the name of a file in `scenarios/`.
pub fn resolve(arg: &str) -> Result<Scenario, Failure> {
    let path = PathBuf::from(arg);
    let path = if path.exists() {
        path
    } else {
        let by_name = PathBuf::from(DEFAULT_DIR).join(format!("{arg}.toml"));
        if !by_name.exists() {
            return Err(Failure::BadInput(format!(
                "{arg}: no such scenario file, and no {} either; give a path to a .toml file \
                 or the name of a scenario in {DEFAULT_DIR}/",
                by_name.display()
            )));
        }
        by_name
    };
    if path.is_dir() {
        return Err(Failure::BadInput(format!(
            "{}: is a directory; explain takes one scenario",
            path.display()
        )));
    }
    Ok(check::load(&[path])?.remove(0))
}

pub fn run(args: &ExplainArgs) -> Result<i32, Failure> {
    let scenario = resolve(&args.scenario)?;
    let only: Option<Property> = match &args.property {
        Some(p) => Some(p.parse().map_err(Failure::BadInput)?),
        None => None,
    };
    let options = search_options(&args.search);
    let run = Reporter::new().run(&scenario, &options);
    let r = &run.result;
    let mut shown = 0;
    for (property, counterexample) in &r.counterexamples {
        if only.is_some_and(|p| p != *property) {
            continue;
        }
        let expected = scenario.expect.get(*property);
        match counterexample {
            Some(c) => {
                if shown > 0 {
                    println!();
                }
                shown += 1;
                let t = trace::build(&run.model, *property, c);
                print!("{}", t.narrate());
                println!("  (expected: {expected})");
            }
            None => {
                let within = match (r.complete, options.max_depth) {
                    (false, Some(n)) => format!(" within {n} steps"),
                    _ => String::new(),
                };
                let verdict = if r.purchased { "holds" } else { "vacuous" };
                println!(
                    "{}: {property} {verdict}{within} (expected: {expected}; {} unique states)",
                    scenario.name, r.unique_states
                );
            }
        }
    }
    if !r.purchased {
        println!(
            "warning: no client ever completed its critical section: a \"holds\" verdict here \
             means nothing"
        );
    }
    Ok(0)
}
