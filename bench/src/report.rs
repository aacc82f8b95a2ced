//! The table (printed and written to `reports/bench-lock.md`) and the machine it ran on.

use std::fmt::Write as _;
use std::path::Path;

use crate::contender::Kind;
use crate::settings::Settings;
use crate::summary::{Row, Target};

/// The command that runs the full benchmark.
pub const COMMAND: &str = "cargo bench -p locklab-bench --bench lock";

/// The heading from which a report's hand-written analysis starts; a new run keeps it.
pub const ANALYSIS_HEADING: &str = "## Analysis";

/// Where and when the run happened.
#[derive(Clone, Debug)]
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub load: String,
    pub date: String,
}

impl Machine {
    /// This machine, now.
    pub fn here() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let load = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| "unknown".into());
        let date = std::process::Command::new("date")
            .args(["-u", "+%Y-%m-%d %H:%M UTC"])
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown".into());
        Machine {
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu,
            load,
            date,
        }
    }
}

fn ratio(x: Option<f64>) -> String {
    x.map_or("".to_string(), |x| format!("{x:.2}×"))
}

fn kind_label(kind: &Kind) -> String {
    match kind {
        Kind::Floor => "raw floor".into(),
        Kind::Locklab { floor } => format!("locklab (floor: {floor})"),
        Kind::Reference => "rslock".into(),
        Kind::Info => "for information".into(),
    }
}

/// The rows as a Markdown table.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| contender | what | nodes | tasks | cycles/s (median) | × floor | × rslock | \
         acquire p50 µs | acquire p99 µs | cycles | errors |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.0} | {} | {} | {:.0} | {:.0} | {} | {} |",
            r.name,
            kind_label(&r.kind),
            r.masters,
            r.tasks,
            r.rate,
            ratio(r.vs_floor),
            ratio(r.vs_rslock),
            r.p50_us,
            r.p99_us,
            r.cycles,
            r.errors,
        );
    }
    s
}

/// The targets as a list.
pub fn target_list(targets: &[Target]) -> String {
    let mut s = String::new();
    for t in targets {
        let mark = if t.met { "met" } else { "MISSED" };
        let _ = writeln!(s, "- {mark}: {} — {}", t.what, t.measured);
    }
    s
}

/// The whole report. `analysis` is the hand-written part kept from an earlier report.
pub fn markdown(
    settings: &Settings,
    machine: &Machine,
    rows: &[Row],
    targets: &[Target],
    analysis: Option<&str>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Lock benchmark\n");
    let _ = writeln!(s, "Command: `{COMMAND}` (workspace root).\n");
    let _ = writeln!(
        s,
        "Machine: {} cores, {}; load average at the start {}. Date: {}.\n",
        machine.cores, machine.cpu, machine.load, machine.date
    );
    let _ = writeln!(
        s,
        "Run: {} rounds; in each, every (contender, tasks) slot runs {} ms after {} \
         unmeasured cycles per client, in an order that changes every round. Each task \
         cycles (acquire, release) a key of its own; ttl {} ms. Redis: 5 independent \
         masters in containers from locklab-cluster; single-node rows use the first, \
         Redlock rows the first 3 or 5. cycles/s is the median over rounds; × floor and \
         × rslock are medians of the ratios taken within each round; latencies pool every \
         round's acquires.\n",
        settings.rounds,
        settings.slot.as_millis(),
        settings.warmup_cycles,
        settings.ttl.as_millis()
    );
    let _ = writeln!(s, "{}", table(rows));
    let errors: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            r.first_error
                .as_ref()
                .map(|e| format!("- {} ({} nodes, {} tasks): {e}", r.name, r.masters, r.tasks))
        })
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(
            s,
            "First error per row with errors:\n\n{}\n",
            errors.join("\n")
        );
    }
    let _ = writeln!(s, "## Targets\n\n{}", target_list(targets));
    if let Some(a) = analysis {
        let _ = write!(s, "{}", a);
    }
    s
}

/// The hand-written analysis of the report at `path`, from [`ANALYSIS_HEADING`] on.
pub fn kept_analysis(path: &Path) -> Option<String> {
    let old = std::fs::read_to_string(path).ok()?;
    let at = old.find(ANALYSIS_HEADING)?;
    Some(old[at..].to_string())
}
