//! `locklab bench checker`: how fast the model checker is, per scenario, with symmetry
//! reduction on and off and with one and two threads, side by side in one run. Prints a
//! table and writes it, with the command, the machine and the date, to a Markdown file
//! (reports/bench-checker.md by default).

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use locklab_model::model::LockModel;
use locklab_model::scenario::Scenario;
use locklab_model::search::{search, SearchOptions, SearchResult};

use crate::check::{load, write_file};
use crate::cli::BenchCheckerArgs;
use crate::Failure;

/// The configurations every scenario runs in: (symmetry, threads).
const CONFIGS: [(bool, usize); 4] = [(true, 1), (true, 2), (false, 1), (false, 2)];

/// One search of one scenario in one configuration.
struct Measurement {
    scenario: String,
    symmetry: bool,
    threads: usize,
    result: SearchResult,
}

impl Measurement {
    fn states_per_second(&self) -> f64 {
        self.result.states as f64 / self.result.seconds.max(1e-9)
    }
}

/// `locklab bench checker`: returns the exit status.
pub fn run(args: &BenchCheckerArgs) -> Result<i32, Failure> {
    let scenarios = load(&args.paths)?;
    let load_before = load_average();
    let progress = Progress::new((scenarios.len() * CONFIGS.len()) as u64);
    let mut measurements = Vec::new();
    for scenario in &scenarios {
        let model = LockModel::new(scenario);
        for (symmetry, threads) in CONFIGS {
            progress.start(scenario, symmetry, threads);
            let options = SearchOptions {
                symmetry,
                threads,
                max_depth: None,
                time_limit: Some(Duration::from_secs(args.time_limit)),
            };
            let result = search(&model, &options, |p| progress.level(p.depth, p.unique));
            let m = Measurement {
                scenario: scenario.name.clone(),
                symmetry,
                threads,
                result,
            };
            progress.done(&m);
            measurements.push(m);
        }
    }
    progress.finish();
    let table = render_table(&measurements);
    print!("{table}");
    let machine = format!(
        "{}; load average (1 min) {} at the start, {} at the end",
        machine(),
        load_before,
        load_average()
    );
    let report = render_report(&command_line(), &machine, &utc_now(), &table);
    write_file(&args.out, &report)?;
    eprintln!("wrote {}", args.out.display());
    Ok(0)
}

/// Progress on stderr: a bar on a terminal, else one line per finished search.
struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    fn new(total: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
                .with_style(
                    ProgressStyle::with_template(
                        "{bar:20} {pos}/{len} {prefix}: {msg} [{elapsed}]",
                    )
                    .expect("a valid template"),
                );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress { bar }
    }

    fn start(&self, scenario: &Scenario, symmetry: bool, threads: usize) {
        if let Some(bar) = &self.bar {
            bar.set_prefix(format!(
                "{} ({}, {})",
                scenario.name,
                symmetry_text(symmetry),
                threads_text(threads)
            ));
            bar.set_message("depth 0");
        }
    }

    fn level(&self, depth: usize, unique: u64) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("depth {depth}, {unique} unique states"));
        }
    }

    fn done(&self, m: &Measurement) {
        let line = format!(
            "{} ({}, {}): {} unique states, {:.2} s{}",
            m.scenario,
            symmetry_text(m.symmetry),
            threads_text(m.threads),
            m.result.unique_states,
            m.result.seconds,
            if m.result.complete { "" } else { " (stopped)" }
        );
        match &self.bar {
            Some(bar) => {
                bar.println(format!("benched {line}"));
                bar.inc(1);
            }
            None => eprintln!("benched {line}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn threads_text(n: usize) -> String {
    if n == 1 {
        "1 thread".to_string()
    } else {
        format!("{n} threads")
    }
}

fn symmetry_text(on: bool) -> &'static str {
    if on {
        "symmetry"
    } else {
        "no symmetry"
    }
}

const HEADER: [&str; 8] = [
    "scenario",
    "symmetry",
    "threads",
    "states",
    "unique states",
    "states/s",
    "first counterexample (s)",
    "seconds",
];

/// The table as Markdown (readable as plain text too): one row per scenario and
/// configuration, then the whole set per configuration.
fn render_table(measurements: &[Measurement]) -> String {
    let mut rows: Vec<[String; 8]> = Vec::new();
    for m in measurements {
        let r = &m.result;
        rows.push([
            m.scenario.clone(),
            on_off(m.symmetry).to_string(),
            m.threads.to_string(),
            r.states.to_string(),
            r.unique_states.to_string(),
            format!("{:.0}", m.states_per_second()),
            r.first_counterexample_seconds
                .map_or("-".to_string(), |s| format!("{s:.3}")),
            if r.complete {
                format!("{:.2}", r.seconds)
            } else {
                format!("{:.2} (stopped at depth {})", r.seconds, r.depth)
            },
        ]);
    }
    for (symmetry, threads) in CONFIGS {
        let of: Vec<&Measurement> = measurements
            .iter()
            .filter(|m| m.symmetry == symmetry && m.threads == threads)
            .collect();
        let states: u64 = of.iter().map(|m| m.result.states).sum();
        let seconds: f64 = of.iter().map(|m| m.result.seconds).sum();
        let stopped = of.iter().filter(|m| !m.result.complete).count();
        let slowest_first = of
            .iter()
            .filter_map(|m| m.result.first_counterexample_seconds)
            .fold(None, |acc: Option<f64>, s| {
                Some(acc.map_or(s, |a| a.max(s)))
            });
        rows.push([
            format!("**all {} scenarios**", of.len()),
            on_off(symmetry).to_string(),
            threads.to_string(),
            states.to_string(),
            of.iter()
                .map(|m| m.result.unique_states)
                .sum::<u64>()
                .to_string(),
            format!("{:.0}", states as f64 / seconds.max(1e-9)),
            slowest_first.map_or("-".to_string(), |s| format!("max {s:.3}")),
            if stopped == 0 {
                format!("{seconds:.2}")
            } else {
                format!("{seconds:.2} ({stopped} stopped)")
            },
        ]);
    }
    let mut widths = HEADER.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: &[String]| {
        let mut out = String::from("|");
        for (i, cell) in cells.iter().enumerate() {
            // Text left, numbers right.
            if i < 2 {
                let _ = write!(out, " {cell:<w$} |", w = widths[i]);
            } else {
                let _ = write!(out, " {cell:>w$} |", w = widths[i]);
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(&HEADER.map(str::to_string));
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            if i < 2 {
                "-".repeat(w)
            } else {
                format!("{}:", "-".repeat(w - 1))
            }
        })
        .collect();
    out.push_str(&line(&rule));
    for row in &rows {
        out.push_str(&line(row));
    }
    out
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// The command as typed, program name shortened to `locklab`.
fn command_line() -> String {
    let mut words = vec!["locklab".to_string()];
    words.extend(std::env::args().skip(1));
    words.join(" ")
}

/// Cores and CPU model of this machine.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, name)| name.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    format!("{cores} cores available, {model}")
}

/// The 1-minute load average, from /proc/loadavg (other work on the machine slows the
/// wall times down).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

/// The current UTC date and time, `YYYY-MM-DD HH:MM UTC`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The whole report file.
fn render_report(command: &str, machine: &str, date: &str, table: &str) -> String {
    format!(
        "# Model checker benchmark\n\n\
         Generated by `{command}` on {date}; machine: {machine}. Release build.\n\n\
         Each scenario is searched to the end (breadth-first, every property) four times: \
         with symmetry reduction (clients, and Redlock's independent masters) and without, \
         with one worker thread and with two. *states* counts every successor generated, \
         *unique states* the distinct (representative) states stored, *states/s* is states \
         over seconds, *first counterexample* the wall time until the first property was \
         found violated (`-`: none is). A search still running after the time limit \
         (`--time-limit`) stops at the end of its level and is marked \"stopped\": its \
         figures are those so far. The rows \"all\" sum a configuration over the \
         scenarios; their first-counterexample column is the slowest scenario's. Wall \
         times depend on what else runs on the machine; the state counts do not.\n\n\
         {table}\n{REDUCTIONS}"
    )
}

/// Hand-measured history of the state-space reductions (fixed text, not regenerated).
const REDUCTIONS: &str = include_str!("bench_checker_reductions.md");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_convert() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_513), (2026, 3, 1));
    }
}
