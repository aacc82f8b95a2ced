//! Instructions per acquire+release cycle of one benchmark contender, for counting
//! under callgrind: unlike cycles per second, the figure does not move with the
//! machine's load, so the driver's CPU cost can be set against the raw floor's even on
//! a shared machine. `bench/instructions.sh` runs it twice per contender (few and many
//! cycles) and prints the difference per cycle, which leaves out start-up.
//!
//! ```text
//! cargo build --release -p locklab-bench --example instructions
//! instructions URL[,URL...] NAME/NODES TASKS CYCLES
//! ```
//! e.g. `instructions redis://127.0.0.1:6399 lua-release/1 16 100`: 16 tasks, 100 cycles
//! each, on the lock keys `instructions:0` .. `instructions:15`.

#[path = "../benches/rslock_contender.rs"]
mod rslock_contender;

use std::time::Duration;

use locklab_bench::Contender;
use rslock_contender::Rslock;

fn usage(why: &str) -> ! {
    eprintln!("error: {why}\nusage: instructions URL[,URL...] NAME/NODES TASKS CYCLES");
    std::process::exit(2);
}

fn number(what: &str, s: &str) -> usize {
    s.parse()
        .unwrap_or_else(|_| usage(&format!("{what}: expected a whole number, got {s:?}")))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [urls, label, tasks, cycles] = args.as_slice() else {
        usage("four arguments expected");
    };
    let urls: Vec<String> = urls.split(',').map(str::to_string).collect();
    let tasks = number("TASKS", tasks);
    let cycles = number("CYCLES", cycles);
    let ttl = Duration::from_secs(10);
    let reference = move |n: usize| Box::new(Rslock::new(n, ttl)) as Box<dyn Contender>;
    let all = locklab_bench::contenders(ttl, &reference);
    let labels: Vec<String> = all
        .iter()
        .map(|c| format!("{}/{}", c.name(), c.masters()))
        .collect();
    let Some(i) = labels.iter().position(|l| l == label) else {
        usage(&format!(
            "no contender {label:?}; known: {}",
            labels.join(", ")
        ));
    };
    let contender = &all[i];
    if urls.len() < contender.masters() {
        usage(&format!(
            "{label} needs {} URLs, got {}",
            contender.masters(),
            urls.len()
        ));
    }
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let done = runtime.block_on(async {
        let keys = (0..tasks).map(|k| format!("instructions:{k}")).collect();
        let clients = contender.clients(&urls, keys).await?;
        let mut running = Vec::with_capacity(tasks);
        for mut client in clients {
            running.push(tokio::spawn(async move {
                for _ in 0..cycles {
                    client.acquire().await?;
                    client.release().await?;
                }
                Ok::<usize, String>(cycles)
            }));
        }
        let mut done = 0;
        for task in running {
            done += task.await.map_err(|e| e.to_string())??;
        }
        Ok::<usize, String>(done)
    });
    match done {
        Ok(n) => println!("{label}: {n} cycles"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
