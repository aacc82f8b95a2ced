//! Real containers: these tests need Docker and the Redis image. They do not
//! skip: without them they fail with the message that says what to do
//! (`bash harness/redis-image/build.sh`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::{assert_gone, require_environment};
use locklab_cluster::{remaining_resources, Cluster, ClusterError, Node, Role};
use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;

async fn start(masters: usize, replicas: usize) -> Cluster {
    require_environment();
    Cluster::builder()
        .masters(masters)
        .replicas(replicas)
        .start()
        .await
        .unwrap_or_else(|e| panic!("cluster start failed: {e}"))
}

async fn connect(node: &Node, response_timeout: Duration) -> MultiplexedConnection {
    let client = redis::Client::open(node.url()).unwrap();
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(response_timeout));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap_or_else(|e| panic!("connect to {}: {e}", node.url()))
}

async fn con(node: &Node) -> MultiplexedConnection {
    connect(node, Duration::from_secs(2)).await
}

async fn get(c: &mut MultiplexedConnection, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query_async(c).await.unwrap()
}

async fn set(c: &mut MultiplexedConnection, key: &str, value: &str) {
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .query_async(c)
        .await
        .unwrap();
}

fn container_exists(id: &str) -> bool {
    let out = std::process::Command::new("docker")
        .args(["container", "inspect", "--format", "{{.Id}}", id])
        .output()
        .expect("run the docker CLI");
    out.status.success()
}

#[tokio::test]
async fn one_master_answers_ping_on_127_0_0_1() {
    let cluster = start(1, 0).await;
    let id = cluster.id().to_string();
    let m = cluster.master(0);
    assert!(m.host_port() > 0);
    assert_eq!(m.url(), format!("redis://127.0.0.1:{}", m.host_port()));
    assert_eq!(m.role(), Role::Master);
    assert!(cluster.network().is_none());
    let mut c = con(m).await;
    let pong: String = redis::cmd("PING").query_async(&mut c).await.unwrap();
    assert_eq!(pong, "PONG");
    // the node runs with the arguments of the design
    let save: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("save")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(save, vec!["save".to_string(), String::new()]);
    let (containers, _) = remaining_resources(&id).unwrap();
    assert_eq!(containers.len(), 1);
    drop(cluster);
    assert_gone(&id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_independent_masters() {
    let cluster = start(3, 0).await;
    let id = cluster.id().to_string();
    let ports: std::collections::BTreeSet<u16> =
        cluster.masters().iter().map(Node::host_port).collect();
    assert_eq!(ports.len(), 3, "distinct host ports");
    assert_eq!(cluster.master_urls().len(), 3);
    for m in cluster.masters() {
        m.ping().await.unwrap();
    }
    let mut c0 = con(cluster.master(0)).await;
    let mut c1 = con(cluster.master(1)).await;
    set(&mut c0, "k", "on-m0").await;
    assert_eq!(get(&mut c0, "k").await.as_deref(), Some("on-m0"));
    assert_eq!(get(&mut c1, "k").await, None, "masters are independent");
    drop(cluster);
    assert_gone(&id);
}

#[tokio::test]
async fn replica_receives_writes_of_its_master() {
    let cluster = start(1, 1).await;
    let id = cluster.id().to_string();
    let net = cluster
        .network()
        .expect("a network with replicas")
        .to_string();
    assert_eq!(net, id);
    let (m, r) = (cluster.master(0), cluster.replica(0, 0));
    assert_eq!(
        r.role(),
        Role::Replica {
            of: m.name().to_string()
        }
    );
    assert_eq!(
        r.replication_field("master_link_status")
            .await
            .unwrap()
            .as_deref(),
        Some("up")
    );
    let mut cm = con(m).await;
    let mut cr = con(r).await;
    set(&mut cm, "stock", "42").await;
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(2000)
        .query_async(&mut cm)
        .await
        .unwrap();
    assert_eq!(acked, 1);
    assert_eq!(get(&mut cr, "stock").await.as_deref(), Some("42"));
    // the replica refuses writes
    let err = redis::cmd("SET")
        .arg("x")
        .arg("1")
        .query_async::<()>(&mut cr)
        .await
        .unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("read only"),
        "{err}"
    );
    drop(cluster);
    assert_gone(&id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_node_does_not_answer_until_unpaused() {
    let cluster = start(1, 0).await;
    let m = cluster.master(0);
    let mut c = connect(m, Duration::from_millis(300)).await;
    set(&mut c, "k", "v").await;

    m.pause().await.unwrap();
    let started = std::time::Instant::now();
    let err = redis::cmd("GET")
        .arg("k")
        .query_async::<Option<String>>(&mut c)
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "expected a timeout, got {err}");
    assert!(started.elapsed() >= Duration::from_millis(250));
    // a fresh connection gets no answer either
    match m
        .command_with_timeout(&["PING"], Duration::from_millis(300))
        .await
    {
        Err(ClusterError::Timeout { .. }) => {}
        other => panic!("PING on a paused node: {other:?}"),
    }

    m.unpause().await.unwrap();
    m.ping().await.unwrap();
    let mut c = con(m).await;
    assert_eq!(
        get(&mut c, "k").await.as_deref(),
        Some("v"),
        "pause keeps data"
    );
}

#[tokio::test]
async fn stop_kill_and_restart_empty() {
    let cluster = start(2, 0).await;
    let id = cluster.id().to_string();
    let (a, b) = (cluster.master(0), cluster.master(1));
    let mut ca = con(a).await;
    set(&mut ca, "k", "v").await;

    a.stop().await.unwrap();
    assert!(a.ping().await.is_err(), "a stopped node must not answer");
    b.kill().await.unwrap();
    assert!(b.ping().await.is_err(), "a killed node must not answer");

    let (old_port, old_id) = (a.host_port(), a.container_id());
    a.restart().await.unwrap();
    assert_ne!(a.container_id(), old_id);
    assert!(!container_exists(&old_id), "old container removed");
    a.ping().await.unwrap();
    // usually the same port; if not, url() follows
    eprintln!("restart: port {old_port} -> {}", a.host_port());
    let mut ca = con(a).await;
    assert_eq!(get(&mut ca, "k").await, None, "a restarted node is empty");

    b.restart().await.unwrap();
    b.ping().await.unwrap();
    // restart of a running node works too
    a.restart().await.unwrap();
    a.ping().await.unwrap();

    let (containers, _) = remaining_resources(&id).unwrap();
    assert_eq!(
        containers.len(),
        2,
        "no container left from before the restarts"
    );
    drop(cluster);
    assert_gone(&id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_promotes_a_replica_that_missed_a_write() {
    let cluster = start(1, 1).await;
    let id = cluster.id().to_string();
    let (m, r) = (cluster.master(0), cluster.replica(0, 0));
    let mut cm = con(m).await;
    set(&mut cm, "lock", "client-1").await;
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(2000)
        .query_async(&mut cm)
        .await
        .unwrap();
    assert_eq!(acked, 1);

    // cut replication, then write: the replica misses it
    r.disconnect_from_network().await.unwrap();
    assert!(!r.is_on_network());
    r.ping()
        .await
        .expect("still reachable on its published port");
    set(&mut cm, "lock2", "client-2").await;
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(300)
        .query_async(&mut cm)
        .await
        .unwrap();
    assert_eq!(acked, 0, "no replica got the second write");

    m.kill().await.unwrap();
    r.promote().await.unwrap();
    assert_eq!(r.role(), Role::Master);
    assert_eq!(
        r.replication_field("role").await.unwrap().as_deref(),
        Some("master")
    );
    let mut cr = con(r).await;
    assert_eq!(get(&mut cr, "lock").await.as_deref(), Some("client-1"));
    assert_eq!(get(&mut cr, "lock2").await, None, "the lost write");
    set(&mut cr, "lock2", "client-3").await; // writable now

    // reconnecting and re-pointing works too
    r.connect_to_network().await.unwrap();
    m.restart().await.unwrap();
    m.replicate_from(r).await.unwrap();
    m.wait_for_link_up(Duration::from_secs(20)).await.unwrap();
    let mut cm = con(m).await;
    assert_eq!(get(&mut cm, "lock2").await.as_deref(), Some("client-3"));
    drop(cluster);
    assert_gone(&id);
}

#[tokio::test]
async fn disconnecting_a_replica_cuts_its_link_and_reconnecting_heals_it() {
    let cluster = start(1, 1).await;
    let (m, r) = (cluster.master(0), cluster.replica(0, 0));
    r.disconnect_from_network().await.unwrap();
    let mut cm = con(m).await;
    set(&mut cm, "k", "after-cut").await;
    // the link notices the cut at the latest after repl-timeout; the write
    // simply must not arrive
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut cr = con(r).await;
    assert_eq!(get(&mut cr, "k").await, None);
    r.connect_to_network().await.unwrap();
    // depending on timing the old link survived the cut (TCP retransmits)
    // or the replica reconnects: either way the write arrives
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if get(&mut cr, "k").await.as_deref() == Some("after-cut") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "replication did not heal"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    r.wait_for_link_up(Duration::from_secs(20)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_test_body_still_removes_containers_and_network() {
    require_environment();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let cluster = Cluster::builder()
            .masters(1)
            .replicas(1)
            .start()
            .await
            .unwrap();
        let ids: Vec<String> = cluster.nodes().map(Node::container_id).collect();
        tx.send((cluster.id().to_string(), ids)).unwrap();
        panic!("test body panics while the cluster is alive");
    });
    let joined = task.await;
    assert!(joined.unwrap_err().is_panic());
    let (cluster_id, container_ids) = rx.await.unwrap();
    assert_eq!(container_ids.len(), 2);
    for id in &container_ids {
        assert!(!container_exists(id), "container {id} survived the panic");
    }
    assert_gone(&cluster_id);
}

#[tokio::test]
async fn a_panic_in_a_current_thread_runtime_also_cleans_up() {
    require_environment();
    let (tx, rx) = std::sync::mpsc::channel();
    let result = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let cluster = Cluster::builder().masters(2).start().await.unwrap();
                tx.send(cluster.id().to_string()).unwrap();
                panic!("boom");
            })
    })
    .join();
    assert!(result.is_err());
    assert_gone(&rx.recv().unwrap());
}

#[test]
fn dropping_outside_a_runtime_cleans_up() {
    require_environment();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cluster = rt.block_on(Cluster::builder().masters(1).start()).unwrap();
    let id = cluster.id().to_string();
    drop(rt);
    drop(cluster); // no runtime here
    assert_gone(&id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_reports_and_removes() {
    let cluster = start(1, 1).await;
    let id = cluster.id().to_string();
    cluster.shutdown().await.unwrap();
    assert_gone(&id);
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// One master whose wall clock the test can move.
async fn start_with_clock_control() -> Cluster {
    Cluster::builder()
        .clock_control(true)
        .start()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn clock_jump_moves_time_and_expires_keys() {
    require_environment();
    let cluster = start_with_clock_control().await;
    let m = cluster.master(0);
    let server_time = |v: Vec<String>| -> i64 { v[0].parse().unwrap() };
    let t0 = server_time(m.query(&["TIME"]).await.unwrap());
    assert!((t0 - unix_now()).abs() <= 2, "no offset yet");
    let mut c = con(m).await;
    let _: () = redis::cmd("SET")
        .arg("lock")
        .arg("me")
        .arg("PX")
        .arg(60_000)
        .query_async(&mut c)
        .await
        .unwrap();

    m.set_clock_offset_ms(120_000).await.unwrap();
    let t1 = server_time(m.query(&["TIME"]).await.unwrap());
    assert!((t1 - unix_now() - 120).abs() <= 2, "TIME is +120 s: {t1}");
    assert_eq!(get(&mut c, "lock").await, None, "a 60 s key expired");

    m.set_clock_offset_ms(-30_000).await.unwrap();
    let t2 = server_time(m.query(&["TIME"]).await.unwrap());
    assert!((t2 - unix_now() + 30).abs() <= 2, "TIME is -30 s: {t2}");
    m.set_clock_offset_ms(0).await.unwrap();
    let t3 = server_time(m.query(&["TIME"]).await.unwrap());
    assert!((t3 - unix_now()).abs() <= 2);
}

/// A restart in place: the same container and port, a new process, no data, the
/// clock offset back at zero, in well under the time a new container takes.
#[tokio::test]
async fn restart_in_place_is_a_new_empty_process_in_the_same_container() {
    require_environment();
    let cluster = start_with_clock_control().await;
    let m = cluster.master(0);
    let (id, port) = (m.container_id(), m.host_port());
    let run_id = |info: String| -> String {
        info.lines()
            .find_map(|l| l.strip_prefix("run_id:"))
            .unwrap()
            .trim()
            .to_string()
    };
    let before = run_id(m.info("server").await.unwrap());
    let mut c = con(m).await;
    set(&mut c, "k", "v").await;
    m.set_clock_offset_ms(120_000).await.unwrap();
    let start = std::time::Instant::now();
    m.restart_in_place().await.unwrap();
    let took = start.elapsed();
    eprintln!("restart in place: {took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert_eq!(m.container_id(), id, "the same container");
    assert_eq!(m.host_port(), port, "the same port");
    assert_ne!(
        run_id(m.info("server").await.unwrap()),
        before,
        "a new process"
    );
    let mut c = con(m).await;
    assert_eq!(get(&mut c, "k").await, None, "a restarted node is empty");
    let server_time = |v: Vec<String>| -> i64 { v[0].parse().unwrap() };
    let t = server_time(m.query(&["TIME"]).await.unwrap());
    assert!(
        (t - unix_now()).abs() <= 2,
        "the clock offset is back at zero: {t}"
    );
}

#[tokio::test]
async fn clock_jump_needs_clock_control() {
    let cluster = start(1, 0).await;
    let err = cluster
        .master(0)
        .set_clock_offset_ms(1000)
        .await
        .unwrap_err();
    assert!(matches!(err, ClusterError::Unsupported(_)), "{err}");
    assert!(err.to_string().contains("clock_control"), "{err}");
}

#[tokio::test]
async fn network_faults_need_a_network() {
    let cluster = start(1, 0).await;
    let err = cluster
        .master(0)
        .disconnect_from_network()
        .await
        .unwrap_err();
    assert!(matches!(err, ClusterError::Unsupported(_)), "{err}");
}
