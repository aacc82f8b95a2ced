//! locklab's lock benchmark, run by `cargo bench -p locklab-bench --bench lock`.
//!
//! Every contender runs acquire+release cycles on Redis containers started by
//! `locklab-cluster`: locklab's designs through the public [`LockBuilder`], the raw
//! floor (the same commands sent directly with redis-rs on the same connection
//! settings) and, added by the bench target, the published `rslock` crate. The
//! contenders take turns, slot by slot, in every round ([`run()`]); the summary gives
//! medians over the rounds and ratios taken round by round ([`summary`]), which stay
//! meaningful on a loaded machine where absolute figures do not.
//!
//! [`LockBuilder`]: locklab::driver::LockBuilder

pub mod contender;
pub mod fanout;
pub mod locklab_contender;
pub mod raw;
pub mod report;
pub mod run;
pub mod settings;
pub mod summary;

pub use contender::{BoxFuture, Client, Contender, Kind};
pub use run::{run, Measurement};
pub use settings::Settings;
pub use summary::{summarize, Row, Target};

use std::path::Path;
use std::time::Duration;

use locklab::driver::LockBuilder;
use locklab_cluster::Cluster;

use crate::locklab_contender::Locklab;
use crate::raw::{Raw, Sequence};

/// The most masters any row uses.
pub const MASTERS: usize = 5;

/// Every contender, grouped by node count: for one node the raw floors, locklab's
/// single-node designs, the raw loop and `lua-release` with a connection per task
/// (for information) and the reference; for 3 and 5 nodes the raw fan-out, locklab's
/// Redlock and the reference. `reference(n)`
/// makes the reference on `n` nodes (rslock, added by the bench target).
pub fn contenders(
    ttl: Duration,
    reference: &dyn Fn(usize) -> Box<dyn Contender>,
) -> Vec<Box<dyn Contender>> {
    let ms = ttl.as_millis() as u64;
    let mut v: Vec<Box<dyn Contender>> = vec![
        Box::new(Raw::floor("raw", 1, Sequence::SetThenCompareDelete, ms)),
        Box::new(Locklab::new(
            "lua-release",
            1,
            LockBuilder::lua_release,
            false,
            "raw",
            ttl,
        )),
        Box::new(Locklab::new(
            "watchdog",
            1,
            LockBuilder::watchdog,
            false,
            "raw",
            ttl,
        )),
        Box::new(Raw::floor(
            "raw+incr",
            1,
            Sequence::SetIncrThenCompareDelete,
            ms,
        )),
        Box::new(Locklab::new(
            "lua-release+fencing",
            1,
            LockBuilder::lua_release,
            true,
            "raw+incr",
            ttl,
        )),
        Box::new(Raw::floor(
            "raw reentrant",
            1,
            Sequence::ReentrantScripts,
            ms,
        )),
        Box::new(Locklab::new(
            "reentrant",
            1,
            LockBuilder::reentrant,
            false,
            "raw reentrant",
            ttl,
        )),
        Box::new(Raw::connection_per_client("raw conn-per-task", 1, ms)),
        Box::new(
            Locklab::new(
                "lua-release",
                1,
                LockBuilder::lua_release,
                false,
                "raw",
                ttl,
            )
            .own_connections("lua-release conn-per-lock"),
        ),
        reference(1),
    ];
    for n in [3, 5] {
        v.push(Box::new(Raw::floor(
            "raw",
            n,
            Sequence::SetThenCompareDelete,
            ms,
        )));
        v.push(Box::new(Locklab::new(
            "redlock",
            n,
            LockBuilder::redlock,
            false,
            "raw",
            ttl,
        )));
        v.push(reference(n));
    }
    v
}

/// What a benchmark run gives.
pub struct Outcome {
    pub rows: Vec<Row>,
    pub targets: Vec<Target>,
    pub markdown: String,
}

/// Start the containers, run every contender, summarize, and write the report to
/// `report` (keeping its analysis section). Progress goes to stderr.
pub async fn bench(
    settings: &Settings,
    reference: &dyn Fn(usize) -> Box<dyn Contender>,
    report: &Path,
) -> Result<Outcome, String> {
    let machine = report::Machine::here();
    let cluster = Cluster::builder()
        .masters(MASTERS)
        .start()
        .await
        .map_err(|e| format!("cannot start Redis containers: {e}"))?;
    let urls = cluster.master_urls();
    let list: Vec<Box<dyn Contender>> = contenders(settings.ttl, reference)
        .into_iter()
        .filter(|c| settings.runs(c.name(), c.masters()))
        .collect();
    let ran = run(settings, &list, &urls, |m, name| {
        eprintln!(
            "round {} {name:>22} x{:<2} {:>8.0} cycles/s{}",
            m.round + 1,
            m.tasks,
            m.rate(),
            if m.errors > 0 { "  (errors)" } else { "" }
        );
    })
    .await;
    // The containers go before any error is reported.
    let shutdown = cluster.shutdown().await;
    let measurements = ran?;
    shutdown.map_err(|e| format!("removing the Redis containers: {e}"))?;
    let rows = summarize(&list, &measurements);
    let targets = summary::targets(&rows);
    let analysis = report::kept_analysis(report);
    let markdown = report::markdown(settings, &machine, &rows, &targets, analysis.as_deref());
    if let Some(dir) = report.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(report, &markdown).map_err(|e| format!("{}: {e}", report.display()))?;
    Ok(Outcome {
        rows,
        targets,
        markdown,
    })
}
