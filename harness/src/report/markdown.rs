//! The gallery as Markdown that renders on a code host: tables, and each diagram as a
//! separate `.svg` beside the page, referenced by a relative path.

use std::fmt::Write as _;

use locklab_model::scenario::Property;

use super::html::capitalise;
use super::replay::{self, Replay};
use super::{matrix, sentence, Counterexample, Page, INTRO, LEGEND};

/// Text safe inside a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// `index.md`.
pub fn index(pages: &[Page]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# locklab: how Redis locks break\n\n{INTRO}\n");
    let _ = writeln!(out, "## Verdict matrix\n\n{LEGEND}\n");
    let heads: Vec<String> = Property::ALL.iter().map(|p| format!("`{p}`")).collect();
    let _ = writeln!(out, "| design | scenario | {} |", heads.join(" | "));
    let _ = writeln!(out, "|---|---|{}", "---|".repeat(heads.len()));
    for (design, name, summary, verdicts) in matrix(pages) {
        let cells: Vec<String> = verdicts
            .iter()
            .map(|v| {
                let text = cell(&v.text());
                if v.steps.is_some() {
                    format!("[{text}](scenarios/{name}.md#{})", v.property)
                } else {
                    text
                }
            })
            .collect();
        let summary = if summary.is_empty() {
            String::new()
        } else {
            format!("<br>{}", cell(summary))
        };
        let _ = writeln!(
            out,
            "| `{design}` | [{name}](scenarios/{name}.md){summary} | {} |",
            cells.join(" | ")
        );
    }
    let _ = writeln!(out, "\n## Scenarios\n");
    for p in pages {
        let _ = writeln!(
            out,
            "- [{0}](scenarios/{0}.md) (`{1}`): {2}",
            p.scenario.name, p.scenario.design, p.scenario.summary
        );
    }
    let _ = writeln!(
        out,
        "\nRegenerate with `locklab report`; the same pages as self-contained HTML: \
         [index.html](index.html)."
    );
    out
}

fn replay_block(out: &mut String, r: &Replay) {
    let verdict = if r.reproduced {
        "**reproduced** on real Redis"
    } else {
        "**not reproduced** on real Redis"
    };
    let list = |v: &[String]| {
        if v.is_empty() {
            "no violation".to_string()
        } else {
            v.join(", ")
        }
    };
    let _ = writeln!(
        out,
        "#### Replay on real Redis\n\n{verdict}; 1 tick = {} ms. Model: {}. Real run: {}.\n",
        replay::ms(r.tick_ms),
        list(&r.model_violations),
        list(&r.real_violations)
    );
    if !r.emulations.is_empty() {
        let _ = writeln!(out, "Emulated, not real: {}.\n", r.emulations.join("; "));
    }
    let _ = writeln!(out, "| ms | actor | event | reply |\n|---:|---|---|---|");
    for e in &r.timeline {
        let _ = writeln!(
            out,
            "| {} | {} | `{}` | {} |",
            replay::ms(e.ms),
            cell(&e.actor),
            cell(&e.event),
            e.reply
                .as_deref()
                .map_or(String::new(), |r| format!("`{}`", cell(r)))
        );
    }
    out.push('\n');
}

fn counterexample(out: &mut String, name: &str, c: &Counterexample) {
    let p = c.property;
    let _ = writeln!(
        out,
        "<a id=\"{p}\"></a>\n\n## `{p}` is violated\n\nShortest counterexample: {} steps; the \
         property breaks at step {} (*{}*). Trace: [{name}.{p}.json]({}); in a terminal: \
         `{}`.\n",
        c.steps, c.broke_at, c.breaking_step, c.trace_link, c.explain
    );
    if let Some(cause) = &c.cause {
        let _ = writeln!(out, "**{}**\n", sentence(cause));
    }
    let _ = writeln!(
        out,
        "![Sequence diagram: {name} violates {p}]({})\n",
        c.svg_file
    );
    if let Some(r) = &c.replay {
        replay_block(out, r);
    }
    if let Some(f) = &c.fix {
        let _ = writeln!(out, "> **The fix:** {}.\n>\n> {}\n", f.remedy, f.why);
    }
}

/// `scenarios/<name>.md`.
pub fn page(p: &Page) -> String {
    let s = &p.scenario;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "[← all scenarios](../index.md) · [HTML]({}.html)\n\n# {}\n\n{}\n",
        s.name, s.name, s.summary
    );
    let _ = writeln!(out, "## The pitfall\n");
    for pattern in &p.patterns {
        let _ = writeln!(
            out,
            "{} *(seed: {})*\n",
            capitalise(pattern.pattern),
            pattern.seeds
        );
    }
    let _ = writeln!(out, "## Settings\n\n| setting | value |\n|---|---|");
    for (k, v) in &p.settings {
        let _ = writeln!(out, "| {k} | {} |", cell(v));
    }
    let _ = writeln!(
        out,
        "\n## Verdicts\n\n{LEGEND}\n\n| property | expected | found |\n|---|---|---|"
    );
    for v in &p.verdicts {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            v.property,
            v.expected,
            cell(&v.text())
        );
    }
    out.push('\n');
    if let Some(e) = &p.error {
        let _ = writeln!(out, "**⚠ {e}**\n");
    }
    for c in &p.counterexamples {
        counterexample(&mut out, &s.name, c);
    }
    if p.counterexamples.is_empty() && p.error.is_none() {
        let _ = writeln!(
            out,
            "Every property holds: the model found no counterexample in any interleaving \
             within the scenario's bounds.\n"
        );
    }
    if let Some(soak) = &p.soak {
        let _ = writeln!(
            out,
            "## Soak on real Redis\n\nThe same lock soaked on real Redis containers with \
             faults injected at random (`locklab soak`): each client's critical sections, \
             the faults shaded, each property's first violation marked.\n\n\
             ![Soak timeline of {}]({soak})\n",
            s.name
        );
    }
    // One trailing newline.
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}
