//! The production driver against real Redis in containers: one test binary, a module
//! per subject (one build and link of the driver, tokio and redis-rs instead of one per
//! file). Needs Docker and the Redis image; these tests never skip.

mod common;

mod custom;
mod designs;
mod redlock;
mod sentinel;
mod watchdog;
