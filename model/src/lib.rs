//! # locklab-model
//!
//! A stateright model of the lock designs in the `locklab` crate. The clients run the
//! very [`locklab::LockMachine`]s the async driver runs; the model supplies an abstract
//! Redis ([`redis`]), logical clocks, faults and the four properties ([`model`]), and a
//! breadth-first search that merges symmetric states ([`symmetry`]: clients, and
//! Redlock's independent masters) and reports the shortest counterexample to each
//! property ([`search`]), re-checked against the model ([`recheck`]); seeded random
//! walks ([`walk`]) for spaces beyond exhaustive reach.

pub mod client;
pub mod model;
pub mod recheck;
pub mod redis;
pub mod scenario;
pub mod search;
pub mod state;
pub mod symmetry;
pub mod trace;
pub mod walk;
