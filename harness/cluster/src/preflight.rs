//! Checks that containers can be started, before starting anything.

use std::time::Duration;

use serde_json::Value;

use crate::engine::{self, Endpoint};
use crate::error::ClusterError;
use crate::image::{image, ImageRef};
use crate::shim;

/// What [`preflight`] found.
#[derive(Debug, Clone)]
pub struct Preflight {
    /// The Redis image that will be run (present locally).
    pub image: ImageRef,
    /// Where the engine listens, e.g. `unix:///var/run/docker.sock`.
    pub engine: String,
    /// Docker engine version, e.g. `20.10.24+dfsg1`.
    pub engine_version: String,
    /// Newest Docker API the engine speaks, e.g. `1.41`.
    pub api_version: String,
    /// Whether testcontainers goes through the API-version shim (engine API
    /// older than testcontainers' client; see the `shim` module).
    pub api_shim: bool,
}

/// Checks, without starting anything, that a cluster can start: the image
/// name parses, the Docker engine answers, and the image exists locally.
/// Blocking (two short local requests); call it from `spawn_blocking` in
/// async code if that matters. [`crate::ClusterBuilder::start`] calls it too.
///
/// Errors: [`ClusterError::NoDocker`] ("no Docker engine: ..."),
/// [`ClusterError::ImageMissing`] (says to run
/// `bash harness/redis-image/build.sh`), [`ClusterError::InvalidImage`]; all
/// satisfy [`ClusterError::is_environment`] (a CLI exits 2).
///
/// When the engine is older than testcontainers' Docker client it also starts
/// the API shim and points this process's `DOCKER_HOST` at it.
pub fn preflight() -> Result<Preflight, ClusterError> {
    let image = image()?;
    let engine = engine::engine()?;
    let endpoint = engine.endpoint.clone();
    let r = engine
        .request("GET", "/version", None, Some(Duration::from_secs(10)))
        .map_err(|e| {
            let hint = match &endpoint {
                Endpoint::Unix(p) if !p.exists() => {
                    " (no such socket: is Docker installed and running? set DOCKER_HOST if it listens elsewhere)"
                }
                _ if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    " (permission denied: add this user to the `docker` group or run as root)"
                }
                _ => " (is the Docker daemon running?)",
            };
            ClusterError::NoDocker(format!("cannot reach {endpoint}: {e}{hint}"))
        })?;
    if !r.ok() {
        return Err(ClusterError::NoDocker(format!(
            "{endpoint} answered GET /version with HTTP {}: {}",
            r.status,
            r.message()
        )));
    }
    let v: Value = r.json().map_err(|e| {
        ClusterError::NoDocker(format!(
            "{endpoint} does not look like a Docker engine: {e}"
        ))
    })?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
    let api_version = text("ApiVersion");
    let engine_version = text("Version");

    let needs_shim = match shim::parse_api_version(&api_version) {
        Some(api) => api < shim::CLIENT_API,
        None => false,
    };
    if needs_shim {
        shim::ensure(&endpoint).map_err(ClusterError::NoDocker)?;
    }

    let name = image.to_string();
    if !engine.image_exists(&name)? {
        return Err(ClusterError::ImageMissing { image: name });
    }
    Ok(Preflight {
        image,
        engine: endpoint.to_string(),
        engine_version,
        api_version,
        api_shim: shim::active(),
    })
}
