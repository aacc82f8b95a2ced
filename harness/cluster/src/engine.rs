//! The Docker engine, through bollard (testcontainers' re-export): every call
//! the cluster makes (containers, networks, a file, label sweeps, the preflight).
//!
//! API version: bollard puts its own API version in every path (`/v1.53/...`)
//! and an engine whose newest API is older refuses such requests (Docker 20.10
//! speaks 1.41). The client is therefore built at the engine's version: the
//! first call of a process asks `/version` (an older engine's refusal names its
//! newest API; failing that, an old version is asked) and the answer is kept.
//! Each call builds a fresh client, so that no pooled connection outlives the
//! runtime that opened it (clusters are dropped outside the runtime that made
//! them).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use testcontainers::bollard::errors::Error as DockerError;
use testcontainers::bollard::models::{
    ContainerCreateBody, ContainerSummary, Network, NetworkConnectRequest, NetworkCreateRequest,
    NetworkDisconnectRequest, SystemVersion,
};
use testcontainers::bollard::query_parameters::{
    ContainerArchiveInfoOptions, CreateContainerOptions, KillContainerOptions,
    ListContainersOptions, ListNetworksOptions, RemoveContainerOptions, StopContainerOptions,
    UploadToContainerOptions,
};
use testcontainers::bollard::{body_full, ClientVersion, Docker, API_DEFAULT_VERSION};

use crate::error::ClusterError;

/// The engine used when `DOCKER_HOST` is not set.
pub(crate) const DEFAULT_HOST: &str = "unix:///var/run/docker.sock";
/// Per-request timeout of the client, in seconds.
const TIMEOUT_SECS: u64 = 60;
/// Asked when the engine's refusal does not name its version: old enough for
/// any engine that predates the client.
const OLD_API: ClientVersion = ClientVersion {
    major_version: 1,
    minor_version: 24,
};

/// The engine's address: `DOCKER_HOST` (read now) or [`DEFAULT_HOST`].
pub(crate) fn host() -> String {
    match std::env::var("DOCKER_HOST") {
        Ok(h) if !h.trim().is_empty() => h.trim().to_string(),
        _ => DEFAULT_HOST.to_string(),
    }
}

/// A client of the engine at `host`, speaking API `version`.
fn connect(host: &str, version: &ClientVersion) -> Result<Docker, ClusterError> {
    let unsupported = |why: &str| {
        ClusterError::NoDocker(format!("DOCKER_HOST={host} is not supported here ({why})"))
    };
    let docker = if let Some(path) = host.strip_prefix("unix://") {
        if path.is_empty() {
            return Err(unsupported("empty socket path"));
        }
        Docker::connect_with_unix(host, TIMEOUT_SECS, version)
    } else if host.starts_with("tcp://") || host.starts_with("http://") {
        if std::env::var("DOCKER_TLS_VERIFY").is_ok_and(|v| !v.is_empty() && v != "0") {
            return Err(unsupported("TLS engines are not supported"));
        }
        Docker::connect_with_http(host, TIMEOUT_SECS, version)
    } else {
        return Err(unsupported("use unix:///path or tcp://host:port"));
    };
    docker.map_err(|e| ClusterError::NoDocker(format!("{host}: {e}")))
}

/// The API version each engine was found to speak, by address.
static VERSIONS: Mutex<Vec<(String, ClientVersion)>> = Mutex::new(Vec::new());

/// Asks the engine at `host` for its version and picks the API both sides speak.
pub(crate) async fn probe(host: &str) -> Result<(SystemVersion, ClientVersion), DockerError> {
    let first = connect_raw(host, API_DEFAULT_VERSION)?.version().await;
    let info = match first {
        Ok(v) => v,
        Err(DockerError::DockerResponseServerError { message, .. }) => {
            // "client version 1.53 is too new. Maximum supported API version is 1.41"
            let named = message
                .rsplit_once("Maximum supported API version is ")
                .and_then(|(_, v)| parse_api_version(v));
            connect_raw(host, &named.unwrap_or(OLD_API))?
                .version()
                .await?
        }
        Err(e) => return Err(e),
    };
    let server = info.api_version.as_deref().and_then(parse_api_version);
    let version = match server {
        Some(s) if s < *API_DEFAULT_VERSION => s,
        _ => *API_DEFAULT_VERSION,
    };
    if let Ok(mut known) = VERSIONS.lock() {
        known.retain(|(h, _)| h != host);
        known.push((host.to_string(), version));
    }
    Ok((info, version))
}

fn connect_raw(host: &str, version: &ClientVersion) -> Result<Docker, DockerError> {
    match connect(host, version) {
        Ok(d) => Ok(d),
        Err(e) => Err(DockerError::IOError {
            err: std::io::Error::other(e.to_string()),
        }),
    }
}

/// Parses "1.41" into an API version.
pub(crate) fn parse_api_version(v: &str) -> Option<ClientVersion> {
    let v = v.trim().trim_end_matches('.');
    let (a, b) = v.split_once('.')?;
    let b: String = b.chars().take_while(char::is_ascii_digit).collect();
    Some(ClientVersion {
        major_version: a.parse().ok()?,
        minor_version: b.parse().ok()?,
    })
}

/// A client of the engine (`DOCKER_HOST` or the default socket).
pub(crate) async fn engine() -> Result<Engine, ClusterError> {
    let host = host();
    let known = VERSIONS
        .lock()
        .ok()
        .and_then(|k| k.iter().find(|(h, _)| *h == host).map(|(_, v)| *v));
    let version = match known {
        Some(v) => v,
        None => {
            probe(&host)
                .await
                .map_err(|e| ClusterError::NoDocker(format!("cannot reach {host}: {e}")))?
                .1
        }
    };
    Ok(Engine {
        docker: connect(&host, &version)?,
    })
}

/// Runs `f` to completion on a runtime of its own (on a thread of its own),
/// from any context: inside or outside a runtime, in `Drop`, in sync APIs.
pub(crate) fn block_on<F>(f: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    std::thread::scope(|s| {
        let thread = s.spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|rt| rt.block_on(f))
        });
        match thread.join() {
            Ok(Ok(out)) => out,
            Ok(Err(e)) => panic!("cannot build a runtime for a Docker call: {e}"),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The HTTP status of an engine's refusal.
fn status(e: &DockerError) -> Option<u16> {
    match e {
        DockerError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// A client of the Docker engine.
pub(crate) struct Engine {
    docker: Docker,
}

impl Engine {
    pub(crate) async fn image_exists(&self, image: &str) -> Result<bool, ClusterError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(e) if status(&e) == Some(404) => Ok(false),
            Err(e) => Err(ClusterError::docker(
                format!("inspect image {image}"),
                e.to_string(),
            )),
        }
    }

    // ------------------------------------------------------------ networks

    pub(crate) async fn network_create(
        &self,
        name: &str,
        labels: HashMap<String, String>,
    ) -> Result<(), ClusterError> {
        let request = NetworkCreateRequest {
            name: name.to_string(),
            driver: Some("bridge".to_string()),
            labels: Some(labels),
            ..Default::default()
        };
        self.docker
            .create_network(request)
            .await
            .map_err(|e| ClusterError::docker(format!("create network {name}"), e.to_string()))?;
        Ok(())
    }

    /// Removes a network; a missing network is not an error.
    pub(crate) async fn network_remove(&self, name: &str) -> Result<(), ClusterError> {
        match self.docker.remove_network(name).await {
            Err(e) if status(&e) != Some(404) => Err(ClusterError::docker(
                format!("remove network {name}"),
                e.to_string(),
            )),
            _ => Ok(()),
        }
    }

    pub(crate) async fn network_connect(
        &self,
        network: &str,
        container: &str,
    ) -> Result<(), ClusterError> {
        let request = NetworkConnectRequest {
            container: container.to_string(),
            ..Default::default()
        };
        self.docker
            .connect_network(network, request)
            .await
            .map_err(|e| {
                ClusterError::docker(
                    format!("connect {container} to network {network}"),
                    e.to_string(),
                )
            })
    }

    pub(crate) async fn network_disconnect(
        &self,
        network: &str,
        container: &str,
    ) -> Result<(), ClusterError> {
        let request = NetworkDisconnectRequest {
            container: container.to_string(),
            force: Some(true),
        };
        self.docker
            .disconnect_network(network, request)
            .await
            .map_err(|e| {
                ClusterError::docker(
                    format!("disconnect {container} from network {network}"),
                    e.to_string(),
                )
            })
    }

    /// Names of all networks whose labels match every `key=value` filter.
    pub(crate) async fn networks_with_labels(
        &self,
        filters: &[String],
    ) -> Result<Vec<Network>, ClusterError> {
        let options = ListNetworksOptions {
            filters: Some(HashMap::from([("label".to_string(), filters.to_vec())])),
        };
        self.docker.list_networks(Some(options)).await.map_err(|e| {
            ClusterError::docker(
                format!("list networks with labels {}", filters.join(",")),
                e.to_string(),
            )
        })
    }

    // ------------------------------------------------------------ containers

    /// Creates and starts a container; returns its id.
    pub(crate) async fn container_run(
        &self,
        name: &str,
        body: ContainerCreateBody,
    ) -> Result<String, ClusterError> {
        let id = self.container_create(name, body).await?;
        self.container_start(name, &id).await?;
        Ok(id)
    }

    /// Creates a container without starting it; returns its id.
    pub(crate) async fn container_create(
        &self,
        name: &str,
        body: ContainerCreateBody,
    ) -> Result<String, ClusterError> {
        let options = CreateContainerOptions {
            name: Some(name.to_string()),
            ..Default::default()
        };
        let created = self
            .docker
            .create_container(Some(options), body)
            .await
            .map_err(|e| ClusterError::docker(format!("create container {name}"), e.to_string()))?;
        Ok(created.id)
    }

    /// Starts a created container (`name` is for errors).
    pub(crate) async fn container_start(&self, name: &str, id: &str) -> Result<(), ClusterError> {
        self.docker
            .start_container(id, None)
            .await
            .map_err(|e| ClusterError::docker(format!("start container {name}"), e.to_string()))
    }

    /// The container's IP address on `network`, if it is attached to it.
    pub(crate) async fn container_ip(
        &self,
        id: &str,
        network: &str,
    ) -> Result<Option<String>, ClusterError> {
        let inspect =
            self.docker.inspect_container(id, None).await.map_err(|e| {
                ClusterError::docker(format!("inspect container {id}"), e.to_string())
            })?;
        Ok(inspect
            .network_settings
            .and_then(|n| n.networks)
            .and_then(|mut n| n.remove(network))
            .and_then(|endpoint| endpoint.ip_address)
            .filter(|ip| !ip.is_empty()))
    }

    /// The host port on 127.0.0.1 that `container_port/tcp` is published on.
    pub(crate) async fn published_port(
        &self,
        id: &str,
        container_port: u16,
    ) -> Result<Option<u16>, ClusterError> {
        let inspect =
            self.docker.inspect_container(id, None).await.map_err(|e| {
                ClusterError::docker(format!("inspect container {id}"), e.to_string())
            })?;
        let key = format!("{container_port}/tcp");
        let bindings = inspect
            .network_settings
            .and_then(|n| n.ports)
            .and_then(|mut p| p.remove(&key).flatten())
            .unwrap_or_default();
        Ok(bindings
            .iter()
            .filter(|b| b.host_ip.as_deref() == Some("127.0.0.1"))
            .find_map(|b| b.host_port.as_deref()?.parse().ok()))
    }

    pub(crate) async fn container_kill(&self, id: &str) -> Result<(), ClusterError> {
        let options = KillContainerOptions {
            signal: "SIGKILL".to_string(),
        };
        self.docker
            .kill_container(id, Some(options))
            .await
            .map_err(|e| ClusterError::docker(format!("kill container {id}"), e.to_string()))
    }

    pub(crate) async fn container_pause(&self, id: &str) -> Result<(), ClusterError> {
        self.docker
            .pause_container(id)
            .await
            .map_err(|e| ClusterError::docker(format!("pause container {id}"), e.to_string()))
    }

    pub(crate) async fn container_unpause(&self, id: &str) -> Result<(), ClusterError> {
        self.docker
            .unpause_container(id)
            .await
            .map_err(|e| ClusterError::docker(format!("unpause container {id}"), e.to_string()))
    }

    /// `docker stop -t seconds`.
    pub(crate) async fn container_stop(&self, id: &str, seconds: i32) -> Result<(), ClusterError> {
        let options = StopContainerOptions {
            t: Some(seconds),
            signal: None,
        };
        match self.docker.stop_container(id, Some(options)).await {
            // 304: already stopped
            Err(e) if status(&e) != Some(304) => Err(ClusterError::docker(
                format!("stop container {id}"),
                e.to_string(),
            )),
            _ => Ok(()),
        }
    }

    /// Force-removes a container with its anonymous volumes; missing is fine.
    pub(crate) async fn container_remove(&self, id: &str) -> Result<(), ClusterError> {
        let options = RemoveContainerOptions {
            force: true,
            v: true,
            link: false,
        };
        match self.docker.remove_container(id, Some(options)).await {
            // 404: gone; 409: "removal of container ... is already in progress"
            Err(e) if !matches!(status(&e), Some(404 | 409)) => Err(ClusterError::docker(
                format!("remove container {id}"),
                e.to_string(),
            )),
            _ => Ok(()),
        }
    }

    /// All containers (running or not) whose labels match every `key=value` filter.
    pub(crate) async fn containers_with_labels(
        &self,
        filters: &[String],
    ) -> Result<Vec<ContainerSummary>, ClusterError> {
        let options = ListContainersOptions {
            all: true,
            filters: Some(HashMap::from([("label".to_string(), filters.to_vec())])),
            ..Default::default()
        };
        self.docker
            .list_containers(Some(options))
            .await
            .map_err(|e| {
                ClusterError::docker(
                    format!("list containers with labels {}", filters.join(",")),
                    e.to_string(),
                )
            })
    }

    /// Writes one file into a (running or stopped) container.
    pub(crate) async fn put_file(
        &self,
        id: &str,
        dir: &str,
        file_name: &str,
        content: &[u8],
    ) -> Result<(), ClusterError> {
        self.put_file_with_mode(id, dir, file_name, content, 0o644)
            .await
    }

    /// [`Engine::put_file`] with the file's mode (owner root).
    pub(crate) async fn put_file_with_mode(
        &self,
        id: &str,
        dir: &str,
        file_name: &str,
        content: &[u8],
        mode: u32,
    ) -> Result<(), ClusterError> {
        let options = UploadToContainerOptions {
            path: dir.to_string(),
            ..Default::default()
        };
        let tar = tar_one_file(file_name, content, mode);
        self.docker
            .upload_to_container(id, Some(options), body_full(tar.into()))
            .await
            .map_err(|e| {
                ClusterError::docker(
                    format!("write {dir}/{file_name} in container {id}"),
                    e.to_string(),
                )
            })
    }

    /// Whether a path exists in a container's file system.
    pub(crate) async fn path_exists(&self, id: &str, path: &str) -> Result<bool, ClusterError> {
        let options = ContainerArchiveInfoOptions {
            path: path.to_string(),
        };
        match self
            .docker
            .get_container_archive_info(id, Some(options))
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if status(&e) == Some(404) => Ok(false),
            Err(e) => Err(ClusterError::docker(
                format!("stat {path} in container {id}"),
                e.to_string(),
            )),
        }
    }
}

/// A ustar archive holding one regular file (the engine takes files as tar).
pub(crate) fn tar_one_file(name: &str, content: &[u8], mode: u32) -> Vec<u8> {
    let mut h = [0u8; 512];
    let put = |h: &mut [u8; 512], off: usize, len: usize, s: &[u8]| {
        let n = s.len().min(len);
        h[off..off + n].copy_from_slice(&s[..n]);
    };
    put(&mut h, 0, 100, name.as_bytes());
    put(&mut h, 100, 8, format!("{mode:07o}\0").as_bytes());
    put(&mut h, 108, 8, b"0000000\0");
    put(&mut h, 116, 8, b"0000000\0");
    put(
        &mut h,
        124,
        12,
        format!("{:011o}\0", content.len()).as_bytes(),
    );
    let mtime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    put(&mut h, 136, 12, format!("{mtime:011o}\0").as_bytes());
    put(&mut h, 148, 8, b"        ");
    h[156] = b'0';
    put(&mut h, 257, 6, b"ustar\0");
    put(&mut h, 263, 2, b"00");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    put(&mut h, 148, 8, format!("{sum:06o}\0 ").as_bytes());
    let mut out = h.to_vec();
    out.extend_from_slice(content);
    let pad = (512 - content.len() % 512) % 512;
    out.extend(std::iter::repeat_n(0u8, pad + 1024));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_unsupported_docker_hosts() {
        assert!(connect("unix:///var/run/docker.sock", API_DEFAULT_VERSION).is_ok());
        assert!(connect("tcp://127.0.0.1:2375", API_DEFAULT_VERSION).is_ok());
        let err = connect("ssh://me@host", API_DEFAULT_VERSION).unwrap_err();
        assert!(err.to_string().starts_with("no Docker engine: "), "{err}");
    }

    #[test]
    fn parses_api_versions() {
        let v = parse_api_version("1.41").unwrap();
        assert_eq!((v.major_version, v.minor_version), (1, 41));
        assert!(v < *API_DEFAULT_VERSION);
        let v = parse_api_version("1.41\n").unwrap();
        assert_eq!((v.major_version, v.minor_version), (1, 41));
        assert!(parse_api_version("x").is_none());
    }

    #[test]
    fn tar_has_valid_checksum_and_size() {
        let t = tar_one_file("f", b"hello", 0o644);
        assert_eq!(t.len(), 512 * 4);
        let mut h = t[..512].to_vec();
        let stored = u32::from_str_radix(std::str::from_utf8(&h[148..154]).unwrap(), 8).unwrap();
        h[148..156].copy_from_slice(b"        ");
        assert_eq!(stored, h.iter().map(|&b| u32::from(b)).sum::<u32>());
        assert_eq!(&t[512..517], b"hello");
    }
}
