//! The driver's one error type.

use std::fmt;
use std::time::Duration;

use crate::design_id::DesignId;

/// Everything that can go wrong when running a lock on real Redis nodes.
///
/// Errors about one node (unreachable, timeout, an unexpected reply) name it by its
/// index in the builder's node list and its URL (with any password hidden). For a lock
/// that follows Sentinel ([`LockBuilder::sentinel`](super::LockBuilder::sentinel)) the
/// URL is the master Sentinel named; when no master could be found,
/// [`LockError::NoMaster`] names every sentinel and what it answered.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The builder's settings are not usable (no node, ttl 0, too many nodes, ...).
    #[error("invalid lock configuration: {0}")]
    Config(String),

    /// The plain [`LockBuilder`](super::LockBuilder) only builds the safe designs.
    #[error(
        "`{design}` is a pitfall design, kept for teaching only; build it with \
         `LockBuilder::pitfall(DesignId::...)` if you really mean to"
    )]
    PitfallDesign {
        /// The refused design.
        design: DesignId,
    },

    /// A node's URL could not be parsed.
    #[error("node {node} ({url}): invalid Redis URL: {source}")]
    InvalidUrl {
        /// The node's index.
        node: usize,
        /// Its URL.
        url: String,
        /// What redis-rs said.
        #[source]
        source: redis::RedisError,
    },

    /// A node could not be reached: connection refused or dropped, I/O error.
    #[error("node {node} ({url}) is unreachable: {source}")]
    Unreachable {
        /// The node's index.
        node: usize,
        /// Its URL.
        url: String,
        /// What redis-rs said.
        #[source]
        source: redis::RedisError,
    },

    /// A node did not answer in time (connecting, or a command). A timed-out acquire may
    /// still have taken the lock on that node; the key expires by itself after the ttl.
    #[error("node {node} ({url}) did not answer within {after:?} ({during})")]
    Timeout {
        /// The node's index.
        node: usize,
        /// Its URL.
        url: String,
        /// The timeout that ran out.
        after: Duration,
        /// `"connect"` or the command that timed out (e.g. `"SET"`).
        during: String,
    },

    /// A node answered something no lock command returns (an array, a map, ...).
    #[error("node {node} ({url}) gave an unexpected reply: {reply}")]
    UnexpectedReply {
        /// The node's index.
        node: usize,
        /// Its URL.
        url: String,
        /// The reply, debug-printed.
        reply: String,
    },

    /// Sentinel: no sentinel named a usable master for the service (every sentinel
    /// unreachable, or each one reporting the master down or not knowing the service,
    /// or the master it named not answering `ROLE` as a master), e.g. between a
    /// master's death and the end of the failover.
    #[error(
        "node {node}: no sentinel named a usable master for `{service}`: {}",
        failures.join("; ")
    )]
    NoMaster {
        /// The node's index.
        node: usize,
        /// The service (master name) asked for.
        service: String,
        /// Each sentinel's failure, naming it: `sentinel <i> (<url>): <why>`.
        failures: Vec<String>,
    },

    /// Sentinel: the node Sentinel had named answered `READONLY` (it was demoted by a
    /// failover while it stayed up). The command did not run; the next command asks
    /// the sentinels for the master again.
    #[error("node {node} ({url}) is a read-only replica now: {reply}")]
    ReadOnly {
        /// The node's index.
        node: usize,
        /// The demoted master's address.
        url: String,
        /// Redis' reply.
        reply: String,
    },

    /// A node gave no usable answer and the driver has no more specific error for it
    /// (e.g. the fencing `INCR` answered with an error reply).
    #[error("node {node} ({url}) gave no usable answer; the lock state is unknown")]
    Unavailable {
        /// The node's index.
        node: usize,
        /// Its URL.
        url: String,
    },

    /// Redlock: fewer than a majority of the masters granted the lock, and failing nodes
    /// (not other holders) are why. Partial grants were released.
    #[error(
        "no quorum for `{key}`: {granted} of {masters} masters granted it, {quorum} needed; \
         failed: {}",
        list(failures)
    )]
    NoQuorum {
        /// The lock key.
        key: String,
        /// Masters that granted it.
        granted: usize,
        /// Masters in all.
        masters: usize,
        /// The majority needed.
        quorum: usize,
        /// The errors of the masters that failed, each naming its node.
        failures: Vec<LockError>,
    },

    /// Redlock: a majority of the masters granted the lock, but the acquire took so long
    /// that no validity was left (the lease minus the time the acquire took and the
    /// clock-drift allowance). The grants were released; nobody else holds it.
    #[error(
        "acquiring `{key}` used up its lease: {granted} of {masters} masters granted it, but \
         no validity was left after the time the acquire took and the clock-drift \
         allowance; the grants were released"
    )]
    NoValidity {
        /// The lock key.
        key: String,
        /// Masters that granted it.
        granted: usize,
        /// Masters in all.
        masters: usize,
    },

    /// `WAIT` saw fewer replicas than required; the grant was released.
    #[error("`WAIT` saw {acks} replica(s), {wanted} required; the grant was released")]
    NotReplicated {
        /// Replicas that acknowledged.
        acks: i64,
        /// Replicas required.
        wanted: u32,
    },

    /// [`Lock::acquire`](super::Lock::acquire) gave up: another client held the lock on
    /// every attempt.
    #[error("lock `{key}` is held by another client ({attempts} attempt(s))")]
    Busy {
        /// The lock key.
        key: String,
        /// How many attempts were made.
        attempts: u32,
    },

    /// This handle already holds the lock and the lock is not reentrant.
    #[error("lock `{key}` is already held through this handle and `{design}` is not reentrant")]
    AlreadyHeld {
        /// The lock key.
        key: String,
        /// The design.
        design: DesignId,
    },

    /// The lock is no longer ours: it expired, was taken by another client, or its state
    /// became unknown (an operation was cancelled midway).
    #[error("lock `{key}` is no longer held by this client")]
    NotHeld {
        /// The lock key.
        key: String,
    },

    /// The guard was handed to a [`Lock`](super::Lock) other than the one that issued it.
    #[error("this guard belongs to another lock handle")]
    WrongLock,

    /// The design has no such operation (the pitfall designs cannot extend a lease).
    #[error("design `{design}` cannot {what}")]
    Unsupported {
        /// The design.
        design: DesignId,
        /// The operation.
        what: &'static str,
    },

    /// The state machine stopped without an outcome; a bug in locklab.
    #[error("internal error: {0}")]
    Internal(String),
}

fn list(errors: &[LockError]) -> String {
    if errors.is_empty() {
        return "none".to_string();
    }
    errors
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

impl LockError {
    /// The index of the node the error is about, if it is about one node.
    pub fn node(&self) -> Option<usize> {
        match self {
            LockError::InvalidUrl { node, .. }
            | LockError::Unreachable { node, .. }
            | LockError::Timeout { node, .. }
            | LockError::UnexpectedReply { node, .. }
            | LockError::NoMaster { node, .. }
            | LockError::ReadOnly { node, .. }
            | LockError::Unavailable { node, .. } => Some(*node),
            _ => None,
        }
    }

    /// Whether [`Lock::acquire`](super::Lock::acquire) tries again after this error
    /// (a node failure, a missed quorum, validity or replication); configuration errors
    /// are final.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LockError::Unreachable { .. }
                | LockError::Timeout { .. }
                | LockError::UnexpectedReply { .. }
                | LockError::NoMaster { .. }
                | LockError::ReadOnly { .. }
                | LockError::Unavailable { .. }
                | LockError::NoQuorum { .. }
                | LockError::NoValidity { .. }
                | LockError::NotReplicated { .. }
        )
    }
}

/// A URL as shown in errors: the password, if any, is replaced by `***`.
pub(crate) struct Redacted<'a>(pub(crate) &'a str);

impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = self.0;
        if let Some(scheme_end) = url.find("://") {
            let rest = &url[scheme_end + 3..];
            let authority_end = rest.find('/').unwrap_or(rest.len());
            if let Some(at) = rest[..authority_end].rfind('@') {
                let userinfo = &rest[..at];
                let user = userinfo.split(':').next().unwrap_or("");
                let shown = if userinfo.contains(':') {
                    format!("{user}:***")
                } else {
                    "***".to_string()
                };
                return write!(f, "{}{}{}", &url[..scheme_end + 3], shown, &rest[at..]);
            }
        }
        f.write_str(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        let r = |u: &str| Redacted(u).to_string();
        assert_eq!(r("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(
            r("redis://:secret@127.0.0.1:6379/0"),
            "redis://:***@127.0.0.1:6379/0"
        );
        assert_eq!(r("redis://bob:secret@h/0"), "redis://bob:***@h/0");
        assert_eq!(r("redis://token@h"), "redis://***@h");
    }

    #[test]
    fn node_errors_name_the_node() {
        let e = LockError::Timeout {
            node: 2,
            url: "redis://127.0.0.1:7000".into(),
            after: Duration::from_millis(50),
            during: "SET".into(),
        };
        assert_eq!(e.node(), Some(2));
        let s = e.to_string();
        assert!(s.contains("node 2") && s.contains("127.0.0.1:7000"), "{s}");
    }

    #[test]
    fn sentinel_errors_name_the_sentinels() {
        let e = LockError::NoMaster {
            node: 0,
            service: "m0".into(),
            failures: vec![
                "sentinel 0 (redis://127.0.0.1:26379): refused".into(),
                "sentinel 1 (redis://127.0.0.1:26380): master down".into(),
            ],
        };
        let s = e.to_string();
        assert!(s.contains("`m0`") && s.contains("sentinel 1 (redis://127.0.0.1:26380)"));
        assert!(e.is_retryable() && e.node() == Some(0));
    }
}
