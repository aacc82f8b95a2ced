//! Where the commands write: report files (their directory created) and the trace of
//! each violated property.

use std::fs;
use std::path::{Path, PathBuf};

use locklab_model::scenario::Property;

use crate::Failure;

/// `reports/traces/<scenario>.<property>.json`.
pub fn trace_path(reports: &Path, scenario: &str, property: Property) -> PathBuf {
    reports
        .join("traces")
        .join(format!("{scenario}.{}.json", property.as_str()))
}

/// A path as a command to paste should show it: relative to the working directory when
/// it lies under it (the gallery's commands then read `scenarios/X.toml`, run from the
/// repository root), else as given.
pub fn shown_path(path: &Path) -> PathBuf {
    std::env::current_dir()
        .ok()
        .filter(|_| path.is_absolute())
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
}

/// `locklab explain <path> --property <p>`: the command that narrates one property's
/// counterexample, runnable as printed (a path, quoted when a shell would split it).
pub fn explain_command(scenario: &Path, property: Property) -> String {
    let path = shown_path(scenario).display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@".contains(c);
    let path = if path.chars().all(plain) {
        path
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    };
    format!("locklab explain {path} --property {}", property.as_str())
}

/// Writes a report file, creating its directory.
pub fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| Failure::io(dir, "cannot create", e))?;
    }
    fs::write(path, text).map_err(|e| Failure::io(path, "cannot write", e))
}
