//! [`Connections`]: node connections shared by many locks of one process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::node::{ConnectionSlot, NodeTimeouts};

/// The slots by node URL and timeouts.
type Slots = HashMap<(String, NodeTimeouts), Arc<ConnectionSlot>>;

/// A set of node connections that locks built with it share: locks on the same node URL
/// with the same timeouts multiplex their commands on one connection, instead of
/// opening one each.
///
/// With many locks in one process (a lock per resource, a lock per task) this is what
/// keeps the node's work per command low: the multiplexed connection writes the
/// commands of every lock in one batch and reads their replies in one. Each lock still
/// has its own state machine, token, retries and pause gate.
///
/// A lock that `WAIT`s for replicas keeps connections of its own even when given a
/// `Connections`: `WAIT` counts the replication of the writes sent on its connection
/// and holds that connection until it returns.
///
/// Cloneable; every clone is the same set. Give it to
/// [`LockBuilder::connections`](super::LockBuilder::connections).
#[derive(Clone, Default)]
pub struct Connections {
    slots: Arc<Mutex<Slots>>,
}

impl std::fmt::Debug for Connections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.slots.lock().map_or(0, |s| s.len());
        f.debug_struct("Connections").field("nodes", &n).finish()
    }
}

impl Connections {
    /// An empty set; connections are made by the first command to each node.
    pub fn new() -> Self {
        Connections::default()
    }

    /// The connection slot for `url` with `timeouts`, made on first use.
    pub(crate) fn slot(&self, url: &str, timeouts: NodeTimeouts) -> Arc<ConnectionSlot> {
        self.slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((url.to_string(), timeouts))
            .or_default()
            .clone()
    }
}
