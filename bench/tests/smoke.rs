//! The benchmark's smoke run: tiny durations on real Redis containers; every row must
//! come out with real figures. No timing is asserted.

#[path = "../benches/rslock_contender.rs"]
mod rslock_contender;

use locklab_bench::{report, Contender, Kind, Settings};
use rslock_contender::Rslock;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_run_gives_every_row_real_figures() {
    let settings = Settings::smoke();
    let ttl = settings.ttl;
    let reference = move |n: usize| Box::new(Rslock::new(n, ttl)) as Box<dyn Contender>;
    let dir = std::env::temp_dir().join(format!("locklab-bench-smoke-{}", std::process::id()));
    let path = dir.join("bench-lock.md");
    let out = locklab_bench::bench(&settings, &reference, &path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let contenders = locklab_bench::contenders(ttl, &reference);
    assert_eq!(out.rows.len(), contenders.len() * settings.tasks.len());
    for c in &contenders {
        for &t in &settings.tasks {
            let row = out
                .rows
                .iter()
                .find(|r| r.name == c.name() && r.masters == c.masters() && r.tasks == t)
                .unwrap_or_else(|| panic!("no row for {} on {} nodes", c.name(), c.masters()));
            assert_eq!(row.errors, 0, "{}: {:?}", row.name, row.first_error);
            assert!(row.cycles > 0, "{} x{t}: no cycle", row.name);
            assert!(row.rate.is_finite() && row.rate > 0.0, "{}", row.name);
            assert!(row.p50_us > 0.0 && row.p99_us >= row.p50_us, "{}", row.name);
            if let Kind::Locklab { .. } = row.kind {
                assert!(row.vs_floor.is_some_and(f64::is_finite), "{}", row.name);
                assert!(row.vs_rslock.is_some_and(f64::is_finite), "{}", row.name);
            }
        }
    }
    // Every target is evaluated (met or not: no timing is asserted): 4 single-node
    // designs × 2 task counts against their floors, 4 rows against rslock with 16
    // tasks (lua-release, watchdog, redlock on 3 and 5), Redlock-5's latency.
    assert_eq!(out.targets.len(), 8 + 4 + 1);
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(written, out.markdown);
    assert!(written.contains(report::COMMAND));
    assert!(written.contains("## Targets"));
    let _ = std::fs::remove_dir_all(dir);
}
