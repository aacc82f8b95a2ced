//! [`LockGuard`]: proof of one hold, with what the holder needs to use it safely.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::lock::{Session, Shared};

/// One hold of the lock, returned by [`Lock::try_acquire`](super::Lock::try_acquire) and
/// [`Lock::acquire`](super::Lock::acquire), given back to
/// [`Lock::release`](super::Lock::release).
///
/// **Reentrancy**: with the `reentrant` design, acquiring again through the same
/// [`Lock`](super::Lock) while it holds the lock re-enters it and returns another guard
/// for the same hold ([`holds`](Self::holds) counts them); release each guard once, and
/// the key goes with the last.
///
/// **Dropping** a guard without releasing it releases nothing in Redis: when the hold's
/// last guard is dropped its renewals stop and the key expires within one ttl.
///
/// Before each write to the protected resource a holder should check
/// [`is_lost`](Self::is_lost), and better, pass its [`fencing_token`](Self::fencing_token)
/// to a resource that checks it: a process pause between the check and the write is
/// enough to break any lease.
pub struct LockGuard {
    shared: Arc<Shared>,
    session: Arc<Session>,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("key", &self.shared.cfg.key)
            .field("grant", &self.session.grant())
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl LockGuard {
    pub(crate) fn new(shared: Arc<Shared>, session: Arc<Session>) -> Self {
        LockGuard { shared, session }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub(crate) fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The time left before the lease must be taken as lost, by the driver's local
    /// clock: ttl − elapsed − drift from the start of the last successful acquire or
    /// renewal. `Some(ZERO)` once it has run out; `None` for a lock without expiry
    /// (`naive-setnx`).
    pub fn validity(&self) -> Option<Duration> {
        let grant = self.session.grant();
        grant
            .validity(self.shared.clock.now())
            .map(|ms| Duration::from_millis(ms.max(0) as u64))
    }

    /// The fencing token taken with this hold (when fencing is on): pass it to the
    /// protected resource, which must reject tokens older than the newest it has seen.
    pub fn fencing_token(&self) -> Option<u64> {
        self.session.grant().fence
    }

    /// The value identifying this holder in Redis (the lock key's value, or the
    /// reentrant hash's owner field).
    pub fn token(&self) -> String {
        self.session.grant().token.to_string()
    }

    /// How many holds this hold counts (reentrant re-entries; 1 otherwise).
    pub fn holds(&self) -> u32 {
        self.session.grant().holds
    }

    /// The lock key.
    pub fn key(&self) -> &str {
        &self.shared.cfg.key
    }

    /// Whether the hold is over without a release of ours: a renewal, extend or release
    /// found the lock gone or taken, its state became unknown, or its validity ran out.
    pub fn is_lost(&self) -> bool {
        self.session.lost.load(Ordering::SeqCst) || self.validity() == Some(Duration::ZERO)
    }
}
