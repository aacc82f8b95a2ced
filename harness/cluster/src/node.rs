//! One Redis server in a container, and the faults that can happen to it.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use testcontainers::bollard::models::{HostConfig, PortBinding};
use testcontainers::core::IntoContainerPort;
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};

use crate::engine::{self, blocking};
use crate::error::ClusterError;
use crate::image::ImageRef;
use crate::resp::{self, CallError, RespValue};

/// Redis' port inside every container.
pub const REDIS_PORT: u16 = 6379;
/// Label carrying the cluster id on every container and network of a cluster.
pub const CLUSTER_LABEL: &str = "org.locklab.cluster";
/// Label carrying the node's short name (`m0`, `m0r1`) on its container.
pub const NODE_LABEL: &str = "org.locklab.node";
/// Arguments every node is started with (no persistence, fast full syncs).
pub const REDIS_ARGS: [&str; 8] = [
    "--protected-mode",
    "no",
    "--save",
    "",
    "--appendonly",
    "no",
    "--repl-diskless-sync-delay",
    "0",
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
    pub extra_args: Vec<String>,
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
    container: tokio::sync::Mutex<Option<ContainerAsync<GenericImage>>>,
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
        let (container, port) = start_container(&spec, &name, &short, &role, None).await?;
        let id = container.id().to_string();
        Ok(Node {
            short,
            name,
            on_network: AtomicBool::new(spec.network.is_some()),
            spec,
            role: Mutex::new(role),
            port: AtomicU16::new(port),
            id: Mutex::new(id),
            container: tokio::sync::Mutex::new(Some(container)),
        })
    }

    /// Short name in the cluster: `m0`, `m1`, `m0r0` (replica 0 of master 0).
    pub fn short_name(&self) -> &str {
        &self.short
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

    /// Removes the container now (used by [`crate::Cluster::shutdown`]).
    pub(crate) async fn remove(self) {
        if let Some(c) = self.container.into_inner() {
            let id = c.id().to_string();
            if c.rm().await.is_err() {
                let _ = blocking(move || engine::engine()?.container_remove(&id)).await;
            }
        }
    }

    // ------------------------------------------------------------ talking to Redis

    /// Sends one command on a fresh connection; waits at most [`COMMAND_TIMEOUT`].
    /// A Redis error reply is returned as `Ok(RespValue::Error(..))`.
    pub async fn command(&self, args: &[&str]) -> Result<RespValue, ClusterError> {
        self.command_with_timeout(args, COMMAND_TIMEOUT).await
    }

    /// [`Node::command`] with an explicit timeout ([`ClusterError::Timeout`]
    /// when it passes, e.g. because the node is paused).
    pub async fn command_with_timeout(
        &self,
        args: &[&str],
        timeout: Duration,
    ) -> Result<RespValue, ClusterError> {
        resp::call(self.addr(), args, timeout)
            .await
            .map_err(|e| match e {
                CallError::Timeout => ClusterError::Timeout {
                    what: format!("{} on {}", args.join(" "), self.name),
                    after: timeout,
                },
                e => ClusterError::redis(&self.name, format!("{}: {e}", args.join(" "))),
            })
    }

    /// Like [`Node::command`], but a Redis error reply is an `Err`.
    async fn command_ok(&self, args: &[&str]) -> Result<RespValue, ClusterError> {
        match self.command(args).await? {
            RespValue::Error(e) => Err(ClusterError::redis(
                &self.name,
                format!("{}: {e}", args.join(" ")),
            )),
            v => Ok(v),
        }
    }

    /// PING, expecting PONG.
    pub async fn ping(&self) -> Result<(), ClusterError> {
        match self.command_ok(&["PING"]).await? {
            RespValue::Simple(s) if s == "PONG" => Ok(()),
            v => Err(ClusterError::redis(
                &self.name,
                format!("PING answered {v:?}"),
            )),
        }
    }

    /// `INFO section` as text.
    pub async fn info(&self, section: &str) -> Result<String, ClusterError> {
        let v = self.command_ok(&["INFO", section]).await?;
        v.as_text().ok_or_else(|| {
            ClusterError::redis(&self.name, format!("INFO {section} answered {v:?}"))
        })
    }

    /// One `field:value` of `INFO replication` (e.g. `role`, `master_link_status`).
    pub async fn replication_field(&self, field: &str) -> Result<Option<String>, ClusterError> {
        let info = self.info("replication").await?;
        Ok(resp::info_field(&info, field).map(str::to_string))
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
                return Err(ClusterError::Timeout {
                    what: format!("replication link of {} ({last})", self.name),
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
        f: impl AsyncFnOnce(&ContainerAsync<GenericImage>) -> Result<T, ClusterError>,
    ) -> Result<T, ClusterError> {
        let slot = self.container.lock().await;
        match slot.as_ref() {
            Some(c) => f(c).await,
            None => Err(ClusterError::Unsupported(format!(
                "{what} {}: the node has no container (a restart failed?)",
                self.name
            ))),
        }
    }

    /// `docker pause`: freezes every process of the container (SIGSTOP-like,
    /// via the cgroup freezer). Connections stay open; commands get no reply.
    pub async fn pause(&self) -> Result<(), ClusterError> {
        self.with_container("pause", async |c| Ok(c.pause().await?))
            .await
    }

    /// `docker unpause`.
    pub async fn unpause(&self) -> Result<(), ClusterError> {
        self.with_container("unpause", async |c| Ok(c.unpause().await?))
            .await
    }

    /// `docker stop`: SIGTERM (Redis shuts down, saving nothing), SIGKILL
    /// after 10 s. The node stays down until [`Node::restart`].
    pub async fn stop(&self) -> Result<(), ClusterError> {
        self.with_container("stop", async |c| Ok(c.stop_with_timeout(Some(10)).await?))
            .await
    }

    /// `docker kill`: SIGKILL, a crash. The node stays down until [`Node::restart`].
    pub async fn kill(&self) -> Result<(), ClusterError> {
        let id = self.container_id();
        blocking(move || engine::engine()?.container_kill(&id, "KILL")).await
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
        let old_id = self.container_id();
        if let Some(c) = slot.take() {
            if let Err(e) = c.rm().await {
                // fall back to the engine; the old ContainerAsync is gone already
                blocking(move || engine::engine()?.container_remove(&old_id))
                    .await
                    .map_err(|e2| {
                        ClusterError::docker("restart: remove old container", format!("{e}; {e2}"))
                    })?;
            }
        }
        let role = self.role();
        let old_port = self.host_port();
        let started =
            match start_container(&self.spec, &self.name, &self.short, &role, Some(old_port)).await
            {
                Ok(x) => x,
                Err(_) => start_container(&self.spec, &self.name, &self.short, &role, None).await?,
            };
        let (container, port) = started;
        *self.id.lock().unwrap_or_else(|e| e.into_inner()) = container.id().to_string();
        self.port.store(port, Ordering::SeqCst);
        self.on_network
            .store(self.spec.network.is_some(), Ordering::SeqCst);
        *slot = Some(container);
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
        blocking(move || engine::engine()?.network_disconnect(&net, &id)).await?;
        self.on_network.store(false, Ordering::SeqCst);
        Ok(())
    }

    /// Re-attaches the container to the cluster network (undoes
    /// [`Node::disconnect_from_network`]); replication links come back by
    /// themselves (Redis retries every second).
    pub async fn connect_to_network(&self) -> Result<(), ClusterError> {
        let net = self.network("connect")?;
        let id = self.container_id();
        blocking(move || engine::engine()?.network_connect(&net, &id)).await?;
        self.on_network.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// `REPLICAOF NO ONE`: the node becomes a master, keeping its data.
    pub async fn promote(&self) -> Result<(), ClusterError> {
        self.command_ok(&["REPLICAOF", "NO", "ONE"]).await?;
        *self.role.lock().unwrap_or_else(|e| e.into_inner()) = Role::Master;
        Ok(())
    }

    /// `REPLICAOF <master> 6379` over the cluster network. Returns at once;
    /// use [`Node::wait_for_link_up`] to wait for the sync.
    pub async fn replicate_from(&self, master: &Node) -> Result<(), ClusterError> {
        self.network("replicate")?;
        let port = REDIS_PORT.to_string();
        self.command_ok(&["REPLICAOF", master.name(), &port])
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
        blocking(move || {
            engine::engine()?.put_file(&id, CLOCK_FILE_DIR, CLOCK_FILE_NAME, content.as_bytes())
        })
        .await
    }
}

/// Creates and starts one Redis container; returns it with its host port once
/// Redis answers PING. On failure nothing is left behind.
async fn start_container(
    spec: &NodeSpec,
    name: &str,
    short: &str,
    role: &Role,
    host_port: Option<u16>,
) -> Result<(ContainerAsync<GenericImage>, u16), ClusterError> {
    let result = try_start_container(spec, name, short, role, host_port).await;
    if result.is_err() {
        // A container created by a start that failed later is not owned by
        // any ContainerAsync: remove it by name.
        let name = name.to_string();
        let _ = blocking(move || engine::engine()?.container_remove(&name)).await;
    }
    result
}

async fn try_start_container(
    spec: &NodeSpec,
    name: &str,
    short: &str,
    role: &Role,
    host_port: Option<u16>,
) -> Result<(ContainerAsync<GenericImage>, u16), ClusterError> {
    let mut args: Vec<String> = REDIS_ARGS.iter().map(|s| s.to_string()).collect();
    if let Role::Replica { of } = role {
        args.extend([
            "--replicaof".to_string(),
            of.clone(),
            REDIS_PORT.to_string(),
        ]);
    }
    args.extend(spec.extra_args.iter().cloned());

    let binding_port = host_port.map(|p| p.to_string()).unwrap_or_default();
    let mut request = GenericImage::new(spec.image.name.as_str(), spec.image.tag.as_str())
        .with_exposed_port(REDIS_PORT.tcp())
        .with_cmd(args)
        .with_container_name(name)
        .with_label(CLUSTER_LABEL, spec.cluster_id.as_str())
        .with_label(NODE_LABEL, short)
        .with_startup_timeout(READY_TIMEOUT)
        .with_host_config_modifier(move |hc: &mut HostConfig| {
            // publish 6379 on 127.0.0.1 only (testcontainers would use 0.0.0.0)
            hc.publish_all_ports = Some(false);
            hc.port_bindings = Some(HashMap::from([(
                format!("{REDIS_PORT}/tcp"),
                Some(vec![PortBinding {
                    host_ip: Some("127.0.0.1".to_string()),
                    host_port: Some(binding_port.clone()),
                }]),
            )]));
        });
    if let Some(net) = &spec.network {
        request = request.with_network(net.as_str());
    }
    if spec.clock_control {
        request = request
            .with_env_var("LD_PRELOAD", CLOCKSHIFT_LIB)
            .with_env_var(
                "LOCKLAB_CLOCK_FILE",
                format!("{CLOCK_FILE_DIR}/{CLOCK_FILE_NAME}"),
            );
    }
    let container = request.start().await?;
    let id = container.id().to_string();

    let with_network = spec.network.is_some();
    let clock_control = spec.clock_control;
    let image = spec.image.to_string();
    let port = blocking(move || -> Result<u16, ClusterError> {
        let engine = engine::engine()?;
        if with_network {
            // The cluster network carries replication; the default bridge
            // carries the published port, so that cutting the cluster network
            // leaves the node reachable from the host. (Docker moves port
            // publishing to the bridge endpoint when it joins.)
            engine.network_connect("bridge", &id)?;
        }
        if clock_control && !engine.path_exists(&id, CLOCKSHIFT_LIB)? {
            return Err(ClusterError::Unsupported(format!(
                "clock control: image {image} has no {CLOCKSHIFT_LIB}; use the image built by `{}`",
                crate::error::BUILD_COMMAND
            )));
        }
        engine.published_port(&id, REDIS_PORT)?.ok_or_else(|| {
            ClusterError::docker(
                format!("publish port of {id}"),
                "no 127.0.0.1 binding for 6379/tcp",
            )
        })
    })
    .await?;

    wait_ready(name, port).await?;
    Ok((container, port))
}

async fn wait_ready(name: &str, port: u16) -> Result<(), ClusterError> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let last = match resp::call(addr, &["PING"], Duration::from_secs(1)).await {
            Ok(RespValue::Simple(s)) if s == "PONG" => return Ok(()),
            Ok(v) => format!("{v:?}"),
            Err(e) => e.to_string(),
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
