//! Symmetry reduction: states that differ only by a renaming of interchangeable parts are
//! one state for the search.
//!
//! Clients are always interchangeable (tokens are free of client ids). Redlock's masters
//! are too, when each is an independent node and nothing singles one out: no replicas
//! (a master/replica topology is not symmetric) and no option that talks to node 0 only
//! (fencing's INCR, WAIT). The representative of a state is the smallest, by fingerprint,
//! of its renamings that order the masters, then the clients, by keys that no renaming
//! of clients and no token name changes; ties are settled by trying each order of the
//! tied parts, so the representative is the same for every state of an orbit.

use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;

use crate::model::{Action, LockModel};
use crate::redis::Value;
use crate::state::State;
use crate::tokens::{token_blind_key, token_number};

/// A renaming: client `i` becomes `clients[i]`, node `n` becomes `nodes[n]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renaming {
    pub clients: Perm,
    pub nodes: Perm,
}

/// A permutation of client or node indexes, kept in place: the search names one for
/// every state it stores (the identity without symmetry), so it must not allocate.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Perm {
    len: u8,
    at: [u8; Perm::CAPACITY],
}

impl Perm {
    /// The most indexes: every node of the largest topology (7 masters with 3 replicas
    /// each), and every client.
    pub const CAPACITY: usize = 32;

    /// `0..len` in order.
    pub fn identity(len: usize) -> Perm {
        const IN_ORDER: [u8; Perm::CAPACITY] = {
            let mut at = [0; Perm::CAPACITY];
            let mut i: u8 = 0;
            while (i as usize) < Perm::CAPACITY {
                at[i as usize] = i;
                i += 1;
            }
            at
        };
        assert!(
            len <= Perm::CAPACITY,
            "indexes are bounded by the scenario caps"
        );
        Perm {
            len: index(len),
            at: IN_ORDER,
        }
    }

    /// The indexes, in order.
    pub fn as_slice(&self) -> &[u8] {
        &self.at[..usize::from(self.len)]
    }

    /// How many indexes.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether it permutes nothing at all (no index).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::ops::Index<usize> for Perm {
    type Output = u8;
    fn index(&self, i: usize) -> &u8 {
        &self.as_slice()[i]
    }
}

impl std::ops::IndexMut<usize> for Perm {
    fn index_mut(&mut self, i: usize) -> &mut u8 {
        let len = usize::from(self.len);
        &mut self.at[..len][i]
    }
}

impl std::fmt::Debug for Perm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// A client or node index as stored in a renaming; bounded by the scenario caps.
fn index(i: usize) -> u8 {
    u8::try_from(i).expect("indexes are bounded by the scenario caps")
}

impl Renaming {
    /// Renames nothing.
    pub fn identity(clients: usize, nodes: usize) -> Self {
        Renaming {
            clients: Perm::identity(clients),
            nodes: Perm::identity(nodes),
        }
    }

    /// The renaming that undoes this one.
    pub fn inverse(&self) -> Self {
        let invert = |v: &Perm| {
            let mut out = Perm::identity(v.len());
            for (i, &j) in v.as_slice().iter().enumerate() {
                out[usize::from(j)] = index(i);
            }
            out
        };
        Renaming {
            clients: invert(&self.clients),
            nodes: invert(&self.nodes),
        }
    }

    /// This renaming, then `next`.
    pub fn then(&self, next: &Renaming) -> Self {
        let compose = |v: &Perm, w: &Perm| {
            let mut out = *v;
            for i in 0..v.len() {
                out[i] = w[usize::from(v[i])];
            }
            out
        };
        Renaming {
            clients: compose(&self.clients, &next.clients),
            nodes: compose(&self.nodes, &next.nodes),
        }
    }

    /// The action as it reads after the renaming.
    pub fn action(&self, a: Action) -> Action {
        a.rename(|c| self.clients[c as usize], |n| self.nodes[n as usize])
    }
}

/// A state's representative.
pub struct Representative {
    /// Its fingerprint, the key of the visited set.
    pub fingerprint: u64,
    /// The representative state.
    pub state: State,
    /// The renaming that turns the original state into the representative.
    pub renaming: Renaming,
}

impl LockModel {
    /// Whether renaming masters maps behaviours to behaviours: independent masters that
    /// are their own nodes, and no option that talks to node 0 only.
    pub fn masters_symmetric(&self) -> bool {
        let sc = &self.scenario;
        sc.topology.masters > 1
            && sc.topology.replicas == 0
            && !self.cfg.fencing
            && self.cfg.wait_replicas == 0
    }

    /// The representative of `s` under client (and, where valid, master) renaming: the
    /// renaming with the smallest `fingerprint`.
    pub fn representative(
        &self,
        mut s: State,
        fingerprint: impl Fn(&State) -> u64,
    ) -> Representative {
        let (fingerprint, renaming) = self.canonicalize(&mut s, fingerprint);
        Representative {
            fingerprint,
            state: s,
            renaming,
        }
    }

    /// [`LockModel::representative`] in place: `s` becomes its representative, and its
    /// fingerprint and the renaming that took it there are returned. The last candidate
    /// is `s` itself, renamed where it is, so a state with one candidate (most) is not
    /// copied at all; the candidates are tried in the same order either way, so the
    /// same one wins a tie.
    pub fn canonicalize(
        &self,
        s: &mut State,
        fingerprint: impl Fn(&State) -> u64,
    ) -> (u64, Renaming) {
        let masters = if self.masters_symmetric() {
            master_orders(s)
        } else {
            Orders::one(Order::identity(s.nodes.len()))
        };
        // The best so far: its fingerprint, its renaming, and the candidate unless it is
        // `s` itself.
        let mut best: Option<(u64, Renaming, Option<State>)> = None;
        let mut consider = |fp: u64, perm: &[usize], clients: &[usize], t: Option<State>| {
            if best.as_ref().is_some_and(|b| b.0 <= fp) {
                return;
            }
            let mut renaming = Renaming::identity(clients.len(), perm.len());
            for (new, &old) in clients.iter().enumerate() {
                renaming.clients[old] = index(new);
            }
            for (old, &new) in perm.iter().enumerate() {
                renaming.nodes[old] = index(new);
            }
            best = Some((fp, renaming, t));
        };
        let (masters, last) = masters.split_last();
        for order in &masters {
            let mut t = s.clone();
            let perm = put_in_order(&mut t, order);
            let (orders, last_clients) = client_orders(&t).split_last();
            for clients in &orders {
                let mut u = t.clone();
                reorder(&mut u, clients);
                consider(fingerprint(&u), &perm, clients, Some(u));
            }
            reorder(&mut t, &last_clients);
            consider(fingerprint(&t), &perm, &last_clients, Some(t));
        }
        let perm = put_in_order(s, &last);
        let (orders, last_clients) = client_orders(s).split_last();
        for clients in &orders {
            let mut u = s.clone();
            reorder(&mut u, clients);
            consider(fingerprint(&u), &perm, clients, Some(u));
        }
        reorder(s, &last_clients);
        consider(fingerprint(s), &perm, &last_clients, None);
        let (fp, renaming, t) = best.expect("at least the identity order");
        if let Some(t) = t {
            *s = t;
        }
        (fp, renaming)
    }
}

/// An order of a state's clients or masters (the old index at each new position), kept
/// in place: every state the search stores is put in order.
#[derive(Clone, Copy)]
struct Order {
    len: usize,
    at: [usize; Perm::CAPACITY],
}

impl Order {
    fn identity(len: usize) -> Order {
        let mut at = [0; Perm::CAPACITY];
        for (i, slot) in at.iter_mut().enumerate() {
            *slot = i;
        }
        Order { len, at }
    }

    fn of(items: &[usize]) -> Order {
        let mut o = Order::identity(items.len());
        o.at[..items.len()].copy_from_slice(items);
        o
    }
}

impl std::ops::Deref for Order {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.at[..self.len]
    }
}

/// The candidate orders of a state's clients or masters: most states have one, which
/// takes no allocation (kept in place on purpose, however much larger than the other).
#[allow(clippy::large_enum_variant)]
enum Orders {
    One(Order),
    Many(Vec<Vec<usize>>),
}

impl Orders {
    fn one(order: Order) -> Orders {
        Orders::One(order)
    }

    /// Every order, in turn.
    #[cfg(test)]
    fn into_vec(self) -> Vec<Vec<usize>> {
        match self {
            Orders::One(o) => vec![o.to_vec()],
            Orders::Many(v) => v,
        }
    }

    /// Every order but the last, and the last.
    fn split_last(self) -> (Vec<Vec<usize>>, Order) {
        match self {
            Orders::One(o) => (Vec::new(), o),
            Orders::Many(mut v) => {
                let last = v.pop().expect("at least one order");
                (v, Order::of(&last))
            }
        }
    }
}

/// `s` with its masters in `order` (the old master at each new position); the
/// permutation (old master to new position) is returned.
fn put_in_order(s: &mut State, order: &[usize]) -> Order {
    let mut perm = Order::identity(order.len());
    for (new, &old) in order.iter().enumerate() {
        perm.at[old] = new;
    }
    if order.iter().enumerate().any(|(a, &b)| a != b) {
        s.permute_masters(&perm);
    }
    perm
}

/// `s` with its clients in `order` (the old client at each new position).
fn reorder(s: &mut State, order: &[usize]) {
    if order.iter().enumerate().any(|(a, &b)| a != b) {
        s.reorder_clients(order);
    }
}

/// The candidate orders of the masters (each lists the old master at each new position):
/// sorted by a key that no client renaming changes, every order of tied masters, except
/// that masters which are copies of each other (swapping them leaves the state as it is:
/// say, five empty masters that no request has reached) keep one order among
/// themselves, as their other orders give the very same state. Without that, a state
/// with five tied masters is renamed 120 times to find one representative.
fn master_orders(s: &State) -> Orders {
    let mut keys = [0u64; Perm::CAPACITY];
    for (m, key) in keys.iter_mut().enumerate().take(s.nodes.len()) {
        *key = master_key(s, m);
    }
    orders_by_key(&keys[..s.nodes.len()], |a, b| {
        swap_leaves_unchanged(s, a, b)
    })
}

/// Every order of `0..keys.len()` sorted by `keys` and with the parts that tie in every
/// arrangement, except that parts that are copies of each other (`copy(a, b)`: swapping
/// them leaves the state as it is) keep one order among themselves, as their other
/// orders give the very same state. (Swaps that leave a state as it is compose into one
/// that does, so "is a copy of" is an equivalence, and comparing with a class's first
/// part is enough.)
fn orders_by_key(keys: &[u64], copy: impl Fn(usize, usize) -> bool) -> Orders {
    let mut sorted = Order::identity(keys.len());
    sorted.at[..keys.len()].sort_by_key(|&p| keys[p]);
    if sorted.windows(2).all(|w| keys[w[0]] != keys[w[1]]) {
        return Orders::One(sorted);
    }
    let mut orders = vec![Vec::with_capacity(sorted.len())];
    let mut start = 0;
    while start < sorted.len() {
        let end = start + sorted[start..].partition_point(|&p| keys[p] == keys[sorted[start]]);
        let mut classes: Vec<Vec<usize>> = Vec::new();
        for &p in &sorted[start..end] {
            match classes.iter_mut().find(|class| copy(class[0], p)) {
                Some(class) => class.push(p),
                None => classes.push(vec![p]),
            }
        }
        if let [class] = classes.as_slice() {
            // One class: its one order, without building the product.
            for o in &mut orders {
                o.extend_from_slice(class);
            }
            start = end;
            continue;
        }
        let tails = distinct_orders(&classes);
        orders = orders
            .into_iter()
            .flat_map(|prefix| {
                tails.iter().map(move |tail| {
                    let mut o = prefix.clone();
                    o.extend(tail);
                    o
                })
            })
            .collect();
        start = end;
    }
    Orders::Many(orders)
}

/// Whether `State::permute_masters` with masters `a` and `b` swapped would give `s`
/// back, checked part by part without copying the state: the two nodes are equal, and
/// for every client the requests to them (each addressed to its own node), the links
/// to them and the machine's bookkeeping of them are.
fn swap_leaves_unchanged(s: &State, a: usize, b: usize) -> bool {
    if s.nodes[a] != s.nodes[b] {
        return false;
    }
    let swap = |n: u8| match usize::from(n) {
        n if n == a => b,
        n if n == b => a,
        n => n,
    };
    s.clients.iter().all(|c| {
        let flights = match (&c.core.flights[a], &c.core.flights[b]) {
            (None, None) => true,
            (Some(x), Some(y)) => {
                swap(x.node) == usize::from(y.node)
                    && swap(y.node) == usize::from(x.node)
                    && x.command == y.command
                    && x.held == y.held
                    && x.age == y.age
                    && x.wait == y.wait
            }
            _ => false,
        };
        // A request given up on names its slot and node: a swap of either moves it.
        let strays = c.core.strays.iter().all(|st| {
            let (slot, node) = (usize::from(st.slot), usize::from(st.flight.node));
            slot != a && slot != b && node != a && node != b
        });
        flights && strays && (c.cut >> a) & 1 == (c.cut >> b) & 1 && c.core.machine.swap_keeps(a, b)
    })
}

/// The orders of the masters of `classes` that differ in more than the order of copies
/// among themselves: each class's masters are placed in their given order.
fn distinct_orders(classes: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let total = classes.iter().map(Vec::len).sum();
    let mut out = Vec::new();
    arrange(
        classes,
        &mut vec![0; classes.len()],
        &mut Vec::with_capacity(total),
        total,
        &mut out,
    );
    out
}

/// Every completion of `order` to `total` masters, taking each class's next master
/// (`taken[c]` of class `c` are placed).
fn arrange(
    classes: &[Vec<usize>],
    taken: &mut [usize],
    order: &mut Vec<usize>,
    total: usize,
    out: &mut Vec<Vec<usize>>,
) {
    if order.len() == total {
        out.push(order.clone());
        return;
    }
    for c in 0..classes.len() {
        let Some(&m) = classes[c].get(taken[c]) else {
            continue;
        };
        taken[c] += 1;
        order.push(m);
        arrange(classes, taken, order, total, out);
        order.pop();
        taken[c] -= 1;
    }
}

/// The candidate orders of the clients (each lists the old client at each new
/// position): sorted by what each looks like with token names left out, and every order
/// of clients that tie on it, except clients that are copies of each other (swapping
/// them leaves the state as it is), which keep one order.
fn client_orders(s: &State) -> Orders {
    let mut keys = [0u64; Perm::CAPACITY];
    for (key, c) in keys.iter_mut().zip(&s.clients) {
        *key = token_blind_key(c);
    }
    orders_by_key(&keys[..s.clients.len()], |a, b| clients_swap_keeps(s, a, b))
}

/// Whether `State::reorder_clients` with clients `a` and `b` swapped would give `s`
/// back, checked without copying the state: the two clients are equal, no entry names
/// either as its owner, and the split brain moved both or neither.
fn clients_swap_keeps(s: &State, a: usize, b: usize) -> bool {
    let owned = |o: &Option<u8>| o.is_some_and(|o| usize::from(o) == a || usize::from(o) == b);
    s.clients[a] == s.clients[b]
        && s.nodes
            .iter()
            .all(|n| n.data.entries.iter().all(|(_, e)| !owned(&e.owner)))
        && s.split
            .as_ref()
            .is_none_or(|x| (x.moved >> a) & 1 == (x.moved >> b) & 1)
}

/// What master `m` looks like with client identities and token names left out: its
/// node, and the clients' requests to it and links to it, combined in an order-free way.
/// (Token names would order the masters of two states that differ only by them
/// differently, and so hide that they are one state when tokens are known by first
/// appearance; left out, masters that differ only there tie, and every order of them is
/// tried. An entry's token is hashed as `token`; a request's, and its reply's, as their
/// order of first appearance in it.) A cheap hash, not the fingerprint's: masters whose
/// keys collide tie, and every order of them is tried.
fn master_key(s: &State, m: usize) -> u64 {
    let node = &s.nodes[m];
    let mut h = FxHasher::default();
    (node.alive, node.offset).hash(&mut h);
    for (k, e) in &node.data.entries {
        match &e.value {
            Value::Str(v) if token_number(v.as_bytes()).is_some() => "token".hash(&mut h),
            value => value.hash(&mut h),
        }
        (k, e.expires_at, e.owner.is_some()).hash(&mut h);
    }
    let links = s
        .clients
        .iter()
        .map(|c| {
            let flight = c.core.flights[m].as_ref();
            let f = flight.map(|f| (&f.command, &f.held, f.age));
            let cut = c.cut & (1 << m) != 0;
            // A blocked WAIT's counter or a lost request's mark only when set, as the
            // fingerprint hashes it (a restart of a Redlock master loses requests).
            match flight.map_or(0, |f| f.wait) {
                0 => token_blind_key(&(f, cut)),
                wait => token_blind_key(&(f, cut, wait)),
            }
        })
        .fold(0u64, u64::wrapping_add);
    links.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// Every order of `items`.
    fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
        if items.len() <= 1 {
            return vec![items.to_vec()];
        }
        let mut out = Vec::new();
        for (i, &first) in items.iter().enumerate() {
            let mut rest = items.to_vec();
            rest.remove(i);
            for mut tail in permutations(&rest) {
                tail.insert(0, first);
                out.push(tail);
            }
        }
        out
    }

    fn permuted(s: &State, order: &[usize]) -> State {
        let mut perm = vec![0; order.len()];
        for (new, &old) in order.iter().enumerate() {
            perm[old] = new;
        }
        let mut t = s.clone();
        t.permute_masters(&perm);
        t
    }

    /// The representative is the same for every state of an orbit: states that are
    /// renamings of each other (clients, masters, and token names, which the fingerprint
    /// leaves out) get one representative. The orbit is found by brute force: the
    /// smallest fingerprint over every order of the masters and of the clients.
    /// (Master keys that read a request's token name broke this: two states whose
    /// clients had taken their tokens in the other order sorted their masters apart.)
    #[test]
    fn every_state_of_an_orbit_has_one_representative() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/redlock-gc-pause.toml");
        let model = LockModel::new(&Scenario::load(&path).unwrap());
        assert!(model.masters_symmetric());
        let fingerprint = |t: &State| model.state_fingerprint(t, true);
        let masters = permutations(&[0, 1, 2]);
        let clients = permutations(&[0, 1]);
        let mut representative_of_orbit = std::collections::HashMap::new();
        let (mut states, mut merged) = (0, 0);
        for next in crate::model::levels(&model, 12) {
            for s in next.iter().step_by(3) {
                let orbit = masters
                    .iter()
                    .flat_map(|m| {
                        let t = permuted(s, m);
                        clients.iter().map(move |c| {
                            let mut u = t.clone();
                            u.reorder_clients(c);
                            fingerprint(&u)
                        })
                    })
                    .min()
                    .expect("at least the identity");
                let rep = model.representative(s.clone(), fingerprint).fingerprint;
                match representative_of_orbit.insert(orbit, rep) {
                    Some(other) => {
                        assert_eq!(other, rep, "two representatives of one orbit, at {s:?}");
                        merged += 1;
                    }
                    None => states += 1,
                }
            }
        }
        eprintln!("{states} orbits, {merged} states merged into one already seen");
        assert!(
            states > 1000 && merged > 1000,
            "{states} orbits, {merged} merged"
        );
    }

    /// The checks without copies answer what swapping in a copy and comparing answers.
    #[test]
    fn swap_checks_are_swap_and_compare() {
        let scenarios = [
            "redlock-restart.toml",
            "lua-release-pause.toml",
            "lua-release-split-brain.toml",
        ];
        let (mut pairs, mut kept) = (0, 0);
        for name in scenarios {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../scenarios")
                .join(name);
            let model = LockModel::new(&Scenario::load(&path).unwrap());
            for next in crate::model::levels(&model, 10) {
                for s in next.iter().step_by(7) {
                    for a in 0..s.clients.len() {
                        for b in a + 1..s.clients.len() {
                            let mut order: Vec<usize> = (0..s.clients.len()).collect();
                            order.swap(a, b);
                            let mut t = s.clone();
                            t.reorder_clients(&order);
                            assert_eq!(clients_swap_keeps(s, a, b), t == *s, "{s:?}");
                            pairs += 1;
                            kept += usize::from(t == *s);
                        }
                    }
                    if !model.masters_symmetric() {
                        continue;
                    }
                    for a in 0..s.nodes.len() {
                        for b in a + 1..s.nodes.len() {
                            let mut perm: Vec<usize> = (0..s.nodes.len()).collect();
                            perm.swap(a, b);
                            let mut t = s.clone();
                            t.permute_masters(&perm);
                            assert_eq!(swap_leaves_unchanged(s, a, b), t == *s, "{s:?}");
                            pairs += 1;
                            kept += usize::from(t == *s);
                        }
                    }
                }
            }
        }
        eprintln!("{pairs} swaps checked, {kept} leave the state as it is");
        assert!(kept > 100 && pairs > 2 * kept, "{kept} of {pairs}");
    }

    /// Leaving out the orders of copies loses no candidate: every order of the tied
    /// masters gives a state that one of the kept orders gives too, so the smallest
    /// fingerprint, the representative, is the one the search always had.
    #[test]
    fn the_orders_left_out_give_states_a_kept_order_gives() {
        let text = r#"name = "orders"
design = "redlock"
[topology]
masters = 4
[clients]
count = 2
[timing]
ttl = 4
work = 1
max_step_delay = 1
horizon = 6
[faults]
restarts = 1
[expect]
mutual_exclusion = "violated"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "violated"
"#;
        let model = LockModel::new(&Scenario::parse(text, "orders.toml").unwrap());
        assert!(model.masters_symmetric());
        let (mut tied, mut saved) = (0, 0);
        for next in crate::model::levels(&model, 8) {
            for s in next.iter().step_by(3) {
                let kept = master_orders(s).into_vec();
                let kept_states: Vec<State> = kept.iter().map(|o| permuted(s, o)).collect();
                let keys: Vec<u64> = (0..s.nodes.len()).map(|m| master_key(s, m)).collect();
                let every: Vec<Vec<usize>> = permutations(&(0..s.nodes.len()).collect::<Vec<_>>())
                    .into_iter()
                    .filter(|o| o.windows(2).all(|w| keys[w[0]] <= keys[w[1]]))
                    .collect();
                for o in &every {
                    let t = permuted(s, o);
                    assert!(kept_states.contains(&t), "order {o:?} of {s:?} left out");
                }
                if every.len() > 1 {
                    tied += 1;
                    saved += every.len() - kept.len();
                }
            }
        }
        eprintln!("{tied} states with tied masters, {saved} orders left out");
        assert!(tied > 100, "{tied} states with tied masters");
        assert!(saved > tied, "{saved} orders saved over {tied} states");
    }
}
