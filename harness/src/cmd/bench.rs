//! `locklab bench checker`: how fast the model checker is, per scenario, with every
//! reduction (one and two threads) and with none (one thread), side by side in one run. Prints a
//! table and writes it, with the command, the machine and the date, to a Markdown file
//! (reports/bench-checker.md by default), above the sections written there by hand,
//! which it keeps ([`kept_history`]).
//!
//! Each search runs in a child process (this binary, `bench checker --child`), so that
//! its peak resident memory (the child's VmHWM) is its own and not what earlier searches
//! left in the allocator.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use locklab_model::model::LockModel;
use locklab_model::scenario::Scenario;
use locklab_model::search::{search, SearchOptions, SearchResult};

use crate::cli::BenchCheckerArgs;
use crate::files::write_file;
use crate::scenario_args::load;
use crate::Failure;

/// What the benchmark searches without paths: the suite.
const DEFAULT_PATHS: [&str; 1] = ["scenarios"];

/// The configurations every scenario runs in: (every reduction or none, threads).
const CONFIGS: [(bool, usize); 3] = [(true, 1), (true, 2), (false, 1)];

/// One search of one scenario in one configuration.
struct Measurement {
    scenario: String,
    reduced: bool,
    threads: usize,
    result: Figures,
}

impl Measurement {
    fn states_per_second(&self) -> f64 {
        self.result.states as f64 / self.result.seconds.max(1e-9)
    }
}

/// What a child process reports of its search.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Figures {
    states: u64,
    unique_states: u64,
    depth: usize,
    complete: bool,
    seconds: f64,
    first_counterexample_seconds: Option<f64>,
    /// Peak resident set of the process that searched (VmHWM), in KiB.
    peak_kib: Option<u64>,
}

impl Figures {
    fn of(r: &SearchResult) -> Self {
        Figures {
            states: r.states,
            unique_states: r.unique_states,
            depth: r.depth,
            complete: r.complete,
            seconds: r.seconds,
            first_counterexample_seconds: r.first_counterexample_seconds,
            peak_kib: peak_rss_kib(),
        }
    }
}

/// This process's peak resident set size in KiB (VmHWM in /proc/self/status), where
/// the system reports it.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn parse_child(spec: &str) -> Result<(bool, usize), Failure> {
    let bad = || Failure::BadInput(format!("--child {spec}: expected on|off,THREADS"));
    let (reduced, threads) = spec.split_once(',').ok_or_else(bad)?;
    let reduced = match reduced {
        "on" => true,
        "off" => false,
        _ => return Err(bad()),
    };
    Ok((reduced, threads.parse().map_err(|_| bad())?))
}

/// The child: one search of the one scenario, its figures as JSON on stdout.
fn run_child(args: &BenchCheckerArgs, spec: &str) -> Result<i32, Failure> {
    let (reduced, threads) = parse_child(spec)?;
    let scenarios = load(&args.paths)?;
    let [scenario] = scenarios.as_slice() else {
        return Err(Failure::BadInput("--child takes one scenario".to_string()));
    };
    let options = SearchOptions {
        threads,
        max_depth: None,
        time_limit: Some(Duration::from_secs(args.time_limit)),
        ..if reduced {
            SearchOptions::default()
        } else {
            SearchOptions::plain()
        }
    };
    let result = search(&LockModel::new(scenario), &options, |_| {});
    println!(
        "{}",
        serde_json::to_string(&Figures::of(&result)).expect("JSON")
    );
    Ok(0)
}

/// Runs one measurement in a child process.
fn measure(
    path: &Path,
    reduced: bool,
    threads: usize,
    time_limit: u64,
) -> Result<Figures, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Environment(format!("cannot find this program: {e}")))?;
    let out = Command::new(&exe)
        .args([
            "bench",
            "checker",
            "--time-limit",
            &time_limit.to_string(),
            "--child",
        ])
        .arg(format!("{},{threads}", on_off(reduced)))
        .arg(path)
        .output()
        .map_err(|e| Failure::Environment(format!("cannot run {}: {e}", exe.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(Failure::Environment(format!(
            "the search of {} ({}, {threads} threads) failed: {}{}",
            path.display(),
            reductions_text(reduced),
            text,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    serde_json::from_str(text.trim()).map_err(|e| {
        Failure::Environment(format!(
            "unreadable figures from a search child ({e}): {text}"
        ))
    })
}

/// `locklab bench checker`: returns the exit status.
pub fn run(args: &BenchCheckerArgs) -> Result<i32, Failure> {
    if let Some(spec) = &args.child {
        return run_child(args, spec);
    }
    let scenarios = if args.paths.is_empty() {
        load(&DEFAULT_PATHS.map(PathBuf::from))?
    } else {
        load(&args.paths)?
    };
    // Read before the searches, so that a file that cannot be read stops the run at once.
    let history = kept_history(&args.out)?;
    let load_before = load_average();
    let progress = Progress::new((scenarios.len() * CONFIGS.len()) as u64);
    let mut measurements = Vec::new();
    for scenario in &scenarios {
        for (reduced, threads) in CONFIGS {
            progress.start(scenario, reduced, threads);
            let result = measure(&scenario.path, reduced, threads, args.time_limit)?;
            let m = Measurement {
                scenario: scenario.name.clone(),
                reduced,
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
    let report = render_report(&command_line(), &machine, &utc_now(), &table, &history);
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

    fn start(&self, scenario: &Scenario, reduced: bool, threads: usize) {
        if let Some(bar) = &self.bar {
            bar.set_prefix(format!(
                "{} ({}, {})",
                scenario.name,
                reductions_text(reduced),
                threads_text(threads)
            ));
            bar.set_message("searching (in a child process)");
        }
    }

    fn done(&self, m: &Measurement) {
        let line = format!(
            "{} ({}, {}): {} unique states, {:.2} s{}",
            m.scenario,
            reductions_text(m.reduced),
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

fn reductions_text(on: bool) -> &'static str {
    if on {
        "every reduction"
    } else {
        "no reduction"
    }
}

const HEADER: [&str; 9] = [
    "scenario",
    "reductions",
    "threads",
    "states",
    "unique states",
    "states/s",
    "first counterexample (s)",
    "seconds",
    "peak memory (MB)",
];

/// The table as Markdown (readable as plain text too): one row per scenario and
/// configuration, then the whole set per configuration.
fn render_table(measurements: &[Measurement]) -> String {
    let mut rows: Vec<[String; 9]> = Vec::new();
    for m in measurements {
        let r = &m.result;
        rows.push([
            m.scenario.clone(),
            if m.reduced { "all" } else { "none" }.to_string(),
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
            megabytes(r.peak_kib),
        ]);
    }
    for (reduced, threads) in CONFIGS {
        let of: Vec<&Measurement> = measurements
            .iter()
            .filter(|m| m.reduced == reduced && m.threads == threads)
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
            if reduced { "all" } else { "none" }.to_string(),
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
            of.iter()
                .filter_map(|m| m.result.peak_kib)
                .max()
                .map_or("-".to_string(), |k| format!("max {}", megabytes(Some(k)))),
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

/// KiB as whole megabytes (10^6 bytes), `-` when unknown.
fn megabytes(kib: Option<u64>) -> String {
    kib.map_or("-".to_string(), |k| {
        format!("{:.0}", k as f64 * 1024.0 / 1e6)
    })
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// The command as typed, program name shortened to `locklab`.
pub(crate) fn command_line() -> String {
    let mut words = vec!["locklab".to_string()];
    words.extend(std::env::args().skip(1));
    words.join(" ")
}

/// Cores and CPU model of this machine.
fn machine() -> String {
    let cores = crate::search::cpus();
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
pub(crate) fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
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
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).expect("a day of the month");
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).expect("a month");
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The whole report file.
fn render_report(command: &str, machine: &str, date: &str, table: &str, history: &str) -> String {
    format!(
        "# Model checker benchmark\n\n\
         Generated by `{command}` on {date}; machine: {machine}. Release build.\n\n\
         Each scenario is searched to the end (breadth-first, every property) three times: \
         with every reduction (README, \"Reductions\": unread values, token names, \
         symmetry, partial order, pause placement) on one worker thread and on two, and with none (the plain \
         search, `--plain`) on one. *states* counts every successor generated, \
         *unique states* the distinct (representative) states stored, *states/s* is states \
         over seconds, *first counterexample* the wall time until the first property was \
         found violated (`-`: none is), *peak memory* the peak resident set (VmHWM) of \
         the child process that ran the search (each search runs in its own). A search \
         still running after the time limit \
         (`--time-limit`) stops at the end of its level and is marked \"stopped\": its \
         figures are those so far. The rows \"all\" sum a configuration over the \
         scenarios; their first-counterexample column is the slowest scenario's. Wall \
         times depend on what else runs on the machine; the state counts do not.\n\n\
         {table}\n{history}"
    )
}

/// The hand-written part of the report already at `out`, kept when the table above it is
/// regenerated: the measurements written under the table by hand (how each reduction
/// came in, tries that were not kept), which no run can measure again. Empty when there
/// is no such file yet.
fn kept_history(out: &Path) -> Result<String, Failure> {
    match std::fs::read_to_string(out) {
        Ok(text) => Ok(history_of(&text).to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Failure::io(out, "cannot read", e)),
    }
}

/// A report's hand-written part: from its first second-level heading to the end (the
/// generated part has only the title, the paragraphs and the table above it).
fn history_of(report: &str) -> &str {
    if report.starts_with("## ") {
        return report;
    }
    report.find("\n## ").map_or("", |i| &report[i + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_memory_is_read_and_grows() {
        let before = peak_rss_kib().expect("VmHWM on Linux");
        assert!(before > 0);
        let big = vec![1u8; 64 << 20];
        std::hint::black_box(&big);
        let after = peak_rss_kib().unwrap();
        assert!(after >= before + (60 << 10), "{before} -> {after} KiB");
        assert_eq!(megabytes(Some(1_000_000)), "1024");
        assert_eq!(megabytes(None), "-");
    }

    #[test]
    fn child_spec_parses() {
        assert_eq!(parse_child("on,2").unwrap(), (true, 2));
        assert_eq!(parse_child("off,1").unwrap(), (false, 1));
        assert!(parse_child("yes,1").is_err());
        assert!(parse_child("on").is_err());
    }

    #[test]
    fn regenerating_the_report_keeps_what_was_written_under_its_table() {
        let dir = std::env::temp_dir().join(format!("locklab-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("bench.md");
        // No report yet: only the generated part.
        assert_eq!(kept_history(&out).unwrap(), "");
        let first = render_report("cmd", "machine", "then", "| old |\n", "");
        assert!(!first.contains("## "));
        std::fs::write(&out, &first).unwrap();
        assert_eq!(kept_history(&out).unwrap(), "");
        // A section written by hand under the table survives the next run, the old
        // table does not.
        let by_hand = "## Tried and not kept (today)\n\nA figure.\n\n### Detail\n\nMore.\n";
        std::fs::write(&out, format!("{first}{by_hand}")).unwrap();
        let history = kept_history(&out).unwrap();
        assert_eq!(history, by_hand);
        let second = render_report("cmd", "machine", "now", "| new |\n", &history);
        assert!(second.contains("| new |") && !second.contains("| old |"));
        assert!(second.ends_with(by_hand));
        assert_eq!(history_of(&second), by_hand);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_project_report_keeps_its_history_from_the_first_section() {
        let report = include_str!("../../../reports/bench-checker.md");
        let history = history_of(report);
        assert!(history.starts_with("## State-space reductions and their measured effect\n"));
        assert!(report.ends_with(history));
        // Nothing of the history sits in the part that is regenerated.
        let generated = &report[..report.len() - history.len()];
        assert!(generated.starts_with("# Model checker benchmark\n"));
        assert!(!generated.contains("\n## "));
    }

    #[test]
    fn dates_convert() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_513), (2026, 3, 1));
    }
}
