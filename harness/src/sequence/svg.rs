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
const PAUSED: &str = "#ef8f00";

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

/// A diagram's size: its width, the height of its rows (above the legend) and in all.
struct Frame {
    width: i64,
    body: i64,
    height: i64,
}

fn frame(seq: &Sequence) -> Frame {
    let skew_width = if seq.rows.iter().any(|r| !r.skew.is_empty()) {
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
    let keys_x = MARGIN + LANE * px(seq.lanes.len()) + 16;
    let width = keys_x + KEY * px(seq.nodes()) + skew_width + 8;
    let bands = px(seq.rows.iter().filter(|r| !r.broken.is_empty()).count());
    let body = TOP + ROW * (px(seq.rows.len()) + 1) + BAND * 2 * bands + 40;
    let lines = legend_layout(width)
        .iter()
        .map(|&(_, _, line)| line)
        .max()
        .map_or(0, |l| l + 1);
    Frame {
        width,
        body,
        height: body + LEGEND_LINE * lines,
    }
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
    let Frame {
        width,
        body,
        height,
    } = frame(seq);
    let legend = legend_layout(width);
    let id = id.replace(|c: char| !c.is_ascii_alphanumeric(), "-");
    let head = format!("{id}-head");
    let reply_head = format!("{id}-reply");
    let hatch = format!("{id}-paused");
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
        r##"<defs><marker id="{head}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{REQUEST}"/></marker><marker id="{reply_head}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{REPLY}"/></marker><pattern id="{hatch}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff3e0"/><rect width="3" height="6" fill="{PAUSED}"/></pattern></defs>"##
    );
    let _ = writeln!(
        out,
        r##"<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>"##
    );
    let bottom = body - 30;
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
    step_head(&mut out);
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
        step_cell(&mut out, y, row.step, row.clock);
        let line_y = y - 4;
        // A paused client's lifeline, from this row to the next: the process stands
        // still (drawn unlike a reply in flight, which is an arrow).
        let span = ROW + if row.broken.is_empty() { 0 } else { BAND * 2 };
        for &l in &row.paused {
            let _ = writeln!(
                out,
                r#"<rect x="{}" y="{line_y}" width="10" height="{span}" fill="url(#{hatch})" stroke="{PAUSED}" stroke-width="1"><title>{} paused (stop-the-world)</title></rect>"#,
                x(l) - 5,
                escape(&seq.lanes[l].name)
            );
        }
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
            // The words start right of the step column, which stays in view
            // ([`gutter`]) when a wide diagram scrolls.
            let _ = writeln!(
                out,
                r#"<text x="12" y="{0}" fill="{BROKEN}" font-weight="bold">✖</text><text x="{1}" y="{0}" fill="{BROKEN}" font-weight="bold">{2} broken here</text>"#,
                band_y + 16,
                MARGIN + 8,
                escape(&row.broken.join(", "))
            );
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" fill="{BROKEN}">{}</text>"#,
                MARGIN + 8,
                band_y + 34,
                escape(&row.clients.join("   "))
            );
            y += BAND * 2;
        }
    }
    draw_legend(&mut out, &legend, body - 10, &head, &reply_head, &hatch);
    out.push_str("</svg>\n");
    out
}

/// The step column of [`render`]'s diagram alone, as tall as it: a page lays it over
/// the diagram's own column and keeps it in view while a wide diagram scrolls.
pub fn gutter(seq: &Sequence) -> String {
    let Frame { body, height, .. } = frame(seq);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="gutter" width="{MARGIN}" height="{height}" viewBox="0 0 {MARGIN} {height}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12" aria-hidden="true"><rect x="0" y="0" width="{MARGIN}" height="{0}" fill="#ffffff"/><line x1="{1}" y1="0" x2="{1}" y2="{0}" stroke="#d0d7de"/>"##,
        body - 30,
        MARGIN - 1
    );
    step_head(&mut out);
    let mut y = TOP;
    let _ = writeln!(out, r#"<text x="8" y="{y}" fill="{MUTED}">start</text>"#);
    for row in &seq.rows {
        y += ROW;
        step_cell(&mut out, y, row.step, row.clock);
        if !row.broken.is_empty() {
            let _ = writeln!(
                out,
                r##"<rect x="4" y="{}" width="{}" height="{}" fill="#ffebee" stroke="{BROKEN}" stroke-width="1.5"/><text x="12" y="{}" fill="{BROKEN}" font-weight="bold">✖</text>"##,
                y + 8,
                MARGIN,
                BAND * 2 - 6,
                y + 24
            );
            y += BAND * 2;
        }
    }
    out.push_str("</svg>\n");
    out
}

/// The step column's head, shared by the diagram and its [`gutter`] so they line up.
fn step_head(out: &mut String) {
    let _ = writeln!(
        out,
        r#"<text x="8" y="30" font-weight="bold">step</text><text x="8" y="45" font-size="10" fill="{MUTED}">t = clock</text>"#
    );
}

/// A row's step number and clock in the step column.
fn step_cell(out: &mut String, y: i64, step: usize, clock: i64) {
    let _ = writeln!(
        out,
        r#"<text x="8" y="{y}">{step:>3}</text><text x="40" y="{y}" fill="{MUTED}">t={clock}</text>"#
    );
}

/// The height of one line of the legend.
const LEGEND_LINE: i64 = 22;

/// The legend's entries: what each mark means.
const LEGEND: [(Mark, &str); 10] = [
    (Mark::Request, "request"),
    (Mark::Reply, "reply"),
    (
        Mark::Held,
        "reply on its way back (waits while its client is paused)",
    ),
    (Mark::Paused, "paused client (stop-the-world)"),
    (Mark::Replicate, "replication"),
    (Mark::Local, "local step"),
    (Mark::Fault, "fault"),
    (Mark::Recover, "recovery"),
    (Mark::Tick, "clock tick"),
    (Mark::Broken, "property broken"),
];

#[derive(Clone, Copy)]
enum Mark {
    Request,
    Reply,
    Held,
    Paused,
    Replicate,
    Local,
    Fault,
    Recover,
    Tick,
    Broken,
}

/// Each legend entry's mark, x and line, wrapped to `width`.
fn legend_layout(width: i64) -> Vec<(Mark, i64, i64)> {
    let (mut lx, mut line) = (8, 0);
    LEGEND
        .iter()
        .map(|&(mark, text)| {
            let w = 34 + text_width(text) + 18;
            if lx + w > width - 8 && lx > 8 {
                lx = 8;
                line += 1;
            }
            let at = (mark, lx, line);
            lx += w;
            at
        })
        .collect()
}

fn draw_legend(
    out: &mut String,
    layout: &[(Mark, i64, i64)],
    top: i64,
    head: &str,
    reply_head: &str,
    hatch: &str,
) {
    for (&(mark, lx, line), (_, text)) in layout.iter().zip(LEGEND) {
        let y = top + LEGEND_LINE * line + 12;
        let gy = y - 4;
        match mark {
            Mark::Request => arrow(out, lx, lx + 28, gy, REQUEST, "", head),
            Mark::Reply => arrow(out, lx, lx + 28, gy, REPLY, "6 4", reply_head),
            Mark::Replicate => arrow(out, lx, lx + 28, gy, MUTED, "2 3", head),
            Mark::Held => {
                let _ = writeln!(
                    out,
                    r#"<line x1="{lx}" y1="{gy}" x2="{}" y2="{gy}" stroke="{REPLY}" stroke-width="1.5" stroke-dasharray="6 4"/><rect x="{}" y="{}" width="3" height="14" fill="{FAULT}"/><rect x="{}" y="{}" width="3" height="14" fill="{FAULT}"/>"#,
                    lx + 20,
                    lx + 20,
                    gy - 7,
                    lx + 25,
                    gy - 7
                );
            }
            Mark::Paused => {
                let _ = writeln!(
                    out,
                    r#"<rect x="{}" y="{}" width="10" height="18" fill="url(#{hatch})" stroke="{PAUSED}" stroke-width="1"/>"#,
                    lx + 9,
                    gy - 9
                );
            }
            Mark::Local => {
                let cx = lx + 14;
                let _ = writeln!(
                    out,
                    r#"<path d="M{cx},{} L{},{gy} L{cx},{} L{},{gy} z" fill="{LOCAL}"/>"#,
                    gy - 6,
                    cx + 6,
                    gy + 6,
                    cx - 6
                );
            }
            Mark::Fault => {
                let _ = writeln!(
                    out,
                    r##"<rect x="{}" y="{}" width="16" height="16" rx="3" fill="{FAULT}"/><text x="{}" y="{}" text-anchor="middle" fill="#ffffff" font-weight="bold">!</text>"##,
                    lx + 6,
                    gy - 8,
                    lx + 14,
                    gy + 4
                );
            }
            Mark::Recover => {
                let _ = writeln!(
                    out,
                    r##"<circle cx="{}" cy="{gy}" r="6" fill="#ffffff" stroke="{RECOVER}" stroke-width="2.5"/>"##,
                    lx + 14
                );
            }
            Mark::Tick => {
                let _ = writeln!(
                    out,
                    r#"<line x1="{lx}" y1="{gy}" x2="{}" y2="{gy}" stroke="{MUTED}" stroke-dasharray="1 4"/>"#,
                    lx + 28
                );
            }
            Mark::Broken => {
                let _ = writeln!(
                    out,
                    r##"<rect x="{lx}" y="{}" width="28" height="14" fill="#ffebee" stroke="{BROKEN}" stroke-width="1.5"/>"##,
                    gy - 7
                );
            }
        }
        label(out, lx + 34, y, "start", MUTED, text);
    }
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
        assert!(
            svg.contains(">mutual_exclusion broken here</text>"),
            "{svg}"
        );
        assert!(svg.contains(">t1 client1 ttl 3</text>"), "{svg}");
        // Each step has its step number in the margin.
        for row in &seq.rows {
            assert!(svg.contains(&format!(">{:>3}</text>", row.step)));
        }
        assert_eq!(svg.matches("<svg").count(), svg.matches("</svg>").count());
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        assert!(!svg.contains("http://") || svg.matches("http://").count() == 1);
        // client1 is paused from step 2 to its resume: hatched on its lifeline (not an
        // arrow), row after row, and the legend says what the hatching is.
        let paused = svg
            .lines()
            .filter(|l| l.contains("<title>client1 paused (stop-the-world)</title>"))
            .count();
        let rows = seq.rows.iter().filter(|r| r.paused == [0]).count();
        assert!(rows >= 5 && paused == rows, "{paused} of {rows}: {svg}");
        assert!(
            svg.contains("paused client (stop-the-world)</text>"),
            "{svg}"
        );
        assert!(
            svg.contains(">reply on its way back (waits while its client is paused)</text>"),
            "{svg}"
        );
        // The step column alone is as tall as the diagram and numbers the same steps.
        let gutter = gutter(&seq);
        let height = |s: &str| {
            let h = &s[s.find("height=\"").unwrap() + 8..];
            h[..h.find('"').unwrap()].to_string()
        };
        assert_eq!(height(&gutter), height(&svg));
        for row in &seq.rows {
            assert!(gutter.contains(&format!(">{:>3}</text>", row.step)));
        }
        // The same trace draws the same bytes.
        assert_eq!(
            svg,
            render(&build(&pause_trace()), "pause.mutual_exclusion")
        );
    }
}
