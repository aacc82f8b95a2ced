//! The command line (docs/ARCHITECTURE.md, "Command line").

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// locklab finds, proves and teaches the ways Redis-based distributed locks break.
///
/// Exit status: 0 when every verdict matches the scenarios' `expect`, 1 when one
/// differs (or a scenario is vacuous), 2 for bad input or an environment that
/// cannot run.
#[derive(Debug, Parser)]
#[command(name = "locklab", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Model-check scenarios and compare each property's verdict with the expected one.
    Check(CheckArgs),
    /// Print the narrated shortest counterexample of each violated property of a
    /// scenario, or of one trace file `check` wrote (without searching again).
    Explain(ExplainArgs),
    /// Browse a scenario's state space in the stateright Explorer on 127.0.0.1.
    Explore(ExploreArgs),
    /// Run a scenario's counterexamples (or one trace) against real Redis.
    ///
    /// Ctrl-C (SIGINT) or SIGTERM removes this run's containers and networks, writes no
    /// report and exits 130 (143).
    Replay(ReplayArgs),
    /// Run a scenario against real Redis with random faults.
    ///
    /// Ctrl-C (SIGINT) or SIGTERM removes this run's containers and networks, writes no
    /// report and exits 130 (143).
    Chaos(ChaosArgs),
    /// Run the production driver's clients against real Redis for a while, with faults
    /// aimed at the holder, and check the history (Jepsen-style).
    ///
    /// Ctrl-C (SIGINT) or SIGTERM removes this run's containers and networks, writes no
    /// report and exits 130 (143).
    Soak(SoakArgs),
    /// Regenerate the report gallery.
    Report(ReportArgs),
    /// Join the --json and --junit files of `check --shard K/N` runs into those of the
    /// whole run; exits with the joined run's status.
    Merge(MergeArgs),
    /// Benchmarks of the model checker (the lock crate's: `cargo bench -p locklab-bench --bench lock`).
    Bench(BenchArgs),
    /// Remove the containers and networks of locklab processes that no longer exist
    /// (runs killed before they could clean up); never those of a running process.
    Clean,
}

/// Options of the model search, shared by `check` and `explain`.
#[derive(Debug, Clone, Args)]
pub struct SearchArgs {
    /// Explore counterexamples of at most N steps; a property without one is reported
    /// as holding within N steps.
    #[arg(long, value_name = "N")]
    pub max_depth: Option<usize>,
    /// Worker threads per scenario [default: the number of CPUs; for `check` and
    /// `report` of several scenarios, the CPUs shared among their --jobs].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Do not merge states that differ only by a renaming of clients (and of Redlock's
    /// interchangeable masters).
    #[arg(long)]
    pub no_symmetry: bool,
    /// Do not take the answers a Redlock fan-out only records in one order, nor overdue
    /// Redlock requests before the steps that cannot touch them (the partial-order
    /// reduction).
    #[arg(long)]
    pub no_partial_order: bool,
    /// Offer pauses at every step, not only just before a tick (and resumes just after
    /// one): the pause-placement reduction off.
    #[arg(long)]
    pub no_pause_placement: bool,
    /// No reduction at all: every interleaving, every state as it is, the search the
    /// reductions are tested against (implies --no-symmetry, --no-partial-order and
    /// --no-pause-placement).
    #[arg(long)]
    pub plain: bool,
    /// Keep each level waiting to be expanded as numbered parts (each distinct client,
    /// node and rest of a state stored once, as SPIN's COLLAPSE does): less memory where the
    /// levels are large (a quarter on the SPIN mirror's plain search), for more time (1.65x
    /// there); every result the same.
    #[arg(long)]
    pub compact: bool,
}

/// How many scenarios `check` and `report` search at once.
#[derive(Debug, Args)]
pub struct JobsArgs {
    /// Scenarios searched at once [default: the number of CPUs, each search on one
    /// thread; with --threads N, the CPUs / N]. The longest searches start first; the
    /// table's rows, the JSON and the traces are the same for any N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Scenario files or directories of them [default: scenarios/].
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Write the verdicts as JSON to FILE (`-`: to stdout, the table then to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the verdicts as JUnit XML to FILE (one testcase per scenario and property).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Directory for counterexample traces (written to DIR/traces/) [default: reports/
    /// for the gallery's scenarios (in scenarios/), else a temporary folder it names].
    #[arg(long, value_name = "DIR")]
    pub reports: Option<PathBuf>,
    /// Compute what each violation needs: each fault kind of the budget, the masters'
    /// clock drift and the step delays is needed when the property holds without it
    /// (one more search of the scenario per fault kind, one without drift and one
    /// without step delays); checked against the scenario's `[expect] cause`.
    #[arg(long)]
    pub cause: bool,
    /// Check only shard K of N (1 <= K <= N): the scenarios sorted by file name, every
    /// N-th from the K-th. `locklab merge` joins the shards' --json and --junit files.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<crate::shard::Shard>,
    #[command(flatten)]
    pub search: SearchArgs,
    #[command(flatten)]
    pub jobs: JobsArgs,
    #[command(flatten)]
    pub strategy: crate::strategy::StrategyArgs,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A scenario file, the name of one in scenarios/, or a trace `check` wrote
    /// (reports/traces/X.json): that counterexample is told without searching again.
    #[arg(value_name = "SCENARIO|TRACE.json")]
    pub scenario: String,
    /// Explain only this property.
    #[arg(long, value_name = "PROPERTY")]
    pub property: Option<String>,
    #[command(flatten)]
    pub search: SearchArgs,
}

#[derive(Debug, Args)]
pub struct ExploreArgs {
    /// A scenario file, or the name of one in scenarios/.
    pub scenario: String,
    /// Port of the Explorer on 127.0.0.1.
    #[arg(long, default_value_t = 3000)]
    pub port: u16,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A scenario (its counterexamples are replayed) or a trace JSON file.
    #[arg(value_name = "SCENARIO|TRACE.json")]
    pub target: String,
    /// Write the outcome as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Directory of the traces (DIR/traces/) and of the replay outcomes (DIR/replays/).
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub reports: PathBuf,
    /// Real milliseconds per model tick [default: the scenario's tick_ms].
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=locklab_model::scenario::MAX_TICK_MS))]
    pub tick_ms: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ChaosArgs {
    /// A scenario file, or the name of one in scenarios/.
    pub scenario: String,
    /// Seed of the fault schedule.
    #[arg(long)]
    pub seed: u64,
    /// Number of runs.
    #[arg(long)]
    pub runs: u32,
    /// Run each seed's own random walk. Without it, a run of a scenario that expects a
    /// property violated carries out the first of up to 1000 walks drawn from its seed
    /// whose model walk breaks one (steered); a scenario that expects every property to
    /// hold always gets the seed's own walk.
    #[arg(long)]
    pub blind: bool,
    /// Write the outcome as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SoakArgs {
    /// A scenario file, or the name of one in scenarios/.
    pub scenario: String,
    /// How long the clients run, in seconds.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub seconds: u64,
    /// Number of clients [default: the scenario's count].
    #[arg(long, value_name = "C", value_parser = clap::value_parser!(u16).range(1..=16))]
    pub clients: Option<u16>,
    /// Seed of the fault schedule and of the clients' retry jitter.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Leave out the slow clients the nemesis otherwise draws beside the scenario's
    /// faults (the model's step delays), to see the declared faults alone.
    #[arg(long)]
    pub no_slow_steps: bool,
    /// Soak a third-party lock library through an adapter (docs/ADAPTERS.md) instead of
    /// the production driver: CMD is started with `sh -c` once per client and driven
    /// over its stdin and stdout; the scenario is the library's model.
    #[arg(long, value_name = "CMD")]
    pub client: Option<String>,
    /// How long the adapter may take to answer one request (paused time not counted).
    #[arg(long, value_name = "SECONDS", requires = "client", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub client_timeout: Option<u64>,
    /// One fault kind only, a `[faults]` key (pauses, crashes, lost_replies, partitions,
    /// failovers, split_brains, restarts, clock_jumps) or slow_steps (the slow clients
    /// alone): the soak injects that kind alone, and the model checks the scenario with
    /// that budget only (1 unless the file sets more); the soak is judged against the
    /// model's verdicts, printed beside it.
    #[arg(long, value_name = "KIND")]
    pub fault: Option<locklab_harness::soak::SoakFault>,
    /// With --fault: stop the model search after SECONDS (a property it did not break
    /// by then is reported as not proven, never as holding).
    #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub model_time_limit: u64,
    /// Write the history and the result as JSON to FILE, and the timeline picture next
    /// to it (FILE with the extension .svg).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Scenario files or directories of them [default: scenarios/ and examples/custom/].
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Directory of the gallery: the pages, the traces (DIR/traces/), and the replays and
    /// soak timelines read from DIR/replays/ and DIR/soak/ (`--out` is the former name,
    /// still accepted).
    #[arg(long, value_name = "DIR", default_value = "reports", alias = "out")]
    pub reports: PathBuf,
    #[command(flatten)]
    pub search: SearchArgs,
    #[command(flatten)]
    pub jobs: JobsArgs,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' --json files (`{`...) and --junit files (`<?xml`...), every shard of
    /// one split once, in any order.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Write the joined JSON report to FILE (needs the shards' JSON files).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the joined JUnit report to FILE (needs the shards' JUnit files).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Model checker speed per scenario: every reduction on (one and two threads) and none (one thread).
    Checker(BenchCheckerArgs),
    /// Chaos generator detection power: how many seeds' model walks break what each
    /// scenario expects broken, per way of picking steps (no Docker needed).
    Generator(BenchGeneratorArgs),
}

#[derive(Debug, Args)]
pub struct BenchGeneratorArgs {
    /// Scenario files or directories of them [default: scenarios/].
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// How many seeds per scenario.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub seeds: u64,
    /// The first seed (the seeds are consecutive).
    #[arg(long, value_name = "SEED", default_value_t = 1000)]
    pub first_seed: u64,
    /// Where to write the Markdown report.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "reports/bench-generator.md"
    )]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct BenchCheckerArgs {
    /// Scenario files or directories of them [default: scenarios/].
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Where to write the Markdown report; of a report already there, the sections written
    /// by hand under its table are kept.
    #[arg(long, value_name = "FILE", default_value = "reports/bench-checker.md")]
    pub out: PathBuf,
    /// Stop a search after the level that ends past this many seconds; its row is
    /// marked "stopped" (searches without reductions can take many minutes).
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    pub time_limit: u64,
    /// Internal: run one search (`REDUCTIONS,THREADS`, e.g. `on,2`: every reduction or
    /// none, and the worker threads) of the one scenario
    /// given and print its figures as JSON; each measurement runs so, in a child
    /// process, for its own peak memory.
    #[arg(long, value_name = "REDUCTIONS,THREADS", hide = true)]
    pub child: Option<String>,
}
