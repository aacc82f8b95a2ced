//! Ctrl-C (SIGINT) or SIGTERM during a command that runs containers: the process
//! would die without dropping its clusters, and their containers would wait for the
//! next locklab run to reap them. A watcher thread removes them at once, says so, and
//! exits 130 (SIGINT) or 143 (SIGTERM), as a shell reports a process its signal ended.
//! The interrupted run writes no report: its history is incomplete.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::signal::unix::{signal, SignalKind};

/// Set by the watcher as soon as a signal arrives, before it removes anything: from then
/// on the watcher owns the process's exit.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Called by `main` once the command has returned, before it prints or exits: after a
/// signal the watcher is removing the containers and exits with the signal's status, and
/// the command's own ending (often an error from a container removed under it) must not
/// win that race.
pub fn wait_if_stopping() {
    if STOPPING.load(Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
}

/// Starts the watcher; the first SIGINT or SIGTERM ends the process.
pub fn remove_containers_on_interrupt() {
    // Registered here, before the command starts, so that no signal slips between.
    let watch = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .and_then(|runtime| {
            let streams = runtime.block_on(async {
                Ok::<_, std::io::Error>((
                    signal(SignalKind::interrupt())?,
                    signal(SignalKind::terminate())?,
                ))
            })?;
            Ok((runtime, streams))
        });
    let (runtime, (mut int, mut term)) = match watch {
        Ok(w) => w,
        Err(e) => {
            eprintln!("locklab: cannot watch for Ctrl-C ({e}); an interrupted run's containers are removed by the next run or `locklab clean`");
            return;
        }
    };
    std::thread::spawn(move || {
        let (name, code) = runtime.block_on(async {
            tokio::select! {
                _ = int.recv() => ("SIGINT", 130),
                _ = term.recv() => ("SIGTERM", 143),
            }
        });
        STOPPING.store(true, Ordering::SeqCst);
        eprintln!(
            "\nlocklab: {name}: stopping, removing this run's containers (no report is written)"
        );
        // A soak's adapter processes first: one stopped by a pause would outlive us.
        locklab_harness::soak::adapter::kill_running();
        match locklab_cluster::remove_own() {
            Ok(removed) => {
                let count = |n: usize, what: &str| match n {
                    1 => format!("1 {what}"),
                    n => format!("{n} {what}s"),
                };
                eprintln!(
                    "locklab: removed {} and {}",
                    count(removed.containers.len(), "container"),
                    count(removed.networks.len(), "network")
                );
                for failure in &removed.failures {
                    eprintln!("locklab: could not remove {failure}; `locklab clean` will once this process is gone");
                }
            }
            Err(e) => eprintln!(
                "locklab: could not list this run's containers ({e}); `locklab clean` removes them"
            ),
        }
        std::process::exit(code);
    });
}
