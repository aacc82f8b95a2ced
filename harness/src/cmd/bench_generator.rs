//! `locklab bench generator`: how often the chaos generator's schedules break what a
//! scenario expects broken, in the model alone (no Docker: a schedule's model walk is
//! what the real run follows step by step), for each way of picking steps side by side
//! ([`Scheduling`]): uniform, by turns, by turns with a lagging holder, and the swarm of
//! uniform and lagging holder that `chaos --blind` uses, and the steered schedules
//! `chaos` runs by default (the first of the seed's walks that breaks).
//! The real rates on Redis follow the model's (reports/chaos.md: no run went another
//! way than its model walk); this is the cheap measure of detection power.

use std::fmt::Write as _;
use std::path::PathBuf;

use locklab_model::model::LockModel;
use locklab_model::scenario::{Expectation, Property};

use super::bench::{command_line, utc_now};
use crate::cli::BenchGeneratorArgs;
use crate::files::write_file;
use crate::scenario_args::load;
use crate::Failure;
use locklab_harness::generator::{
    generate_with, schedule, Schedule, Scheduling, Steering, STEER_DRAWS,
};

/// `locklab bench generator`: returns the exit status.
pub fn run(args: &BenchGeneratorArgs) -> Result<i32, Failure> {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        args.paths.clone()
    };
    let scenarios = load(&paths)?;
    let seeds = args.first_seed..args.first_seed.saturating_add(args.seeds);
    let mut table = String::from("| scenario | expects violated |");
    for s in Scheduling::ALL {
        let _ = write!(table, " {} |", s.name());
    }
    table.push_str(" steered | walks drawn (median, most) |");
    table.push_str("\n|---|---|");
    table.push_str(&"---:|".repeat(Scheduling::ALL.len() + 2));
    table.push('\n');
    // One column per scheduling, then the steered schedules (of the swarm's walks).
    let mut totals = [0u64; Scheduling::ALL.len() + 1];
    let mut half = [0usize; Scheduling::ALL.len() + 1];
    let mut rows = 0usize;
    for scenario in &scenarios {
        let expected: Vec<Property> = Property::ALL
            .into_iter()
            .filter(|&p| scenario.expect.get(p) == Expectation::Violated)
            .collect();
        if expected.is_empty() {
            continue;
        }
        rows += 1;
        let model = LockModel::new(scenario);
        let names: Vec<&str> = expected.iter().map(|p| p.as_str()).collect();
        let _ = write!(table, "| {} | {} |", scenario.name, names.join(", "));
        for (i, scheduling) in Scheduling::ALL.into_iter().enumerate() {
            let hits = seeds
                .clone()
                .filter(|&seed| generate_with(&model, seed, scheduling).breaks_any(&expected))
                .count() as u64;
            totals[i] += hits;
            if 2 * hits >= args.seeds {
                half[i] += 1;
            }
            let _ = write!(table, " {hits} |");
        }
        let steered: Vec<Schedule> = seeds
            .clone()
            .map(|seed| schedule(&model, seed, Steering::DEFAULT))
            .collect();
        let hits = steered.iter().filter(|s| s.breaks_any(&expected)).count() as u64;
        totals[Scheduling::ALL.len()] += hits;
        if 2 * hits >= args.seeds {
            half[Scheduling::ALL.len()] += 1;
        }
        let mut drawn: Vec<u32> = steered.iter().map(|s| s.draw + 1).collect();
        drawn.sort_unstable();
        let (median, most) = (
            drawn.get(drawn.len() / 2).copied().unwrap_or(0),
            drawn.last().copied().unwrap_or(0),
        );
        let _ = write!(table, " {hits} | {median}, {most} |");
        table.push('\n');
        eprintln!("{}: done", scenario.name);
    }
    let _ = write!(
        table,
        "| **all {rows}** | walks that break, of {} |",
        args.seeds.saturating_mul(rows as u64)
    );
    for t in totals {
        let _ = write!(table, " {t} |");
    }
    table.push_str(" |");
    let _ = write!(table, "\n| | scenarios at half or more |");
    for h in half {
        let _ = write!(table, " {h} |");
    }
    table.push_str(" |\n");
    print!("{table}");
    let report = format!(
        "# Chaos generator: model walks that break\n\n\
         Command: `{}`. Date: {}.\n\n\
         For every scenario that expects a property violated: of {} seeds ({}..{}), how many \
         schedules' model walks break one of those properties, for each way of picking \
         steps (`harness/src/generator.rs`, `Scheduling`), and steered: the first of up to \
         {} swarm walks drawn from the seed that breaks one (`Steering`), with how many \
         walks that took (1: the seed's own). `steered` is what `locklab chaos` runs, \
         `swarm` what `locklab chaos --blind` runs. Deterministic: the same command prints \
         the same table on any machine.\n\n{table}",
        command_line(),
        utc_now(),
        STEER_DRAWS,
        args.seeds,
        seeds.start,
        seeds.end.saturating_sub(1),
    );
    write_file(&args.out, &report)?;
    eprintln!("wrote {}", args.out.display());
    Ok(0)
}
