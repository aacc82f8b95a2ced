//! Real containers, one test binary with a module per subject: nodes, replicas, faults
//! and clean-up (`cluster`), Sentinel's failovers (`sentinel`). Need Docker and the
//! Redis image; never skip.

mod cluster;
mod sentinel;

use locklab_cluster::remaining_resources;

/// These tests never skip: without Docker or the image they fail with what to do.
fn require_environment() {
    if let Err(e) = locklab_cluster::preflight() {
        panic!("cannot run the container tests: {e}");
    }
}

/// Nothing of the cluster is left: no container, no network.
fn assert_gone(cluster_id: &str) {
    let (containers, networks) = remaining_resources(cluster_id).unwrap();
    assert!(
        containers.is_empty() && networks.is_empty(),
        "left behind by {cluster_id}: containers {containers:?}, networks {networks:?}"
    );
}
