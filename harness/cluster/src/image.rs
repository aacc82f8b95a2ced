//! Which Redis image to run: `LOCKLAB_REDIS_IMAGE`, default `locklab/redis:local`.

use std::fmt;

use crate::error::ClusterError;

/// Environment variable naming the Redis image (`name[:tag]`).
pub const IMAGE_ENV: &str = "LOCKLAB_REDIS_IMAGE";
/// The image `harness/redis-image/build.sh` builds.
pub const DEFAULT_IMAGE: &str = "locklab/redis:local";

/// A Docker image reference split the way testcontainers wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// Repository, with registry and path if any: `redis`, `locklab/redis`,
    /// `registry.example:5000/team/redis`.
    pub name: String,
    /// Tag; `latest` when the reference has none.
    pub tag: String,
}

impl ImageRef {
    /// Parses `name[:tag]`. A `:` before the last `/` belongs to a registry
    /// host (`host:5000/redis`), not to the tag. Digests (`@sha256:...`) are
    /// not supported.
    pub fn parse(value: &str) -> Result<ImageRef, ClusterError> {
        let invalid = |reason: &str| ClusterError::InvalidImage {
            value: value.to_string(),
            reason: reason.to_string(),
        };
        let v = value.trim();
        if v.is_empty() {
            return Err(invalid("empty"));
        }
        if v.contains('@') {
            return Err(invalid("digests are not supported, use name:tag"));
        }
        if v.chars().any(|c| c.is_whitespace()) {
            return Err(invalid("contains whitespace"));
        }
        let last_slash = v.rfind('/').map(|i| i + 1).unwrap_or(0);
        let (name, tag) = match v[last_slash..].find(':') {
            Some(i) => (&v[..last_slash + i], &v[last_slash + i + 1..]),
            None => (v, "latest"),
        };
        if name.is_empty() || name.ends_with('/') {
            return Err(invalid("missing image name"));
        }
        if tag.is_empty() {
            return Err(invalid("empty tag"));
        }
        Ok(ImageRef {
            name: name.to_string(),
            tag: tag.to_string(),
        })
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, self.tag)
    }
}

/// The Redis image to run: `LOCKLAB_REDIS_IMAGE` if set and not empty, else
/// [`DEFAULT_IMAGE`]. Only parses; [`crate::preflight`] checks it exists.
pub fn image() -> Result<ImageRef, ClusterError> {
    match std::env::var(IMAGE_ENV) {
        Ok(v) if !v.trim().is_empty() => ImageRef::parse(&v),
        _ => ImageRef::parse(DEFAULT_IMAGE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> (String, String) {
        let r = ImageRef::parse(s).unwrap();
        (r.name, r.tag)
    }

    #[test]
    fn parses_names_and_tags() {
        assert_eq!(p("redis:7"), ("redis".into(), "7".into()));
        assert_eq!(p("redis"), ("redis".into(), "latest".into()));
        assert_eq!(
            p("locklab/redis:local"),
            ("locklab/redis".into(), "local".into())
        );
        assert_eq!(
            p("reg.example:5000/team/redis"),
            ("reg.example:5000/team/redis".into(), "latest".into())
        );
        assert_eq!(
            p("reg.example:5000/team/redis:7.2-alpine"),
            ("reg.example:5000/team/redis".into(), "7.2-alpine".into())
        );
        assert_eq!(
            ImageRef::parse("redis:7").unwrap().to_string(),
            "redis:7".to_string()
        );
    }

    #[test]
    fn rejects_bad_references() {
        for bad in ["", "redis:", "redis@sha256:abc", ":7", "a b:1"] {
            let err = ImageRef::parse(bad).unwrap_err();
            assert!(matches!(err, ClusterError::InvalidImage { .. }), "{bad}");
            assert!(err.is_environment());
        }
    }
}
