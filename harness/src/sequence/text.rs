//! The sequence diagram for a terminal: one line per row, lanes as columns of `│`,
//! `──>` for a request, `<┄┄` for a reply, `✖` for a fault, `◆` for a local step, a
//! dotted rule for a clock tick; the row's words on the right, then the lock key on
//! every node whenever it changed, and a `BROKEN` line where a property broke.

use std::fmt::Write as _;

use super::{Event, Sequence};

/// Characters per lane.
const LANE: usize = 12;

/// Character positions of the lanes' lifelines.
fn lifeline(lane: usize) -> usize {
    lane * LANE + LANE / 2
}

/// The lane area of one row.
struct Canvas(Vec<char>);

impl Canvas {
    /// Lifelines, heavy (`┃`) for the `paused` lanes.
    fn new(lanes: usize, paused: &[usize]) -> Self {
        let mut cells = vec![' '; lanes * LANE];
        for l in 0..lanes {
            cells[lifeline(l)] = if paused.contains(&l) { '┃' } else { '│' };
        }
        Canvas(cells)
    }

    fn set(&mut self, at: usize, c: char) {
        if let Some(cell) = self.0.get_mut(at) {
            *cell = c;
        }
    }

    /// A horizontal line between two lifelines (exclusive), crossing others with `┼`.
    fn line(&mut self, a: usize, b: usize, c: char) {
        let (lo, hi) = (lifeline(a.min(b)), lifeline(a.max(b)));
        for x in lo + 1..hi {
            let cross = matches!(self.0[x], '│' | '┃');
            self.set(x, if cross { '┼' } else { c });
        }
    }

    /// An arrow from lane `a` to lane `b`, head at `b`.
    fn arrow(&mut self, a: usize, b: usize, c: char) {
        if a == b {
            return;
        }
        self.line(a, b, c);
        self.set(lifeline(a), '●');
        if b > a {
            self.set(lifeline(b) - 1, '>');
        } else {
            self.set(lifeline(b) + 1, '<');
        }
    }

    fn text(&self) -> String {
        self.0.iter().collect()
    }
}

fn draw(seq: &Sequence, event: &Event, paused: &[usize]) -> String {
    let mut c = Canvas::new(seq.lanes.len(), paused);
    match event {
        Event::Request { from, to } => {
            for &t in to {
                c.arrow(*from, t, '─');
            }
        }
        Event::Reply { from, to, held } => {
            if *held {
                // The reply stops halfway: it waits in the paused client's buffer.
                let (a, b) = (lifeline(*from), lifeline(*to));
                let mid = (a + b) / 2;
                for x in mid.min(a) + 1..mid.max(a) {
                    c.set(x, '┄');
                }
                c.set(mid, '‖');
                c.set(a, '●');
            } else {
                c.arrow(*from, *to, '┄');
            }
        }
        Event::HeldReply { from, to } => c.arrow(*from, *to, '┄'),
        Event::Replicate { from, to } => c.arrow(*from, *to, '═'),
        Event::Local { at } => c.set(lifeline(*at), '◆'),
        Event::Fault { at } => at.iter().for_each(|&l| c.set(lifeline(l), '✖')),
        Event::Recover { at } => at.iter().for_each(|&l| c.set(lifeline(l), '○')),
        Event::Tick => {
            for x in 0..c.0.len() {
                if !matches!(c.0[x], '│' | '┃') {
                    c.set(x, '┈');
                }
            }
        }
    }
    c.text()
}

/// The diagram, one line per row (plus key and BROKEN lines), for a terminal.
pub fn render(seq: &Sequence) -> String {
    let mut out = String::new();
    let margin = "          ";
    let names: String = seq
        .lanes
        .iter()
        .map(|l| format!("{:^LANE$}", l.name))
        .collect();
    let _ = writeln!(out, "step   t  {names}");
    let roles: String = seq
        .lanes
        .iter()
        .map(|l| format!("{:^LANE$}", short_role(&l.role)))
        .collect();
    if roles.trim() != "" {
        let _ = writeln!(out, "{margin}{}", roles.trim_end());
    }
    let blank = Canvas::new(seq.lanes.len(), &[]).text();
    let _ = writeln!(
        out,
        "{margin}{blank}  {}",
        keys_line(seq, &seq.initial_keys)
    );
    let mut keys = &seq.initial_keys;
    let mut skew: &[String] = &[];
    for row in &seq.rows {
        let who = match &row.event {
            Event::Request { from, .. } | Event::Local { at: from } => {
                format!("{}: ", seq.lanes[*from].name)
            }
            Event::Reply { from, .. }
            | Event::HeldReply { to: from, .. }
            | Event::Replicate { to: from, .. } => format!("{}: ", seq.lanes[*from].name),
            Event::Fault { at } | Event::Recover { at } => match at.first() {
                Some(&l) if at.len() == 1 => format!("{}: ", seq.lanes[l].name),
                _ => String::new(),
            },
            Event::Tick => String::new(),
        };
        let _ = writeln!(
            out,
            "{:>4} {:>3}  {}  {who}{}",
            row.step,
            row.clock,
            draw(seq, &row.event, &row.paused),
            row.label
        );
        // Between rows, a paused client's lifeline stays heavy.
        let blank = Canvas::new(seq.lanes.len(), &row.paused).text();
        if &row.keys != keys || row.skew != skew {
            let mut state = keys_line(seq, &row.keys);
            if !row.skew.is_empty() {
                let _ = write!(state, "   clocks: {}", row.skew.join(", "));
            }
            let _ = writeln!(out, "{margin}{blank}  {state}");
            keys = &row.keys;
            skew = &row.skew;
        }
        if !row.broken.is_empty() {
            let _ = writeln!(
                out,
                "{margin}{}  ✖ BROKEN: {}",
                "━".repeat(blank.chars().count()),
                row.broken.join(", ")
            );
            for c in &row.clients {
                let _ = writeln!(out, "{margin}{blank}    {c}");
            }
        }
    }
    let _ = writeln!(
        out,
        "{margin}legend: ──> request  <┄┄ reply  ┄┄‖ reply on its way back (waits while its client is paused)  ══> replication  \
         ◆ local step  ✖ fault  ○ recovery  ┃ paused client (stop-the-world)  ┈┈ clock tick"
    );
    out
}

fn short_role(role: &str) -> String {
    role.replace("replica of ", "replica/")
}

/// `lock key: node1 t1 client1 ttl 3 | node2 -`.
fn keys_line(seq: &Sequence, keys: &[String]) -> String {
    let cells: Vec<String> = keys
        .iter()
        .enumerate()
        .map(|(n, k)| format!("{} {k}", seq.lanes[seq.node_lane(n)].name))
        .collect();
    format!("lock key: {}", cells.join(" | "))
}

#[cfg(test)]
mod tests {
    use super::super::{build, tests::pause_trace};
    use super::*;

    #[test]
    fn lanes_arrows_keys_and_the_break_are_drawn() {
        let text = render(&build(&pause_trace()));
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains("client1") && lines[0].contains("node1"),
            "{text}"
        );
        // Step 1: client1's request to node1 (lane 0 to lane 2), head at node1.
        let acquire = lines.iter().find(|l| l.starts_with("   1 ")).unwrap();
        assert!(acquire.contains("●───"), "{acquire}");
        assert!(acquire.contains("┼") && acquire.contains(">│"), "{acquire}");
        assert!(
            acquire.ends_with("client1: acquire: SET lock t1 NX PX 4"),
            "{acquire}"
        );
        let held = lines.iter().find(|l| l.starts_with("   3 ")).unwrap();
        assert!(
            held.contains('‖') && held.contains("(held: client1 paused)"),
            "{held}"
        );
        assert!(text.contains("lock key: node1 t1 client1 ttl 3"), "{text}");
        assert!(text.contains("✖ BROKEN: mutual_exclusion"), "{text}");
        // The lanes line up: node1's lifeline is drawn on every step's line.
        let node1 = 10 + lifeline(2);
        for l in lines.iter().filter(|l| l.as_bytes()[3].is_ascii_digit()) {
            let c = l.chars().nth(node1).unwrap();
            assert!("│◆✖○●┼".contains(c), "{c:?} in {l}");
        }
        // client1 is paused from step 2 until it resumes: its lifeline is heavy on the
        // rows between, the lifelines of the others are not.
        let paused: Vec<char> = lines
            .iter()
            .filter(|l| l.as_bytes()[3].is_ascii_digit())
            .map(|l| l.chars().nth(10 + lifeline(0)).unwrap())
            .collect();
        assert!(paused.contains(&'┃'), "{text}");
        assert!(text.contains("┃ paused client"), "{text}");
    }
}
