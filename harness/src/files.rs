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

/// Writes a report file, creating its directory.
pub fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| Failure::io(dir, "cannot create", e))?;
    }
    fs::write(path, text).map_err(|e| Failure::io(path, "cannot write", e))
}
