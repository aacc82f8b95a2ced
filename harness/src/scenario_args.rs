//! Scenarios named on the command line: files and directories of them, or one scenario
//! by path or by its name in `scenarios/`; and counterexample traces (`TRACE.json`). A
//! bad file is bad input (exit 2).

use std::path::{Path, PathBuf};

use locklab_model::model::LockModel;
use locklab_model::scenario::{load_paths, Scenario, ScenarioError, DEFAULT_DIR};
use locklab_model::search::replay as model_replay;
use locklab_model::trace::{self, Trace};

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
    if is_trace(&path) {
        // A trace, most likely: its scenario is embedded, but this command searches or
        // runs a scenario of its own.
        return Err(Failure::BadInput(format!(
            "{}: a JSON file, not a scenario; this command takes a scenario (.toml) or \
             its name in {DEFAULT_DIR}/ (a trace's counterexample runs on Redis with \
             `locklab replay TRACE.json`, and `locklab explain TRACE.json` narrates it)",
            path.display()
        )));
    }
    Ok(load(&[path])?.remove(0))
}

/// Whether a command-line argument names a trace (`.json`) rather than a scenario.
pub fn is_trace(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// A counterexample trace as `check` writes it, read back with its embedded scenario
/// and the property it breaks. A file that does not decode (its scenario included), or
/// whose steps do not apply to its scenario, is bad input naming the file.
pub fn load_trace(path: &Path) -> Result<Trace, Failure> {
    let trace = trace::load(path).map_err(|e| Failure::BadInput(e.to_string()))?;
    if model_replay(&LockModel::new(&trace.scenario), &trace.actions).is_none() {
        return Err(Failure::BadInput(format!(
            "{}: actions: the steps do not apply to the embedded scenario {}",
            path.display(),
            trace.scenario.name
        )));
    }
    Ok(trace)
}
