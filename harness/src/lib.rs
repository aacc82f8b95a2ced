//! locklab-harness as a library: the real-run engine ([`run`]) shared by `locklab
//! replay`, `locklab chaos` and the tests that start real containers, and the chaos
//! schedule [`generator`].

pub mod generator;
pub mod run;
