//! The driver behind Redis Sentinel, on containers: a master with replicas watched by
//! three sentinels (`locklab-cluster`). The master dies or is demoted, Sentinel
//! promotes a replica, and the locks' next acquire goes to the new master by itself.
//! Needs Docker and the Redis image; never skips.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use locklab::driver::{Lock, LockBuilder, LockError};
use locklab::DesignId;
use locklab_cluster::{Cluster, Node};

const PROMOTION_TIMEOUT: Duration = Duration::from_secs(60);

async fn sentinel_cluster(replicas: usize) -> Cluster {
    if let Err(e) = locklab_cluster::preflight() {
        panic!("cannot run the container tests: {e}");
    }
    Cluster::builder()
        .replicas(replicas)
        .sentinels(3)
        .start()
        .await
        .unwrap_or_else(|e| panic!("cannot start Redis with sentinels: {e}"))
}

/// The cluster node at the address a lock's node resolved last (`redis://ip:port`).
fn resolved<'a>(cluster: &'a Cluster, lock: &Lock) -> &'a Node {
    let url = lock.nodes()[0].current_master().expect("resolved");
    let addr: SocketAddr = url.trim_start_matches("redis://").parse().unwrap();
    cluster
        .node_at(addr.ip())
        .unwrap_or_else(|| panic!("{url} is no node of the cluster"))
}

fn builder(design: &str, key: &str, cluster: &Cluster) -> LockBuilder {
    let b = match design {
        "lua-release" => LockBuilder::lua_release(),
        "watchdog" => LockBuilder::watchdog(),
        "reentrant" => LockBuilder::reentrant(),
        "naive-setnx" => LockBuilder::pitfall(DesignId::NaiveSetnx),
        "lua-release+wait+fencing" => LockBuilder::lua_release().wait_replicas(1).fencing(true),
        other => panic!("no design {other}"),
    };
    b.key(key)
        .ttl(Duration::from_secs(20))
        .sentinel(cluster.sentinel_urls(), "m0")
        // a few attempts: the first after the failover meets the dead connection,
        // and WAIT needs the remaining replica resynced from the new master
        .retry_count(20)
        .retry_delay(Duration::from_millis(200))
}

const DESIGNS: [&str; 5] = [
    "lua-release",
    "watchdog",
    "reentrant",
    "naive-setnx",
    "lua-release+wait+fencing",
];

/// Every single-master design, pitfalls, fencing and `WAIT` included: the master is
/// killed, Sentinel promotes a replica, and each lock's next `acquire` — the same
/// handle, nothing done by the caller — succeeds on the new master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_acquire_after_a_failover_succeeds_on_the_new_master() {
    let cluster = sentinel_cluster(2).await;
    let old = cluster.master(0);
    let mut locks: Vec<(&str, Lock)> = Vec::new();
    for design in DESIGNS {
        let lock = builder(design, &format!("lock:{design}"), &cluster)
            .build()
            .await
            .unwrap_or_else(|e| panic!("{design}: {e}"));
        let guard = lock
            .acquire()
            .await
            .unwrap_or_else(|e| panic!("{design}: {e}"));
        assert_eq!(resolved(&cluster, &lock).name(), old.name());
        lock.release(guard)
            .await
            .unwrap_or_else(|e| panic!("{design}: {e}"));
        locks.push((design, lock));
    }

    let t0 = Instant::now();
    old.kill().await.unwrap();
    let promoted = cluster
        .wait_for_sentinel_promotion(0, old, PROMOTION_TIMEOUT)
        .await
        .unwrap();
    eprintln!(
        "sentinel failover: {} -> {} in {} ms",
        old.short_name(),
        promoted.short_name(),
        t0.elapsed().as_millis()
    );
    for (design, lock) in &locks {
        let t = Instant::now();
        let guard = lock
            .acquire()
            .await
            .unwrap_or_else(|e| panic!("{design}: the acquire after the failover: {e}"));
        eprintln!(
            "{design}: acquired on the new master {} ms after the promotion was seen",
            t.elapsed().as_millis()
        );
        assert_eq!(resolved(&cluster, lock).name(), promoted.name(), "{design}");
        let held: i64 = promoted.query(&["EXISTS", lock.key()]).await.unwrap();
        assert_eq!(held, 1, "{design}: the lock key is on the new master");
        if *design == "lua-release+wait+fencing" {
            // the counter carried over: it was replicated before the kill
            assert_eq!(guard.fencing_token(), Some(2), "{design}");
        }
        lock.release(guard)
            .await
            .unwrap_or_else(|e| panic!("{design}: {e}"));
    }
}

/// A failover that leaves the old master up (`SENTINEL FAILOVER`): Sentinel demotes
/// it (and drops its clients), the lock's next attempt fails naming the old master,
/// the one after asks Sentinel again and succeeds on the new master. Then the new
/// master is turned into a replica by hand, behind Sentinel's back: the lock's open
/// connection gets `READONLY`, which names it, and the lock does not use that
/// connection again but asks the sentinels (who still name the demoted node, which
/// redis-rs' `ROLE` check refuses: [`LockError::NoMaster`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demoted_master_is_left_for_the_one_sentinel_names() {
    let cluster = sentinel_cluster(1).await;
    let old = cluster.master(0);
    let lock = builder("lua-release", "lock:demoted", &cluster)
        .build()
        .await
        .unwrap();
    let guard = lock.acquire().await.unwrap();
    let old_addr = lock.nodes()[0].current_master().unwrap();
    assert_eq!(resolved(&cluster, &lock).name(), old.name());
    lock.release(guard).await.unwrap();

    let _: String = cluster.sentinels()[0]
        .query(&["SENTINEL", "FAILOVER", "m0"])
        .await
        .unwrap();
    let promoted = cluster
        .wait_for_sentinel_promotion(0, old, PROMOTION_TIMEOUT)
        .await
        .unwrap();
    let deadline = Instant::now() + PROMOTION_TIMEOUT;
    // The demotion drops the old master's clients, so a query may fail meanwhile.
    while old
        .replication_field("role")
        .await
        .ok()
        .flatten()
        .as_deref()
        != Some("slave")
    {
        assert!(
            Instant::now() < deadline,
            "the old master was never demoted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let err = lock.try_acquire().await.unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert!(
        err.to_string().contains(&old_addr),
        "names the old master: {err}"
    );
    let guard = lock
        .try_acquire()
        .await
        .unwrap()
        .expect("free on the new master");
    let new_addr = lock.nodes()[0].current_master().unwrap();
    assert_eq!(resolved(&cluster, &lock).name(), promoted.name());
    lock.release(guard).await.unwrap();

    // behind Sentinel's back: the old master takes over, the new one follows it
    let _: () = old.query(&["REPLICAOF", "NO", "ONE"]).await.unwrap();
    promoted.replicate_from(old).await.unwrap();
    let err = lock.try_acquire().await.unwrap_err();
    assert!(matches!(err, LockError::ReadOnly { node: 0, .. }), "{err}");
    assert!(
        err.to_string().contains(&new_addr),
        "names the demoted node: {err}"
    );
    assert!(err.to_string().contains("READONLY"), "{err}");
    let err = lock.try_acquire().await.unwrap_err();
    assert!(
        matches!(err, LockError::NoMaster { node: 0, .. }),
        "asks Sentinel: {err}"
    );
    assert!(
        err.to_string().contains("sentinel 0 (redis://127.0.0.1:"),
        "{err}"
    );
}

/// No sentinel answers: the error names each sentinel and what went wrong.
#[tokio::test]
async fn unreachable_sentinels_are_each_named() {
    let urls = ["redis://127.0.0.1:1", "redis://127.0.0.1:2"];
    let err = LockBuilder::lua_release()
        .key("k")
        .sentinel(urls, "m0")
        .connect_timeout(Duration::from_millis(200))
        .build()
        .await
        .unwrap_err();
    let LockError::NoMaster {
        node,
        service,
        failures,
    } = &err
    else {
        panic!("expected NoMaster, got {err}");
    };
    assert_eq!((*node, service.as_str(), failures.len()), (0, "m0", 2));
    let shown = err.to_string();
    for (i, url) in urls.iter().enumerate() {
        assert!(shown.contains(&format!("sentinel {i} ({url})")), "{shown}");
    }
}
