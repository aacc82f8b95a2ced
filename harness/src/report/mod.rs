//! The gallery's pages, built from the verdicts of a check (`locklab report` writes
//! them): the verdict matrix of the index, and per scenario the pitfall in plain words
//! with the seed-article pattern it comes from, the settings, the verdicts, and per
//! violated property the counterexample as an SVG sequence diagram, the real replay
//! timeline when `replays/<name>.<property>.json` exists, and the fix. [`html`] and
//! [`markdown`] render them.
//!
//! Pages depend only on the scenarios, the model and the replay files: no timestamps,
//! no timings, no state counts, so regenerating changes nothing.

pub mod html;
pub mod markdown;
pub mod replay;

use std::path::Path;

use locklab_model::scenario::{Expectation, Property, Scenario};

use crate::files::explain_command;
use crate::fix::{self, Fix};
use crate::pitfall::{self, Pattern};
use crate::sequence;
use crate::verdict::{Found, ScenarioOutcome, Status};
use crate::Failure;

/// One property's verdict on a page or in the matrix.
pub struct Verdict {
    pub property: Property,
    pub expected: Expectation,
    /// `"holds"`, `"violated"` or `"error"`.
    pub found: &'static str,
    pub status: Status,
    pub steps: Option<usize>,
}

impl Verdict {
    /// The symbol that carries the verdict without colour.
    pub fn symbol(&self) -> &'static str {
        match self.found {
            "holds" => "✔",
            "violated" => "✖",
            _ => "⚠",
        }
    }

    /// `✖ violated in 11 steps`, `✔ holds`, with the expectation when it differs.
    pub fn text(&self) -> String {
        let mut t = format!("{} {}", self.symbol(), self.found);
        if let Some(n) = self.steps {
            t.push_str(&format!(" in {n} steps"));
        }
        match self.status {
            Status::Match => t.push_str(" (as expected)"),
            Status::Mismatch => t.push_str(&format!(" — MISMATCH: expected {}", self.expected)),
            Status::Error => t.push_str(" — ERROR: no client completed"),
            Status::Unproven => t.push_str(" — UNPROVEN: random walks only"),
        }
        t
    }

    /// A CSS class: the verdict, and `mismatch` when it differs from the expectation.
    pub fn class(&self) -> String {
        match self.status {
            Status::Match => self.found.to_string(),
            _ => format!("{} mismatch", self.found),
        }
    }
}

/// One violated property's counterexample on a scenario page.
pub struct Counterexample {
    pub property: Property,
    pub steps: usize,
    /// The step at which the property broke.
    pub broke_at: usize,
    /// The last step's words (what broke it).
    pub breaking_step: String,
    pub svg: String,
    /// The diagram's step column alone ([`sequence::svg::gutter`]), kept in view over a
    /// wide diagram as it scrolls.
    pub gutter: String,
    /// `<scenario>.<property>.svg`, beside the page.
    pub svg_file: String,
    /// The trace, relative to the page.
    pub trace_link: String,
    pub replay: Option<replay::Replay>,
    pub fix: Option<Fix>,
    /// What the violation needs ("needs: a pause of the holder"), once computed.
    pub cause: Option<String>,
    /// The command that narrates it in a terminal, with the scenario's path.
    pub explain: String,
}

/// A scenario page.
pub struct Page {
    pub scenario: Scenario,
    pub patterns: Vec<Pattern>,
    /// Setting, value.
    pub settings: Vec<(&'static str, String)>,
    pub verdicts: Vec<Verdict>,
    pub counterexamples: Vec<Counterexample>,
    pub error: Option<String>,
    /// The scenario's soak timeline (`../soak/<name>.svg`), when a soak drew one.
    pub soak: Option<String>,
}

fn verdicts(o: &ScenarioOutcome) -> Vec<Verdict> {
    o.properties
        .iter()
        .map(|p| Verdict {
            property: p.property,
            expected: p.expected,
            found: p.verdict(),
            status: p.status(),
            steps: p.steps(),
        })
        .collect()
}

fn settings(s: &Scenario) -> Vec<(&'static str, String)> {
    let fencing = match s.fencing {
        locklab::Fencing::Off => "off",
        locklab::Fencing::Writes => "writes",
        locklab::Fencing::All => "all",
    };
    let faults: Vec<String> = s
        .faults
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(kind, &n)| kind.counted(n))
        .collect();
    let t = &s.timing;
    let mut rows = vec![
        ("design", s.design.as_str().to_string()),
        ("scenario file", s.path.display().to_string()),
        (
            "topology",
            format!(
                "{} master(s), {} asynchronous replica(s) each",
                s.topology.masters, s.topology.replicas
            ),
        ),
        (
            "clients",
            format!(
                "{}, {} acquire attempt(s) each",
                s.clients.count, s.clients.attempts
            ),
        ),
        (
            "timing (ticks)",
            format!(
                "ttl {}, work {}, max step delay {}, {}; 1 tick = {} ms on real Redis",
                t.ttl,
                t.work,
                t.max_step_delay,
                t.horizon
                    .map_or("no horizon (for all time)".to_string(), |h| format!(
                        "horizon {h}"
                    )),
                t.tick_ms
            ),
        ),
        (
            "fault budget",
            if faults.is_empty() {
                "none".to_string()
            } else {
                faults.join(", ")
            },
        ),
        ("fencing", fencing.to_string()),
        ("wait_replicas", s.wait_replicas.to_string()),
    ];
    // The WAIT's timeout only where it has one: a page without it reads as before.
    if t.wait_timeout > 0 {
        rows.push(("wait_timeout", format!("{} tick(s)", t.wait_timeout)));
    }
    rows
}

/// The page of one checked scenario; `reports` holds the replay files.
pub fn page(o: &ScenarioOutcome, reports: &Path) -> Result<Page, Failure> {
    let name = o.name().to_string();
    let mut counterexamples = Vec::new();
    for p in &o.properties {
        let (Found::Violated { steps }, Some(trace)) = (&p.found, &p.trace) else {
            continue;
        };
        let property = p.property.as_str();
        let seq = sequence::build(trace);
        let broke_at = trace
            .steps
            .iter()
            .find(|s| s.broken.contains(&p.property))
            .map_or(*steps, |s| s.step);
        counterexamples.push(Counterexample {
            property: p.property,
            steps: *steps,
            broke_at,
            breaking_step: trace
                .steps
                .get(broke_at.saturating_sub(1))
                .map(|s| s.action.clone())
                .unwrap_or_default(),
            svg: sequence::svg::render(&seq, &format!("{name}.{property}")),
            gutter: sequence::svg::gutter(&seq),
            svg_file: format!("{name}.{property}.svg"),
            trace_link: format!("../traces/{name}.{property}.json"),
            replay: replay::load(reports, &name, property)?,
            fix: fix::for_trace(trace),
            cause: p.cause.as_ref().map(|c| c.text()),
            explain: explain_command(&o.scenario.path, p.property),
        });
    }
    Ok(Page {
        scenario: o.scenario.clone(),
        patterns: pitfall::patterns(&o.scenario),
        settings: settings(&o.scenario),
        verdicts: verdicts(o),
        counterexamples,
        error: o.error(),
        soak: reports
            .join("soak")
            .join(format!("{name}.svg"))
            .is_file()
            .then(|| format!("../soak/{name}.svg")),
    })
}

/// "needs: a pause of the holder" as a sentence on a page: "The violation needs: ...".
pub fn sentence(cause: &str) -> String {
    format!("The violation {cause}.")
}

/// The matrix rows: one per scenario, grouped by design: design, name, one-line
/// summary, verdicts.
pub fn matrix(pages: &[Page]) -> Vec<(&str, &str, &str, &[Verdict])> {
    pages
        .iter()
        .map(|p| {
            (
                p.scenario.design.as_str(),
                p.scenario.name.as_str(),
                p.scenario.summary.as_str(),
                p.verdicts.as_slice(),
            )
        })
        .collect()
}

/// The legend shared by both index formats.
pub const LEGEND: &str = "✔ holds: no counterexample exists within the scenario's bounds. \
    ✖ violated: the model found a counterexample (its length in steps). \
    ⚠ error: no client ever completed its critical section, so nothing is proven. \
    \"as expected\" marks a verdict equal to the scenario's expectation, MISMATCH one \
    that differs.";

/// What the gallery is, for the top of the index.
pub const INTRO: &str = "Every scenario below is model-checked: the checker explores every \
    interleaving of the clients, the Redis nodes, time and the scenario's fault budget, \
    and reports per property whether it holds or the shortest counterexample that breaks \
    it. Each scenario page explains the pitfall, draws the counterexample as a sequence \
    diagram, shows the replay on real Redis when one was recorded, and names the fix.";
