//! The `locklab` subcommands, one module each. A command reads its arguments, runs the
//! model search or the real-run engine, and hands the verdicts and traces to the
//! renderers (`table`, `output`, `junit`, `report`, `sequence`); nothing outside this
//! module depends on a command.

pub mod bench;
pub mod bench_generator;
pub mod chaos;
pub mod check;
pub mod clean;
pub mod explain;
pub mod explore;
pub mod merge;
pub mod replay;
pub mod report;
pub mod soak;

use crate::cli::{BenchCommand, Cli, Command};
use crate::Failure;

/// Runs the command `cli` names; returns its exit status.
pub fn run(cli: &Cli) -> Result<i32, Failure> {
    match &cli.command {
        Command::Check(args) => check::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Explore(args) => explore::run(args),
        Command::Replay(args) => {
            crate::interrupt::remove_containers_on_interrupt();
            replay::run(args)
        }
        Command::Chaos(args) => {
            crate::interrupt::remove_containers_on_interrupt();
            chaos::run(args)
        }
        Command::Soak(args) => {
            crate::interrupt::remove_containers_on_interrupt();
            soak::run(args)
        }
        Command::Report(args) => report::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Bench(args) => match &args.command {
            BenchCommand::Checker(args) => bench::run(args),
            BenchCommand::Generator(args) => bench_generator::run(args),
        },
        Command::Clean => clean::run(),
    }
}
