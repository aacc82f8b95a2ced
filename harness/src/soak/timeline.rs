//! The timeline picture of a soak, as Jepsen's timeline: one lane per client with its
//! critical sections (grant to leave; red when granted while another client was
//! inside), faults shaded (across every lane for a node fault, on its lane for a
//! client fault), each property's first violation marked. The whole soak on
//! top, and below it one close-up per violation of the interval that shows it.

use std::fmt::Write;

use super::{FaultRecord, SoakOutcome};
use crate::run::checker::Violation;
use crate::run::history::Event;

const LEFT: f64 = 80.0;
const WIDTH: f64 = 1100.0;
const LANE: f64 = 22.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A critical section: client, from, to (None: still inside at the end), fence.
struct Section {
    client: usize,
    from: f64,
    to: Option<f64>,
    fence: Option<u64>,
}

fn sections(o: &SoakOutcome) -> Vec<Section> {
    let mut open: Vec<Option<(f64, Option<u64>)>> = vec![None; o.clients];
    let mut out = Vec::new();
    for e in &o.history.entries {
        match &e.event {
            Event::Acquired { client, fence } => open[*client] = Some((e.ms, *fence)),
            Event::Leave { client } | Event::Crash { client } | Event::Done { client } => {
                if let Some((from, fence)) = open[*client].take() {
                    out.push(Section {
                        client: *client,
                        from,
                        to: Some(e.ms),
                        fence,
                    });
                }
            }
            _ => {}
        }
    }
    for (client, s) in open.into_iter().enumerate() {
        if let Some((from, fence)) = s {
            out.push(Section {
                client,
                from,
                to: None,
                fence,
            });
        }
    }
    out
}

fn fault_color(kind: &str) -> &'static str {
    match kind {
        "pause" => "#f5c542",
        "crash" => "#999999",
        "failover" => "#e07b39",
        "restart" => "#b56be0",
        "partition" => "#5fb0e0",
        "container-pause" => "#7fd18b",
        "lost-reply" => "#6b6bd6",
        "split-brain" => "#c9844d",
        "late-request" => "#3fb8a8",
        "renewal-race" => "#8fa83f",
        "slow-steps" => "#cfcfcf",
        _ => "#e05f9a",
    }
}

/// Draw one panel of `[t0, t1]` ms at `y`; returns its height.
fn panel(
    svg: &mut String,
    o: &SoakOutcome,
    secs: &[Section],
    y: f64,
    t0: f64,
    t1: f64,
    title: &str,
) -> f64 {
    let span = (t1 - t0).max(1.0);
    let x = |ms: f64| LEFT + (ms.clamp(t0, t1) - t0) / span * WIDTH;
    // The violations' labels, each on the first of their lines where it overlaps no
    // other, between the title and the lanes.
    let marks: Vec<_> = o
        .verdicts
        .violations
        .iter()
        .filter(|v| v.ms >= t0 && v.ms <= t1)
        .collect();
    let mut ends: Vec<f64> = Vec::new();
    // A label near the right edge goes to the left of its mark.
    let left_of =
        |v: &&Violation| x(v.ms) + 3.0 + label_width(v.property.as_str()) > LEFT + WIDTH + 16.0;
    let placed: Vec<usize> = marks
        .iter()
        .map(|v| {
            let w = label_width(v.property.as_str());
            let (from, to) = if left_of(v) {
                (x(v.ms) - 3.0 - w, x(v.ms) - 3.0)
            } else {
                (x(v.ms) + 3.0, x(v.ms) + 3.0 + w)
            };
            let line = ends.iter().position(|&end| from > end + 6.0);
            let line = line.unwrap_or_else(|| {
                ends.push(f64::MIN);
                ends.len() - 1
            });
            ends[line] = to;
            line
        })
        .collect();
    let lanes_top = y + 24.0 + LABEL_LINE * ends.len() as f64;
    let height = o.clients as f64 * LANE;
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="{:.1}" font-size="13" font-weight="bold">{}</text>"#,
        y + 14.0,
        esc(title)
    );
    for c in 0..o.clients {
        let ly = lanes_top + c as f64 * LANE;
        let fill = if c % 2 == 0 { "#f7f7f7" } else { "#ffffff" };
        let _ = writeln!(
            svg,
            r#"<rect x="{LEFT}" y="{ly:.1}" width="{WIDTH}" height="{LANE}" fill="{fill}"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">client{}</text>"#,
            LEFT - 6.0,
            ly + LANE * 0.65,
            c + 1
        );
    }
    for s in secs
        .iter()
        .filter(|s| s.to.unwrap_or(t1) >= t0 && s.from <= t1)
    {
        let to = s.to.unwrap_or(t1);
        let w = (x(to) - x(s.from)).max(1.0);
        let fence = s
            .fence
            .map(|f| format!(", fencing token {f}"))
            .unwrap_or_default();
        // Granted while another client was inside: a breach of mutual exclusion.
        let breach = secs
            .iter()
            .any(|o| o.client != s.client && o.from <= s.from && o.to.is_none_or(|t| t > s.from));
        let (fill, note) = if breach {
            ("#d62728", " (granted while another client was inside)")
        } else {
            ("#3a6fd8", "")
        };
        let _ = writeln!(
            svg,
            r##"<rect x="{:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="{fill}"><title>client{} in its critical section {:.1} to {}{fence}{note}</title></rect>"##,
            x(s.from),
            lanes_top + s.client as f64 * LANE + 4.0,
            LANE - 8.0,
            s.client + 1,
            s.from,
            s.to.map(|t| format!("{t:.1} ms"))
                .unwrap_or_else(|| "the end".into()),
        );
    }
    for f in o
        .faults
        .iter()
        // Clock drift lasts the whole soak: named above the first panel, not shaded.
        .filter(|f| f.end_ms >= t0 && f.start_ms <= t1 && f.kind != "clock-drift")
    {
        let (fy, fh) = match f.client {
            Some(c) => (lanes_top + c as f64 * LANE, LANE),
            None => (lanes_top, height),
        };
        // Over the critical sections, translucent, and never thinner than 4 px: a
        // 50 ms pause in a minute-long soak stays visible.
        let w = (x(f.end_ms) - x(f.start_ms)).max(4.0);
        let _ = writeln!(
            svg,
            r#"<rect x="{:.1}" y="{fy:.1}" width="{w:.1}" height="{fh:.1}" fill="{1}" fill-opacity="0.55" stroke="{1}" stroke-width="1"><title>{2}</title></rect>"#,
            x(f.start_ms),
            fault_color(&f.kind),
            esc(&fault_title(f))
        );
    }
    for (v, line) in marks.iter().zip(&placed) {
        let vx = x(v.ms);
        let ty = y + 24.0 + LABEL_LINE * (*line as f64 + 1.0) - 3.0;
        let (tx, anchor) = if left_of(v) {
            (vx - 3.0, "end")
        } else {
            (vx + 3.0, "start")
        };
        let _ = writeln!(
            svg,
            r##"<line x1="{vx:.1}" y1="{:.1}" x2="{vx:.1}" y2="{:.1}" stroke="#d62728" stroke-width="2"><title>{} at {:.1} ms: {}</title></line><text x="{tx:.1}" y="{ty:.1}" font-size="11" fill="#d62728" text-anchor="{anchor}">{}</text>"##,
            ty - 9.0,
            lanes_top + height + 4.0,
            v.property,
            v.ms,
            esc(&v.detail),
            v.property
        );
    }
    // The time axis.
    let axis = lanes_top + height + 14.0;
    let step = nice_step(span / 8.0);
    let mut t = (t0 / step).ceil() * step;
    while t <= t1 {
        let label = if step >= 1000.0 {
            format!("{:.0} s", t / 1000.0)
        } else {
            format!("{t:.0} ms")
        };
        let _ = writeln!(
            svg,
            r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#bbbbbb"/><text x="{0:.1}" y="{3:.1}" font-size="10" text-anchor="middle">{label}</text>"##,
            x(t),
            lanes_top + height,
            lanes_top + height + 4.0,
            axis
        );
        t += step;
    }
    lanes_top - y + height + 30.0
}

/// The height of one line of violation labels.
const LABEL_LINE: f64 = 13.0;

/// A label's width at the 11 px font, generously.
fn label_width(text: &str) -> f64 {
    text.chars().count() as f64 * 6.6
}

fn fault_title(f: &FaultRecord) -> String {
    format!(
        "{} {:.1} to {:.1} ms{}: {}",
        f.kind,
        f.start_ms,
        f.end_ms,
        if f.aimed { " (aimed)" } else { "" },
        f.what
    )
}

/// A round step of about `raw` ms: 1, 2 or 5 times a power of ten.
fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.max(1.0).log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

/// The SVG of a soak: `title` on top.
pub fn svg(o: &SoakOutcome, title: &str) -> String {
    let secs = sections(o);
    let end = o
        .history
        .entries
        .last()
        .map(|e| e.ms)
        .unwrap_or(1.0)
        .max(1.0);
    let mut body = String::new();
    let mut y = 30.0;
    let whole = match o.faults.iter().find(|f| f.kind == "clock-drift") {
        Some(d) => format!("whole soak; throughout, {}", d.what),
        None => "whole soak".to_string(),
    };
    y += panel(&mut body, o, &secs, y, 0.0, end, &whole);
    for v in &o.verdicts.violations {
        let (a, b) = o.interval(v);
        let pad = ((b - a) * 0.15).max(20.0);
        y += panel(
            &mut body,
            o,
            &secs,
            y,
            (a - pad).max(0.0),
            b + pad,
            &format!("{} at {:.1} ms: {}", v.property, v.ms, v.detail),
        ) + 10.0;
    }
    let mut legend = String::new();
    let mut lx = LEFT;
    // The fault kinds of this run only.
    for (kind, label) in [
        ("", "critical section"),
        ("breach", "overlapping grant"),
        ("pause", "pause"),
        ("crash", "crash"),
        ("lost-reply", "lost reply"),
        ("failover", "failover"),
        ("split-brain", "split brain"),
        ("restart", "restart"),
        ("partition", "partition"),
        ("container-pause", "container pause"),
        ("late-request", "late request"),
        ("renewal-race", "renewal race"),
        ("clock-jump", "clock jump"),
        ("slow-steps", "slow steps"),
    ]
    .into_iter()
    .filter(|(kind, _)| matches!(*kind, "" | "breach") || o.faults.iter().any(|f| f.kind == *kind))
    {
        let color = match kind {
            "" => "#3a6fd8",
            "breach" => "#d62728",
            k => fault_color(k),
        };
        if lx + 110.0 > LEFT + WIDTH {
            lx = LEFT;
            y += 16.0;
        }
        let _ = write!(
            legend,
            r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="10" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="10">{label}</text>"#,
            y,
            lx + 16.0,
            y + 9.0
        );
        lx += 110.0;
    }
    if lx + 110.0 > LEFT + WIDTH {
        lx = LEFT;
        y += 16.0;
    }
    let _ = write!(
        legend,
        r##"<line x1="{lx:.1}" y1="{:.1}" x2="{lx:.1}" y2="{:.1}" stroke="#d62728" stroke-width="2"/><text x="{:.1}" y="{:.1}" font-size="10">violation</text>"##,
        y - 1.0,
        y + 11.0,
        lx + 6.0,
        y + 9.0
    );
    let height = y + 30.0;
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{:.0}" height="{height:.0}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
<text x="{LEFT}" y="20" font-size="15" font-weight="bold">{}</text>
{body}{legend}
</svg>
"#,
        LEFT + WIDTH + 20.0,
        esc(title)
    )
}
