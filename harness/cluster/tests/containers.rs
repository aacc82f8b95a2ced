//! Real containers, one test binary with a module per subject: nodes, replicas, faults
//! and clean-up (`cluster`), Sentinel's failovers (`sentinel`). Need Docker and the
//! Redis image; never skip.

mod cluster;
mod sentinel;
