//! # locklab
//!
//! Redis lock designs as sans-IO state machines, and an async driver that runs them on
//! real Redis servers.
//!
//! * [`design`]: the designs offered for use — `lua-release`, `watchdog`, `reentrant`,
//!   `redlock` — plus the options in [`LockConfig`]: fencing tokens and `WAIT`.
//! * [`pitfalls`]: the classic broken designs, for teaching and for the model checker.
//! * [`LockMachine`]: one client's state machine for any design. It takes calls and
//!   replies, and returns the [`Command`]s to send and the [`Outcome`]s; it never reads a
//!   clock and never does I/O, so the model checker (crate `locklab-model`) explores
//!   the very code the driver runs.
//! * `driver` (cargo feature `driver`, on by default): the tokio + redis-rs runner, with a
//!   builder, guards and a watchdog task, and [`pitfalls`]' `builder`.
//! * [`script`]: every Lua script, as the text both real Redis and the model run.
//! * [`resource`]: the protected resource (a fenced stock counter) shared by the model
//!   and the harness.
//! * [`Text`]: the short strings a machine keeps (its tokens) in place, not on the heap.
//!
//! Everything but the driver is the sans-IO core: it compiles with
//! `default-features = false`, and then neither tokio nor redis-rs is in the dependency
//! tree (`tests/core_deps.rs` checks it with `cargo tree`). The model checker
//! (`locklab-model`) depends on the core only, and its `tests/machines.rs` runs every
//! design's machine against the model's abstract Redis in memory.

pub mod command;
pub mod design;
mod design_id;
#[cfg(feature = "driver")]
pub mod driver;
pub mod machine;
mod options;
pub mod pitfalls;
pub mod resource;
pub mod script;
pub mod text;

pub use command::{Arg, Command, Reply};
pub use design_id::{DesignId, Fencing, UnknownDesign};
pub use machine::{
    Answer, Denied, Grant, LockConfig, LockMachine, Millis, NoAnswer, Outcome, RenewalOnError,
    Request, Step,
};
pub use script::{CustomScript, Script};
pub use text::Text;
