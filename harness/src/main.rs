//! `locklab`: the command line of the lock laboratory (DESIGN.md, "CLI contract").

mod bench_checker;
mod chaos;
mod check;
mod cli;
mod explain;
mod explore;
mod fix;
mod junit;
mod output;
mod pitfall;
mod replay;
mod report;
mod sequence;
mod table;
mod xml;

use std::path::Path;
use std::process::ExitCode;

use clap::Parser;

use cli::{BenchCommand, Cli, Command};

// The model checker clones and drops millions of small states; glibc's allocator spent a
// third of the search time consolidating and freeing them (see reports/bench-checker.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Why a command could not run: bad input or an environment that cannot run (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// A bad scenario, path or argument: the message says which and where.
    #[error("{0}")]
    BadInput(String),
    /// A file could not be read or written.
    #[error("{path}: {what}: {source}")]
    Io {
        path: String,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The environment cannot run (no Docker engine, no image, a container failed).
    #[error("{0}")]
    Environment(String),
}

impl Failure {
    pub fn io(path: &Path, what: &'static str, source: std::io::Error) -> Self {
        Failure::Io {
            path: path.display().to_string(),
            what,
            source,
        }
    }
}

fn run(cli: &Cli) -> Result<i32, Failure> {
    match &cli.command {
        Command::Check(args) => check::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Explore(args) => explore::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Chaos(args) => chaos::run(args),
        Command::Report(args) => report::run(args),
        Command::Bench(args) => match &args.command {
            BenchCommand::Checker(args) => bench_checker::run(args),
        },
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => ExitCode::from(code as u8),
        Err(Failure::BadInput(line)) => {
            // As is: `file:line: key `x`: message`, which editors can jump to.
            eprintln!("{line}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("locklab: {e}");
            ExitCode::from(2)
        }
    }
}
