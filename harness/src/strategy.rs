//! `check --strategy`: the exhaustive search (the default), or seeded random walks for a
//! scenario beyond exhaustive reach ([`locklab_model::walk`]).
//!
//! A walk's counterexample is real (re-checked against the model); a property no walk
//! broke is "not found in N walks". Against an expected "violated" that is a mismatch
//! (the documented counterexample was not reproduced); against an expected "holds" it is
//! *unproven*: neither a match nor a mismatch, and the exit status is 1 unless
//! `--allow-unproven` is given, so that a CI gate never passes on walks alone without
//! saying so on its command line.

use clap::{Args, ValueEnum};
use locklab_model::walk::WalkOptions;

use crate::Failure;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum StrategyName {
    /// Every reachable state: "holds" is a proof within the scenario's bounds.
    #[default]
    Exhaustive,
    /// Seeded random walks: finds counterexamples, proves nothing.
    Random,
}

#[derive(Debug, Clone, Args)]
pub struct StrategyArgs {
    /// How to look for counterexamples.
    #[arg(long, value_enum, default_value_t = StrategyName::Exhaustive)]
    pub strategy: StrategyName,
    /// Number of random walks (--strategy random).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub walks: Option<u64>,
    /// Seed of the random walks (--strategy random).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Exit 0 even when an expected "holds" is only "not found" by random walks.
    #[arg(long)]
    pub allow_unproven: bool,
    /// Stop a scenario's search after the level (or walk) that ends past this many
    /// seconds; its "holds" verdicts are then bounded by the depth reached.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub time_limit: Option<u64>,
}

impl StrategyArgs {
    /// `--time-limit`.
    pub fn time_limit(&self) -> Option<std::time::Duration> {
        self.time_limit.map(std::time::Duration::from_secs)
    }

    /// The walks to run, or `None` for the exhaustive search; walk options without
    /// `--strategy random` are bad input rather than silently ignored.
    pub fn walks(&self) -> Result<Option<WalkOptions>, Failure> {
        match self.strategy {
            StrategyName::Exhaustive => {
                if self.walks.is_some() || self.seed.is_some() {
                    return Err(Failure::BadInput(
                        "--walks and --seed need --strategy random".to_string(),
                    ));
                }
                Ok(None)
            }
            StrategyName::Random => {
                let defaults = WalkOptions::default();
                Ok(Some(WalkOptions {
                    walks: self.walks.unwrap_or(defaults.walks),
                    seed: self.seed.unwrap_or(defaults.seed),
                    time_limit: self.time_limit(),
                    ..defaults
                }))
            }
        }
    }
}
