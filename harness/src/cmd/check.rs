//! `locklab check`: model-check scenarios and compare the verdicts with their `expect`.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use locklab_model::scenario::{Scenario, DEFAULT_DIR};
use locklab_model::search::SearchOptions;

use crate::cli::CheckArgs;
use crate::files::write_file;
use crate::scenario_args::load;
use crate::search::{check_with, shared_search, Reporter};
use crate::shard::select;
use crate::verdict::exit_code_allowing;
use crate::{junit, output, table, Failure};

/// Where `check` writes its traces: `--reports DIR`; without it `reports/` when every
/// scenario is one of the gallery's (in `scenarios/`), else a fresh temporary folder,
/// named on stderr, so that checking one's own file leaves the gallery's traces alone.
fn traces_dir(asked: Option<&Path>, scenarios: &[Scenario]) -> Result<PathBuf, Failure> {
    if let Some(dir) = asked {
        return Ok(dir.to_path_buf());
    }
    let gallery = fs::canonicalize(DEFAULT_DIR).ok();
    let in_gallery = |s: &Scenario| {
        let dir = fs::canonicalize(&s.path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf));
        gallery.is_some() && dir == gallery
    };
    if scenarios.iter().all(in_gallery) {
        return Ok(PathBuf::from("reports"));
    }
    let dir = std::env::temp_dir().join(format!("locklab-{}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| Failure::io(&dir, "cannot create", e))?;
    eprintln!(
        "traces go to {} (--reports DIR to choose the folder)",
        dir.join("traces").display()
    );
    Ok(dir)
}

/// `locklab check`: returns the exit status.
pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    let scenarios = load(&args.paths)?;
    let (scenarios, part) = match args.shard {
        Some(shard) => {
            let (chosen, part) = select(scenarios, shard);
            eprintln!(
                "shard {shard}: {} of the {} scenarios",
                chosen.len(),
                part.total
            );
            (chosen, Some(part))
        }
        None => (scenarios, None),
    };
    let (jobs, options) = shared_search(&args.search, args.jobs.jobs, scenarios.len());
    let options = SearchOptions {
        time_limit: args.strategy.time_limit(),
        ..options
    };
    let mut reporter = Reporter::new();
    reporter.walks = args.strategy.walks()?;
    if args.cause && reporter.walks.is_some() {
        return Err(Failure::BadInput(
            "--cause searches each scenario exhaustively without each of its faults; it \
             does not go with random walks"
                .to_string(),
        ));
    }
    let reports = traces_dir(args.reports.as_deref(), &scenarios)?;
    // `--json -` takes stdout for the JSON; the table then goes to stderr.
    let json_to_stdout = args.json.as_deref() == Some(Path::new("-"));
    let show = |text: &str| {
        reporter.suspend(|| {
            if json_to_stdout {
                eprint!("{text}");
            } else {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
        })
    };
    // Each scenario's rows once it and every one before it have finished, the header
    // before the first.
    let layout = table::Layout::ahead(scenarios.iter().map(|s| s.name.as_str()));
    let mut header = Some(layout.header());
    let outcomes = check_with(
        &reporter,
        &scenarios,
        &options,
        jobs,
        &reports,
        args.cause,
        &mut |o| show(&(header.take().unwrap_or_default() + &layout.rows(o))),
    )?;
    show(&table::render_notes(&outcomes));
    let code = exit_code_allowing(&outcomes, args.strategy.allow_unproven);
    if let Some(path) = &args.json {
        let json = output::json(&outcomes, code, part.as_ref());
        let text = serde_json::to_string_pretty(&json).expect("JSON") + "\n";
        if json_to_stdout {
            print!("{text}");
        } else {
            write_file(path, &text)?;
        }
    }
    if let Some(path) = &args.junit {
        write_file(path, &junit::render(&outcomes, part.as_ref()))?;
    }
    Ok(code)
}
