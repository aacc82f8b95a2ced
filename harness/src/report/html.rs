//! The gallery as self-contained HTML: inline style, inline SVG, no scripts, fonts or
//! anything else to fetch.

use std::fmt::Write as _;

use locklab_model::scenario::Property;

use super::replay::{self, Replay};
use super::{matrix, sentence, Counterexample, Page, Verdict, INTRO, LEGEND};
use crate::xml::escape;

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1500px;padding:0 16px;color:#1b1f23;line-height:1.45}
h1{margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
code,pre{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:13px}
table{border-collapse:collapse;margin:8px 0}
th,td{border:1px solid #d0d7de;padding:5px 9px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.holds{background:#e6f4ea;color:#1e5631}
td.violated{background:#fdecea;color:#8a1c1c}
td.error{background:#fff4d6;color:#7a4d00}
td.mismatch{outline:3px solid #6a1b9a;outline-offset:-3px;font-weight:bold}
.muted{color:#57606a}
.lead{font-size:1.1em}
.pair{display:flex;flex-wrap:wrap;gap:20px;align-items:flex-start}
.diagram{overflow-x:auto;border:1px solid #d0d7de;border-radius:6px;background:#fff;max-width:100%}
.seq{display:grid;width:max-content}.seq>svg{grid-area:1/1}.seq>svg.gutter{position:sticky;left:0;z-index:1}
td .summary{display:block;font-size:12px;color:#57606a;max-width:420px}
.soak img{max-width:100%;border:1px solid #d0d7de;border-radius:6px}
.replay{min-width:380px;flex:1}
.replay table{font-size:13px}
.fix{background:#eef6ff;border-left:4px solid #1565c0;padding:8px 14px;margin:12px 0}
.broken{color:#b71c1c;font-weight:bold}
nav a{margin-right:12px}
";

fn head(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(title)
    );
}

fn verdict_cell(v: &Verdict, link: Option<&str>) -> String {
    let text = escape(&v.text());
    let body = match link {
        Some(href) if v.steps.is_some() => format!("<a href=\"{}\">{text}</a>", escape(href)),
        _ => text,
    };
    format!(
        "<td class=\"{}\" title=\"expected {}\">{body}</td>",
        v.class(),
        v.expected
    )
}

fn property_heads() -> String {
    Property::ALL
        .iter()
        .map(|p| format!("<th><code>{p}</code></th>"))
        .collect()
}

/// `index.html`.
pub fn index(pages: &[Page]) -> String {
    let mut out = String::new();
    head(&mut out, "locklab: how Redis locks break");
    let _ = writeln!(
        out,
        "<h1>locklab: how Redis locks break</h1>\n<p class=\"lead\">{}</p>",
        escape(INTRO)
    );
    let _ = writeln!(
        out,
        "<h2>Verdict matrix</h2>\n<p class=\"muted\">{}</p>",
        escape(LEGEND)
    );
    let _ = writeln!(
        out,
        "<table>\n<tr><th>design</th><th>scenario</th>{}</tr>",
        property_heads()
    );
    let rows = matrix(pages);
    for (i, (design, name, summary, verdicts)) in rows.iter().enumerate() {
        let first = i == 0 || rows[i - 1].0 != *design;
        let _ = write!(out, "<tr>");
        if first {
            let span = rows.iter().filter(|r| r.0 == *design).count();
            let _ = write!(out, "<th rowspan=\"{span}\"><code>{design}</code></th>");
        }
        let _ = write!(
            out,
            "<td><a href=\"scenarios/{0}.html\">{0}</a><span class=\"summary\">{1}</span></td>",
            escape(name),
            escape(summary)
        );
        for v in verdicts.iter() {
            let href = format!("scenarios/{name}.html#{}", v.property);
            out.push_str(&verdict_cell(v, Some(&href)));
        }
        let _ = writeln!(out, "</tr>");
    }
    let _ = writeln!(out, "</table>");
    let _ = writeln!(out, "<h2>Scenarios</h2>\n<ul>");
    for p in pages {
        let _ = writeln!(
            out,
            "<li><a href=\"scenarios/{0}.html\">{0}</a> <span class=\"muted\">({1})</span>: {2}</li>",
            escape(&p.scenario.name),
            p.scenario.design,
            escape(&p.scenario.summary)
        );
    }
    let _ = writeln!(
        out,
        "</ul>\n<p class=\"muted\">Regenerate with <code>locklab report</code>; the same \
         pages in Markdown: <a href=\"index.md\">index.md</a>.</p>\n</body>\n</html>"
    );
    out
}

fn replay_block(out: &mut String, r: &Replay) {
    let verdict = if r.reproduced {
        "<span class=\"broken\">reproduced on real Redis</span>"
    } else {
        "<strong>not reproduced</strong> on real Redis"
    };
    let _ = writeln!(
        out,
        "<div class=\"replay\"><h3>Replay on real Redis</h3>\n<p>{verdict}; 1 tick = {} ms. \
         Model: {}. Real run: {}.</p>",
        replay::ms(r.tick_ms),
        escape(&list(&r.model_violations)),
        escape(&list(&r.real_violations))
    );
    if !r.emulations.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"muted\">Emulated, not real: {}.</p>",
            escape(&r.emulations.join("; "))
        );
    }
    let _ = writeln!(
        out,
        "<table>\n<tr><th>ms</th><th>actor</th><th>event</th><th>reply</th></tr>"
    );
    for e in &r.timeline {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            replay::ms(e.ms),
            escape(&e.actor),
            escape(&e.event),
            escape(e.reply.as_deref().unwrap_or(""))
        );
    }
    let _ = writeln!(out, "</table></div>");
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "no violation".to_string()
    } else {
        items.join(", ")
    }
}

fn counterexample(out: &mut String, name: &str, c: &Counterexample) {
    let _ = writeln!(
        out,
        "<h2 id=\"{p}\"><code>{p}</code> is violated</h2>\n<p>Shortest counterexample: \
         {} steps; the property breaks at step {} (<em>{}</em>). Trace: \
         <a href=\"{}\">{}.{p}.json</a>; in a terminal: <code>{}</code>.</p>",
        c.steps,
        c.broke_at,
        escape(&c.breaking_step),
        escape(&c.trace_link),
        escape(name),
        escape(&c.explain),
        p = c.property,
    );
    if let Some(cause) = &c.cause {
        let _ = writeln!(
            out,
            "<p class=\"cause\"><strong>{}</strong></p>",
            escape(&sentence(cause))
        );
    }
    // The step column is drawn twice: in the diagram, and over it, kept in view while
    // a wide diagram scrolls.
    let _ = writeln!(
        out,
        "<div class=\"pair\">\n<div class=\"diagram\"><div class=\"seq\">"
    );
    out.push_str(&c.svg);
    out.push_str(&c.gutter);
    let _ = writeln!(out, "</div></div>");
    if let Some(r) = &c.replay {
        replay_block(out, r);
    }
    let _ = writeln!(out, "</div>");
    if let Some(f) = &c.fix {
        let _ = writeln!(
            out,
            "<div class=\"fix\"><strong>The fix:</strong> {}.<br>{}</div>",
            escape(&f.remedy),
            escape(&f.why)
        );
    }
}

/// `scenarios/<name>.html`.
pub fn page(p: &Page) -> String {
    let s = &p.scenario;
    let mut out = String::new();
    head(&mut out, &format!("{}: locklab", s.name));
    let _ = writeln!(
        out,
        "<nav><a href=\"../index.html\">← all scenarios</a><a href=\"{}.md\">Markdown</a></nav>\n\
         <h1>{}</h1>\n<p class=\"lead\">{}</p>",
        escape(&s.name),
        escape(&s.name),
        escape(&s.summary)
    );
    let _ = writeln!(out, "<h2>The pitfall</h2>");
    for pattern in &p.patterns {
        let _ = writeln!(
            out,
            "<p>{} <span class=\"muted\">(seed: {})</span></p>",
            escape(&capitalise(pattern.pattern)),
            escape(pattern.seeds)
        );
    }
    let _ = writeln!(out, "<h2>Settings</h2>\n<table>");
    for (k, v) in &p.settings {
        let _ = writeln!(out, "<tr><th>{k}</th><td>{}</td></tr>", escape(v));
    }
    let _ = writeln!(out, "</table>");
    let _ = writeln!(
        out,
        "<h2>Verdicts</h2>\n<p class=\"muted\">{}</p>\n<table>\n<tr><th>property</th><th>expected</th><th>found</th></tr>",
        escape(LEGEND)
    );
    for v in &p.verdicts {
        let href = format!("#{}", v.property);
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td>{}</tr>",
            v.property,
            v.expected,
            verdict_cell(v, Some(&href))
        );
    }
    let _ = writeln!(out, "</table>");
    if let Some(e) = &p.error {
        let _ = writeln!(out, "<p class=\"broken\">⚠ {}</p>", escape(e));
    }
    for c in &p.counterexamples {
        counterexample(&mut out, &s.name, c);
    }
    if let Some(soak) = &p.soak {
        let _ = writeln!(
            out,
            "<h2 id=\"soak\">Soak on real Redis</h2>\n<p>The same lock soaked on real Redis \
             containers with faults injected at random (<code>locklab soak</code>): each \
             client's critical sections, the faults shaded, each property's first violation \
             marked. <a href=\"{0}\">The timeline on its own</a>.</p>\n<p class=\"soak\">\
             <img src=\"{0}\" alt=\"soak timeline of {1}\"></p>",
            escape(soak),
            escape(&s.name)
        );
    }
    if p.counterexamples.is_empty() && p.error.is_none() {
        let _ = writeln!(
            out,
            "<p>Every property holds: the model found no counterexample in any interleaving \
             within the scenario's bounds.</p>"
        );
    }
    let _ = writeln!(out, "</body>\n</html>");
    out
}

/// The first letter in upper case.
pub fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
