//! A set of Redis nodes (masters, each with its replicas) and their lifetime.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use crate::engine;
use crate::error::ClusterError;
use crate::node::{Node, NodeSpec, Role, CLUSTER_LABEL};
use crate::owner::{self, Owner};
use crate::preflight;

/// How long [`ClusterBuilder::start`] waits for every replica's link.
const LINK_TIMEOUT: Duration = Duration::from_secs(30);

/// Builds a [`Cluster`]: `Cluster::builder().masters(3).replicas(1).start().await`.
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    masters: usize,
    replicas: usize,
    clock_control: bool,
}

impl Default for ClusterBuilder {
    fn default() -> Self {
        ClusterBuilder {
            masters: 1,
            replicas: 0,
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
            masters: Vec::new(),
            replicas: Vec::new(),
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
        Ok(cluster)
    }
}

/// Starts nodes in parallel; waits for all of them even if one fails (so that
/// no start is cancelled half-way), then returns them in order or the first error.
async fn start_all(specs: Vec<(Arc<NodeSpec>, String, Role)>) -> Result<Vec<Node>, ClusterError> {
    let n = specs.len();
    let mut set = JoinSet::new();
    for (i, (spec, short, role)) in specs.into_iter().enumerate() {
        set.spawn(async move { (i, Node::start(spec, short, role).await) });
    }
    let mut slots: Vec<Option<Node>> = (0..n).map(|_| None).collect();
    let mut first_err = None;
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((i, Ok(node))) => slots[i] = Some(node),
            Ok((_, Err(e))) => {
                first_err.get_or_insert(e);
            }
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => {
                first_err.get_or_insert(ClusterError::Unsupported(format!(
                    "node start cancelled: {e}"
                )));
            }
        }
    }
    match first_err {
        Some(e) => Err(e), // the started nodes in `slots` are dropped (removed) here
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
    masters: Vec<Node>,
    replicas: Vec<Vec<Node>>,
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

    /// The cluster's Docker network (only when replicas > 0).
    pub fn network(&self) -> Option<&str> {
        self.network.as_deref()
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

    /// Removes everything now; errors are reported instead of ignored.
    /// (Dropping does the same, silently.)
    pub async fn shutdown(mut self) -> Result<(), ClusterError> {
        self.torn_down = true;
        drop(self.take_nodes());
        let network = self.network.take();
        sweep(&self.id, network.as_deref()).await
    }

    /// The nodes, disowned: the sweep by label removes their containers.
    fn take_nodes(&mut self) -> Vec<Node> {
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
        let network = self.network.take();
        let id = &self.id;
        let _ = engine::block_on(sweep(id, network.as_deref()));
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

/// Removes every container labelled with the cluster id, then the network.
async fn sweep(id: &str, network: Option<&str>) -> Result<(), ClusterError> {
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
    if let Some(net) = network {
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
