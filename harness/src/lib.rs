//! locklab-harness as a library: the real-run engine ([`run`]) shared by `locklab
//! replay`, `locklab chaos` and the tests that start real containers, and the chaos
//! schedule [`generator`]; [`soak`], the free-running test of the production driver.

pub mod generator;
pub mod run;
pub mod soak;
