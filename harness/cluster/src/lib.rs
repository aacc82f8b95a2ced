//! Redis servers in containers for locklab's tests and chaos harness.
//!
//! ```no_run
//! # async fn demo() -> Result<(), locklab_cluster::ClusterError> {
//! use locklab_cluster::Cluster;
//! locklab_cluster::preflight()?; // "no Docker engine: ..." / "image not found: build it with ..."
//! let cluster = Cluster::builder().masters(1).replicas(1).start().await?;
//! let master = cluster.master(0);
//! let replica = cluster.replica(0, 0);
//! println!("{} replicates to {}", master.url(), replica.url());
//! replica.disconnect_from_network().await?; // cut replication
//! master.kill().await?;                       // the master dies
//! replica.promote().await?;                   // REPLICAOF NO ONE
//! # Ok(()) }
//! // dropping `cluster` removes the containers, then the network
//! ```
//!
//! - Image: `LOCKLAB_REDIS_IMAGE` (default `locklab/redis:local`, built
//!   offline by `bash harness/redis-image/build.sh`); never pulled.
//! - Docker: bollard, through testcontainers' re-export, at the engine's own
//!   API version (older engines, such as Docker 20.10 with API 1.41, refuse
//!   bollard's newer default). Containers run `redis-server`
//!   with `--protected-mode no --save "" --appendonly no --repl-diskless-sync-delay 0
//!   --enable-debug-command yes`,
//!   port 6379 published on 127.0.0.1 only (random host port).
//! - Redis: the crate's own commands (PING, INFO, REPLICAOF, and
//!   [`Node::command`]) go through redis-rs, one fresh connection each.
//! - With replicas, the cluster has its own Docker network (named by the
//!   cluster id) for replication; each node is also on the default bridge,
//!   which carries its published port, so cutting the cluster network never
//!   cuts the harness off a node.
//! - Sentinel ([`ClusterBuilder::sentinels`]): Redis Sentinels from the same image
//!   on the cluster network watch every master and promote a replica themselves
//!   ([`Cluster::wait_for_sentinel_promotion`]); see the `sentinel` module's notes
//!   for the configuration and its timing.
//! - Faults ([`Node`]): pause/unpause (`docker pause`), stop, kill, restart
//!   (empty: a new container, or the process in place in milliseconds), network
//!   disconnect/connect, promote, clock jumps.
//! - Cleanup: see [`Cluster`]. Every container and network carries the owning
//!   process (pid, start time, boot id, pid namespace, host name) and the label
//!   `org.locklab.managed=true`; [`reap`] removes those of processes that no
//!   longer exist (a run killed with SIGKILL), never another program's or a
//!   running process's. Every [`ClusterBuilder::start`] runs it first;
//!   `locklab clean` runs it on demand.

mod cluster;
mod engine;
mod error;
mod image;
mod node;
mod owner;
mod preflight;
mod sentinel;

pub use cluster::{remaining_resources, Cluster, ClusterBuilder};
pub use error::{ClusterError, BUILD_COMMAND};
pub use image::{image, ImageRef, DEFAULT_IMAGE, IMAGE_ENV};
pub use node::{Node, Role, CLUSTER_LABEL, COMMAND_TIMEOUT, NODE_LABEL, REDIS_ARGS, REDIS_PORT};
pub use owner::{
    reap, remove_own, Owner, Reaped, MANAGED_LABEL, OWNER_BOOT_LABEL, OWNER_HOST_LABEL,
    OWNER_PIDNS_LABEL, OWNER_PID_LABEL, OWNER_START_LABEL,
};
pub use preflight::{preflight, Preflight};
pub use sentinel::{service_name, Sentinel, DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS, SENTINEL_PORT};

#[cfg(test)]
mod tests {
    #[test]
    fn cluster_can_be_shared_between_tasks() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<crate::Cluster>();
        send_sync::<crate::Node>();
        send_sync::<crate::ClusterError>();
    }
}
