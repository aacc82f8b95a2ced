//! Scenarios named on the command line: files and directories of them, or one scenario
//! by path or by its name in `scenarios/`. A bad file is bad input (exit 2).

use std::path::PathBuf;

use locklab_model::scenario::{load_paths, Scenario, ScenarioError, DEFAULT_DIR};

use crate::Failure;

/// Loads scenarios, reporting a bad file as bad input.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Scenario>, Failure> {
    load_paths(paths).map_err(|e: ScenarioError| Failure::BadInput(e.to_string()))
}

/// A scenario argument: a file path, or the name of a file in `scenarios/`.
pub fn resolve(arg: &str) -> Result<Scenario, Failure> {
    let path = PathBuf::from(arg);
    let path = if path.exists() {
        path
    } else {
        let by_name = PathBuf::from(DEFAULT_DIR).join(format!("{arg}.toml"));
        if !by_name.exists() {
            return Err(Failure::BadInput(format!(
                "{arg}: no such scenario file, and no {} either; give a path to a .toml file \
                 or the name of a scenario in {DEFAULT_DIR}/",
                by_name.display()
            )));
        }
        by_name
    };
    if path.is_dir() {
        return Err(Failure::BadInput(format!(
            "{}: is a directory; this command takes one scenario",
            path.display()
        )));
    }
    if path.extension().is_some_and(|e| e == "json") {
        // A trace, most likely: its scenario is embedded, but this command searches or
        // runs a scenario of its own.
        return Err(Failure::BadInput(format!(
            "{}: a JSON file, not a scenario; this command takes a scenario (.toml) or \
             its name in {DEFAULT_DIR}/ (a trace's counterexample runs on Redis with \
             `locklab replay TRACE.json`)",
            path.display()
        )));
    }
    Ok(load(&[path])?.remove(0))
}
