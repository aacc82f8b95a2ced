//! The lock benchmark: locklab's designs against the raw redis-rs floor and rslock.
//!
//! `cargo bench -p locklab-bench --bench lock`; `LOCKLAB_BENCH_ROUNDS`,
//! `LOCKLAB_BENCH_SLOT_MS` set the duration, `LOCKLAB_BENCH_SMOKE=1` runs a tiny one,
//! `LOCKLAB_BENCH_ONLY` picks rows (`name/nodes`, comma-separated),
//! `LOCKLAB_BENCH_REPORT` names another report file than `reports/bench-lock.md`.

mod rslock_contender;

use std::path::PathBuf;

use locklab_bench::{report, Contender, Settings};
use rslock_contender::Rslock;

fn main() {
    let settings = match Settings::from_env() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let path = std::env::var_os("LOCKLAB_BENCH_REPORT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../reports/bench-lock.md")
        });
    let ttl = settings.ttl;
    let reference = move |n: usize| Box::new(Rslock::new(n, ttl)) as Box<dyn Contender>;
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    match runtime.block_on(locklab_bench::bench(&settings, &reference, &path)) {
        Ok(out) => {
            println!("{}", report::table(&out.rows));
            println!("{}", report::target_list(&out.targets));
            println!("written to {}", path.display());
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
