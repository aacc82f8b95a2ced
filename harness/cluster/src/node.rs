//! One Redis server in a container, and the faults that can happen to it.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::ConnectionLike;
use redis::{
    AsyncConnectionConfig, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo, Value,
};
use testcontainers::bollard::models::{ContainerCreateBody, HostConfig, PortBinding};

use crate::engine;
use crate::error::ClusterError;
use crate::image::ImageRef;
use crate::owner::Owner;

/// Redis' port inside every container.
pub const REDIS_PORT: u16 = 6379;
/// Label carrying the cluster id on every container and network of a cluster.
pub const CLUSTER_LABEL: &str = "org.locklab.cluster";
/// Label carrying the node's short name (`m0`, `m0r1`) on its container.
pub const NODE_LABEL: &str = "org.locklab.node";
/// Arguments every node is started with (no persistence, fast full syncs, `DEBUG`
/// for [`Node::restart_in_place`]).
pub const REDIS_ARGS: [&str; 10] = [
    "--protected-mode",
    "no",
    "--save",
    "",
    "--appendonly",
    "no",
    "--repl-diskless-sync-delay",
    "0",
    "--enable-debug-command",
    "yes",
];
/// The clock-shift library in the image built by `harness/redis-image/build.sh`.
pub const CLOCKSHIFT_LIB: &str = "/usr/lib/locklab/libclockshift.so";
/// Directory and name of the clock offset file libclockshift reads.
pub const CLOCK_FILE_DIR: &str = "/tmp";
pub const CLOCK_FILE_NAME: &str = "locklab-clock-offset";

/// Default timeout of [`Node::command`].
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a new container may take to answer PING.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// What a node is in the cluster's topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// A master (or a promoted replica).
    Master,
    /// A replica of the node whose container name is `of`.
    Replica { of: String },
}

/// Everything needed to (re)create a node's container.
#[derive(Debug)]
pub(crate) struct NodeSpec {
    pub image: ImageRef,
    pub cluster_id: String,
    pub network: Option<String>,
    pub clock_control: bool,
    /// This process, named on every container (see [`crate::reap`]).
    pub owner: Option<Owner>,
}

/// One Redis server in a container.
///
/// All methods take `&self`: a node can be shared between tasks (faults from
/// one, traffic from others). `host_port()`, `url()` and `container_id()`
/// read the current values, which [`Node::restart`] may change.
pub struct Node {
    short: String,
    name: String,
    spec: Arc<NodeSpec>,
    role: Mutex<Role>,
    port: AtomicU16,
    id: Mutex<String>,
    on_network: AtomicBool,
    /// The address replicas give in `REPLICAOF` for this node: its container name,
    /// or with sentinels its IP on the cluster network.
    replication_host: Mutex<Option<String>>,
    /// The id of the container this node owns (`None` once removed or handed
    /// to the cluster's sweep); the lock also orders faults and restarts.
    container: tokio::sync::Mutex<Option<String>>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("name", &self.name)
            .field("role", &self.role())
            .field("host_port", &self.host_port())
            .field("container_id", &self.container_id())
            .finish()
    }
}

impl Node {
    /// Creates and starts the container; returns when Redis answers PING.
    pub(crate) async fn start(
        spec: Arc<NodeSpec>,
        short: String,
        role: Role,
    ) -> Result<Node, ClusterError> {
        let name = format!("{}-{}", spec.cluster_id, short);
        let (id, port) = start_container(&spec, &name, &short, &role, None).await?;
        Ok(Node {
            short,
            name,
            on_network: AtomicBool::new(spec.network.is_some()),
            replication_host: Mutex::new(None),
            spec,
            role: Mutex::new(role),
            port: AtomicU16::new(port),
            id: Mutex::new(id.clone()),
            container: tokio::sync::Mutex::new(Some(id)),
        })
    }

    /// Container name; also the node's host name on the cluster network.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Current role (changed by [`Node::promote`] and [`Node::replicate_from`]).
    pub fn role(&self) -> Role {
        self.role.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Host port on 127.0.0.1 where Redis is published.
    pub fn host_port(&self) -> u16 {
        self.port.load(Ordering::SeqCst)
    }

    /// `127.0.0.1:host_port`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.host_port()))
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.host_port())
    }

    /// Id of the current container.
    pub fn container_id(&self) -> String {
        self.id.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether the node is attached to the cluster network (false when the
    /// cluster has none, or after [`Node::disconnect_from_network`]).
    pub fn is_on_network(&self) -> bool {
        self.on_network.load(Ordering::SeqCst)
    }

    /// Leaves the container to the caller, who removes it (the cluster's
    /// sweep removes all of its containers at once): dropping the node then
    /// removes nothing.
    pub(crate) fn disown(&mut self) {
        self.container.get_mut().take();
    }

    // ------------------------------------------------------------ talking to Redis

    /// Sends one command on a fresh connection (redis-rs, nothing else sent on
    /// it); waits at most [`COMMAND_TIMEOUT`]. A Redis error reply is returned
    /// as `Ok(Value::ServerError(..))`.
    pub async fn command(&self, args: &[&str]) -> Result<Value, ClusterError> {
        self.command_with_timeout(args, COMMAND_TIMEOUT).await
    }

    /// [`Node::command`] with an explicit timeout ([`ClusterError::Timeout`]
    /// when it passes, e.g. because the node is paused).
    pub async fn command_with_timeout(
        &self,
        args: &[&str],
        timeout: Duration,
    ) -> Result<Value, ClusterError> {
        call(self.addr(), args, timeout).await.map_err(|e| match e {
            None => ClusterError::Timeout {
                what: format!("{} on {}", args.join(" "), self.name),
                after: timeout,
            },
            Some(e) => ClusterError::redis(&self.name, format!("{}: {e}", args.join(" "))),
        })
    }

    /// Like [`Node::command`], but a Redis error reply is an `Err` and the
    /// reply is converted to `T`.
    pub async fn query<T: redis::FromRedisValue>(&self, args: &[&str]) -> Result<T, ClusterError> {
        let what = |e: &dyn std::fmt::Display| format!("{}: {e}", args.join(" "));
        let reply = self.command(args).await?;
        let reply = reply
            .extract_error()
            .map_err(|e| ClusterError::redis(&self.name, what(&e)))?;
        redis::from_redis_value(reply).map_err(|e| ClusterError::redis(&self.name, what(&e)))
    }

    /// PING, expecting PONG.
    pub async fn ping(&self) -> Result<(), ClusterError> {
        let pong: String = self.query(&["PING"]).await?;
        if pong == "PONG" {
            Ok(())
        } else {
            Err(ClusterError::redis(
                &self.name,
                format!("PING answered {pong:?}"),
            ))
        }
    }

    /// `INFO section` as text.
    pub async fn info(&self, section: &str) -> Result<String, ClusterError> {
        self.query(&["INFO", section]).await
    }

    /// One `field:value` of `INFO replication` (e.g. `role`, `master_link_status`).
    pub async fn replication_field(&self, field: &str) -> Result<Option<String>, ClusterError> {
        let info: redis::InfoDict = self.query(&["INFO", "replication"]).await?;
        Ok(info.get(field))
    }

    /// Waits until this replica reports `master_link_status:up`.
    pub async fn wait_for_link_up(&self, timeout: Duration) -> Result<(), ClusterError> {
        let deadline = Instant::now() + timeout;
        loop {
            let last = match self.replication_field("master_link_status").await {
                Ok(Some(s)) if s == "up" => return Ok(()),
                Ok(s) => format!("master_link_status: {}", s.as_deref().unwrap_or("-")),
                Err(e) => e.to_string(),
            };
            if Instant::now() >= deadline {
                // What the replica says of its master, for the next reader of a
                // timeout: whom it follows, whether a sync is under way, since when down.
                let state = match self
                    .query::<redis::InfoDict>(&["INFO", "replication"])
                    .await
                {
                    Ok(info) => [
                        "master_host",
                        "master_sync_in_progress",
                        "master_link_down_since_seconds",
                    ]
                    .iter()
                    .map(|f| {
                        format!(
                            "{f}: {}",
                            info.get::<String>(f).unwrap_or_else(|| "-".into())
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                    Err(e) => e.to_string(),
                };
                return Err(ClusterError::Timeout {
                    what: format!("replication link of {} ({last}; {state})", self.name),
                    after: timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // ------------------------------------------------------------ faults

    async fn with_container<T>(
        &self,
        what: &str,
        f: impl AsyncFnOnce(&engine::Engine, &str) -> Result<T, ClusterError>,
    ) -> Result<T, ClusterError> {
        let slot = self.container.lock().await;
        match slot.as_deref() {
            Some(id) => f(&engine::engine().await?, id).await,
            None => Err(ClusterError::Unsupported(format!(
                "{what} {}: the node has no container (a restart failed?)",
                self.name
            ))),
        }
    }

    /// `docker pause`: freezes every process of the container (SIGSTOP-like,
    /// via the cgroup freezer). Connections stay open; commands get no reply.
    pub async fn pause(&self) -> Result<(), ClusterError> {
        self.with_container("pause", async |e, id| e.container_pause(id).await)
            .await
    }

    /// `docker unpause`.
    pub async fn unpause(&self) -> Result<(), ClusterError> {
        self.with_container("unpause", async |e, id| e.container_unpause(id).await)
            .await
    }

    /// `docker stop`: SIGTERM (Redis shuts down, saving nothing), SIGKILL
    /// after 10 s. The node stays down until [`Node::restart`].
    pub async fn stop(&self) -> Result<(), ClusterError> {
        self.with_container("stop", async |e, id| e.container_stop(id, 10).await)
            .await
    }

    /// `docker kill`: SIGKILL, a crash. The node stays down until [`Node::restart`].
    pub async fn kill(&self) -> Result<(), ClusterError> {
        let id = self.container_id();
        engine::engine().await?.container_kill(&id).await
    }

    /// Restarts the node's Redis process *in place*, empty, in milliseconds: `DEBUG
    /// CRASH-AND-RECOVER` makes the server re-execute itself with its arguments in the
    /// same container (same id, port and networks), without saving. Every connection
    /// drops; the data, kept only in memory, is gone, and so is a role set at run time
    /// (a replica comes back a master). The clock offset returns to zero. An error when
    /// the process did not restart (its `run_id` is unchanged).
    pub async fn restart_in_place(&self) -> Result<(), ClusterError> {
        let before = self.run_id().await?;
        // The server re-executes itself while the command runs: no reply comes.
        let _ = call(
            self.addr(),
            &["DEBUG", "CRASH-AND-RECOVER", "0"],
            COMMAND_TIMEOUT,
        )
        .await;
        wait_ready(&self.name, self.host_port()).await?;
        if self.run_id().await? == before {
            return Err(ClusterError::Unsupported(format!(
                "restart in place of {}: the server did not restart (DEBUG CRASH-AND-RECOVER refused?)",
                self.name
            )));
        }
        if self.spec.clock_control {
            self.set_clock_offset_ms(0).await?;
        }
        Ok(())
    }

    /// The server's `run_id` (new at every start of the process).
    async fn run_id(&self) -> Result<Option<String>, ClusterError> {
        let info: redis::InfoDict = self.query(&["INFO", "server"]).await?;
        Ok(info.get("run_id"))
    }

    /// Restarts the node *empty*: the container is removed and a new one is
    /// created with the same name, network, role and arguments (a replica
    /// comes back as a replica and resyncs; a promoted replica comes back as
    /// a master). Works whether the node is running, paused, stopped or killed.
    ///
    /// Port: the new container is published on the same host port if it is
    /// still free (the usual case), so `url()` stays valid; if it was taken
    /// meanwhile, a new random port is used and `host_port()`/`url()` return
    /// it. `container_id()` always changes. The new container is on the
    /// cluster network even if the old one had been disconnected.
    pub async fn restart(&self) -> Result<(), ClusterError> {
        let mut slot = self.container.lock().await;
        if let Some(old_id) = slot.as_deref() {
            engine::engine().await?.container_remove(old_id).await?;
            *slot = None;
        }
        let role = self.role();
        let old_port = self.host_port();
        let started =
            match start_container(&self.spec, &self.name, &self.short, &role, Some(old_port)).await
            {
                Ok(x) => x,
                Err(_) => start_container(&self.spec, &self.name, &self.short, &role, None).await?,
            };
        let (id, port) = started;
        *self.id.lock().unwrap_or_else(|e| e.into_inner()) = id.clone();
        self.port.store(port, Ordering::SeqCst);
        self.on_network
            .store(self.spec.network.is_some(), Ordering::SeqCst);
        *slot = Some(id);
        Ok(())
    }

    fn network(&self, what: &str) -> Result<String, ClusterError> {
        self.spec.network.clone().ok_or_else(|| {
            ClusterError::Unsupported(format!(
                "{what} {}: this cluster has no network (it is created only when replicas > 0)",
                self.name
            ))
        })
    }

    /// Detaches the container from the cluster network: replication to and
    /// from this node stops (its replicas' links go down, or its own link to
    /// its master). Clients still reach it through the published port, which
    /// lives on Docker's default bridge network.
    pub async fn disconnect_from_network(&self) -> Result<(), ClusterError> {
        let net = self.network("disconnect")?;
        let id = self.container_id();
        engine::engine()
            .await?
            .network_disconnect(&net, &id)
            .await?;
        self.on_network.store(false, Ordering::SeqCst);
        Ok(())
    }

    /// Re-attaches the container to the cluster network (undoes
    /// [`Node::disconnect_from_network`]); replication links come back by
    /// themselves (Redis retries every second).
    pub async fn connect_to_network(&self) -> Result<(), ClusterError> {
        let net = self.network("connect")?;
        let id = self.container_id();
        engine::engine().await?.network_connect(&net, &id).await?;
        self.on_network.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// The host replicas of this node give in `REPLICAOF`: its container name, or
    /// in a cluster with sentinels its IP on the cluster network (the address the
    /// sentinels monitor, which a replica must use for Sentinel to find it
    /// configured right).
    pub fn replication_host(&self) -> String {
        self.replication_host
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| self.name.clone())
    }

    pub(crate) fn set_replication_host(&self, host: String) {
        *self
            .replication_host
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(host);
    }

    /// Records a role change made by someone else (Sentinel's failover).
    pub(crate) fn set_role(&self, role: Role) {
        *self.role.lock().unwrap_or_else(|e| e.into_inner()) = role;
    }

    /// The node's short name in the cluster (`m0`, `m0r1`).
    pub fn short_name(&self) -> &str {
        &self.short
    }

    /// `REPLICAOF NO ONE`: the node becomes a master, keeping its data.
    pub async fn promote(&self) -> Result<(), ClusterError> {
        self.query::<()>(&["REPLICAOF", "NO", "ONE"]).await?;
        *self.role.lock().unwrap_or_else(|e| e.into_inner()) = Role::Master;
        Ok(())
    }

    /// `REPLICAOF <master> 6379` over the cluster network. Returns at once;
    /// use [`Node::wait_for_link_up`] to wait for the sync.
    pub async fn replicate_from(&self, master: &Node) -> Result<(), ClusterError> {
        self.network("replicate")?;
        let port = REDIS_PORT.to_string();
        self.query::<()>(&["REPLICAOF", &master.replication_host(), &port])
            .await?;
        *self.role.lock().unwrap_or_else(|e| e.into_inner()) = Role::Replica {
            of: master.name().to_string(),
        };
        Ok(())
    }

    /// Steps the node's wall clock to real time + `offset_ms` (negative goes
    /// back), at once and while Redis runs: `TIME` and key expiry follow it,
    /// `CLOCK_MONOTONIC` does not (like an NTP step). Offsets are absolute,
    /// not cumulative; 0 undoes. Needs a cluster built with
    /// [`crate::ClusterBuilder::clock_control`] (libclockshift in the image).
    pub async fn set_clock_offset_ms(&self, offset_ms: i64) -> Result<(), ClusterError> {
        if !self.spec.clock_control {
            return Err(ClusterError::Unsupported(format!(
                "clock jump on {}: build the cluster with .clock_control(true)",
                self.name
            )));
        }
        let id = self.container_id();
        let content = format!("{offset_ms}ms\n");
        engine::engine()
            .await?
            .put_file(&id, CLOCK_FILE_DIR, CLOCK_FILE_NAME, content.as_bytes())
            .await
    }
}

/// Creates and starts one Redis container; returns its id and host port once
/// Redis answers PING. On failure nothing is left behind.
async fn start_container(
    spec: &NodeSpec,
    name: &str,
    short: &str,
    role: &Role,
    host_port: Option<u16>,
) -> Result<(String, u16), ClusterError> {
    let result = try_start_container(spec, name, short, role, host_port).await;
    if result.is_err() {
        // created (or half-started) under this name: remove it by name
        if let Ok(engine) = engine::engine().await {
            let _ = engine.container_remove(name).await;
        }
    }
    result
}

async fn try_start_container(
    spec: &NodeSpec,
    name: &str,
    short: &str,
    role: &Role,
    host_port: Option<u16>,
) -> Result<(String, u16), ClusterError> {
    let mut args: Vec<String> = REDIS_ARGS.iter().map(|s| s.to_string()).collect();
    if let Role::Replica { of } = role {
        args.extend([
            "--replicaof".to_string(),
            of.clone(),
            REDIS_PORT.to_string(),
        ]);
    }
    let env = spec.clock_control.then(|| {
        vec![
            format!("LD_PRELOAD={CLOCKSHIFT_LIB}"),
            format!("LOCKLAB_CLOCK_FILE={CLOCK_FILE_DIR}/{CLOCK_FILE_NAME}"),
        ]
    });
    let body = container_body(spec, short, args, env, REDIS_PORT, host_port);
    let engine = engine::engine().await?;
    let id = engine.container_run(name, body).await?;
    if spec.network.is_some() {
        // The cluster network carries replication; the default bridge carries
        // the published port, so that cutting the cluster network leaves the
        // node reachable from the host. (Docker moves port publishing to the
        // bridge endpoint when it joins.)
        engine.network_connect("bridge", &id).await?;
    }
    if spec.clock_control && !engine.path_exists(&id, CLOCKSHIFT_LIB).await? {
        return Err(ClusterError::Unsupported(format!(
            "clock control: image {} has no {CLOCKSHIFT_LIB}; use the image built by `{}`",
            spec.image,
            crate::error::BUILD_COMMAND
        )));
    }
    let port = engine
        .published_port(&id, REDIS_PORT)
        .await?
        .ok_or_else(|| {
            ClusterError::docker(
                format!("publish port of {id}"),
                "no 127.0.0.1 binding for 6379/tcp",
            )
        })?;
    wait_ready(name, port).await?;
    Ok((id, port))
}

/// A container of the cluster's image running `cmd`, labelled with the owner, the
/// cluster and its short name, on the cluster network (if any), with `port`
/// published on 127.0.0.1 (on `host_port`, or a random one).
pub(crate) fn container_body(
    spec: &NodeSpec,
    short: &str,
    cmd: Vec<String>,
    env: Option<Vec<String>>,
    port: u16,
    host_port: Option<u16>,
) -> ContainerCreateBody {
    let mut labels = spec.owner.as_ref().map(Owner::labels).unwrap_or_default();
    labels.insert(CLUSTER_LABEL.to_string(), spec.cluster_id.clone());
    labels.insert(NODE_LABEL.to_string(), short.to_string());
    let port_key = format!("{port}/tcp");
    ContainerCreateBody {
        image: Some(spec.image.to_string()),
        cmd: Some(cmd),
        env,
        labels: Some(labels),
        exposed_ports: Some(vec![port_key.clone()]),
        host_config: Some(HostConfig {
            // publish the port on 127.0.0.1 only, on the given port or a random one
            port_bindings: Some(HashMap::from([(
                port_key,
                Some(vec![PortBinding {
                    host_ip: Some("127.0.0.1".to_string()),
                    host_port: Some(host_port.map(|p| p.to_string()).unwrap_or_default()),
                }]),
            )])),
            network_mode: spec.network.clone(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Sends one command on a fresh connection within `timeout`: `Err(None)` when
/// the time ran out, `Err(Some(e))` when the connection failed.
pub(crate) async fn call(
    addr: SocketAddr,
    args: &[&str],
    timeout: Duration,
) -> Result<Value, Option<redis::RedisError>> {
    let work = async {
        let info = ConnectionAddr::Tcp(addr.ip().to_string(), addr.port())
            .into_connection_info()?
            .set_redis_settings(RedisConnectionInfo::default().set_skip_set_lib_name());
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout));
        let mut con = redis::Client::open(info)?
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        let mut cmd = redis::cmd(args.first().copied().unwrap_or_default());
        for a in args.iter().skip(1) {
            cmd.arg(*a);
        }
        // the raw reply: an error reply stays a value (`Value::ServerError`)
        con.req_packed_command(&cmd).await
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) if e.is_timeout() => Err(None),
        Ok(Err(e)) => Err(Some(e)),
        Err(_) => Err(None),
    }
}

pub(crate) async fn wait_ready(name: &str, port: u16) -> Result<(), ClusterError> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let last = match call(addr, &["PING"], Duration::from_secs(1)).await {
            Ok(Value::SimpleString(s)) if s == "PONG" => return Ok(()),
            Ok(v) => format!("{v:?}"),
            Err(None) => "no reply in time".to_string(),
            Err(Some(e)) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(ClusterError::Timeout {
                what: format!("{name} to answer PING on 127.0.0.1:{port} (last: {last})"),
                after: READY_TIMEOUT,
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

impl Drop for Node {
    /// A node dropped on its own (a cluster start that failed half-way)
    /// removes its container; a cluster's nodes are disowned and swept.
    fn drop(&mut self) {
        if let Some(id) = self.container.get_mut().take() {
            let _ = engine::block_on(
                async move { engine::engine().await?.container_remove(&id).await },
            );
        }
    }
}
