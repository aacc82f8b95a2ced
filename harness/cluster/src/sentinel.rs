//! Redis Sentinel in containers: sentinels that watch the cluster's masters and
//! promote a replica themselves when one dies.
//!
//! Each sentinel runs the cluster's image as `redis-server /data/sentinel.conf
//! --sentinel` on the cluster network, with port 26379 published on 127.0.0.1. The
//! configuration is written into the container before it starts (Sentinel rewrites
//! its file as it learns the topology: the file is mode 0666 in `/data`, which the
//! image's `redis` user owns, so the rewrite's temporary file and rename work).
//!
//! Every master `m<i>` is monitored as the service `m<i>` by its container name
//! (`sentinel resolve-hostnames yes`), the host its replicas replicate from, which
//! resolves on the cluster network only. The replicas are known to Sentinel by their
//! address on a second network that no fault cuts (`Cluster::sentinel_network`). The
//! addresses Sentinel hands out are IPs on these two networks, which the host
//! reaches through their bridges. (Once a master is killed its name no longer
//! resolves; Sentinel then logs it as a replica without address, harmlessly.)
//!
//! Timing ([`DOWN_AFTER_MS`], [`FAILOVER_TIMEOUT_MS`]) is short so that a test's
//! failover takes seconds, not the production defaults' minutes.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::Value;

use crate::engine;
use crate::error::ClusterError;
use crate::node::{self, NodeSpec};

/// Sentinel's port inside its container.
pub const SENTINEL_PORT: u16 = 26379;

/// `sentinel down-after-milliseconds`: how long a master may leave PINGs unanswered
/// before a sentinel deems it down (SDOWN). Sentinel PINGs every instance once a
/// second (more often when this is shorter). 1000 ms makes a test's failover start
/// about a second after the kill, and is still ten times what a PING takes on a
/// loaded two-core machine, so a busy (not dead) master is not failed over. The
/// production default is 30000.
pub const DOWN_AFTER_MS: u64 = 1000;

/// `sentinel failover-timeout`: a sentinel that voted, or led a failover that did not
/// complete, waits twice this long before it tries a failover of the same master
/// again, and a promotion that has not shown up in the replica's `INFO` within it is
/// aborted. Sentinel polls a replica being promoted every second, so 3000 ms leaves
/// the promotion three polls, and a split vote is retried after 6 s rather than the
/// production default's 6 minutes (180000 × 2).
pub const FAILOVER_TIMEOUT_MS: u64 = 3000;

/// Where the configuration lives in the container.
const CONFIG_DIR: &str = "/data";
const CONFIG_NAME: &str = "sentinel.conf";

/// How long the sentinels may take to find each other and the replicas.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// The service name under which master `m` is monitored.
pub fn service_name(m: usize) -> String {
    format!("m{m}")
}

/// The configuration of every sentinel: each master (service name, container name)
/// monitored with a majority quorum of the `sentinels`.
pub(crate) fn config(masters: &[(String, String)], sentinels: usize) -> String {
    let quorum = sentinels / 2 + 1;
    // Masters are monitored by container name, the host their replicas give in
    // REPLICAOF: Sentinel compares the two (by resolving the name) and would
    // otherwise "fix" every replica's configuration. Addresses handed out stay IPs
    // (`announce-hostnames no`, the default).
    let mut conf =
        format!("port {SENTINEL_PORT}\nprotected-mode no\nsentinel resolve-hostnames yes\n");
    for (service, host) in masters {
        conf.push_str(&format!(
            "sentinel monitor {service} {host} {port} {quorum}\n\
             sentinel down-after-milliseconds {service} {DOWN_AFTER_MS}\n\
             sentinel failover-timeout {service} {FAILOVER_TIMEOUT_MS}\n\
             sentinel parallel-syncs {service} 1\n",
            port = node::REDIS_PORT,
        ));
    }
    conf
}

/// One Redis Sentinel in a container. Its container is removed with the cluster
/// (by the cluster's label).
#[derive(Debug)]
pub struct Sentinel {
    short: String,
    name: String,
    id: String,
    port: u16,
}

impl Sentinel {
    /// Creates the container, writes its configuration, starts it; returns once it
    /// answers PING.
    pub(crate) async fn start(
        spec: Arc<NodeSpec>,
        short: String,
        conf: String,
        sentinel_network: String,
    ) -> Result<Sentinel, ClusterError> {
        let name = format!("{}-{}", spec.cluster_id, short);
        let result = try_start(&spec, &name, &short, &conf, &sentinel_network).await;
        if result.is_err() {
            if let Ok(engine) = engine::engine().await {
                let _ = engine.container_remove(&name).await;
            }
        }
        let (id, port) = result?;
        Ok(Sentinel {
            short,
            name,
            id,
            port,
        })
    }

    /// Short name (`s0`, `s1`, ...).
    pub fn short_name(&self) -> &str {
        &self.short
    }

    /// Container name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Container id.
    pub fn container_id(&self) -> &str {
        &self.id
    }

    /// Host port on 127.0.0.1 where the sentinel is published.
    pub fn host_port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:host_port`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// `redis://127.0.0.1:PORT`: what a client gives as a sentinel URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// One command on a fresh connection; an error reply is an `Err`.
    pub async fn query<T: redis::FromRedisValue>(&self, args: &[&str]) -> Result<T, ClusterError> {
        let what = |e: &dyn std::fmt::Display| format!("{}: {e}", args.join(" "));
        let reply = node::call(self.addr(), args, node::COMMAND_TIMEOUT)
            .await
            .map_err(|e| match e {
                None => ClusterError::Timeout {
                    what: format!("{} on {}", args.join(" "), self.name),
                    after: node::COMMAND_TIMEOUT,
                },
                Some(e) => ClusterError::redis(&self.name, what(&e)),
            })?;
        let reply = reply
            .extract_error()
            .map_err(|e| ClusterError::redis(&self.name, what(&e)))?;
        redis::from_redis_value(reply).map_err(|e| ClusterError::redis(&self.name, what(&e)))
    }

    /// `SENTINEL GET-MASTER-ADDR-BY-NAME`: the master this sentinel names for the
    /// service (`ip:port` on the cluster network).
    pub async fn master_addr(&self, service: &str) -> Result<Option<SocketAddr>, ClusterError> {
        let reply: Value = self
            .query(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", service])
            .await?;
        let pair: Option<(String, u16)> = redis::from_redis_value(reply)
            .map_err(|e| ClusterError::redis(&self.name, format!("master address: {e}")))?;
        Ok(pair.and_then(|(ip, port)| Some(SocketAddr::new(ip.parse().ok()?, port))))
    }

    /// `SENTINEL MASTER <service>` as field/value pairs (`flags`, `num-slaves`,
    /// `num-other-sentinels`, ...).
    pub async fn master_state(
        &self,
        service: &str,
    ) -> Result<HashMap<String, String>, ClusterError> {
        self.query(&["SENTINEL", "MASTER", service]).await
    }

    /// `docker kill` of the sentinel.
    pub async fn kill(&self) -> Result<(), ClusterError> {
        engine::engine().await?.container_kill(&self.id).await
    }
}

async fn try_start(
    spec: &NodeSpec,
    name: &str,
    short: &str,
    conf: &str,
    sentinel_network: &str,
) -> Result<(String, u16), ClusterError> {
    if spec.network.is_none() {
        return Err(ClusterError::Unsupported(
            "sentinels need the cluster network (replicas > 0)".into(),
        ));
    }
    let cmd = vec![
        format!("{CONFIG_DIR}/{CONFIG_NAME}"),
        "--sentinel".to_string(),
    ];
    let body = node::container_body(spec, short, cmd, None, SENTINEL_PORT, None);
    let engine = engine::engine().await?;
    let id = engine.container_create(name, body).await?;
    // Sentinel refuses to start on a file it cannot rewrite.
    engine
        .put_file_with_mode(&id, CONFIG_DIR, CONFIG_NAME, conf.as_bytes(), 0o666)
        .await?;
    // the cluster network reaches the masters, the sentinel network the replicas
    engine.network_connect(sentinel_network, &id).await?;
    engine.container_start(name, &id).await?;
    let port = engine
        .published_port(&id, SENTINEL_PORT)
        .await?
        .ok_or_else(|| {
            ClusterError::docker(
                format!("publish port of {id}"),
                format!("no 127.0.0.1 binding for {SENTINEL_PORT}/tcp"),
            )
        })?;
    node::wait_ready(name, port).await?;
    Ok((id, port))
}

/// Waits until every sentinel knows every other sentinel and every replica of each
/// service, and sees its master up: before that a failover may not reach its quorum,
/// or may not know the replica to promote.
pub(crate) async fn wait_for_discovery(
    sentinels: &[Sentinel],
    services: &[String],
    replicas: usize,
) -> Result<(), ClusterError> {
    let deadline = Instant::now() + DISCOVERY_TIMEOUT;
    let others = sentinels.len().saturating_sub(1).to_string();
    let replicas = replicas.to_string();
    for s in sentinels {
        for service in services {
            loop {
                let last = match s.master_state(service).await {
                    Ok(state) => {
                        let get = |k: &str| state.get(k).map(String::as_str).unwrap_or("-");
                        if get("flags") == "master"
                            && get("num-other-sentinels") == others
                            && get("num-slaves") == replicas
                        {
                            break;
                        }
                        format!(
                            "flags {}, {} other sentinels, {} replicas",
                            get("flags"),
                            get("num-other-sentinels"),
                            get("num-slaves")
                        )
                    }
                    Err(e) => e.to_string(),
                };
                if Instant::now() >= deadline {
                    return Err(ClusterError::Timeout {
                        what: format!(
                            "{} to see {others} other sentinels and {replicas} replicas of \
                             `{service}` (last: {last})",
                            s.name
                        ),
                        after: DISCOVERY_TIMEOUT,
                    });
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_monitors_each_master_with_a_majority_quorum() {
        let c = config(&[("m0".into(), "locklab-1-m0".into())], 3);
        assert!(
            c.contains("sentinel monitor m0 locklab-1-m0 6379 2\n"),
            "{c}"
        );
        assert!(c.contains("resolve-hostnames yes\n"), "{c}");
        assert!(c.contains("down-after-milliseconds m0 1000\n"), "{c}");
        assert!(c.contains("failover-timeout m0 3000\n"), "{c}");
        assert!(config(&[("m0".into(), "x".into())], 5).contains(" 6379 3\n"));
    }
}
