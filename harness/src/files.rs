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
    let path = shell_word(&shown_path(scenario).display().to_string());
    format!("locklab explain {path} --property {}", property.as_str())
}

/// `s` as one shell word: as it is when no shell would split or expand it, else in
/// single quotes. Every command line a command prints to be pasted goes through it.
pub fn shell_word(s: &str) -> String {
    let plain = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c));
    if plain && !s.is_empty() {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Writes a report file, creating its directory.
pub fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| Failure::io(dir, "cannot create", e))?;
    }
    fs::write(path, text).map_err(|e| Failure::io(path, "cannot write", e))
}
