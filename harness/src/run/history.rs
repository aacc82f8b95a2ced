//! What really happened in one run, as the checker needs it.
//!
//! Every entry carries the real monotonic time since the run started (`ms`). Clients
//! record their acquire attempts, entering and leaving the critical section, their
//! releases and every Redis command with its reply; the stock resource
//! ([`locklab::resource::Stock`]) records each access it accepted or rejected; the run
//! records what each command did to the lock key, as seen on the node before and after
//! it (see [`Event::Displaced`]), and the lock key it observes on the live nodes after
//! every step (for orphaned locks).

use locklab::{DesignId, Fencing};
use serde::{Deserialize, Serialize};

/// One run's history.
#[derive(Clone, Debug, PartialEq)]
pub struct History {
    /// The design the clients ran (getset-timestamp keeps its expiry in the value, so a
    /// key without a Redis expiry is not an orphan there, as in the model).
    pub design: DesignId,
    /// How the stock store checks fencing tokens.
    pub fencing: Fencing,
    /// The stock at the start.
    pub initial_stock: i64,
    /// The entries, in the order they happened (`ms` never decreases).
    pub entries: Vec<Entry>,
}

/// One timed entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Real milliseconds since the run started (monotonic clock).
    pub ms: f64,
    /// What happened.
    pub event: Event,
}

/// Something that happened. Clients and nodes are indexes from 0 (`client1` is 0;
/// nodes are numbered as in the model: masters first, then each master's replicas).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// The model clock advanced to `tick`.
    Tick { tick: u32 },
    /// The client started an acquire attempt with this token.
    AcquireStart { client: usize, token: String },
    /// The attempt succeeded: the client holds the lock and enters its critical section.
    Acquired { client: usize, fence: Option<u64> },
    /// The attempt failed (denied, timed out, abandoned).
    AcquireFailed { client: usize, outcome: String },
    /// The client left its critical section (its stock write is done, or the store
    /// rejected its read and it goes straight to the release).
    Leave { client: usize },
    /// The client sent a release (or a re-entry) of its lock.
    ReleaseStart { client: usize },
    /// The client is finished: it released its last hold (or gave up).
    Done { client: usize },
    /// The client process died.
    Crash { client: usize },
    /// A stop-the-world pause of the client started.
    Pause { client: usize },
    /// The paused client runs again.
    Resume { client: usize },
    /// A Redis command of a client and its reply; `reply` is null when no answer came
    /// (`error` says why). `held` when the reply reached a paused client and waits.
    Command {
        client: usize,
        node: usize,
        command: String,
        reply: Option<String>,
        error: Option<String>,
        held: bool,
    },
    /// A held reply reached the resumed client.
    Receive {
        client: usize,
        node: usize,
        reply: String,
    },
    /// The stock store served a read (`value`) or rejected it (stale token).
    StockRead {
        client: usize,
        token: Option<u64>,
        value: Option<i64>,
    },
    /// The stock store accepted a write of `value` (the stock is now `stock`) or rejected it.
    StockWrite {
        client: usize,
        token: Option<u64>,
        value: i64,
        accepted: bool,
        stock: i64,
    },
    /// A command of client `by` deleted or overwrote the lock entry on `node` that
    /// client `owner` had written last.
    Displaced {
        node: usize,
        by: usize,
        owner: usize,
    },
    /// After a step, the lock key on a live node: who wrote it last, and its PTTL
    /// (-1: no expiry).
    KeyObserved {
        node: usize,
        owner: Option<usize>,
        pttl_ms: i64,
    },
    /// A fault, or a topology change, as it was really carried out.
    Fault { what: String },
}

impl History {
    /// An empty history.
    pub fn new(design: DesignId, fencing: Fencing, initial_stock: i64) -> Self {
        History {
            design,
            fencing,
            initial_stock,
            entries: Vec::new(),
        }
    }

    /// Append an event at `ms`.
    pub fn push(&mut self, ms: f64, event: Event) {
        self.entries.push(Entry { ms, event });
    }
}
