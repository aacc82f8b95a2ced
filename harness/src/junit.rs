//! The `--junit` report of `check`: one testsuite per scenario, one testcase per property.
//! A mismatch is a `<failure>` whose text is the narrated counterexample (or says that
//! none exists); a vacuous scenario's properties are `<error type="vacuous-scenario">`s
//! (`<error type="not-reached-in-walks">` when random walks did not reach what a verdict
//! needs), a path that failed its re-check an `<error type="path-recheck">`; an expected "holds"
//! that random walks only did not break is `<skipped>` (unproven). Written by hand.

use std::fmt::Write as _;

use crate::shard::Part;
use crate::verdict::{Found, ScenarioOutcome, Status};
use crate::xml::escape;

/// The report; a shard's (`check --shard`) root element also carries `shard="K/N"`,
/// `scenarios` (in the whole run) and `positions` (of its testsuites in the whole run,
/// comma-separated), which `locklab merge` reads.
pub fn render(outcomes: &[ScenarioOutcome], part: Option<&Part>) -> String {
    let count = |s: Status| {
        outcomes
            .iter()
            .flat_map(|o| &o.properties)
            .filter(|p| p.status() == s)
            .count()
    };
    let tests: usize = outcomes.iter().map(|o| o.properties.len()).sum();
    let time: f64 = outcomes.iter().map(|o| o.seconds).sum();
    let shard = part.map_or_else(String::new, |p| {
        let positions: Vec<String> = p.positions.iter().map(usize::to_string).collect();
        format!(
            " shard=\"{}\" scenarios=\"{}\" positions=\"{}\"",
            p.shard,
            p.total,
            positions.join(",")
        )
    });
    let mut out = header(
        tests as u64,
        count(Status::Mismatch) as u64,
        count(Status::Error) as u64,
        time,
        &shard,
    );
    for o in outcomes {
        let failures = o
            .properties
            .iter()
            .filter(|p| p.status() == Status::Mismatch)
            .count();
        let errors = o
            .properties
            .iter()
            .filter(|p| p.status() == Status::Error)
            .count();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{:.3}\">",
            escape(o.name()),
            o.properties.len(),
            o.seconds
        );
        let _ = writeln!(out, "    <properties>");
        for (name, value) in [
            ("design", o.scenario.design.as_str().to_string()),
            ("path", o.scenario.path.display().to_string()),
            ("states", o.states.to_string()),
            ("unique_states", o.unique_states.to_string()),
            ("complete", o.complete.to_string()),
            // What a "holds" here was tested against.
            ("faults_struck_a_hold", o.faults_struck_a_hold.join(",")),
            ("lease_lost", o.lease_lost.to_string()),
            ("attempt_after_loss", o.attempt_after_loss.to_string()),
            ("coverage", o.coverage_text()),
        ] {
            let _ = writeln!(
                out,
                "      <property name=\"{name}\" value=\"{}\"/>",
                escape(&value)
            );
        }
        let _ = writeln!(out, "    </properties>");
        for p in &o.properties {
            let open = format!(
                "    <testcase classname=\"locklab.{}\" name=\"{}\"",
                escape(o.name()),
                p.property
            );
            let message = format!("expected {}, found {}", p.expected, p.found_text());
            match p.status() {
                Status::Match => {
                    let _ = writeln!(out, "{open}/>");
                }
                Status::Mismatch => {
                    let (message, text) = match (&p.found, &p.trace) {
                        (Found::Violated { steps }, Some(trace)) => {
                            let mut text = trace.narrate();
                            if let Some(path) = &p.trace_path {
                                let _ = writeln!(text, "trace: {}", path.display());
                            }
                            let message = match p.cause_mismatch_text() {
                                Some(cause) => format!("{cause} (in {steps} steps)"),
                                None => format!("{message} in {steps} steps"),
                            };
                            (message, text)
                        }
                        (Found::NoneInWalks { walks }, _) => (
                            message,
                            format!(
                                "{walks} random walks did not break {}: the expected \
                                 counterexample was not reproduced (more walks, another seed \
                                 or the exhaustive search may)\n",
                                p.property
                            ),
                        ),
                        _ => (
                            message,
                            format!(
                                "no counterexample to {} exists within the bound \
                                 ({} unique states explored, depth {}{})\n",
                                p.property,
                                o.unique_states,
                                o.depth,
                                if o.complete {
                                    ", search complete"
                                } else {
                                    ", search incomplete"
                                }
                            ),
                        ),
                    };
                    let _ = writeln!(out, "{open}>");
                    let _ = writeln!(
                        out,
                        "      <failure message=\"{}\" type=\"verdict-mismatch\">{}</failure>",
                        escape(&message),
                        escape(&text)
                    );
                    let _ = writeln!(out, "    </testcase>");
                }
                Status::Unproven => {
                    let _ = writeln!(out, "{open}>");
                    let _ = writeln!(
                        out,
                        "      <skipped message=\"{}\"/>",
                        escape(&format!("unproven: {message} (random walks prove nothing)"))
                    );
                    let _ = writeln!(out, "    </testcase>");
                }
                Status::Error => {
                    let text = o.error().unwrap_or_else(|| p.found_text());
                    let kind = match p.found {
                        Found::Unverified { .. } => "path-recheck",
                        Found::NotReached { .. } => "not-reached-in-walks",
                        _ => "vacuous-scenario",
                    };
                    let _ = writeln!(out, "{open}>");
                    let _ = writeln!(
                        out,
                        "      <error message=\"{}\" type=\"{kind}\">{}</error>",
                        escape(&message),
                        escape(&text)
                    );
                    let _ = writeln!(out, "    </testcase>");
                }
            }
        }
        let _ = writeln!(out, "  </testsuite>");
    }
    out.push_str(FOOTER);
    out
}

/// The XML declaration and the root start tag with its totals (`extra`: more
/// attributes, each with its leading space).
pub fn header(tests: u64, failures: u64, errors: u64, time: f64, extra: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"locklab check\" tests=\"{tests}\" failures=\"{failures}\" \
         errors=\"{errors}\" time=\"{time:.3}\"{extra}>\n"
    )
}

/// The root end tag.
pub const FOOTER: &str = "</testsuites>\n";
