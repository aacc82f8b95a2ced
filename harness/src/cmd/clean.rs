//! `locklab clean`: remove the containers and networks of locklab processes that no
//! longer exist (a run killed with SIGKILL leaves them behind). Containers of other
//! programs, and of a locklab process still running, are never touched.

use crate::Failure;

/// Reaps, prints what was removed; exit status 1 when something could not be removed.
pub fn run() -> Result<i32, Failure> {
    let reaped = locklab_cluster::reap().map_err(|e| Failure::Environment(e.to_string()))?;
    print!("{reaped}");
    Ok(i32::from(!reaped.failures.is_empty()))
}
