//! A simulated world for the lock machines: clients running [`LockMachine`]s against
//! the model's abstract Redis ([`Exec`]) on one shared clock, with no I/O. The test
//! decides when each request reaches its node, so any interleaving can be written
//! down; links can drop requests or replies; nodes can restart empty.

use locklab::{
    Answer, DesignId, Grant, LockConfig, LockMachine, Millis, NoAnswer, Outcome, Request,
};
use locklab_model::redis::{Data, Exec, Text, Value};

/// The lease of every simulated lock, in milliseconds.
pub const TTL: u64 = 1_000;

/// `ms` as a clock value.
pub fn millis(ms: u64) -> Millis {
    Millis::try_from(ms).expect("a test's time fits in Millis")
}

/// What a link does to a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// The node runs the request and the reply comes back.
    Up,
    /// The request never reaches the node (partition, node down).
    Down,
    /// The node runs the request; the reply is lost.
    ReplyLost,
}

/// A call into a machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Acquire,
    Release,
    Renew,
}

/// One client: its machine, its requests not yet delivered, its clock's offset.
struct Client {
    machine: LockMachine,
    pending: Vec<Request>,
    skew: Millis,
    attempts: u32,
}

/// One delivered request that deleted or overwrote an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Displaced {
    /// The client whose request did it.
    pub by: usize,
    pub node: usize,
    /// The client that had written the entry (`None`: not a lock entry).
    pub owner: Option<u8>,
}

/// Clients, nodes and the clock.
pub struct Sim {
    pub cfg: LockConfig,
    nodes: Vec<Data>,
    links: Vec<Link>,
    now: Millis,
    clients: Vec<Client>,
    /// Every entry a delivered request deleted or overwrote, in order.
    pub displaced: Vec<Displaced>,
}

impl Sim {
    /// A world for `design` (Redlock on `masters` masters; one node otherwise).
    pub fn new(design: DesignId, masters: usize) -> Sim {
        let mut cfg = LockConfig::new(design, "lock", TTL);
        cfg.masters = masters;
        Sim::with_config(cfg)
    }

    /// A world for a configuration (fencing and WAIT included).
    pub fn with_config(cfg: LockConfig) -> Sim {
        Sim {
            nodes: vec![Data::default(); cfg.masters],
            links: vec![Link::Up; cfg.masters],
            now: 0,
            clients: Vec::new(),
            displaced: Vec::new(),
            cfg,
        }
    }

    /// Add a client; returns its index (also its ghost id on the nodes).
    pub fn client(&mut self) -> usize {
        self.clients.push(Client {
            machine: LockMachine::new(&self.cfg),
            pending: Vec::new(),
            skew: 0,
            attempts: 0,
        });
        self.clients.len() - 1
    }

    /// Client `c`'s clock runs `skew` ms ahead of the nodes' clock.
    pub fn skew(&mut self, c: usize, skew: Millis) {
        self.clients[c].skew = skew;
    }

    /// The nodes' clock.
    pub fn now(&self) -> Millis {
        self.now
    }

    /// Client `c`'s clock: what its machine gets as `now`.
    pub fn clock(&self, c: usize) -> Millis {
        self.now + self.clients[c].skew
    }

    /// Let `ms` pass for everybody.
    pub fn advance(&mut self, ms: u64) {
        self.now += millis(ms);
    }

    /// Set what the link to `node` does from now on.
    pub fn link(&mut self, node: usize, link: Link) {
        self.links[node] = link;
    }

    /// Every link.
    pub fn links(&mut self, link: Link) {
        self.links.fill(link);
    }

    /// Node `node` restarts without persistence: its data is gone.
    pub fn restart(&mut self, node: usize) {
        self.nodes[node] = Data::default();
    }

    /// Client `c` crashes and comes back without its lock state or its requests.
    pub fn crash(&mut self, c: usize) {
        let cfg = self.cfg.clone();
        let client = &mut self.clients[c];
        client.machine.reset(&cfg);
        client.pending.clear();
    }

    /// Call `op` on client `c`'s machine; its requests wait for [`Sim::deliver`].
    pub fn start(&mut self, c: usize, op: Op) -> Option<Outcome> {
        let now = self.clock(c);
        let cfg = &self.cfg;
        let client = &mut self.clients[c];
        let step = match op {
            Op::Acquire => {
                client.attempts += 1;
                let token = format!("c{c}-{}", client.attempts);
                client.machine.acquire(cfg, now, &token)
            }
            Op::Release => client.machine.release(cfg, now),
            Op::Renew => client.machine.renew(cfg, now),
        };
        client.pending.extend(step.sends);
        step.outcome
    }

    /// Deliver client `c`'s request for `node` through the link, at the current clock,
    /// and feed the answer back; the machine's next requests wait in turn.
    pub fn deliver(&mut self, c: usize, node: usize) -> Option<Outcome> {
        let client = &mut self.clients[c];
        let i = client
            .pending
            .iter()
            .position(|r| r.node == node)
            .unwrap_or_else(|| panic!("client {c} has no request for node {node}"));
        let request = client.pending.remove(i);
        let answer: Answer = match self.links[node] {
            Link::Down => Err(NoAnswer),
            link => {
                let ghost = u8::try_from(c).expect("fewer than 256 clients");
                let mut exec = Exec::new(&mut self.nodes[node], self.now, ghost);
                let reply = exec.run(&request.command);
                self.displaced
                    .extend(exec.effect.displaced.iter().map(|&owner| Displaced {
                        by: c,
                        node,
                        owner,
                    }));
                if link == Link::Up {
                    Ok(reply)
                } else {
                    Err(NoAnswer)
                }
            }
        };
        let now = self.clock(c);
        let client = &mut self.clients[c];
        let step = client.machine.on_answer(&self.cfg, node, answer, now);
        client.pending.extend(step.sends);
        step.outcome
    }

    /// Deliver client `c`'s requests, oldest first, until its operation has an outcome.
    pub fn finish(&mut self, c: usize) -> Outcome {
        loop {
            let node = match self.clients[c].pending.first() {
                Some(request) => request.node,
                None => panic!("client {c}'s machine stalled: no request, no outcome"),
            };
            if let Some(outcome) = self.deliver(c, node) {
                assert!(
                    self.clients[c].pending.is_empty(),
                    "client {c} has requests left after its outcome {outcome:?}"
                );
                return outcome;
            }
        }
    }

    /// Call `op` on client `c` and deliver everything it sends until it has an outcome.
    pub fn run(&mut self, c: usize, op: Op) -> Outcome {
        match self.start(c, op) {
            Some(outcome) => {
                assert!(self.clients[c].pending.is_empty());
                outcome
            }
            None => self.finish(c),
        }
    }

    pub fn acquire(&mut self, c: usize) -> Outcome {
        self.run(c, Op::Acquire)
    }

    pub fn release(&mut self, c: usize) -> Outcome {
        self.run(c, Op::Release)
    }

    pub fn renew(&mut self, c: usize) -> Outcome {
        self.run(c, Op::Renew)
    }

    /// Client `c`'s grant, if its machine holds the lock.
    pub fn grant(&self, c: usize) -> Option<Grant> {
        self.clients[c].machine.grant()
    }

    /// Whether client `c`'s watchdog would still renew its hold.
    pub fn renewing(&self, c: usize) -> bool {
        self.clients[c].machine.renewing(&self.cfg)
    }

    /// Whether client `c` has requests not yet delivered.
    pub fn busy(&self, c: usize) -> bool {
        !self.clients[c].pending.is_empty()
    }

    /// The live value of the lock key on `node` at the current clock.
    pub fn value(&mut self, node: usize) -> Option<Value> {
        self.entry(node).map(|(value, _)| value)
    }

    /// The live value and the absolute expiry of the lock key on `node`.
    pub fn entry(&mut self, node: usize) -> Option<(Value, Option<Millis>)> {
        let data = &mut self.nodes[node];
        data.expire(self.now);
        data.entry(&self.cfg.key)
            .map(|e| (e.value.clone(), e.expires_at))
    }

    /// Who holds the lock key on `node`: its string value (a token; an expiry time for
    /// `getset-timestamp`) or the owner field of a reentrant hash.
    pub fn holder(&mut self, node: usize) -> Option<Text> {
        match self.value(node)? {
            Value::Str(s) => Some(s),
            Value::Hash(fields) => {
                assert_eq!(fields.len(), 1, "one owner field: {fields:?}");
                Some(fields[0].0.clone())
            }
            Value::List(items) => panic!("no design keeps its lock in a list: {items:?}"),
        }
    }

    /// [`Sim::holder`] on every node.
    pub fn holders(&mut self) -> Vec<Option<Text>> {
        (0..self.nodes.len())
            .map(|node| self.holder(node))
            .collect()
    }

    /// Whether the lock key exists on no node.
    pub fn free(&mut self) -> bool {
        self.holders().iter().all(Option::is_none)
    }
}
