//! Redis Sentinel in containers: the sentinels promote a replica themselves after
//! the master dies. Needs Docker and the Redis image; never skips.

use std::time::{Duration, Instant};

use crate::{assert_gone, require_environment};
use locklab_cluster::{service_name, Cluster, ClusterError, Node, Role};

/// Far above the few seconds a failover takes with the rig's timing, so that a
/// loaded machine does not fail the test; the measured time is printed.
const PROMOTION_TIMEOUT: Duration = Duration::from_secs(60);

/// `SET key 1`, then `WAIT replicas timeout_ms` on the same connection (WAIT counts
/// the replicas that acknowledged its connection's writes); the acknowledgements.
async fn set_and_wait(node: &Node, key: &str, replicas: usize, timeout_ms: u64) -> i64 {
    let client = redis::Client::open(node.url()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg("1")
        .query_async(&mut con)
        .await
        .unwrap();
    redis::cmd("WAIT")
        .arg(replicas)
        .arg(timeout_ms)
        .query_async(&mut con)
        .await
        .unwrap()
}

#[tokio::test]
async fn sentinels_need_replicas() {
    let err = Cluster::builder()
        .replicas(0)
        .sentinels(3)
        .start()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClusterError::Unsupported(m) if m.contains("replicas")),
        "{err}"
    );
}

/// Three failovers in a row on one master with three replicas: each time the
/// current master is killed, the sentinels agree on a live replica, promote it and
/// point the others at it; a write made before the kill (and replicated) is on the
/// new master. Prints how long each failover took, from the kill to the promoted
/// node answering as a master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_promotes_a_replica_after_the_master_dies() {
    require_environment();
    let cluster = Cluster::builder()
        .replicas(3)
        .sentinels(3)
        .start()
        .await
        .unwrap_or_else(|e| panic!("cluster start failed: {e}"));
    let id = cluster.id().to_string();
    assert_eq!(cluster.sentinels().len(), 3);
    assert_eq!(service_name(0), "m0");
    for s in cluster.sentinels() {
        assert!(s.url().starts_with("redis://127.0.0.1:"), "{}", s.url());
        let state = s.master_state("m0").await.unwrap();
        assert_eq!(state.get("quorum").map(String::as_str), Some("2"));
    }
    let first = cluster.sentinel_master(0).await.unwrap();
    assert_eq!(first.name(), cluster.master(0).name());

    let mut took = Vec::new();
    let mut current = cluster.master(0);
    let mut dead = Vec::new();
    for round in 0..3 {
        let key = format!("before-kill-{round}");
        // every live replica has the write before the kill
        let live = 3 - round;
        let acks = set_and_wait(current, &key, live, 5000).await;
        assert_eq!(usize::try_from(acks), Ok(live));
        let t0 = Instant::now();
        current.kill().await.unwrap();
        let promoted = cluster
            .wait_for_sentinel_promotion(0, current, PROMOTION_TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        let elapsed = t0.elapsed();
        eprintln!(
            "sentinel failover {round}: {} -> {} in {} ms",
            current.short_name(),
            promoted.short_name(),
            elapsed.as_millis()
        );
        took.push(elapsed);
        dead.push(current.name().to_string());
        assert!(
            !dead.contains(&promoted.name().to_string()),
            "a dead node was promoted"
        );
        assert_eq!(promoted.role(), Role::Master);
        let v: Option<String> = promoted.query(&["GET", &key]).await.unwrap();
        assert_eq!(
            v.as_deref(),
            Some("1"),
            "the promoted replica has the write"
        );
        assert_eq!(
            cluster.sentinel_master(0).await.unwrap().name(),
            promoted.name()
        );
        // the remaining replicas follow the new master before the next round
        for r in (0..3).map(|j| cluster.replica(0, j)) {
            if !dead.contains(&r.name().to_string()) && r.name() != promoted.name() {
                r.wait_for_link_up(PROMOTION_TIMEOUT)
                    .await
                    .unwrap_or_else(|e| panic!("round {round}: {e}"));
                assert_eq!(
                    r.replication_field("role").await.unwrap().as_deref(),
                    Some("slave")
                );
            }
        }
        current = promoted;
    }
    let mut ms: Vec<u128> = took.iter().map(Duration::as_millis).collect();
    ms.sort_unstable();
    eprintln!(
        "sentinel failovers: median {} ms, max {} ms over {} (down-after {} ms)",
        ms[ms.len() / 2],
        ms[ms.len() - 1],
        ms.len(),
        locklab_cluster::DOWN_AFTER_MS
    );
    drop(cluster);
    assert_gone(&id);
}

/// The failover pitfall as Sentinel plays it: the replica is cut off the cluster
/// network (its replication link) but stays in the sentinels' sight on theirs; the
/// master takes a write the replica misses and dies; Sentinel promotes the replica,
/// which lacks the write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_promotes_a_replica_that_missed_a_write() {
    require_environment();
    let cluster = Cluster::builder()
        .replicas(1)
        .sentinels(3)
        .start()
        .await
        .unwrap_or_else(|e| panic!("cluster start failed: {e}"));
    let id = cluster.id().to_string();
    assert!(cluster.sentinel_network().is_some());
    let (master, replica) = (cluster.master(0), cluster.replica(0, 0));
    assert_eq!(set_and_wait(master, "seen", 1, 5000).await, 1);
    replica.disconnect_from_network().await.unwrap();
    let acks = set_and_wait(master, "missed", 1, 300).await;
    assert_eq!(acks, 0, "the cut-off replica acknowledged a write");
    let t0 = Instant::now();
    master.kill().await.unwrap();
    let promoted = cluster
        .wait_for_sentinel_promotion(0, master, PROMOTION_TIMEOUT)
        .await
        .unwrap();
    eprintln!(
        "sentinel failover to a lagging replica: {} ms",
        t0.elapsed().as_millis()
    );
    assert_eq!(promoted.name(), replica.name());
    let seen: Option<String> = promoted.query(&["GET", "seen"]).await.unwrap();
    let missed: Option<String> = promoted.query(&["GET", "missed"]).await.unwrap();
    assert_eq!((seen.as_deref(), missed), (Some("1"), None));
    drop(cluster);
    assert_gone(&id);
}
