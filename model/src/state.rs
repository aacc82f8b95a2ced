//! The model's state: clients (each running a [`locklab::LockMachine`] from `src/`), Redis nodes,
//! the protected stock counter, the logical clock and the fault budget spent so far.

use locklab::resource::Stock;

pub use crate::client::{ClientCore, Flight, Phase, Stray};
use crate::fault::Spent;
use crate::redis::Data;

/// One client process: what the run engine keeps of it too ([`ClientCore`]), and the
/// model's timing and faults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client {
    /// Its machine, phase, attempts, fence and requests on the wire.
    pub core: ClientCore,
    /// Stopped by a stop-the-world pause.
    pub paused: bool,
    /// Its clock's offset from the global clock, in ticks.
    pub offset: i64,
    /// A denied client retries only after the clock moved.
    pub retry_wait: bool,
    /// Ticks it has had a step to take without taking it.
    pub waited: u8,
    /// Ticks since the lease was last renewed (renewing designs).
    pub since_renew: u8,
    /// Masters whose link from this client is cut (bit per master).
    pub cut: u16,
}

/// Field by field in a fixed order that interleaves the core's fields with the model's:
/// a state's fingerprint, and so which state the symmetry reduction keeps as the
/// representative of its class (and which counterexample a search reports), follows
/// from this order.
impl std::hash::Hash for Client {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let c = &self.core;
        c.machine.hash(h);
        c.phase.hash(h);
        self.paused.hash(h);
        self.offset.hash(h);
        c.attempts.hash(h);
        self.retry_wait.hash(h);
        self.waited.hash(h);
        self.since_renew.hash(h);
        c.fence.hash(h);
        c.flights.hash(h);
        self.cut.hash(h);
        c.strays.hash(h);
    }
}

impl Client {
    /// Running: neither paused nor crashed.
    pub fn running(&self) -> bool {
        !self.paused && self.core.phase != Phase::Crashed
    }

    /// Holding (it believes): in the critical-section program, releases included.
    pub fn holding(&self) -> bool {
        self.core.phase.holding()
    }
}

/// One Redis server.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    /// Up (a failed-over master is down for good).
    pub alive: bool,
    /// Clock offset from the global clock, in ticks.
    pub offset: i64,
    /// The data.
    pub data: Data,
    /// The master it replicates from, if a replica.
    pub replica_of: Option<u8>,
    /// Replication offset: writes applied (a master counts the writes it executes, a
    /// replica takes its master's offset when it catches up). Kept at 0 unless the
    /// scenario promotes the most advanced replica, so other scenarios do not grow.
    pub repl_offset: u8,
    /// Ticks its clock has run ahead by drift (bounded by `timing.node_drift`).
    pub drifted: u8,
}

/// A split brain (the case Jepsen found in Redis Sentinel): a partition cuts master slot
/// `slot`'s node `old` off from Sentinel and the replicas; a replica was promoted on the
/// majority side, but `old` stays up and keeps serving the clients on its side. The
/// partition lasts to the horizon, or for ever without one (when it heals, Sentinel demotes `old` and its writes
/// are lost; that is not modelled).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Split {
    /// The master slot that has two masters.
    pub slot: u8,
    /// The old master, still up on the minority side.
    pub old: u8,
    /// Clients (bit per client) that learnt the new master from Sentinel: they reach
    /// only the promoted node; the others reach only `old`.
    pub moved: u8,
}

/// A whole-system state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// The global logical clock, in ticks.
    pub now: u8,
    /// The clients.
    pub clients: Vec<Client>,
    /// Physical nodes: masters first, then replicas.
    pub nodes: Vec<Node>,
    /// For each master index the designs talk to, the physical node serving it.
    pub serving: Vec<u8>,
    /// The protected resource.
    pub stock: Stock,
    /// Faults spent.
    pub spent: Spent,
    /// Next token number (tokens are `t1`, `t2`, ...: unique, and free of client ids so
    /// that clients stay symmetric).
    pub next_token: u8,
    /// Set when a step deleted or overwrote a lock entry held by another client.
    pub displaced_other: bool,
    /// The split brain in effect, if any.
    pub split: Option<Split>,
    /// Pause placement ([`crate::pause_placement`]): a pause was just taken, so only
    /// the tick (or another pause) follows. Always `false` without that reduction.
    pub pausing: bool,
    /// Pause placement: a step was taken since the last tick, so no client resumes
    /// before the next one. Always `false` without that reduction.
    pub stepped: bool,
}

impl State {
    /// The same state with its clients reordered: client `order[k]` becomes client `k`,
    /// and the ghost owners of entries are renamed to match.
    pub fn reorder_clients(&mut self, order: &[usize]) {
        let mut rename = vec![0u8; order.len()];
        for (new, &old) in order.iter().enumerate() {
            rename[old] = u8::try_from(new).expect("at most MAX_CLIENTS clients");
        }
        let mut old: Vec<Option<Client>> = std::mem::take(&mut self.clients)
            .into_iter()
            .map(Some)
            .collect();
        self.clients = order
            .iter()
            .map(|&i| old[i].take().expect("order is a permutation"))
            .collect();
        for node in &mut self.nodes {
            for (_, e) in &mut node.data.entries {
                if let Some(o) = &mut e.owner {
                    *o = rename[*o as usize];
                }
            }
        }
        if let Some(split) = &mut self.split {
            split.moved = (0..order.len())
                .filter(|&old| split.moved & (1 << old) != 0)
                .fold(0, |acc, old| acc | (1 << rename[old]));
        }
    }

    /// The same state with master `m` renamed to `perm[m]`: its node (data, clock, up or
    /// down), every client's request to it, link to it and the machine's bookkeeping of
    /// it. Only for independent masters without replicas (Redlock), where each master is
    /// its own physical node.
    pub fn permute_masters(&mut self, perm: &[usize]) {
        assert_eq!(perm.len(), self.nodes.len(), "masters without replicas");
        let mut old: Vec<Option<Node>> = std::mem::take(&mut self.nodes)
            .into_iter()
            .map(Some)
            .collect();
        let mut inverse = vec![0; perm.len()];
        for (m, &p) in perm.iter().enumerate() {
            inverse[p] = m;
        }
        self.nodes = inverse
            .iter()
            .map(|&m| old[m].take().expect("perm is a permutation"))
            .collect();
        for c in &mut self.clients {
            let mut flights: Vec<Option<Flight>> =
                inverse.iter().map(|&m| c.core.flights[m].take()).collect();
            for f in flights.iter_mut().flatten() {
                f.node = u8::try_from(perm[f.node as usize])
                    .expect("nodes are bounded by the scenario caps");
            }
            c.core.flights = flights;
            for st in &mut c.core.strays {
                st.slot = u8::try_from(perm[usize::from(st.slot)])
                    .expect("nodes are bounded by the scenario caps");
                st.flight.node = u8::try_from(perm[usize::from(st.flight.node)])
                    .expect("nodes are bounded by the scenario caps");
            }
            c.cut = perm
                .iter()
                .enumerate()
                .filter(|(m, _)| c.cut & (1 << m) != 0)
                .fold(0, |acc, (_, &p)| acc | (1 << p));
            c.core.machine.permute_nodes(perm);
        }
        // `serving` is the identity without replicas, and stays so.
    }
}
