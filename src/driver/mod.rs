//! The async driver (tokio + redis-rs): runs any design's state machine on real Redis
//! nodes.
//!
//! * [`LockBuilder`] — the lock's settings; [`LockBuilder::lua_release`],
//!   [`watchdog`](LockBuilder::watchdog), [`reentrant`](LockBuilder::reentrant),
//!   [`redlock`](LockBuilder::redlock) are the designs offered for use. The pitfall
//!   designs are built only through [`LockBuilder::pitfall`](crate::driver::LockBuilder::pitfall).
//! * [`Lock`] — one client's handle: [`try_acquire`](Lock::try_acquire) (one attempt),
//!   [`acquire`](Lock::acquire) (bounded retries with seeded jitter),
//!   [`release`](Lock::release), [`extend`](Lock::extend).
//! * [`LockGuard`] — one hold: [`validity`](LockGuard::validity),
//!   [`fencing_token`](LockGuard::fencing_token), [`token`](LockGuard::token),
//!   [`is_lost`](LockGuard::is_lost). The reentrant design re-enters when the same
//!   [`Lock`] acquires again while holding it (one more guard per hold).
//! * the renewal task of `watchdog` and `reentrant` (see [Renewal](#renewal)).
//! * [`Node`] — one Redis node; [`Node::execute`] translates a locklab
//!   [`Command`](crate::Command) into a real command and the answer into a
//!   [`Reply`](crate::Reply) (the harness replays model traces through it).
//! * [`PauseGate`] — a stop-the-world switch for a client's lock tasks.
//! * [`Connections`] — node connections shared by many locks of one process (by
//!   default each lock opens its own).
//! * [`LockError`] — every failure; node failures name the node (index and URL).
//!
//! # Time
//!
//! The driver owns a local clock in milliseconds — tokio's monotonic `Instant` since the
//! lock was built, anchored at the Unix time of that moment, so that readings of
//! different clients are comparable as far as their system clocks agree — and passes its
//! readings to the machine. The machine computes every
//! validity (ttl − elapsed − drift, measured from the moment the acquire was *sent*), so
//! [`LockGuard::validity`] is the design's own answer, not the driver's.
//!
//! # Timeouts
//!
//! redis-rs waits 500 ms for a reply by default; the driver sets both the connect and
//! the per-command timeout explicitly ([`LockBuilder::connect_timeout`],
//! [`LockBuilder::command_timeout`]). A command that gets no answer in time is fed to
//! the machine as "no answer": an acquire then fails with [`LockError::Timeout`] but may
//! have taken the lock; that key expires by itself after the ttl. `WAIT` gets its own
//! timeout ([`LockBuilder::wait_timeout`]) on top of the command timeout: Redis holds
//! its reply until the replicas acknowledge or that timeout runs out.
//!
//! # Renewal
//!
//! For the designs that renew ([`DesignId::renews`](crate::DesignId::renews)) a task
//! renews the lease every ttl/3 while a guard is held. It stops on release, when a
//! renewal finds the lock gone ([`LockGuard::is_lost`] then says so), and when the
//! hold's last guard or the [`Lock`] is dropped. It obeys the [`PauseGate`].
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use locklab::driver::{LockBuilder, LockError};
//!
//! # async fn run() -> Result<(), LockError> {
//! let lock = LockBuilder::redlock()
//!     .key("stock:42")
//!     .nodes(["redis://127.0.0.1:7001", "redis://127.0.0.1:7002", "redis://127.0.0.1:7003"])
//!     .ttl(Duration::from_secs(10))
//!     .command_timeout(Duration::from_millis(50))
//!     .retry_count(5)
//!     .fencing(true)
//!     .build()
//!     .await?;
//!
//! let guard = lock.acquire().await?;
//! let token = guard.fencing_token().expect("fencing is on");
//! if !guard.is_lost() {
//!     // ... write to the protected resource, passing `token` for it to check ...
//!     # let _ = token;
//! }
//! lock.release(guard).await?;
//! # Ok(())
//! # }
//! ```
//!
//! A watchdog lock, kept alive past its ttl while the holder works:
//!
//! ```no_run
//! # use std::time::Duration;
//! # use locklab::driver::{LockBuilder, LockError};
//! # async fn run() -> Result<(), LockError> {
//! let lock = LockBuilder::watchdog()
//!     .key("job:nightly")
//!     .node("redis://127.0.0.1:6379")
//!     .ttl(Duration::from_secs(30))
//!     .build()
//!     .await?;
//! if let Some(guard) = lock.try_acquire().await? {
//!     tokio::time::sleep(Duration::from_secs(60)).await; // renewed every 10 s meanwhile
//!     lock.release(guard).await?;
//! }
//! # Ok(())
//! # }
//! ```

mod builder;
mod clock;
mod connections;
mod error;
mod gate;
mod guard;
mod in_flight;
mod lock;
mod node;
mod watchdog;

pub use builder::LockBuilder;
pub use clock::ClockShift;
pub use connections::Connections;
pub use error::LockError;
pub use gate::{Passage, PauseGate};
pub use guard::LockGuard;
pub use lock::Lock;
pub use node::{Node, NodeTimeouts};

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_cross_tasks() {
        send_sync::<Lock>();
        send_sync::<LockGuard>();
        send_sync::<LockError>();
        send_sync::<PauseGate>();
        send_sync::<Node>();
        send_sync::<Connections>();
    }
}
