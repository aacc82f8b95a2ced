//! `locklab explain SCENARIO`: the shortest counterexample of each violated property,
//! narrated step by step, drawn as a text sequence diagram, and closed by the fix.
//! `locklab explain TRACE.json` tells the same story of one trace `check` wrote, without
//! searching again.

use std::path::Path;

use locklab_model::cause;
use locklab_model::model::LockModel;
use locklab_model::scenario::Property;
use locklab_model::trace::{self, Trace};

use crate::cli::ExplainArgs;
use crate::fix::{self, Fix};
use crate::scenario_args::{is_trace, load_trace, resolve};
use crate::search::{search_options, Reporter};
use crate::{sequence, Failure};

/// A counterexample for a learner: the narration, the sequence diagram, and the fix.
pub fn lesson(t: &Trace) -> String {
    let mut out = t.narrate();
    out.push('\n');
    out.push_str(&sequence::text::render(&sequence::build(t)));
    if let Some(c) = &t.cause {
        out.push('\n');
        for line in wrap(&format!("The violation {}.", c.text()), 86) {
            out.push_str("  ");
            out.push_str(&line);
            out.push('\n');
        }
    }
    if let Some(f) = fix::for_trace(t) {
        out.push('\n');
        out.push_str(&fix_text(t, &f));
    }
    out
}

/// `The fix for mutual_exclusion: ...`, wrapped for a terminal.
pub fn fix_text(t: &Trace, f: &Fix) -> String {
    let mut out = String::new();
    let remedy = format!("The fix for {}: {}.", t.property, f.remedy);
    for line in wrap(&remedy, 86) {
        out.push_str("  ");
        out.push_str(&line);
        out.push('\n');
    }
    for line in wrap(&f.why, 84) {
        out.push_str("    ");
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Greedy word wrap.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// One trace's lesson, as `explain SCENARIO` prints it for that property: the steps
/// rebuilt through the model from the trace's actions and embedded scenario, the cause
/// as the trace records it (computed by `report` and `check --cause`).
fn explain_trace(path: &Path, only: Option<Property>) -> Result<i32, Failure> {
    let stored = load_trace(path)?;
    let (scenario, property) = (&stored.scenario, stored.property);
    if let Some(asked) = only.filter(|p| *p != property) {
        return Err(Failure::BadInput(format!(
            "{}: a trace of {property}, not of {asked} (--property)",
            path.display()
        )));
    }
    let mut t = trace::build(&LockModel::new(scenario), property, &stored.actions);
    t.cause = stored.cause.clone();
    print!("{}", lesson(&t));
    println!("  (expected: {})", scenario.expect.get(property));
    if t.cause.is_none() {
        println!(
            "  (this trace does not record what the violation needs: `locklab check --cause` \
             writes traces that do, and `locklab explain {}` computes it)",
            crate::files::shown_path(&scenario.path).display()
        );
    }
    Ok(0)
}

pub fn run(args: &ExplainArgs) -> Result<i32, Failure> {
    let only: Option<Property> = match &args.property {
        Some(p) => Some(p.parse().map_err(Failure::BadInput)?),
        None => None,
    };
    if is_trace(Path::new(&args.scenario)) {
        return explain_trace(Path::new(&args.scenario), only);
    }
    let scenario = resolve(&args.scenario)?;
    let options = search_options(&args.search);
    let reporter = Reporter::new();
    let searched = reporter.search(None, &scenario, &options)?;
    let r = &searched.result;
    let violated: Vec<Property> = r
        .counterexamples
        .iter()
        .filter(|(p, c)| c.is_some() && only.is_none_or(|o| o == *p))
        .map(|(p, _)| *p)
        .collect();
    let without = reporter.cause_searches(None, &scenario, &violated, &options);
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
                let mut t = trace::build(&searched.model, *property, c);
                t.cause = Some(cause::of(&searched.model, *property, c, &without));
                print!("{}", lesson(&t));
                println!("  (expected: {expected})");
            }
            None if r.unverified(*property).is_some() => {
                let why = r.unverified(*property).expect("checked");
                println!(
                    "{}: {property}: error: the path the search found failed its re-check \
                     against the model ({why}); no verdict (expected: {expected})",
                    scenario.name
                );
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
