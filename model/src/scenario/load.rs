//! Scenario files and directories of them.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use toml::de::DeTable;

use super::error::{io_error, line_at};
use super::{KeyErrorKind, Scenario, ScenarioError, DEFAULT_DIR};

/// Reads and validates one scenario file ([`Scenario::load`]).
pub(super) fn file(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = fs::read_to_string(path).map_err(|e| io_error(path, &e))?;
    Scenario::parse(&text, path)
}

/// Loads every `*.toml` file directly in `dir` (not recursively), sorted by file
/// name. A directory without any is an error.
pub fn load_dir(dir: impl AsRef<Path>) -> Result<Vec<Scenario>, ScenarioError> {
    let dir = dir.as_ref();
    let entries = fs::read_dir(dir).map_err(|e| io_error(dir, &e))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dir, &e))?;
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "toml") && path.is_file() {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(ScenarioError::NoScenarios {
            path: dir.to_path_buf(),
        });
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    files.iter().map(Scenario::load).collect()
}

/// Loads scenario files and directories (a directory contributes its `*.toml`
/// files, as [`load_dir`]); no paths means [`DEFAULT_DIR`]. The same file given
/// twice is loaded once; two different files with the same `name` are an error.
pub fn load_paths(paths: &[PathBuf]) -> Result<Vec<Scenario>, ScenarioError> {
    let default = [PathBuf::from(DEFAULT_DIR)];
    let paths = if paths.is_empty() {
        &default[..]
    } else {
        paths
    };
    let mut out: Vec<Scenario> = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    for path in paths {
        let meta = fs::metadata(path).map_err(|e| io_error(path, &e))?;
        let found = if meta.is_dir() {
            load_dir(path)?
        } else {
            vec![Scenario::load(path)?]
        };
        for scenario in found {
            let canonical =
                fs::canonicalize(&scenario.path).unwrap_or_else(|_| scenario.path.clone());
            if !seen.insert(canonical) {
                continue;
            }
            if let Some(other) = out.iter().find(|o| o.name == scenario.name) {
                return Err(ScenarioError::Key {
                    line: name_line(&scenario.path),
                    path: scenario.path.clone(),
                    key: "name".to_string(),
                    kind: KeyErrorKind::DuplicateName,
                    message: format!(
                        "scenario `{}` is also defined in {}; names must be unique",
                        scenario.name,
                        other.path.display()
                    ),
                });
            }
            out.push(scenario);
        }
    }
    Ok(out)
}

/// The line of the top-level `name` key in a file that already loaded once.
fn name_line(path: &Path) -> usize {
    let Ok(text) = fs::read_to_string(path) else {
        return 1;
    };
    let Ok(doc) = DeTable::parse(&text) else {
        return 1;
    };
    match doc.get_ref().get_key_value("name") {
        Some((key, _)) => line_at(&text, key.span().start),
        None => 1,
    }
}
