//! The sequence diagram as a standalone SVG: lanes with lifelines, arrows labelled with
//! the command or reply, fault marks, clock-tick rules, a band where a property broke,
//! and on the right the lock key on every node after each row (changed cells in bold).
//!
//! Integer coordinates and a fixed font size keep the output byte-for-byte reproducible.

use std::fmt::Write as _;

use super::{Event, Sequence};
use crate::xml::escape;

const MARGIN: i64 = 84;
const LANE: i64 = 200;
const KEY: i64 = 170;
const TOP: i64 = 86;
const ROW: i64 = 30;
const BAND: i64 = 24;
/// Approximate width of one character at the 12 px monospace font.
const CHAR: f64 = 7.3;

const FAULT: &str = "#c62828";
const BROKEN: &str = "#b71c1c";
const REPLY: &str = "#1565c0";
const REQUEST: &str = "#263238";
const RECOVER: &str = "#2e7d32";
const LOCAL: &str = "#6a1b9a";
const MUTED: &str = "#78909c";

/// A count of lanes, nodes or rows as a pixel factor (diagrams have a few dozen).
fn px(n: usize) -> i64 {
    i64::try_from(n).expect("diagram counts are small")
}

fn x(lane: usize) -> i64 {
    MARGIN + LANE * px(lane) + LANE / 2
}

fn text_width(s: &str) -> i64 {
    // A label's width in pixels: a few hundred at most.
    #[allow(clippy::cast_possible_truncation)]
    let w = (s.chars().count() as f64 * CHAR).ceil() as i64;
    w
}

/// `<text>` with a white halo so that it stays readable across lifelines.
fn label(out: &mut String, x: i64, y: i64, anchor: &str, fill: &str, text: &str) {
    let _ = writeln!(
        out,
        r#"<text x="{x}" y="{y}" text-anchor="{anchor}" fill="{fill}" class="halo">{}</text>"#,
        escape(text)
    );
}

/// The diagram as an `<svg>` element; `id` makes its marker ids unique on a page that
/// shows several diagrams.
pub fn render(seq: &Sequence, id: &str) -> String {
    let lanes = seq.lanes.len();
    let nodes = seq.nodes();
    let has_skew = seq.rows.iter().any(|r| !r.skew.is_empty());
    let keys_x = MARGIN + LANE * px(lanes) + 16;
    let skew_width = if has_skew {
        seq.rows
            .iter()
            .map(|r| text_width(&r.skew.join(", ")))
            .max()
            .unwrap_or(0)
            .max(text_width("other clocks"))
            + 16
    } else {
        0
    };
    let width = keys_x + KEY * px(nodes) + skew_width + 8;
    let bands = px(seq.rows.iter().filter(|r| !r.broken.is_empty()).count());
    let height = TOP + ROW * (px(seq.rows.len()) + 1) + BAND * 2 * bands + 40;
    let id = id.replace(|c: char| !c.is_ascii_alphanumeric(), "-");
    let head = format!("{id}-head");
    let reply_head = format!("{id}-reply");
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12" role="img" aria-label="{}">"#,
        escape(&format!("sequence diagram of a {} run", seq.scenario))
    );
    let _ = writeln!(
        out,
        "<style>.halo{{paint-order:stroke;stroke:#ffffff;stroke-width:4px;stroke-linejoin:round}}</style>"
    );
    let _ = writeln!(
        out,
        r#"<defs><marker id="{head}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{REQUEST}"/></marker><marker id="{reply_head}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{REPLY}"/></marker></defs>"#
    );
    let _ = writeln!(
        out,
        r##"<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>"##
    );
    let bottom = height - 30;
    // Lane heads and lifelines.
    for (i, lane) in seq.lanes.iter().enumerate() {
        let cx = x(i);
        let client = i < seq.clients;
        let fill = if client { "#e3f2fd" } else { "#fff3e0" };
        let _ = writeln!(
            out,
            r##"<line x1="{cx}" y1="54" x2="{cx}" y2="{bottom}" stroke="#b0bec5" stroke-width="1.5"/>"##
        );
        let _ = writeln!(
            out,
            r##"<rect x="{}" y="12" width="120" height="40" rx="6" fill="{fill}" stroke="#546e7a"/>"##,
            cx - 60
        );
        let _ = writeln!(
            out,
            r#"<text x="{cx}" y="30" text-anchor="middle" font-weight="bold">{}</text>"#,
            escape(&lane.name)
        );
        let role = if client { "client" } else { lane.role.as_str() };
        let _ = writeln!(
            out,
            r#"<text x="{cx}" y="45" text-anchor="middle" font-size="10" fill="{MUTED}">{}</text>"#,
            escape(role)
        );
    }
    // The key panel's heads and the left margin's head.
    let _ = writeln!(
        out,
        r#"<text x="8" y="30" font-weight="bold">step</text><text x="8" y="45" font-size="10" fill="{MUTED}">t = clock</text>"#
    );
    for n in 0..nodes {
        let kx = keys_x + KEY * px(n);
        let _ = writeln!(
            out,
            r#"<text x="{kx}" y="30" font-weight="bold">lock key on {}</text><text x="{kx}" y="45" font-size="10" fill="{MUTED}">after the step</text>"#,
            escape(&seq.lanes[seq.node_lane(n)].name)
        );
    }
    if has_skew {
        let sx = keys_x + KEY * px(nodes);
        let _ = writeln!(
            out,
            r#"<text x="{sx}" y="30" font-weight="bold">other clocks</text><text x="{sx}" y="45" font-size="10" fill="{MUTED}">where not = t</text>"#
        );
    }
    // The initial keys.
    let mut y = TOP;
    draw_keys(&mut out, seq, keys_x, y, &seq.initial_keys, None);
    let _ = writeln!(out, r#"<text x="8" y="{y}" fill="{MUTED}">start</text>"#);
    let mut previous = &seq.initial_keys;
    for row in &seq.rows {
        y += ROW;
        let _ = writeln!(
            out,
            r#"<text x="8" y="{y}">{:>3}</text><text x="40" y="{y}" fill="{MUTED}">t={}</text>"#,
            row.step, row.clock
        );
        let line_y = y - 4;
        match &row.event {
            Event::Request { from, to } => {
                for &t in to {
                    arrow(&mut out, x(*from), x(t), line_y, REQUEST, "", &head);
                }
                let far = to.iter().copied().max_by_key(|&t| (x(t) - x(*from)).abs());
                let mid = far.map_or(x(*from), |t| (x(*from) + x(t)) / 2);
                label(&mut out, mid, line_y - 5, "middle", REQUEST, &row.label);
            }
            Event::Reply { from, to, held } => {
                if *held {
                    let mid = (x(*from) + x(*to)) / 2;
                    let _ = writeln!(
                        out,
                        r#"<line x1="{}" y1="{line_y}" x2="{mid}" y2="{line_y}" stroke="{REPLY}" stroke-width="1.5" stroke-dasharray="6 4"/>"#,
                        x(*from)
                    );
                    let _ = writeln!(
                        out,
                        r#"<rect x="{}" y="{}" width="3" height="14" fill="{FAULT}"/><rect x="{}" y="{}" width="3" height="14" fill="{FAULT}"/>"#,
                        mid - 4,
                        line_y - 7,
                        mid + 1,
                        line_y - 7
                    );
                } else {
                    arrow(
                        &mut out,
                        x(*from),
                        x(*to),
                        line_y,
                        REPLY,
                        "6 4",
                        &reply_head,
                    );
                }
                label(
                    &mut out,
                    (x(*from) + x(*to)) / 2,
                    line_y - 5,
                    "middle",
                    REPLY,
                    &row.label,
                );
            }
            Event::HeldReply { from, to } => {
                arrow(
                    &mut out,
                    x(*from),
                    x(*to),
                    line_y,
                    REPLY,
                    "6 4",
                    &reply_head,
                );
                label(
                    &mut out,
                    (x(*from) + x(*to)) / 2,
                    line_y - 5,
                    "middle",
                    REPLY,
                    &row.label,
                );
            }
            Event::Replicate { from, to } => {
                arrow(&mut out, x(*from), x(*to), line_y, MUTED, "2 3", &head);
                label(
                    &mut out,
                    (x(*from) + x(*to)) / 2,
                    line_y - 5,
                    "middle",
                    MUTED,
                    &row.label,
                );
            }
            Event::Local { at } => {
                let cx = x(*at);
                let _ = writeln!(
                    out,
                    r#"<path d="M{cx},{} L{},{line_y} L{cx},{} L{},{line_y} z" fill="{LOCAL}"/>"#,
                    line_y - 6,
                    cx + 6,
                    line_y + 6,
                    cx - 6
                );
                beside(&mut out, lanes, *at, line_y, LOCAL, &row.label);
            }
            Event::Fault { at } => {
                for &l in at {
                    let cx = x(l);
                    let _ = writeln!(
                        out,
                        r##"<rect x="{}" y="{}" width="16" height="16" rx="3" fill="{FAULT}"/><text x="{cx}" y="{}" text-anchor="middle" fill="#ffffff" font-weight="bold">!</text>"##,
                        cx - 8,
                        line_y - 8,
                        line_y + 4
                    );
                }
                spanning(&mut out, lanes, at, line_y, FAULT, &row.label);
            }
            Event::Recover { at } => {
                for &l in at {
                    let _ = writeln!(
                        out,
                        r##"<circle cx="{}" cy="{line_y}" r="6" fill="#ffffff" stroke="{RECOVER}" stroke-width="2.5"/>"##,
                        x(l)
                    );
                }
                spanning(&mut out, lanes, at, line_y, RECOVER, &row.label);
            }
            Event::Tick => {
                let _ = writeln!(
                    out,
                    r#"<line x1="{MARGIN}" y1="{line_y}" x2="{}" y2="{line_y}" stroke="{MUTED}" stroke-dasharray="1 4"/>"#,
                    MARGIN + LANE * px(lanes)
                );
                label(
                    &mut out,
                    MARGIN + 4,
                    line_y - 4,
                    "start",
                    MUTED,
                    &format!("tick: {}", row.label),
                );
            }
        }
        draw_keys(&mut out, seq, keys_x, y, &row.keys, Some(previous));
        if !row.skew.is_empty() {
            let sx = keys_x + KEY * px(nodes);
            let _ = writeln!(
                out,
                r#"<text x="{sx}" y="{y}" fill="{FAULT}">{}</text>"#,
                escape(&row.skew.join(", "))
            );
        }
        previous = &row.keys;
        if !row.broken.is_empty() {
            let band_y = y + 8;
            let _ = writeln!(
                out,
                r##"<rect x="4" y="{band_y}" width="{}" height="{}" fill="#ffebee" stroke="{BROKEN}" stroke-width="1.5"/>"##,
                width - 8,
                BAND * 2 - 6
            );
            let _ = writeln!(
                out,
                r#"<text x="12" y="{}" fill="{BROKEN}" font-weight="bold">✖ {} broken here</text>"#,
                band_y + 16,
                escape(&row.broken.join(", "))
            );
            let _ = writeln!(
                out,
                r#"<text x="12" y="{}" fill="{BROKEN}">{}</text>"#,
                band_y + 34,
                escape(&row.clients.join("   "))
            );
            y += BAND * 2;
        }
    }
    out.push_str("</svg>\n");
    out
}

/// A label beside a mark on one lane: to its right, or to its left on the last lane
/// (the key panel is on the right).
fn beside(out: &mut String, lanes: usize, lane: usize, y: i64, fill: &str, text: &str) {
    if lane + 1 == lanes && lanes > 1 {
        label(out, x(lane) - 14, y + 4, "end", fill, text);
    } else {
        label(out, x(lane) + 14, y + 4, "start", fill, text);
    }
}

/// A label for marks on one or more lanes: beside a single mark; above a thin
/// connector between several.
fn spanning(out: &mut String, lanes: usize, at: &[usize], y: i64, fill: &str, text: &str) {
    let (lo, hi) = (
        at.iter().copied().min().unwrap_or(0),
        at.iter().copied().max().unwrap_or(0),
    );
    if lo == hi {
        beside(out, lanes, lo, y, fill, text);
        return;
    }
    let _ = writeln!(
        out,
        r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{fill}" stroke-width="1" stroke-dasharray="3 3"/>"#,
        x(lo) + 9,
        x(hi) - 9
    );
    label(out, (x(lo) + x(hi)) / 2, y - 5, "middle", fill, text);
}

fn arrow(out: &mut String, x1: i64, x2: i64, y: i64, colour: &str, dash: &str, head: &str) {
    if x1 == x2 {
        return;
    }
    // Stop short of the target lifeline so the head stays visible.
    let end = if x2 > x1 { x2 - 3 } else { x2 + 3 };
    let dash = if dash.is_empty() {
        String::new()
    } else {
        format!(r#" stroke-dasharray="{dash}""#)
    };
    let _ = writeln!(
        out,
        r#"<circle cx="{x1}" cy="{y}" r="3" fill="{colour}"/><line x1="{x1}" y1="{y}" x2="{end}" y2="{y}" stroke="{colour}" stroke-width="1.5"{dash} marker-end="url(#{head})"/>"#
    );
}

fn draw_keys(
    out: &mut String,
    seq: &Sequence,
    keys_x: i64,
    y: i64,
    keys: &[String],
    previous: Option<&Vec<String>>,
) {
    for n in 0..seq.nodes() {
        let key = keys.get(n).map_or("-", String::as_str);
        let changed = previous.is_some_and(|p| p.get(n).map(String::as_str) != Some(key));
        let (weight, fill) = match (changed, key) {
            (_, "down") => ("bold", FAULT),
            (true, _) => ("bold", "#000000"),
            (false, _) => ("normal", MUTED),
        };
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{y}" font-weight="{weight}" fill="{fill}">{}</text>"#,
            keys_x + KEY * px(n),
            escape(key)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::{build, tests::pause_trace};
    use super::*;

    #[test]
    fn every_row_is_drawn_and_the_markup_is_balanced() {
        let seq = build(&pause_trace());
        let svg = render(&seq, "pause.mutual_exclusion");
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains(r#"marker id="pause-mutual-exclusion-head""#));
        assert!(svg.contains("acquire: SET lock t1 NX PX 4"), "{svg}");
        assert!(svg.contains("✖ mutual_exclusion broken here"), "{svg}");
        assert!(svg.contains(">t1 client1 ttl 3</text>"), "{svg}");
        // Each step has its step number in the margin.
        for row in &seq.rows {
            assert!(svg.contains(&format!(">{:>3}</text>", row.step)));
        }
        assert_eq!(svg.matches("<svg").count(), svg.matches("</svg>").count());
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        assert!(!svg.contains("http://") || svg.matches("http://").count() == 1);
        // The same trace draws the same bytes.
        assert_eq!(
            svg,
            render(&build(&pause_trace()), "pause.mutual_exclusion")
        );
    }
}
