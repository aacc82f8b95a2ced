//! A set of Redis nodes (masters, each with its replicas) and their lifetime.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::Value;
use tokio::task::JoinSet;

use crate::engine;
use crate::error::ClusterError;
use crate::node::{Node, NodeSpec, Role, CLUSTER_LABEL};
use crate::owner::{self, Owner};
use crate::preflight;
use crate::sentinel::{self, Sentinel};

/// How long [`ClusterBuilder::start`] waits for every replica's link.
const LINK_TIMEOUT: Duration = Duration::from_secs(30);

/// Builds a [`Cluster`]: `Cluster::builder().masters(3).replicas(1).start().await`.
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    masters: usize,
    replicas: usize,
    sentinels: usize,
    clock_control: bool,
}

impl Default for ClusterBuilder {
    fn default() -> Self {
        ClusterBuilder {
            masters: 1,
            replicas: 0,
            sentinels: 0,
            clock_control: false,
        }
    }
}

impl ClusterBuilder {
    /// Number of independent masters (default 1, at least 1).
    pub fn masters(mut self, n: usize) -> Self {
        self.masters = n;
        self
    }

    /// Asynchronous replicas per master (default 0). With any replica the
    /// cluster gets its own Docker network.
    pub fn replicas(mut self, r: usize) -> Self {
        self.replicas = r;
        self
    }

    /// Redis Sentinels watching every master (default 0: none; promotion is then
    /// scripted by the caller). Needs replicas. Each master `m<i>` is the service
    /// `m<i>` ([`crate::service_name`]), with a majority quorum; see
    /// [`crate::DOWN_AFTER_MS`] and [`crate::FAILOVER_TIMEOUT_MS`] for the timing.
    pub fn sentinels(mut self, n: usize) -> Self {
        self.sentinels = n;
        self
    }

    /// Starts every node with libclockshift preloaded, so that
    /// [`Node::set_clock_offset_ms`] can jump its wall clock. Needs the image
    /// built by `harness/redis-image/build.sh`.
    pub fn clock_control(mut self, on: bool) -> Self {
        self.clock_control = on;
        self
    }

    /// Runs [`crate::preflight`], removes the containers and networks of gone
    /// locklab processes ([`crate::reap`]), creates the network (if replicas > 0), starts
    /// the masters, then the replicas (`--replicaof <master> 6379`), and
    /// returns when every node answers PING and every replica's link is up.
    /// On error (or if this future is dropped) everything started is removed.
    pub async fn start(self) -> Result<Cluster, ClusterError> {
        if self.masters == 0 {
            return Err(ClusterError::Unsupported(
                "a cluster needs at least one master".into(),
            ));
        }
        if self.sentinels > 0 && self.replicas == 0 {
            return Err(ClusterError::Unsupported(
                "sentinels need replicas to promote: set replicas >= 1".into(),
            ));
        }
        let pre = preflight::check().await?;
        // what killed runs left behind goes first (never a live process's)
        owner::reap_gone_owners().await?;
        let owner = Owner::current();
        let id = new_cluster_id();
        let network = (self.replicas > 0).then(|| id.clone());
        // From here on `cluster` owns whatever exists: dropping it (error,
        // panic, cancellation) tears it down.
        let mut cluster = Cluster {
            id: id.clone(),
            network: network.clone(),
            sentinel_network: None,
            masters: Vec::new(),
            replicas: Vec::new(),
            sentinels: Vec::new(),
            ips: Vec::new(),
            torn_down: false,
        };
        if let Some(net) = &network {
            let mut labels = owner.as_ref().map(Owner::labels).unwrap_or_default();
            labels.insert(CLUSTER_LABEL.to_string(), id.clone());
            engine::engine().await?.network_create(net, labels).await?;
        }
        let spec = Arc::new(NodeSpec {
            image: pre.image,
            cluster_id: id,
            network,
            clock_control: self.clock_control,
            owner,
        });

        let masters = start_all(
            (0..self.masters)
                .map(|m| (spec.clone(), format!("m{m}"), Role::Master))
                .collect(),
        )
        .await;
        cluster.masters = masters?;

        let replica_specs: Vec<_> = (0..self.masters)
            .flat_map(|m| (0..self.replicas).map(move |r| (m, r)))
            .map(|(m, r)| {
                let of = cluster.masters[m].name().to_string();
                (spec.clone(), format!("m{m}r{r}"), Role::Replica { of })
            })
            .collect();
        let mut replicas = start_all(replica_specs).await?.into_iter();
        cluster.replicas = (0..self.masters)
            .map(|_| replicas.by_ref().take(self.replicas).collect())
            .collect();
        cluster.wait_for_replication(LINK_TIMEOUT).await?;
        if self.sentinels > 0 {
            cluster.start_sentinels(&spec, self.sentinels).await?;
        }
        Ok(cluster)
    }
}

/// Starts nodes in parallel (see [`join_in_order`]).
async fn start_all(specs: Vec<(Arc<NodeSpec>, String, Role)>) -> Result<Vec<Node>, ClusterError> {
    join_in_order(
        specs
            .into_iter()
            .map(|(spec, short, role)| Node::start(spec, short, role))
            .collect(),
        "node start",
    )
    .await
}

/// Runs the starts in parallel; waits for all of them even if one fails (so that
/// no start is cancelled half-way), then returns their results in order or the
/// first error (what did start is dropped, or swept with the cluster).
async fn join_in_order<T, F>(starts: Vec<F>, what: &str) -> Result<Vec<T>, ClusterError>
where
    T: Send + 'static,
    F: std::future::Future<Output = Result<T, ClusterError>> + Send + 'static,
{
    let n = starts.len();
    let mut set = JoinSet::new();
    for (i, start) in starts.into_iter().enumerate() {
        set.spawn(async move { (i, start.await) });
    }
    let mut slots: Vec<Option<T>> = (0..n).map(|_| None).collect();
    let mut first_err = None;
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((i, Ok(started))) => slots[i] = Some(started),
            Ok((_, Err(e))) => {
                first_err.get_or_insert(e);
            }
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => {
                first_err
                    .get_or_insert(ClusterError::Unsupported(format!("{what} cancelled: {e}")));
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(slots.into_iter().flatten().collect()),
    }
}

fn new_cluster_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(n);
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    format!(
        "locklab-{}-{}-{:06x}",
        std::process::id(),
        n,
        h.finish() & 0xff_ffff
    )
}

/// Redis masters and their replicas in containers.
///
/// Dropping the cluster removes its containers, then its network: also when
/// a test fails or panics (drop runs during unwinding) and when
/// [`ClusterBuilder::start`] fails. Removal is synchronous: when `drop`
/// returns, they are gone. It needs no runtime: the removal runs on a thread
/// and runtime of its own. A process killed before it can drop the cluster
/// (SIGKILL, or SIGINT/SIGTERM without a handler) leaves them behind, labelled
/// with its pid and start time: the next cluster start of any locklab process
/// on the machine, or `locklab clean`, removes them ([`crate::reap`]).
#[derive(Debug)]
pub struct Cluster {
    id: String,
    network: Option<String>,
    /// With sentinels: the network Sentinel reaches every node on, which no fault
    /// cuts (see [`Cluster::sentinel_network`]).
    sentinel_network: Option<String>,
    masters: Vec<Node>,
    replicas: Vec<Vec<Node>>,
    sentinels: Vec<Sentinel>,
    /// With sentinels: each node's IPs on both networks (master `m`, replica
    /// `Some(j)` or the master itself `None`), as Sentinel may name them.
    ips: Vec<(IpAddr, usize, Option<usize>)>,
    torn_down: bool,
}

impl Cluster {
    /// A builder with 1 master and no replicas.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    /// Unique id: `locklab-<pid>-<counter>-<random>`. It names the network and
    /// prefixes container names, and is the value of the
    /// `org.locklab.cluster` label on every container and the network.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The cluster's Docker network (only when replicas > 0): replication runs on
    /// it, and [`Node::disconnect_from_network`] cuts a node off it.
    pub fn network(&self) -> Option<&str> {
        self.network.as_deref()
    }

    /// With sentinels, a second network, `<id>-sentinel`, that every replica and
    /// sentinel joins and no fault cuts. Each replica announces its address there
    /// (`replica-announce-ip`), so the sentinels reach it there, and replicates from
    /// its master by the master's container name, which resolves on the cluster
    /// network only (the masters stay off this one): a replica cut off the cluster
    /// network stops replicating (and lags) but stays in the sentinels' sight, so
    /// Sentinel can promote a replica that missed writes, as it does when a
    /// partition cuts a replica's link only. Replicas that follow a promoted replica
    /// replicate over this network (Sentinel names the promoted node by its
    /// announced address): cutting them off the cluster network no longer stops them.
    pub fn sentinel_network(&self) -> Option<&str> {
        self.sentinel_network.as_deref()
    }

    /// The masters, in order (`m0`, `m1`, ...).
    pub fn masters(&self) -> &[Node] {
        &self.masters
    }

    /// Master `i`. Panics if out of range.
    pub fn master(&self, i: usize) -> &Node {
        &self.masters[i]
    }

    /// Replica `j` of master `i`. Panics if out of range.
    pub fn replica(&self, i: usize, j: usize) -> &Node {
        &self.replicas[i][j]
    }

    /// Every node: masters first, then replicas.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.masters.iter().chain(self.replicas.iter().flatten())
    }

    /// `redis://127.0.0.1:PORT` of every master, in order.
    pub fn master_urls(&self) -> Vec<String> {
        self.masters.iter().map(Node::url).collect()
    }

    /// Waits until every node whose role is replica reports its link up.
    pub async fn wait_for_replication(&self, timeout: Duration) -> Result<(), ClusterError> {
        for node in self.nodes() {
            if matches!(node.role(), Role::Replica { .. }) {
                node.wait_for_link_up(timeout).await?;
            }
        }
        Ok(())
    }

    /// Creates the sentinel network and puts every replica on it, announcing its
    /// address there (see [`Cluster::sentinel_network`]). Then starts the sentinels
    /// (in parallel) and waits until they know each other and every replica.
    async fn start_sentinels(
        &mut self,
        spec: &Arc<NodeSpec>,
        n: usize,
    ) -> Result<(), ClusterError> {
        let engine = engine::engine().await?;
        let net = format!("{}-sentinel", self.id);
        let mut labels = spec.owner.as_ref().map(Owner::labels).unwrap_or_default();
        labels.insert(CLUSTER_LABEL.to_string(), self.id.clone());
        engine.network_create(&net, labels).await?;
        self.sentinel_network = Some(net.clone());
        let ip_on = async |node: &Node, network: &str| -> Result<IpAddr, ClusterError> {
            let ip = engine.container_ip(&node.container_id(), network).await?;
            ip.and_then(|ip| ip.parse().ok()).ok_or_else(|| {
                ClusterError::docker(
                    format!("address of {} on {network}", node.name()),
                    "no IP address",
                )
            })
        };
        let repl_net = self.network.clone().unwrap_or_default();
        for (m, master) in self.masters.iter().enumerate() {
            // the master stays off the sentinel network: its name resolves on the
            // cluster network only, for the sentinels and the replicas alike
            self.ips.push((ip_on(master, &repl_net).await?, m, None));
            for (j, r) in self.replicas[m].iter().enumerate() {
                engine.network_connect(&net, &r.container_id()).await?;
                let announced = ip_on(r, &net).await?;
                self.ips.push((announced, m, Some(j)));
                self.ips.push((ip_on(r, &repl_net).await?, m, Some(j)));
                let announced = announced.to_string();
                r.query::<()>(&["CONFIG", "SET", "replica-announce-ip", &announced])
                    .await?;
                // the replica reconnects at once, announcing that address
                let _: Value = r.query(&["CLIENT", "KILL", "TYPE", "master"]).await?;
            }
        }
        self.wait_for_replication(LINK_TIMEOUT).await?;
        let monitored: Vec<(String, String)> = self
            .masters
            .iter()
            .enumerate()
            .map(|(m, master)| (sentinel::service_name(m), master.name().to_string()))
            .collect();
        let conf = sentinel::config(&monitored, n);
        let starts = (0..n)
            .map(|i| Sentinel::start(spec.clone(), format!("s{i}"), conf.clone(), net.clone()))
            .collect();
        // on error the cluster's sweep removes what started
        self.sentinels = join_in_order(starts, "sentinel start").await?;
        let services: Vec<String> = monitored.into_iter().map(|(s, _)| s).collect();
        let replicas = self.replicas.first().map_or(0, Vec::len);
        sentinel::wait_for_discovery(&self.sentinels, &services, replicas).await
    }

    /// The sentinels (`s0`, `s1`, ...); empty unless built with
    /// [`ClusterBuilder::sentinels`].
    pub fn sentinels(&self) -> &[Sentinel] {
        &self.sentinels
    }

    /// `redis://127.0.0.1:PORT` of every sentinel: the URLs a client is given.
    pub fn sentinel_urls(&self) -> Vec<String> {
        self.sentinels.iter().map(Sentinel::url).collect()
    }

    /// The node at an address Sentinel named (clusters with sentinels).
    pub fn node_at(&self, ip: IpAddr) -> Option<&Node> {
        let (_, m, j) = self.ips.iter().find(|(a, _, _)| *a == ip)?;
        Some(match j {
            None => &self.masters[*m],
            Some(j) => &self.replicas[*m][*j],
        })
    }

    /// The master of slot `m` as the sentinels name it now: the node a majority of
    /// them names. Right after a failover a sentinel may still name the old master
    /// until the leader's new configuration reaches it, so no single answer decides.
    pub async fn sentinel_master(&self, m: usize) -> Result<&Node, ClusterError> {
        let service = sentinel::service_name(m);
        let (votes, last) = self.sentinel_votes(&service).await;
        let Some(ip) = self.majority_named(&votes, |_| true) else {
            return Err(match last {
                Some(e) if votes.is_empty() => e,
                _ if self.sentinels.is_empty() => {
                    ClusterError::Unsupported("this cluster has no sentinels".into())
                }
                _ => ClusterError::redis(
                    "sentinels",
                    format!("no majority names a master of `{service}` (they name {votes:?})"),
                ),
            });
        };
        self.node_at(ip)
            .ok_or_else(|| ClusterError::redis("sentinels", format!("name an unknown master {ip}")))
    }

    /// What each sentinel answers for `service` (the address it names as master),
    /// and the last error if some did not answer.
    async fn sentinel_votes(&self, service: &str) -> (Vec<IpAddr>, Option<ClusterError>) {
        let mut votes = Vec::new();
        let mut last = None;
        for s in &self.sentinels {
            match s.master_addr(service).await {
                Ok(Some(addr)) => votes.push(addr.ip()),
                Ok(None) => last = Some(ClusterError::redis(s.name(), "knows no such master")),
                Err(e) => last = Some(e),
            }
        }
        (votes, last)
    }

    /// The address a majority of all sentinels names, among those `accept` takes.
    fn majority_named(&self, votes: &[IpAddr], accept: impl Fn(&Node) -> bool) -> Option<IpAddr> {
        let majority = self.sentinels.len() / 2 + 1;
        votes.iter().copied().find(|ip| {
            votes.iter().filter(|v| *v == ip).count() >= majority
                && self.node_at(*ip).is_some_and(&accept)
        })
    }

    /// Waits until Sentinel has replaced `old` as master of slot `m`: a majority of
    /// the sentinels name another node of the slot, and that node reports itself a
    /// master. Returns the promoted node (roles updated: it is a master, the slot's
    /// other replicas follow it, as Sentinel reconfigures them). Polls every 20 ms.
    pub async fn wait_for_sentinel_promotion(
        &self,
        m: usize,
        old: &Node,
        timeout: Duration,
    ) -> Result<&Node, ClusterError> {
        let service = sentinel::service_name(m);
        let deadline = Instant::now() + timeout;
        let mut last = String::from("no sentinel answered");
        loop {
            let (votes, failed) = self.sentinel_votes(&service).await;
            if let Some(e) = failed {
                last = e.to_string();
            }
            let named = self.majority_named(&votes, |n| n.name() != old.name());
            if let Some((ip, node)) = named.and_then(|ip| Some((ip, self.node_at(ip)?))) {
                match node.replication_field("role").await {
                    Ok(Some(role)) if role == "master" => {
                        node.set_role(Role::Master);
                        // its replicas now follow it where Sentinel names it
                        node.set_replication_host(ip.to_string());
                        for r in &self.replicas[m] {
                            if r.name() != node.name() {
                                r.set_role(Role::Replica {
                                    of: node.name().to_string(),
                                });
                            }
                        }
                        return Ok(node);
                    }
                    Ok(role) => {
                        last = format!("{} named, still {role:?}", node.name());
                    }
                    Err(e) => last = e.to_string(),
                }
            } else if !votes.is_empty() {
                last = format!("sentinels name {votes:?}");
            }
            if Instant::now() >= deadline {
                return Err(ClusterError::Timeout {
                    what: format!("Sentinel to promote a replica of `{service}` ({last})"),
                    after: timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Removes everything now; errors are reported instead of ignored.
    /// (Dropping does the same, silently.)
    pub async fn shutdown(mut self) -> Result<(), ClusterError> {
        self.torn_down = true;
        drop(self.take_nodes());
        let networks = self.take_networks();
        sweep(&self.id, &networks).await
    }

    /// The networks, to be removed (the sentinels' first).
    fn take_networks(&mut self) -> Vec<String> {
        let mut networks: Vec<String> = self.sentinel_network.take().into_iter().collect();
        networks.extend(self.network.take());
        networks
    }

    /// The nodes, disowned: the sweep by label removes their containers.
    fn take_nodes(&mut self) -> Vec<Node> {
        self.sentinels.clear(); // swept by label with the nodes
        let mut nodes: Vec<Node> = self.replicas.drain(..).flatten().collect();
        nodes.append(&mut self.masters);
        nodes.iter_mut().for_each(Node::disown);
        nodes
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.torn_down {
            return;
        }
        self.torn_down = true;
        drop(self.take_nodes());
        let networks = self.take_networks();
        let id = &self.id;
        let _ = engine::block_on(sweep(id, &networks));
    }
}

/// Containers and networks that still carry the label
/// `org.locklab.cluster=<cluster_id>`: empty after a cluster is dropped.
/// Returns (container ids, network names).
pub fn remaining_resources(cluster_id: &str) -> Result<(Vec<String>, Vec<String>), ClusterError> {
    let filter = [format!("{CLUSTER_LABEL}={cluster_id}")];
    engine::block_on(async {
        let engine = engine::engine().await?;
        let containers = engine.containers_with_labels(&filter).await?;
        let networks = engine.networks_with_labels(&filter).await?;
        Ok((
            containers.into_iter().filter_map(|c| c.id).collect(),
            networks.into_iter().filter_map(|n| n.name).collect(),
        ))
    })
}

/// Removes every container labelled with the cluster id, then the networks.
async fn sweep(id: &str, networks: &[String]) -> Result<(), ClusterError> {
    let engine = engine::engine().await?;
    let mut first_err = None;
    let filter = [format!("{CLUSTER_LABEL}={id}")];
    match engine.containers_with_labels(&filter).await {
        Ok(containers) => {
            for c in containers.into_iter().filter_map(|c| c.id) {
                if let Err(e) = engine.container_remove(&c).await {
                    first_err.get_or_insert(e);
                }
            }
        }
        Err(e) => {
            first_err.get_or_insert(e);
        }
    }
    for net in networks {
        // an endpoint can take a moment to go after its container
        let mut result = engine.network_remove(net).await;
        for _ in 0..10 {
            if result.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            result = engine.network_remove(net).await;
        }
        if let Err(e) = result {
            first_err.get_or_insert(e);
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
