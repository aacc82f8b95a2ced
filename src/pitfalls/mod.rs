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
