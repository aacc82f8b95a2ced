//! The designs offered for use, as sans-IO state machines. Each module says what it
//! guarantees and where it stops: read those limits before trusting one.
//!
//! These modules import neither tokio nor redis-rs (they compile without the `driver`
//! feature, see `tests/core_deps.rs`); the driver runs them.

pub mod custom;
pub(crate) mod lua_release;
mod redlock;
mod reentrant;
pub(crate) mod set_nx_px;
mod watchdog;

pub use custom::{Custom, CustomLock};
pub use lua_release::LuaRelease;
pub use redlock::Redlock;
pub use reentrant::Reentrant;
pub use watchdog::Watchdog;
