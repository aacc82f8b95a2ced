//! The interleaved run: every round gives each (contender, tasks) slot one turn, in an
//! order that moves from round to round, so that load on the machine falls on all
//! contenders alike.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::contender::{Client, Contender};
use crate::settings::Settings;

/// One slot's figures.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Index of the contender in the list given to [`run`].
    pub contender: usize,
    /// Concurrent tasks.
    pub tasks: usize,
    /// The round.
    pub round: usize,
    /// Completed acquire+release cycles.
    pub cycles: u64,
    /// From the first task's start to the last task's end.
    pub elapsed: Duration,
    /// Every successful acquire's latency, in nanoseconds.
    pub acquire_ns: Vec<u64>,
    /// Failed cycles, and the first failure.
    pub errors: u64,
    pub first_error: Option<String>,
}

impl Measurement {
    /// Cycles per second.
    pub fn rate(&self) -> f64 {
        self.cycles as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// The slots of one round, in this round's order.
pub fn order(slots: usize, round: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..slots).collect();
    if slots > 0 {
        v.rotate_left(round * 7 % slots);
    }
    if round % 2 == 1 {
        v.reverse();
    }
    v
}

/// Run every contender at every concurrency level, `settings.rounds` times over,
/// interleaved. `urls` are the nodes (a contender uses the first `masters()`);
/// `progress` hears about each slot as it ends.
pub async fn run(
    settings: &Settings,
    contenders: &[Box<dyn Contender>],
    urls: &[String],
    mut progress: impl FnMut(&Measurement, &str),
) -> Result<Vec<Measurement>, String> {
    let slots: Vec<(usize, usize)> = (0..contenders.len())
        .flat_map(|c| settings.tasks.iter().map(move |&t| (c, t)))
        .collect();
    let mut out = Vec::new();
    for round in 0..settings.rounds {
        for i in order(slots.len(), round) {
            let (c, tasks) = slots[i];
            let contender = &contenders[c];
            let keys = (0..tasks)
                .map(|t| {
                    let name: String = contender
                        .name()
                        .chars()
                        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '-' })
                        .collect();
                    format!("locklab-bench:{name}:{tasks}:{round}:{t}")
                })
                .collect();
            let clients = contender
                .clients(urls, keys)
                .await
                .map_err(|e| format!("{}: {e}", contender.name()))?;
            let mut m = measure(clients, settings).await;
            m.contender = c;
            m.round = round;
            progress(&m, contender.name());
            out.push(m);
        }
    }
    Ok(out)
}

struct TaskResult {
    cycles: u64,
    started: Instant,
    ended: Instant,
    acquire_ns: Vec<u64>,
    errors: u64,
    first_error: Option<String>,
}

async fn cycle(client: &mut dyn Client) -> Result<Duration, String> {
    let t0 = Instant::now();
    client.acquire().await?;
    let took = t0.elapsed();
    client.release().await?;
    Ok(took)
}

async fn measure(clients: Vec<Box<dyn Client>>, settings: &Settings) -> Measurement {
    let tasks = clients.len();
    let barrier = Arc::new(tokio::sync::Barrier::new(tasks));
    let mut handles = Vec::with_capacity(tasks);
    for mut client in clients {
        let barrier = barrier.clone();
        let (slot, warmup) = (settings.slot, settings.warmup_cycles);
        handles.push(tokio::spawn(async move {
            let mut r = TaskResult {
                cycles: 0,
                started: Instant::now(),
                ended: Instant::now(),
                acquire_ns: Vec::with_capacity(4096),
                errors: 0,
                first_error: None,
            };
            for _ in 0..warmup {
                let _ = cycle(client.as_mut()).await;
            }
            barrier.wait().await;
            r.started = Instant::now();
            let deadline = r.started + slot;
            while Instant::now() < deadline {
                match cycle(client.as_mut()).await {
                    Ok(took) => {
                        r.cycles += 1;
                        r.acquire_ns.push(took.as_nanos() as u64);
                    }
                    Err(e) => {
                        r.errors += 1;
                        r.first_error.get_or_insert(e);
                    }
                }
            }
            r.ended = Instant::now();
            r
        }));
    }
    let mut m = Measurement {
        contender: 0,
        tasks,
        round: 0,
        cycles: 0,
        elapsed: Duration::ZERO,
        acquire_ns: Vec::new(),
        errors: 0,
        first_error: None,
    };
    let (mut first, mut last) = (None::<Instant>, None::<Instant>);
    for h in handles {
        match h.await {
            Ok(r) => {
                m.cycles += r.cycles;
                m.acquire_ns.extend(r.acquire_ns);
                m.errors += r.errors;
                if m.first_error.is_none() {
                    m.first_error = r.first_error;
                }
                first = Some(first.map_or(r.started, |f| f.min(r.started)));
                last = Some(last.map_or(r.ended, |l| l.max(r.ended)));
            }
            Err(e) => {
                m.errors += 1;
                m.first_error.get_or_insert(format!("task: {e}"));
            }
        }
    }
    if let (Some(f), Some(l)) = (first, last) {
        m.elapsed = l - f;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_runs_every_slot_once_in_a_new_order() {
        let orders: Vec<Vec<usize>> = (0..4).map(|r| order(10, r)).collect();
        for o in &orders {
            let mut s = o.clone();
            s.sort();
            assert_eq!(s, (0..10).collect::<Vec<_>>());
        }
        assert_ne!(orders[0], orders[1]);
        assert_ne!(orders[0], orders[2]);
    }
}
