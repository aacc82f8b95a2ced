//! The benchmark's settings, from the environment.

use std::time::Duration;

/// How long and how often to measure.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Rounds; in each, every contender runs once per concurrency level.
    pub rounds: usize,
    /// How long one contender runs in one slot of a round.
    pub slot: Duration,
    /// Unmeasured cycles per client before each slot (connections, script cache).
    pub warmup_cycles: usize,
    /// The numbers of concurrent tasks.
    pub tasks: Vec<usize>,
    /// The lock ttl.
    pub ttl: Duration,
    /// Run only the contenders whose `name/nodes` label contains one of these (all
    /// when empty); for profiling one contender.
    pub only: Vec<String>,
}

impl Default for Settings {
    /// The full run: 15 rounds of 30 slots of 250 ms, about four minutes. Many short
    /// slots rather than few long ones, so that bursts of load from elsewhere fall on
    /// every contender alike.
    fn default() -> Self {
        Settings {
            rounds: 15,
            slot: Duration::from_millis(250),
            warmup_cycles: 20,
            tasks: vec![1, 16],
            ttl: Duration::from_secs(10),
            only: Vec::new(),
        }
    }
}

impl Settings {
    /// The smoke run: one round of tiny slots, to check that every row gets figures.
    pub fn smoke() -> Self {
        Settings {
            rounds: 1,
            slot: Duration::from_millis(40),
            warmup_cycles: 1,
            ..Settings::default()
        }
    }

    /// `LOCKLAB_BENCH_SMOKE=1` for the smoke run; otherwise the defaults, with
    /// `LOCKLAB_BENCH_ROUNDS` and `LOCKLAB_BENCH_SLOT_MS` overriding them, and
    /// `LOCKLAB_BENCH_ONLY` (comma-separated, e.g. `raw/5,redlock/5`) picking contenders.
    pub fn from_env() -> Result<Self, String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mut s = match var("LOCKLAB_BENCH_SMOKE").as_deref() {
            None | Some("0") => Settings::default(),
            Some(_) => Settings::smoke(),
        };
        let number =
            |name: &str, value: String| -> Result<u64, String> {
                value.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!("{name}: expected a positive whole number, got {value:?}")
                })
            };
        if let Some(v) = var("LOCKLAB_BENCH_ROUNDS") {
            s.rounds = number("LOCKLAB_BENCH_ROUNDS", v)? as usize;
        }
        if let Some(v) = var("LOCKLAB_BENCH_SLOT_MS") {
            s.slot = Duration::from_millis(number("LOCKLAB_BENCH_SLOT_MS", v)?);
        }
        if let Some(v) = var("LOCKLAB_BENCH_ONLY") {
            s.only = v.split(',').map(|p| p.trim().to_string()).collect();
        }
        Ok(s)
    }

    /// Whether the contender `name` on `nodes` nodes runs.
    pub fn runs(&self, name: &str, nodes: usize) -> bool {
        let label = format!("{name}/{nodes}");
        self.only.is_empty() || self.only.iter().any(|p| label.contains(p.as_str()))
    }
}
