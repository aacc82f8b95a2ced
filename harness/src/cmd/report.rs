//! `locklab report`: model-check the scenarios and regenerate the gallery.
//!
//! Writes, under `--reports DIR` (default `reports/`; `--out` is the former name):
//! - `traces/<scenario>.<property>.json`, exactly as `check` writes them;
//! - `index.html` and `index.md`: the verdict matrix (designs × properties, each cell a
//!   colour *and* a symbol, expected against found) and the list of scenarios;
//! - `scenarios/<name>.html` and `.md`: the pitfall in plain words with the seed-article
//!   pattern it comes from, the settings, the verdicts, and per violated property the
//!   counterexample as an SVG sequence diagram (inline in HTML; `<name>.<property>.svg`
//!   beside the Markdown), the real replay timeline when `replays/<name>.<property>.json`
//!   exists, and the fix.
//!
//! Pages depend only on the scenarios, the model and the replay files: no timestamps,
//! no timings, no state counts, so regenerating changes nothing. `replays/` and
//! `bench*.md` are never written here.

use std::fs;
use std::path::{Path, PathBuf};

use crate::cli::ReportArgs;
use crate::files::write_file;
use crate::report::{self, Page};
use crate::scenario_args::load;
use crate::search::{check_all, shared_search};
use crate::verdict::exit_code;
use crate::Failure;

/// What the gallery shows by default: the shipped scenarios, and the custom locks of
/// `examples/custom/` (a team's own commands and Lua scripts, checked as deployed).
pub const GALLERY: [&str; 2] = ["scenarios", "examples/custom"];

/// `locklab report`: returns the exit status (as `check`: 1 when a verdict differs
/// from its expectation; the pages are written either way).
pub fn run(args: &ReportArgs) -> Result<i32, Failure> {
    let paths = if args.paths.is_empty() {
        GALLERY.iter().map(PathBuf::from).collect()
    } else {
        args.paths.clone()
    };
    let mut scenarios = load(&paths)?;
    // Design order, then name: the matrix groups the designs.
    scenarios.sort_by(|a, b| (a.design, &a.name).cmp(&(b.design, &b.name)));
    let (jobs, options) = shared_search(&args.search, args.jobs.jobs, scenarios.len());
    let outcomes = check_all(&scenarios, &options, jobs, &args.reports)?;
    let pages = outcomes
        .iter()
        .map(|o| report::page(o, &args.reports))
        .collect::<Result<Vec<_>, _>>()?;
    write(&args.reports, &pages)?;
    eprintln!(
        "wrote {} and {} scenario pages",
        args.reports.join("index.html").display(),
        pages.len()
    );
    Ok(exit_code(&outcomes))
}

/// Writes the index and the pages; the scenario directory is rebuilt from scratch so
/// that a removed scenario leaves no page behind.
fn write(out: &Path, pages: &[Page]) -> Result<(), Failure> {
    let dir = out.join("scenarios");
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| Failure::io(&dir, "cannot remove", e))?;
    }
    write_file(&out.join("index.html"), &report::html::index(pages))?;
    write_file(&out.join("index.md"), &report::markdown::index(pages))?;
    for p in pages {
        let name = &p.scenario.name;
        write_file(&dir.join(format!("{name}.html")), &report::html::page(p))?;
        write_file(&dir.join(format!("{name}.md")), &report::markdown::page(p))?;
        for c in &p.counterexamples {
            write_file(&dir.join(&c.svg_file), &c.svg)?;
        }
    }
    Ok(())
}
