//! The renewal task of the designs that renew while held ([`DesignId::renews`]:
//! `watchdog`, `reentrant`), as Redisson's watchdog: every
//! [`LockConfig::renew_interval`] (ttl/3) it extends the lease if the lock is still ours.
//!
//! It stops when the hold is released, when a renewal finds the lock gone (the guard
//! then reports [`is_lost`](super::LockGuard::is_lost)), and when the hold's last guard
//! or the [`Lock`](super::Lock) is dropped (the task is aborted; the key then expires
//! within one ttl). A node that does not answer does not stop it: the next renewal tries
//! again, and the lease runs out by itself if none succeeds.
//!
//! It obeys the pause gate like every operation: a paused client renews nothing, which
//! is exactly how a stop-the-world pause defeats a watchdog.
//!
//! [`DesignId::renews`]: crate::DesignId::renews
//! [`LockConfig::renew_interval`]: crate::LockConfig::renew_interval

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::task::AbortHandle;

use super::error::LockError;
use super::lock::{Session, Shared};

/// Start renewing `session` in the background.
pub(crate) fn spawn(shared: Arc<Shared>, session: Weak<Session>) -> AbortHandle {
    let every = Duration::from_millis(shared.cfg.renew_interval());
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            shared.gate.wait().await;
            let Some(session) = session.upgrade() else {
                return;
            };
            if !session.is_live() || !shared.is_current(&session) {
                return;
            }
            match shared.renew(&session).await {
                Ok(_) => {}
                // Lost (the session is marked), or the hold is over: stop.
                Err(LockError::NotHeld { .. }) => return,
                // A node failed: keep the old lease and try again next time.
                Err(e) if e.is_retryable() => {}
                Err(_) => return,
            }
        }
    })
    .abort_handle()
}
