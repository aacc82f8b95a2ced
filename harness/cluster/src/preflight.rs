//! Checks that containers can be started, before starting anything.

use crate::engine;
use crate::error::ClusterError;
use crate::image::{image, ImageRef};

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
    /// The API version the client speaks to it: the engine's, or bollard's
    /// own (`bollard::API_DEFAULT_VERSION`) when the engine is newer.
    pub client_api_version: String,
}

/// Checks, without starting anything, that a cluster can start: the image
/// name parses, the Docker engine answers, and the image exists locally.
/// Blocking (two short local requests, on a thread of their own); it may be
/// called from async code. [`crate::ClusterBuilder::start`] does the same.
///
/// Errors: [`ClusterError::NoDocker`] ("no Docker engine: ..."),
/// [`ClusterError::ImageMissing`] (says to run
/// `bash harness/redis-image/build.sh`), [`ClusterError::InvalidImage`]; all
/// satisfy [`ClusterError::is_environment`] (a CLI exits 2).
pub fn preflight() -> Result<Preflight, ClusterError> {
    engine::block_on(check())
}

/// [`preflight`] in async code.
pub(crate) async fn check() -> Result<Preflight, ClusterError> {
    let image = image()?;
    let host = engine::host();
    let (version, client) = engine::probe(&host).await.map_err(|e| {
        let socket = host.strip_prefix("unix://").map(std::path::Path::new);
        let text = e.to_string();
        let hint = match socket {
            Some(p) if !p.exists() => {
                " (no such socket: is Docker installed and running? set DOCKER_HOST if it listens elsewhere)"
            }
            _ if text.to_lowercase().contains("permission denied") => {
                " (permission denied: add this user to the `docker` group or run as root)"
            }
            _ => " (is the Docker daemon running?)",
        };
        ClusterError::NoDocker(format!("cannot reach {host}: {text}{hint}"))
    })?;
    let name = image.to_string();
    if !engine::engine().await?.image_exists(&name).await? {
        return Err(ClusterError::ImageMissing { image: name });
    }
    Ok(Preflight {
        image,
        engine: host,
        engine_version: version.version.unwrap_or_else(|| "?".to_string()),
        api_version: version.api_version.unwrap_or_else(|| "?".to_string()),
        client_api_version: format!("{}.{}", client.major_version, client.minor_version),
    })
}
