//! `locklab`: the command line of the lock laboratory (docs/ARCHITECTURE.md, "Command line").

// The commands, each depending on the modules below it, never the other way round.
mod cmd;
mod interrupt;
// What the commands share: the command line, the scenarios it names, the search with
// its progress, the verdicts, and the files they write.
mod cli;
mod files;
mod scenario_args;
mod search;
mod shard;
mod verdict;
// Renderers and what they tell, depending on the verdicts and traces only.
mod fix;
mod junit;
mod output;
mod pitfall;
mod report;
mod sequence;
mod strategy;
mod table;
mod xml;

use std::path::Path;
use std::process::ExitCode;

use clap::Parser;

use cli::Cli;

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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = cmd::run(&cli);
    interrupt::wait_if_stopping();
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(2)),
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
