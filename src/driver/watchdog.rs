//! The renewal task of the designs that renew while held ([`DesignId::renews`]:
//! `watchdog`, `reentrant`), as Redisson's watchdog: every
//! [`LockConfig::renew_interval`] (ttl/3) from the start of a hold it extends the lease
//! if the lock is still ours.
//!
//! One task per [`Lock`](super::Lock), started by its first hold and parked while it
//! holds nothing, so that a hold costs no task spawn: an acquire only records the hold
//! (and wakes the task if it is parked); a release only marks the hold ended, which
//! the task sees when the next renewal is due.
//!
//! It renews nothing for a hold that was released, that a renewal found gone (the
//! guard then reports [`is_lost`](super::LockGuard::is_lost)), or whose last guard was
//! dropped (the key then expires within one ttl); dropping the [`Lock`](super::Lock)
//! aborts the task. A renewal that gets no answer stops it too ([`RenewalOnError::Stop`],
//! the default: each renewal is sent once, the hold stays, the lease runs out one ttl
//! after the last renewal that ran; Redisson's `renewExpiration` stops so once its
//! command layer has resent the renewal `retryAttempts` times); with
//! [`RenewalOnError::Retry`] the next renewal tries again. The decision is the
//! machine's ([`LockMachine::renewing`]), the same one the model checks.
//!
//! It obeys the pause gate like every operation: a paused client renews nothing, which
//! is exactly how a stop-the-world pause defeats a watchdog. Its passages are the
//! renewal task's own ([`Passage::Renewal`]): a gate can slow the lock's operations
//! while the watchdog, a timer of its own, keeps time.
//!
//! [`DesignId::renews`]: crate::DesignId::renews
//! [`LockConfig::renew_interval`]: crate::LockConfig::renew_interval
//! [`RenewalOnError::Stop`]: crate::RenewalOnError::Stop
//! [`RenewalOnError::Retry`]: crate::RenewalOnError::Retry
//! [`LockMachine::renewing`]: crate::LockMachine::renewing

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::error::LockError;
use super::gate::Passage;
use super::lock::{Session, Shared};

/// A lock's renewal task: started on the first hold, woken by later ones.
#[derive(Default)]
pub(crate) struct Renewer {
    task: Mutex<Option<AbortHandle>>,
    wake: Arc<Notify>,
}

impl Renewer {
    /// A hold began (it is the lock's current session): renew it from now on.
    pub(crate) fn hold_began(&self, shared: &Arc<Shared>) {
        let mut task = self.task.lock().unwrap_or_else(|e| e.into_inner());
        if task.is_none() {
            *task = Some(spawn(Arc::downgrade(shared), self.wake.clone()));
        }
        // Stored as a permit when the task is not parked: it then checks once more.
        self.wake.notify_one();
    }

    /// Stop the task (the lock is dropped).
    pub(crate) fn stop(&self) {
        if let Some(task) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
    }
}

/// The live hold, if any: its session and when its next renewal is due.
fn live_hold(shared: &Shared, every: Duration) -> Option<(Weak<Session>, tokio::time::Instant)> {
    let session = shared.current().filter(|s| s.renews())?;
    Some((Arc::downgrade(&session), session.began + every))
}

fn spawn(shared: Weak<Shared>, wake: Arc<Notify>) -> AbortHandle {
    tokio::spawn(async move {
        loop {
            // Parked until a hold begins.
            let (mut session, mut due) = loop {
                let woken = wake.notified();
                let Some(strong) = shared.upgrade() else {
                    return;
                };
                let every = Duration::from_millis(strong.cfg.renew_interval());
                if let Some(hold) = live_hold(&strong, every) {
                    break hold;
                }
                drop(strong);
                woken.await;
            };
            // Renew it every interval while it is the live hold.
            loop {
                tokio::time::sleep_until(due).await;
                let fired = tokio::time::Instant::now();
                let Some(strong) = shared.upgrade() else {
                    return;
                };
                strong.gate.pass(Passage::Renewal).await;
                let every = Duration::from_millis(strong.cfg.renew_interval());
                let Some(current) = strong.current().filter(|s| s.renews()) else {
                    break;
                };
                if !Weak::ptr_eq(&session, &Arc::downgrade(&current)) {
                    // A newer hold began: its renewals are due from its start.
                    (session, due) = (Arc::downgrade(&current), current.began + every);
                    continue;
                }
                match strong.renew(&current, Passage::Renewal).await {
                    Ok(_) => {}
                    // Lost (the session is marked), or the hold is over.
                    Err(LockError::NotHeld { .. }) => break,
                    // A node failed: the old lease stands; next time, unless the
                    // machine stopped renewing (then the session says so).
                    Err(e) if e.is_retryable() && current.renews() => {}
                    Err(_) => break,
                }
                // As a delayed tick: the next renewal one interval after this one fired.
                due = fired + every;
            }
        }
    })
    .abort_handle()
}
