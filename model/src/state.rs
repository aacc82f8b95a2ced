//! The model's state: clients (each running a [`locklab::LockMachine`] from `src/`), Redis nodes,
//! the protected stock counter, the logical clock and the fault budget spent so far.

use locklab::resource::Stock;

pub use crate::client::{ClientCore, Flight, Phase, Stray};
use crate::clone_in_place::clone_in_place;
use crate::fault::Spent;
use crate::parts::Parts;
use crate::redis::Data;

/// One client process: what the run engine keeps of it too ([`ClientCore`]), and the
/// model's timing and faults.
#[derive(Debug, PartialEq, Eq)]
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

// The search builds every successor in place ([`crate::clone_in_place`]).
clone_in_place!(Client {
    copy: [paused, offset, retry_wait, waited, since_renew, cut],
    keep: [core],
});

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
#[derive(Debug, PartialEq, Eq, Hash)]
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

clone_in_place!(Node {
    copy: [alive, offset, replica_of, repl_offset, drifted],
    keep: [data],
});

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
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// The global logical clock, in ticks.
    pub now: u8,
    /// The clients.
    pub clients: Parts<Client>,
    /// Physical nodes: masters first, then replicas.
    pub nodes: Parts<Node>,
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

// Down to each client's requests and each node's data: the search builds each successor
// in one state per worker this way, and moves it out only when it is new.
clone_in_place!(State {
    copy: [now, spent, next_token, displaced_other, pausing, stepped],
    keep: [clients, nodes, serving, stock, split],
});

impl State {
    /// `self` made equal to `source` again, where it was last copied from `source`
    /// (`clone_from` or this) and changed since: the clients and nodes a change touched
    /// are copied back ([`Parts::restore_from`]), the rest whole. The search builds each
    /// sibling successor this way.
    pub fn restore_from(&mut self, source: &State) {
        let State {
            now,
            clients,
            nodes,
            serving,
            stock,
            spent,
            next_token,
            displaced_other,
            split,
            pausing,
            stepped,
        } = source;
        self.now = *now;
        self.clients.restore_from(clients);
        self.nodes.restore_from(nodes);
        self.serving.clone_from(serving);
        self.stock.clone_from(stock);
        self.spent = *spent;
        self.next_token = *next_token;
        self.displaced_other = *displaced_other;
        self.split.clone_from(split);
        self.pausing = *pausing;
        self.stepped = *stepped;
    }

    /// The same state with its clients reordered: client `order[k]` becomes client `k`,
    /// and the ghost owners of entries are renamed to match.
    pub fn reorder_clients(&mut self, order: &[usize]) {
        let mut rename = [0u8; MAX_PARTS];
        for (new, &old) in order.iter().enumerate() {
            rename[old] = u8::try_from(new).expect("at most MAX_CLIENTS clients");
        }
        take_in_order(self.clients.as_mut_slice(), order);
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
        let mut inverse = [0usize; MAX_PARTS];
        for (m, &p) in perm.iter().enumerate() {
            inverse[p] = m;
        }
        let inverse = &inverse[..perm.len()];
        take_in_order(self.nodes.as_mut_slice(), inverse);
        let renamed = |n: u8| {
            u8::try_from(perm[usize::from(n)]).expect("nodes are bounded by the scenario caps")
        };
        for c in &mut self.clients {
            take_in_order(&mut c.core.flights, inverse);
            for f in c.core.flights.iter_mut().flatten() {
                f.node = renamed(f.node);
            }
            for st in &mut c.core.strays {
                st.slot = renamed(st.slot);
                st.flight.node = renamed(st.flight.node);
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

/// The most clients or masters a renaming moves (the scenario caps are 4 and 7).
const MAX_PARTS: usize = 32;

/// `v` rearranged in place so that its `k`-th item is the one that was at `order[k]`
/// (`order` a permutation of `0..v.len()`), by swaps along the permutation's cycles: the
/// search renames states by the million, and this moves each item once, allocating
/// nothing.
fn take_in_order<T>(v: &mut [T], order: &[usize]) {
    assert_eq!(v.len(), order.len(), "order is a permutation of the items");
    assert!(v.len() <= MAX_PARTS, "at most {MAX_PARTS} items");
    let mut placed = 0u32;
    for start in 0..v.len() {
        if placed & (1 << start) != 0 {
            continue;
        }
        let mut j = start;
        loop {
            placed |= 1 << j;
            let from = order[j];
            if from == start {
                break;
            }
            v.swap(j, from);
            j = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::take_in_order;

    /// In place, every order of up to six items gives what collecting them in that
    /// order gives.
    #[test]
    fn taking_in_order_is_collecting_in_order() {
        fn orders(n: usize) -> Vec<Vec<usize>> {
            if n == 0 {
                return vec![Vec::new()];
            }
            let mut out = Vec::new();
            for o in orders(n - 1) {
                for at in 0..=o.len() {
                    let mut o = o.clone();
                    o.insert(at, n - 1);
                    out.push(o);
                }
            }
            out
        }
        let mut checked = 0;
        for n in 0..=6 {
            let items: Vec<String> = (0..n).map(|i| format!("item{i}")).collect();
            for order in orders(n) {
                let collected: Vec<String> = order.iter().map(|&i| items[i].clone()).collect();
                let mut v = items.clone();
                take_in_order(&mut v, &order);
                assert_eq!(v, collected, "{order:?}");
                checked += 1;
            }
        }
        assert_eq!(checked, 1 + 1 + 2 + 6 + 24 + 120 + 720);
    }
}
