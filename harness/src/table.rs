//! The verdict table `check` prints: one row per scenario and property, plain text.

use std::fmt::Write as _;

use locklab_model::search::{Reduction, Strategy};

use crate::files::explain_command;
use crate::verdict::{Found, ScenarioOutcome, Status};

const HEADER: [&str; 10] = [
    "RESULT", "SCENARIO", "PROPERTY", "EXPECTED", "FOUND", "STEPS", "STATES", "UNIQUE", "SECONDS",
    "COVERAGE",
];
/// Columns aligned to the right (numbers).
const RIGHT: [bool; 10] = [
    false, false, false, false, false, true, true, true, true, false,
];

fn result_text(status: Status) -> &'static str {
    match status {
        Status::Match => "ok",
        Status::Mismatch => "MISMATCH",
        Status::Error => "ERROR",
        Status::Unproven => "UNPROVEN",
    }
}

/// The column widths of a table.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    widths: [usize; 10],
}

impl Layout {
    /// Widths chosen before any search ends, from the scenarios' names (rows printed as
    /// each scenario finishes): numbers get room for billions of states and hours; a
    /// wider cell pushes its row's later columns right, and nothing is cut.
    pub fn ahead<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut widths = HEADER.map(str::len);
        let name = names
            .into_iter()
            .map(|n| n.chars().count())
            .max()
            .unwrap_or(0);
        for (w, least) in widths.iter_mut().zip([8, name, 18, 8, 8, 5, 10, 10, 8, 0]) {
            *w = (*w).max(least);
        }
        Layout { widths }
    }

    /// The header line.
    pub fn header(&self) -> String {
        self.line(&HEADER.map(str::to_string))
    }

    /// One scenario's rows, one line per property.
    pub fn rows(&self, o: &ScenarioOutcome) -> String {
        rows(o).iter().map(|row| self.line(row)).collect()
    }

    fn line(&self, row: &[String; 10]) -> String {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = self.widths[i].saturating_sub(cell.chars().count());
            if RIGHT[i] {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        format!("{}\n", line.trim_end())
    }
}

/// One scenario's cells, a row per property. Each "holds" row says what it was tested
/// against (`ScenarioOutcome::coverage_text`).
fn rows(o: &ScenarioOutcome) -> Vec<[String; 10]> {
    o.properties
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let first = k == 0;
            let stat = |v: String| if first { v } else { String::new() };
            [
                result_text(p.status()).to_string(),
                o.name().to_string(),
                p.property.to_string(),
                p.expected.to_string(),
                p.found_text(),
                p.steps().map_or("-".to_string(), |s| s.to_string()),
                stat(o.states.to_string()),
                stat(if o.strategy == Strategy::Exhaustive {
                    o.unique_states.to_string()
                } else {
                    "-".to_string()
                }),
                stat(format!("{:.2}", o.seconds)),
                if p.found == Found::Holds {
                    o.coverage_text()
                } else {
                    String::new()
                },
            ]
        })
        .collect()
}

/// What follows the rows: the notes (causes, errors, mismatches with their traces and
/// explain commands) and the summary line.
pub fn render_notes(outcomes: &[ScenarioOutcome]) -> String {
    let mut out = String::new();
    let mut notes = String::new();
    // What each violation needs, where it was computed.
    for o in outcomes {
        for p in &o.properties {
            if let (Some(cause), Some(steps)) = (&p.cause, p.steps()) {
                let _ = write!(
                    notes,
                    "trace {} {}: {steps} steps, {}",
                    o.name(),
                    p.property,
                    cause.text()
                );
                match &p.trace_path {
                    Some(path) => {
                        let _ = writeln!(notes, "; {}", path.display());
                    }
                    None => notes.push('\n'),
                }
            }
        }
    }
    for o in outcomes {
        if let Some(e) = o.error() {
            let _ = writeln!(notes, "ERROR {}: {e}", o.name());
        }
        if let Some(n) = o.note() {
            let _ = writeln!(notes, "note {}: {n}", o.name());
        }
    }
    for o in outcomes {
        for p in &o.properties {
            if p.status() == Status::Unproven {
                let _ = writeln!(
                    notes,
                    "UNPROVEN {}: {} expected holds, {}: not a proof (exit 1 unless \
                     --allow-unproven; only the exhaustive search proves it)",
                    o.name(),
                    p.property,
                    p.found_text()
                );
            }
            if p.status() != Status::Mismatch {
                continue;
            }
            if let Some(text) = p.cause_mismatch_text() {
                let _ = writeln!(notes, "MISMATCH {}: {}: {text}", o.name(), p.property);
                continue;
            }
            let _ = write!(
                notes,
                "MISMATCH {}: {} expected {}, found {}",
                o.name(),
                p.property,
                p.expected,
                p.found_text()
            );
            match (&p.trace_path, p.steps()) {
                (Some(path), Some(steps)) => {
                    let _ = writeln!(
                        notes,
                        " in {steps} steps; trace {} ({})",
                        path.display(),
                        explain_command(&o.scenario.path, p.property)
                    );
                }
                _ if matches!(p.found, Found::NoneInWalks { .. }) => {
                    let _ = writeln!(
                        notes,
                        "; the walks did not reproduce it (more walks, another seed or the \
                         exhaustive search may)"
                    );
                }
                _ => {
                    let _ = writeln!(notes, "; no counterexample exists within the bound");
                }
            }
        }
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes);
    }

    let verdicts: Vec<Status> = outcomes
        .iter()
        .flat_map(|o| o.properties.iter().map(|p| p.status()))
        .collect();
    let count = |s: Status| verdicts.iter().filter(|&&v| v == s).count();
    let errors = outcomes.iter().filter(|o| o.error().is_some()).count();
    let _ = write!(
        out,
        "\n{} scenario{}, {} verdicts: {} match, {} mismatch, {} scenario errors",
        outcomes.len(),
        if outcomes.len() == 1 { "" } else { "s" },
        verdicts.len(),
        count(Status::Match),
        count(Status::Mismatch),
        errors
    );
    if count(Status::Unproven) > 0 {
        let _ = write!(out, ", {} unproven", count(Status::Unproven));
    }
    if outcomes.iter().any(|o| o.strategy == Strategy::Exhaustive) {
        let _ = write!(
            out,
            "; fingerprint collision probability <= {:.1e}",
            collision_probability(outcomes)
        );
    }
    // Each reduction any search ran with, and in how many scenarios when not in all.
    let exhaustive = outcomes
        .iter()
        .filter(|o| o.strategy == Strategy::Exhaustive)
        .count();
    let used: Vec<String> = Reduction::ALL
        .into_iter()
        .filter_map(|r| {
            let n = outcomes
                .iter()
                .filter(|o| o.reductions.contains(&r))
                .count();
            let name = r.as_str().replace('_', " ");
            match n {
                0 => None,
                n if n == exhaustive => Some(name),
                n => Some(format!(
                    "{name} in {n} scenario{}",
                    if n == 1 { "" } else { "s" }
                )),
            }
        })
        .collect();
    if !used.is_empty() {
        let _ = write!(out, "; reductions: {}", used.join(", "));
    }
    out.push('\n');
    out
}

/// The chance that some search of the run merged two states by a fingerprint collision:
/// at most the sum of the searches' birthday bounds (a union bound), at most 1.
pub fn collision_probability(outcomes: &[ScenarioOutcome]) -> f64 {
    outcomes
        .iter()
        .map(|o| o.collision_probability)
        .sum::<f64>()
        .min(1.0)
}
