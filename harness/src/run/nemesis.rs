//! The real faults and the cluster they happen to.
//!
//! Nodes are numbered as in the model: masters `0..M`, then the replicas of master 0,
//! of master 1, ... Each fault really happens:
//!
//! - replication lag: every replica is disconnected from the run's Docker network from
//!   the start, so it misses the master's writes until the model lets it catch up
//!   ([`Nemesis::replicate`]: reconnect, resync, `WAIT` on the master until the replica
//!   acknowledged everything, disconnect again; this takes a few hundred ms of real
//!   time). A `docker pause` would not do: the master's writes wait in the frozen
//!   replica's socket buffer and are applied the moment it runs again;
//! - failover: the master is `docker kill`ed, the replica the model chose (it may have
//!   missed the latest writes) is promoted with `REPLICAOF NO ONE`, the slot's other
//!   replicas get `REPLICAOF <promoted>` as Sentinel would send it, and every client's
//!   link to that master slot is pointed at the promoted node (clients reconnect). The
//!   re-pointed replicas stay off the network until their next catch-up, where they
//!   resync from the promoted node (a full resync when they are ahead of it: they drop
//!   what it lacks), so they lag exactly as long as the model lets them;
//! - failover with Sentinel (`[topology] sentinels` > 0): the master is `docker
//!   kill`ed and the run waits until the sentinels have promoted a replica
//!   themselves ([`Cluster::wait_for_sentinel_promotion`]); the replica cut off the
//!   cluster network stays in their sight on the rig's sentinel network, so it is
//!   promoted with whatever it missed. The model's choice is the only replica Sentinel
//!   may pick: the slot's other replicas get `replica-priority 0` just before the
//!   kill (an operator's setting; with one replica there is nothing to set). The
//!   replicas Sentinel re-points to the promoted node replicate over the sentinel
//!   network from then on (their lag is no longer emulated);
//! - split brain: the master stays up and the model's replica is promoted (back on the
//!   network, the slot's other replicas re-pointed to it) while every client's link proxy
//!   still leads to the old master: the clients are on its side of the partition. A
//!   client that learns the new master ([`Nemesis::redirect`]) has its proxy pointed at
//!   the promoted node and reaches only that one. The old master is cut off from the
//!   replicas by the lag emulation already (they are off the network, or follow the
//!   promoted node);
//! - restart: the container is removed and created again, empty (no persistence);
//! - partition: the link's [`LinkProxy`] cuts it (and heal opens it again);
//! - node clock jump: libclockshift in the container steps the node's wall clock, which
//!   drives `TIME` and key expiry. This is an emulation of a clock jump (an `LD_PRELOAD`
//!   shift of the clock Redis reads), named as such in every report.
//!
//! Every fault's real side is one [`Strike`], and [`Nemesis::carry_out`] does each: a
//! replay (and so a chaos run) turns the model's fault actions into strikes
//! ([`Nemesis::strike_for`]), a soak draws them from its schedule. A client's own faults (a
//! pause, a crash, its clock) go to its process through [`Processes`], which replay's
//! engine and a soak's fleet each implement. The one fault not here is replay's lost
//! reply: the engine itself holds Redis's reply as the model's reply leg, and withholds
//! it (`LOST_REPLY_EMULATION` in the run module).

use std::net::SocketAddr;
use std::time::Duration;

use locklab_cluster::{Cluster, ClusterError, Node as ClusterNode};
use locklab_model::ids::{ClientId, MasterId, NodeId};
use locklab_model::model::Action;

use super::proxy::{LinkProxy, LinkState};

/// The name of the node clock-jump emulation, as reports show it.
pub const NODE_CLOCK_EMULATION: &str =
    "node clock jump: libclockshift (LD_PRELOAD) steps the wall clock Redis reads for TIME and key expiry";
/// The name of the node clock-drift emulation, as reports show it.
pub const NODE_DRIFT_EMULATION: &str =
    "node clock drift: a clock that runs fast, emulated as one-tick steps of the wall clock Redis reads (libclockshift, LD_PRELOAD)";
/// The name of the client clock-jump emulation, as reports show it.
pub const CLIENT_CLOCK_EMULATION: &str =
    "client clock jump: the harness shifts the clock reading it gives the client's lock machine";

/// How long a replica may take to catch up with its master.
const CATCH_UP: Duration = Duration::from_secs(5);

/// How long a replica put back on the cluster network may take to report its link up
/// after a fresh `REPLICAOF` (5 s was once too short on this two-core machine with
/// other container tests beside it). A replica kept in sync gets half of it to
/// reconnect by itself before it is given that fresh `REPLICAOF`.
const LINK_UP: Duration = Duration::from_secs(20);

/// How long Sentinel may take to promote a replica (it takes about 2.3 s with the
/// rig's timing; a split vote is retried after 6 s).
const SENTINEL_PROMOTION: Duration = Duration::from_secs(60);

/// A fault's real side: one thing done to a client process, a link or a container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Strike {
    /// Stop-the-world pause of a client process.
    Pause(usize),
    /// The paused client runs again.
    Resume(usize),
    /// The client process dies; its connections drop, its requests sent stay sent.
    Crash(usize),
    /// A client's clock jumps forward by `ms` (an emulation: the clock reading its lock
    /// machine gets).
    ClientClockJump { client: usize, ms: i64 },
    /// The link from a client to a master slot is cut.
    Cut { client: usize, slot: usize },
    /// The cut link opens again.
    Heal { client: usize, slot: usize },
    /// The link loses the `nth` reply it carries from now on, and closes.
    LoseReply {
        client: usize,
        slot: usize,
        nth: u32,
    },
    /// The link takes the next request off its connection, which stays silent for
    /// `silent` and then drops: the client gives up on a request that is still on the
    /// wire (delivered later by the one who kept it, `LinkProxy::take_kept`).
    KeepRequest {
        client: usize,
        slot: usize,
        silent: Duration,
    },
    /// `docker pause` of a node: everything on it stops, its clock does not.
    Freeze(usize),
    /// The frozen node runs again.
    Thaw(usize),
    /// Master slot `slot` fails over to `replica`. `clients_first`: the clients' links
    /// move to it before the old master is killed (a soak's failover right after an
    /// acquire, [`Nemesis::failover_clients_first`]); else as replay scripts it, or
    /// through Sentinel when the run has sentinels ([`Nemesis::failover`]).
    Failover {
        slot: usize,
        replica: usize,
        clients_first: bool,
    },
    /// Split brain on `slot`: `replica` is promoted while the old master stays up and
    /// keeps every client; the nodes of `old_side` stay with it.
    SplitBrain {
        slot: usize,
        replica: usize,
        old_side: Vec<usize>,
    },
    /// During a split brain, a client learns the new master of `slot`.
    Redirect { client: usize, slot: usize },
    /// The split brain on `slot` ends: the old master loses its side and is killed.
    EndSplit { slot: usize },
    /// A node restarts empty. `in_place`: its Redis process, in milliseconds (a soak's
    /// restart, as instant as the model's); else a new container (replay).
    Restart { node: usize, in_place: bool },
    /// A node's wall clock jumps forward by `ms` (an emulation, see the module docs). A
    /// clock that drifts is a sequence of one-tick jumps.
    NodeClockJump { node: usize, ms: i64 },
}

impl Strike {
    /// Cut the link `(client, slot)`.
    pub fn cut((client, slot): (usize, usize)) -> Strike {
        Strike::Cut { client, slot }
    }

    /// Open the link `(client, slot)` again.
    pub fn heal((client, slot): (usize, usize)) -> Strike {
        Strike::Heal { client, slot }
    }
}

/// The client processes a fault strikes: replay's engine clients, a soak's fleet.
pub trait Processes: Send {
    /// Stop-the-world pause of client `c`.
    fn pause(&mut self, c: usize);
    /// The paused client `c` runs again.
    fn resume(&mut self, c: usize);
    /// Client `c` dies; `urls` lead to its links (a replay's engine still delivers its
    /// requests on the wire over them).
    fn crash(&mut self, c: usize, urls: &[String]);
    /// Client `c`'s clock jumps by `ms`; says what was done.
    fn jump_clock(&mut self, c: usize, ms: i64) -> String;
}

/// The cluster of one run, its topology as the model sees it, and the link proxies.
pub struct Nemesis {
    cluster: Cluster,
    masters: usize,
    replicas: usize,
    /// Redis Sentinels watching the masters (0: promotion is scripted).
    sentinels: usize,
    /// Which physical node serves each master slot.
    serving: Vec<usize>,
    /// Per node: up (not killed).
    alive: Vec<bool>,
    /// Per node: cut off from the run's network (replicas between catch-ups).
    cut_off: Vec<bool>,
    /// Per replica node: the node it replicates from (a master node: itself).
    upstream: Vec<usize>,
    /// Per node: the wall-clock offset set through libclockshift, in ms.
    clock_offset: Vec<i64>,
    /// Per client, per master slot: the link proxy.
    links: Vec<Vec<LinkProxy>>,
    /// The split brain in effect: (slot, old master, clients that learnt the new one).
    split: Option<(usize, usize, Vec<bool>)>,
}

impl std::fmt::Debug for Nemesis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nemesis")
            .field("cluster", &self.cluster.id())
            .field("serving", &self.serving)
            .field("alive", &self.alive)
            .finish()
    }
}

impl Nemesis {
    /// Start the cluster (`masters`, `replicas` per master, `sentinels`, clock control
    /// when a clock can jump), freeze the replicas, and put a proxy on every
    /// client→master link.
    pub async fn start(
        masters: usize,
        replicas: usize,
        sentinels: usize,
        clients: usize,
        clock_control: bool,
    ) -> Result<Nemesis, ClusterError> {
        let cluster = Cluster::builder()
            .masters(masters)
            .replicas(replicas)
            .sentinels(sentinels)
            .clock_control(clock_control)
            .start()
            .await?;
        let nodes = masters * (1 + replicas);
        let mut n = Nemesis {
            cluster,
            masters,
            replicas,
            sentinels,
            serving: (0..masters).collect(),
            alive: vec![true; nodes],
            cut_off: vec![false; nodes],
            upstream: (0..nodes)
                .map(|n| {
                    if n < masters {
                        n
                    } else {
                        (n - masters) / replicas
                    }
                })
                .collect(),
            clock_offset: vec![0; nodes],
            links: Vec::new(),
            split: None,
        };
        for node in masters..nodes {
            n.node(node).disconnect_from_network().await?;
            n.cut_off[node] = true;
        }
        for _ in 0..clients {
            let mut row = Vec::new();
            for m in 0..masters {
                let up = n.node(n.serving[m]).addr();
                row.push(LinkProxy::start(up).await.map_err(|e| {
                    ClusterError::Unsupported(format!("link proxy on 127.0.0.1: {e}"))
                })?);
            }
            n.links.push(row);
        }
        Ok(n)
    }

    /// The cluster (its id labels every container and the network).
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Number of physical nodes.
    pub fn nodes(&self) -> usize {
        self.alive.len()
    }

    /// Node `n` in the model's numbering.
    pub fn node(&self, n: usize) -> &ClusterNode {
        if n < self.masters {
            self.cluster.master(n)
        } else {
            let r = n - self.masters;
            self.cluster.replica(r / self.replicas, r % self.replicas)
        }
    }

    /// The master slot a replica belongs to.
    fn master_of(&self, n: usize) -> Option<usize> {
        (n >= self.masters).then(|| (n - self.masters) / self.replicas)
    }

    /// The master slot node `n` belongs to: its own as a master, its master's as a
    /// replica (a former master that rejoined as a replica stays in its slot).
    fn slot_of(&self, n: usize) -> usize {
        self.master_of(n).unwrap_or(n)
    }

    /// The slot's replica nodes named by `mask` (bit `j`: the slot's `j`-th replica).
    fn replicas_in(&self, m: usize, mask: u8) -> Vec<usize> {
        (0..self.replicas.min(8))
            .filter(|j| mask & (1 << j) != 0)
            .map(|j| self.masters + m * self.replicas + j)
            .collect()
    }

    /// The physical node serving master slot `m`.
    pub fn serving(&self, m: usize) -> usize {
        self.serving[m]
    }

    /// The node client `c` reaches for master slot `m`: the serving one, or during a
    /// split brain the old master until the client learns the new one.
    pub fn route(&self, c: usize, m: usize) -> usize {
        match &self.split {
            Some((slot, old, moved)) if *slot == m && !moved[c] => *old,
            _ => self.serving[m],
        }
    }

    /// Whether node `n` is up.
    pub fn alive(&self, n: usize) -> bool {
        self.alive[n]
    }

    /// Whether node `n` can be observed now (up).
    pub fn observable(&self, n: usize) -> bool {
        self.alive[n]
    }

    /// Whether clients write the lock to node `n`: it serves a master slot, or is the
    /// old master of a split brain (`LockModel::serving_nodes`). A replica's copy of the
    /// key blocks nobody, and goes when replication brings the delete.
    pub fn serves(&self, n: usize) -> bool {
        self.serving.contains(&n) || self.split.as_ref().is_some_and(|(_, old, _)| *old == n)
    }

    /// The link proxy of client `c` to master slot `m`.
    pub fn link(&self, c: usize, m: usize) -> &LinkProxy {
        &self.links[c][m]
    }

    /// The address of node `n` on 127.0.0.1 (its published port).
    pub fn addr(&self, n: usize) -> SocketAddr {
        self.node(n).addr()
    }

    /// Replica `n` catches up with its master (the node it follows: during a split
    /// brain, a replica on the old master's side follows the old master): back on the
    /// network, `REPLICAOF` again (a partial resync at once, instead of waiting for the
    /// replica to notice that its old link is dead), `WAIT` on the master until it
    /// acknowledged every write, then off the network again.
    pub async fn replicate(&mut self, n: usize) -> Result<String, ClusterError> {
        if self.master_of(n).is_none() {
            return Err(ClusterError::Unsupported(format!(
                "node{} is no replica",
                n + 1
            )));
        }
        self.catch_up_with(n, self.upstream[n]).await
    }

    /// Node `n` catches up with the node serving master slot `m` (see
    /// [`Nemesis::replicate`]); also for a former master that rejoined as a replica.
    pub async fn catch_up(&mut self, n: usize, m: usize) -> Result<String, ClusterError> {
        self.upstream[n] = self.serving[m];
        self.catch_up_with(n, self.serving[m]).await
    }

    /// Node `n` catches up with node `master` (see [`Nemesis::replicate`]).
    async fn catch_up_with(&mut self, n: usize, master: usize) -> Result<String, ClusterError> {
        self.reconnect(n).await?;
        self.resync_from(n, master).await?;
        self.node(n).wait_for_link_up(LINK_UP).await?;
        let timeout = CATCH_UP.as_millis().to_string();
        let acks = self
            .node(master)
            .command_with_timeout(&["WAIT", "1", &timeout], CATCH_UP + Duration::from_secs(1))
            .await?;
        self.node(n).disconnect_from_network().await?;
        self.cut_off[n] = true;
        Ok(format!(
            "node{} reconnected, resynced from node{} (WAIT 1 -> {}), disconnected again",
            n + 1,
            master + 1,
            match acks {
                redis::Value::Int(i) => i.to_string(),
                other => format!("{other:?}"),
            }
        ))
    }

    /// Master slot `m` fails over to replica `r`: the master is killed, the replica
    /// (cut off, so it may have missed the latest writes) is promoted, the slot's other
    /// live replicas follow it, and every client link of the slot now leads to it.
    pub async fn failover(&mut self, m: usize, r: usize) -> Result<String, ClusterError> {
        if self.sentinels > 0 {
            return self.sentinel_failover(m, r).await;
        }
        let old = self.serving[m];
        self.node(old).kill().await?;
        self.alive[old] = false;
        let repointed = self.promote(m, r, &[]).await?;
        let up = self.addr(r);
        for row in &self.links {
            row[m].set_upstream(up);
        }
        Ok(format!(
            "docker kill node{}; REPLICAOF NO ONE on node{}{repointed}; clients reconnect to it",
            old + 1,
            r + 1
        ))
    }

    /// Master slot `m` fails over to replica `r` through Sentinel: the slot's other
    /// live replicas get `replica-priority 0`, the master is killed, and the run waits
    /// until the sentinels have promoted `r`; every client link of the slot then leads
    /// to it.
    async fn sentinel_failover(&mut self, m: usize, r: usize) -> Result<String, ClusterError> {
        let old = self.serving[m];
        let others: Vec<usize> = (self.masters..self.nodes())
            .filter(|&n| n != r && self.alive[n] && self.master_of(n) == Some(m))
            .collect();
        for &n in &others {
            self.node(n)
                .query::<()>(&["CONFIG", "SET", "replica-priority", "0"])
                .await?;
        }
        let began = std::time::Instant::now();
        self.node(old).kill().await?;
        self.alive[old] = false;
        let promoted = self
            .cluster
            .wait_for_sentinel_promotion(m, self.node(old), SENTINEL_PROMOTION)
            .await?;
        let took = began.elapsed();
        if promoted.name() != self.node(r).name() {
            return Err(ClusterError::Unsupported(format!(
                "Sentinel promoted {}, not node{} as the model did",
                promoted.name(),
                r + 1
            )));
        }
        // Sentinel re-points the others to `r` over its own network: they follow it
        // whether or not they are on the cluster network (which they stay off).
        self.serving[m] = r;
        for &n in &others {
            self.upstream[n] = r;
        }
        let up = self.addr(r);
        for row in &self.links {
            row[m].set_upstream(up);
        }
        let lowered = if others.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = others.iter().map(|n| format!("node{}", n + 1)).collect();
            format!("replica-priority 0 on {}; ", names.join(", "))
        };
        Ok(format!(
            "{lowered}docker kill node{}; Sentinel ({} sentinels) promoted node{} in {} ms; \
             clients reconnect to it",
            old + 1,
            self.sentinels,
            r + 1,
            took.as_millis()
        ))
    }

    /// Split brain on slot `m`: replica `r` is promoted while the old master stays up
    /// and every client's proxy still leads to it. The nodes of `with_old` (any of the
    /// slot's replicas, a former master that rejoined as one too) are on the old
    /// master's side: they keep following it; the others follow `r`.
    pub async fn split_brain_with(
        &mut self,
        m: usize,
        r: usize,
        with_old: &[usize],
    ) -> Result<String, ClusterError> {
        if self.sentinels > 0 {
            return Err(ClusterError::Unsupported(
                "a split brain is scripted: replay it with topology.sentinels = 0".into(),
            ));
        }
        let old = self.serving[m];
        let repointed = self.promote(m, r, with_old).await?;
        self.split = Some((m, old, vec![false; self.links.len()]));
        let stayed: Vec<String> = with_old.iter().map(|n| format!("node{}", n + 1)).collect();
        let stayed = match stayed.len() {
            0 => String::new(),
            1 => format!("; {} still follows node{}", stayed[0], old + 1),
            _ => format!("; {} still follow node{}", stayed.join(", "), old + 1),
        };
        Ok(format!(
            "node{} stays up and keeps every client; REPLICAOF NO ONE on node{}{repointed}{stayed}",
            old + 1,
            r + 1
        ))
    }

    /// Whether slot `m` has a split brain in effect.
    pub fn split_on(&self, m: usize) -> bool {
        self.split.as_ref().is_some_and(|(slot, ..)| *slot == m)
    }

    /// During a split brain on slot `m`, client `c` learns the new master: its proxy now
    /// leads to the promoted node (and no longer to the old one). `None` when slot `m`
    /// has no split brain.
    pub fn redirect(&mut self, c: usize, m: usize) -> Option<String> {
        let (slot, _, moved) = self.split.as_mut()?;
        if *slot != m {
            return None;
        }
        moved[c] = true;
        let new = self.serving[m];
        self.links[c][m].set_upstream(self.addr(new));
        Some(format!(
            "learns the new master{} from Sentinel: proxy 127.0.0.1:{} now leads to node{}",
            m + 1,
            self.links[c][m].addr().port(),
            new + 1
        ))
    }

    /// Replica `r` becomes the master of slot `m`: `REPLICAOF NO ONE`, back on the
    /// cluster network (its replicas resync from it there), and the slot's other
    /// replicas follow it, but those of `stay`. Returns what was done to the others.
    async fn promote(
        &mut self,
        m: usize,
        r: usize,
        stay: &[usize],
    ) -> Result<String, ClusterError> {
        self.node(r).promote().await?;
        self.reconnect(r).await?;
        self.serving[m] = r;
        self.upstream[r] = r;
        self.repoint_replicas(m, r, stay).await
    }

    /// The live replicas of slot `m` other than `r` and those of `stay` get `REPLICAOF
    /// <r>` (a master stays one: the old master of a split brain keeps its side). Sent
    /// on the published port, so it works while they are off the cluster network; they
    /// sync at their next [`Nemesis::replicate`].
    async fn repoint_replicas(
        &mut self,
        m: usize,
        r: usize,
        stay: &[usize],
    ) -> Result<String, ClusterError> {
        let mut names = Vec::new();
        for n in 0..self.nodes() {
            // A node that is a master itself (the old one, promoted earlier) stays one.
            if n == r
                || !self.alive[n]
                || self.slot_of(n) != m
                || self.upstream[n] == n
                || stay.contains(&n)
            {
                continue;
            }
            self.upstream[n] = r;
            self.node(n).replicate_from(self.node(r)).await?;
            names.push(format!("node{}", n + 1));
        }
        Ok(if names.is_empty() {
            String::new()
        } else {
            format!("; REPLICAOF node{} on {}", r + 1, names.join(", "))
        })
    }

    /// Node `n` restarts empty (new container, no persistence).
    pub async fn restart(&mut self, n: usize) -> Result<String, ClusterError> {
        self.node(n).restart().await?;
        self.alive[n] = true;
        self.cut_off[n] = false;
        self.clock_offset[n] = 0;
        let up = self.addr(n);
        for (c, row) in self.links.iter().enumerate() {
            for (m, link) in row.iter().enumerate() {
                if self.route(c, m) == n {
                    link.set_upstream(up);
                }
            }
        }
        if self.master_of(n).is_some() && self.serving.iter().all(|&s| s != n) {
            // A replica comes back as a replica: cut off again until it may catch up.
            self.node(n).disconnect_from_network().await?;
            self.cut_off[n] = true;
        }
        Ok(format!(
            "node{} removed and started again, empty (no persistence)",
            n + 1
        ))
    }

    /// Node `n`'s Redis process restarts in place, empty, in milliseconds (same
    /// container, port and links; `Node::restart_in_place`): the soak's restart, as
    /// instant as the model's. For a serving master only (a role set at run time is lost).
    pub async fn restart_in_place(&mut self, n: usize) -> Result<String, ClusterError> {
        self.node(n).restart_in_place().await?;
        self.clock_offset[n] = 0;
        Ok(format!(
            "node{} process restarted in place, empty (no persistence; DEBUG CRASH-AND-RECOVER)",
            n + 1
        ))
    }

    /// The link of client `c` to master slot `m` as reports name it:
    /// `proxy 127.0.0.1:PORT (client1 -> master1)`.
    pub fn link_name(&self, c: usize, m: usize) -> String {
        format!(
            "proxy 127.0.0.1:{} ({} -> {})",
            self.links[c][m].addr().port(),
            ClientId::at(c),
            MasterId::at(m)
        )
    }

    /// Cut (`true`) or heal the link of client `c` to master slot `m`.
    pub fn partition(&self, c: usize, m: usize, cut: bool) -> String {
        let state = if cut { LinkState::Cut } else { LinkState::Open };
        self.links[c][m].set_state(state);
        let done = if cut { "cut" } else { "open" };
        format!("{} {done}", self.link_name(c, m))
    }

    /// Node `n`'s wall clock jumps forward by `ms` (emulation, see the module docs).
    pub async fn clock_jump(&mut self, n: usize, ms: i64) -> Result<String, ClusterError> {
        let offset = self.clock_offset[n] + ms;
        self.node(n).set_clock_offset_ms(offset).await?;
        self.clock_offset[n] = offset;
        Ok(format!(
            "node{} wall clock +{ms} ms (libclockshift offset {offset} ms)",
            n + 1
        ))
    }

    /// The strike of model fault action `action` in a replay, where a tick is `tick_ms`
    /// and a clock jump `clock_jump` ticks. `None` for an action no fault makes (a
    /// client's own step, a replica catching up) and for a lost reply, which the engine
    /// withholds itself.
    pub fn strike_for(&self, action: Action, tick_ms: i64, clock_jump: i64) -> Option<Strike> {
        let u = usize::from;
        Some(match action {
            Action::Pause(c) => Strike::Pause(u(c)),
            Action::Resume(c) => Strike::Resume(u(c)),
            Action::Crash(c) => Strike::Crash(u(c)),
            Action::ClientClockJump(c) => Strike::ClientClockJump {
                client: u(c),
                ms: clock_jump * tick_ms,
            },
            Action::Partition(c, m) => Strike::Cut {
                client: u(c),
                slot: u(m),
            },
            Action::Heal(c, m) => Strike::Heal {
                client: u(c),
                slot: u(m),
            },
            Action::Failover(m, r) => Strike::Failover {
                slot: u(m),
                replica: u(r),
                clients_first: false,
            },
            Action::SplitBrain(m, r, with_old) => Strike::SplitBrain {
                slot: u(m),
                replica: u(r),
                old_side: self.replicas_in(u(m), with_old),
            },
            Action::Redirect(c, m) => Strike::Redirect {
                client: u(c),
                slot: u(m),
            },
            Action::Restart(n) => Strike::Restart {
                node: u(n),
                in_place: false,
            },
            Action::NodeClockJump(n) => Strike::NodeClockJump {
                node: u(n),
                ms: clock_jump * tick_ms,
            },
            Action::NodeDrift(n) => Strike::NodeClockJump {
                node: u(n),
                ms: tick_ms,
            },
            _ => return None,
        })
    }

    /// Does `strike` and says what was done. The one place a fault really happens:
    /// replay, chaos and soak all come here.
    pub async fn carry_out(
        &mut self,
        strike: &Strike,
        processes: &mut dyn Processes,
    ) -> Result<String, ClusterError> {
        Ok(match *strike {
            Strike::Pause(c) => {
                processes.pause(c);
                format!("{} stop-the-world pause", ClientId::at(c))
            }
            Strike::Resume(c) => {
                processes.resume(c);
                format!("{} resumes", ClientId::at(c))
            }
            Strike::Crash(c) => {
                let urls: Vec<String> = (0..self.masters).map(|m| self.link(c, m).url()).collect();
                processes.crash(c, &urls);
                format!("{} crashed", ClientId::at(c))
            }
            Strike::ClientClockJump { client, ms } => processes.jump_clock(client, ms),
            Strike::Cut { client, slot } => self.partition(client, slot, true),
            Strike::Heal { client, slot } => self.partition(client, slot, false),
            Strike::LoseReply { client, slot, nth } => {
                self.link(client, slot).lose_reply(nth);
                let link = self.link_name(client, slot);
                format!("{link} loses reply {nth} from now")
            }
            Strike::KeepRequest {
                client,
                slot,
                silent,
            } => {
                self.link(client, slot).keep_next_request(silent);
                format!("{} keeps the next request", self.link_name(client, slot))
            }
            Strike::Freeze(n) => {
                self.node(n).pause().await?;
                format!("docker pause {}", NodeId::at(n))
            }
            Strike::Thaw(n) => {
                self.node(n).unpause().await?;
                format!("docker unpause {}", NodeId::at(n))
            }
            Strike::Failover {
                slot,
                replica,
                clients_first,
            } => {
                if clients_first {
                    self.failover_clients_first(slot, replica).await?
                } else {
                    self.failover(slot, replica).await?
                }
            }
            Strike::SplitBrain {
                slot,
                replica,
                ref old_side,
            } => self.split_brain_with(slot, replica, old_side).await?,
            Strike::Redirect { client, slot } => self.redirect(client, slot).ok_or_else(|| {
                ClusterError::Unsupported(format!("no split brain on {}", MasterId::at(slot)))
            })?,
            Strike::EndSplit { slot } => match self.end_split(slot).await? {
                Some((_, what)) => what,
                None => {
                    return Err(ClusterError::Unsupported(format!(
                        "the split brain on {} was gone before its end",
                        MasterId::at(slot)
                    )))
                }
            },
            Strike::Restart { node, in_place } => {
                if in_place {
                    self.restart_in_place(node).await?
                } else {
                    self.restart(node).await?
                }
            }
            Strike::NodeClockJump { node, ms } => self.clock_jump(node, ms).await?,
        })
    }

    /// Remove every container and the network, reporting errors.
    pub async fn shutdown(self) -> Result<(), ClusterError> {
        let Nemesis { cluster, links, .. } = self;
        drop(links);
        cluster.shutdown().await
    }
}

impl Nemesis {
    /// The master slot whose replica node `n` is (None for a master).
    pub fn serving_slot_of_replica(&self, n: usize) -> Option<usize> {
        self.master_of(n)
    }

    /// The node replica `n` replicates from (the serving master, or the old master of a
    /// split brain for a replica left on its side).
    pub fn upstream(&self, n: usize) -> usize {
        self.upstream[n]
    }
}

impl Nemesis {
    /// Master slot `m` fails over to replica `r` with the clients moved first, as a soak
    /// needs it right after an acquire: the replica is promoted, joins the network and
    /// the slot's other replicas follow it (Sentinel reconfigures them before it names
    /// the new master), every client's link leads to it at once (as if Sentinel had
    /// decided while the old master was already out of the clients' reach), then the old
    /// master is killed. The replicas are re-pointed before the kill, which takes a
    /// few hundred milliseconds: a replica that must resynchronise does so while the
    /// holder still works, as in a Sentinel failover, where the old master was gone
    /// before any of this began.
    pub async fn failover_clients_first(
        &mut self,
        m: usize,
        r: usize,
    ) -> Result<String, ClusterError> {
        let old = self.serving[m];
        self.node(r).promote().await?;
        self.serving[m] = r;
        self.reconnect(r).await?;
        self.upstream[r] = r;
        let repointed = self.repoint_replicas(m, r, &[]).await?;
        let up = self.addr(r);
        for row in &self.links {
            row[m].set_upstream(up);
        }
        self.node(old).kill().await?;
        self.alive[old] = false;
        Ok(format!(
            "REPLICAOF NO ONE on node{}{repointed}, every client's link moved to it; docker kill node{}",
            r + 1,
            old + 1
        ))
    }

    /// The split brain on slot `m` ends: every client's link leads to the promoted node,
    /// the replicas that stayed with the old master follow the promoted one (as
    /// Sentinel reconfigures them once it reaches them), and the old master is `docker
    /// kill`ed (it lost its side of the partition). `None` when slot `m` has no split
    /// brain; else the old master and what was done.
    pub async fn end_split(&mut self, m: usize) -> Result<Option<(usize, String)>, ClusterError> {
        let Some((slot, old, _)) = &self.split else {
            return Ok(None);
        };
        if *slot != m {
            return Ok(None);
        }
        let old = *old;
        let up = self.addr(self.serving[m]);
        for row in &self.links {
            row[m].set_upstream(up);
        }
        self.split = None;
        let new = self.serving[m];
        let mut followed = Vec::new();
        for n in 0..self.nodes() {
            if n != old && self.alive[n] && self.upstream[n] == old && self.slot_of(n) == m {
                self.upstream[n] = new;
                self.node(n).replicate_from(self.node(new)).await?;
                followed.push(format!("node{}", n + 1));
            }
        }
        let followed = if followed.is_empty() {
            String::new()
        } else {
            format!("; REPLICAOF node{} on {}", new + 1, followed.join(", "))
        };
        self.node(old).kill().await?;
        self.alive[old] = false;
        Ok(Some((
            old,
            format!(
                "every client's link leads to node{}{followed}; docker kill node{} (the old master)",
                new + 1,
                old + 1
            ),
        )))
    }

    /// Replica `n` back on the cluster network for good: it replicates continuously
    /// instead of catching up only when told (a soak whose acquires `WAIT` for
    /// replicas: a replica kept off the network would never acknowledge).
    pub async fn keep_in_sync(&mut self, n: usize) -> Result<String, ClusterError> {
        self.reconnect(n).await?;
        if self.node(n).wait_for_link_up(LINK_UP / 2).await.is_err() {
            // A handshake begun while the replica was cut off can outlast the cut (CI
            // runs timed out here after 5 s and after 20 s): start another, as
            // catch-ups always do.
            self.resync_from(n, self.upstream[n]).await?;
            self.node(n).wait_for_link_up(LINK_UP).await?;
        }
        Ok(format!("node{} replicates continuously", n + 1))
    }

    /// Node `n` back on the cluster network, if it was cut off.
    async fn reconnect(&mut self, n: usize) -> Result<(), ClusterError> {
        if self.cut_off[n] {
            self.node(n).connect_to_network().await?;
            self.cut_off[n] = false;
        }
        Ok(())
    }

    /// A fresh handshake of replica `n` with node `master`: `REPLICAOF NO ONE` drops
    /// whatever connection or transfer it had begun, and `REPLICAOF <master>` starts
    /// one over the cluster network.
    async fn resync_from(&self, n: usize, master: usize) -> Result<(), ClusterError> {
        self.node(n).command(&["REPLICAOF", "NO", "ONE"]).await?;
        self.node(n).replicate_from(self.node(master)).await
    }

    /// Replica `n` off the cluster network again: it lags until its next
    /// [`Nemesis::catch_up`].
    pub async fn lag(&mut self, n: usize) -> Result<String, ClusterError> {
        if !self.cut_off[n] {
            self.node(n).disconnect_from_network().await?;
            self.cut_off[n] = true;
        }
        Ok(format!("node{} off the network (lagging)", n + 1))
    }

    /// Whether replica `n` is up and on the network, replicating as it goes.
    pub fn in_sync(&self, n: usize) -> bool {
        self.alive[n] && !self.cut_off[n]
    }

    /// A killed node `n` comes back empty as a lagging replica of master slot `m`: a
    /// new container, off the network until its next [`Nemesis::catch_up`].
    pub async fn rejoin_as_replica(&mut self, n: usize, m: usize) -> Result<String, ClusterError> {
        self.node(n).restart().await?;
        self.alive[n] = true;
        self.clock_offset[n] = 0;
        self.node(n).disconnect_from_network().await?;
        self.cut_off[n] = true;
        let master = self.serving[m];
        self.upstream[n] = master;
        self.node(n).replicate_from(self.node(master)).await?;
        Ok(format!(
            "node{} started again, empty, as a replica of node{} (lagging until it catches up)",
            n + 1,
            master + 1
        ))
    }
}
