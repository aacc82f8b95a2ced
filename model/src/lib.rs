//! # locklab-model
//!
//! A stateright model of the lock designs in the `locklab` crate. The clients run the
//! very [`locklab::LockMachine`]s the async driver runs; the model supplies an abstract
//! Redis ([`redis`]), logical clocks, faults and the four properties ([`model`]), and a
//! breadth-first search that merges symmetric states ([`symmetry`]: clients, and
//! Redlock's independent masters) and reports the shortest counterexample to each
//! property ([`search`]; a level waiting to be expanded kept whole or compact:
//! [`frontier`]), re-checked against the model ([`recheck`]); seeded random
//! walks ([`walk`]) for spaces beyond exhaustive reach. Scripts of custom locks run in
//! an embedded Lua 5.1 ([`lua`]) whose `redis.call` reaches the abstract Redis by
//! command name ([`call`]); runs of locklab's own scripts are remembered per thread
//! (`script_memo`).

pub mod action;
#[cfg(test)]
mod bisimilar;
pub mod blame;
pub mod call;
pub mod cause;
pub mod client;
mod clone_in_place;
pub mod fault;
pub mod forget;
pub mod frontier;
pub mod ids;
pub mod lua;
pub mod model;
pub mod partial_order;
pub mod parts;
pub mod pause_placement;
pub mod recheck;
pub mod redis;
pub mod relative_time;
pub mod run_fault;
pub mod scenario;
mod script_memo;
pub mod search;
pub mod state;
pub mod symmetry;
pub mod tokens;
pub mod trace;
pub mod walk;
