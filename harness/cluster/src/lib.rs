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
//! - Containers are started with testcontainers (`GenericImage`) with
//!   `--protected-mode no --save "" --appendonly no --repl-diskless-sync-delay 0`,
//!   port 6379 published on 127.0.0.1 only (random host port).
//! - With replicas, the cluster has its own Docker network (named by the
//!   cluster id) for replication; each node is also on the default bridge,
//!   which carries its published port, so cutting the cluster network never
//!   cuts the harness off a node.
//! - Faults ([`Node`]): pause/unpause (`docker pause`), stop, kill, restart
//!   (empty), network disconnect/connect, promote, clock jumps.
//! - Cleanup: see [`Cluster`].
//! - Old Docker engines: see the `shim` module docs (API-version shim).

mod cluster;
mod engine;
mod error;
mod image;
mod node;
mod preflight;
mod resp;
mod shim;

pub use cluster::{remaining_resources, Cluster, ClusterBuilder};
pub use error::{ClusterError, BUILD_COMMAND};
pub use image::{image, ImageRef, DEFAULT_IMAGE, IMAGE_ENV};
pub use node::{Node, Role, CLUSTER_LABEL, COMMAND_TIMEOUT, NODE_LABEL, REDIS_ARGS, REDIS_PORT};
pub use preflight::{preflight, Preflight};
pub use resp::RespValue;

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
