//! The classic mistakes, kept for teaching and for the model to break. **Do not use
//! these to protect anything**: each module says how it fails.
//!
//! They are real, runnable designs (the model checks them and the driver runs them
//! against real Redis) so that every counterexample is a sequence of real commands.

mod exists_set;
mod get_expire_renewal;
mod getset_timestamp;
mod naive_setnx;
mod set_px_del;
mod set_px_get_del;
mod setnx_expire;

pub use exists_set::ExistsSet;
pub use get_expire_renewal::GetExpireRenewal;
pub use getset_timestamp::GetsetTimestamp;
pub use naive_setnx::NaiveSetnx;
pub use set_px_del::SetPxDel;
pub use set_px_get_del::SetPxGetDel;
pub use setnx_expire::SetnxExpire;

/// A driver builder for any design, the pitfalls included — for teaching, the model's
/// counterexamples and the harness. The plain [`crate::driver::LockBuilder`] refuses the
/// designs in this module. Needs the `driver` feature.
///
/// ```no_run
/// # async fn run() -> Result<(), locklab::driver::LockError> {
/// use locklab::DesignId;
/// let lock = locklab::pitfalls::builder(DesignId::SetPxDel)
///     .key("demo")
///     .node("redis://127.0.0.1:6379")
///     .build()
///     .await?;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "driver")]
pub fn builder(design: crate::DesignId) -> crate::driver::LockBuilder {
    crate::driver::LockBuilder::any_design(design)
}
