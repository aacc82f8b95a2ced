//! Errors of this crate.

use std::time::Duration;

/// The command that builds the default image; quoted in error messages.
pub const BUILD_COMMAND: &str = "bash harness/redis-image/build.sh";

/// Everything that can go wrong while starting, faulting or tearing down a cluster.
///
/// [`ClusterError::NoDocker`], [`ClusterError::ImageMissing`] and
/// [`ClusterError::InvalidImage`] are environment problems that
/// [`crate::preflight`] reports before anything is started
/// ([`ClusterError::is_environment`]): a CLI exits 2 with the message.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The Docker engine cannot be reached (or is not usable).
    #[error("no Docker engine: {0}")]
    NoDocker(String),

    /// The Redis image is not present locally (and nothing is ever pulled).
    #[error(
        "Redis image `{image}` not found locally: build it with `{build}` \
         (or set LOCKLAB_REDIS_IMAGE to an image you have, e.g. redis:7)",
        build = BUILD_COMMAND
    )]
    ImageMissing { image: String },

    /// `LOCKLAB_REDIS_IMAGE` cannot be parsed.
    #[error("invalid LOCKLAB_REDIS_IMAGE `{value}`: {reason}")]
    InvalidImage { value: String, reason: String },

    /// The Docker engine refused or failed a request.
    #[error("docker: {op}: {message}")]
    Docker { op: String, message: String },

    /// testcontainers failed.
    #[error("testcontainers: {0}")]
    Container(#[from] testcontainers::TestcontainersError),

    /// A Redis node answered with an error or not at all.
    #[error("redis {node}: {message}")]
    Redis { node: String, message: String },

    /// Something did not happen in time.
    #[error("timed out after {after:?}: {what}")]
    Timeout { what: String, after: Duration },

    /// The fault needs something this cluster does not have.
    #[error("{0}")]
    Unsupported(String),

    /// Local I/O (sockets, files).
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

impl ClusterError {
    /// True for problems of the environment (no Docker, no image, bad image
    /// name), as opposed to failures while running: the CLI maps these to exit 2.
    pub fn is_environment(&self) -> bool {
        matches!(
            self,
            ClusterError::NoDocker(_)
                | ClusterError::ImageMissing { .. }
                | ClusterError::InvalidImage { .. }
        )
    }

    pub(crate) fn docker(op: impl Into<String>, message: impl Into<String>) -> ClusterError {
        ClusterError::Docker {
            op: op.into(),
            message: message.into(),
        }
    }

    pub(crate) fn redis(node: impl Into<String>, message: impl Into<String>) -> ClusterError {
        ClusterError::Redis {
            node: node.into(),
            message: message.into(),
        }
    }
}
