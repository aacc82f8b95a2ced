//! locklab-harness as a library: the real-run engine ([`run`]) shared by `locklab
//! replay`, `locklab chaos` and the tests that start real containers.

pub mod run;
