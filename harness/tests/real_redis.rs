//! The run engine and the driver against real Redis in containers, one test binary with
//! a module per subject: `locklab replay` and the run engine (`replay`), soaks and their
//! adapters (`soak`), the model's abstract Redis reply by reply (`conformance`) and case
//! by case for custom locks (`conformance_scripts`). Need Docker and the Redis image;
//! never skip.

mod conformance;
mod conformance_scripts;
mod replay;
mod soak;
