//! What can be wrong with a scenario, as one line naming the file, the line and the key.

use std::path::{Path, PathBuf};

/// What is wrong with a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyErrorKind {
    /// A key this table does not have.
    Unknown,
    /// A value of the wrong TOML type.
    WrongType,
    /// A required key is absent.
    Missing,
    /// `design` is not a known design id.
    UnknownDesign,
    /// A value out of range or inconsistent with another key.
    InvalidValue,
    /// `name` differs from the file stem.
    NameMismatch,
    /// Two loaded files use the same `name`.
    DuplicateName,
}

/// An error loading scenarios. `Display` is always one line that starts with
/// the file (and, for problems inside a file, the 1-based line).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    /// The file or directory cannot be read.
    #[error("{}: cannot read: {message}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// A directory holds no `*.toml` file.
    #[error("{}: no scenario files (*.toml) in this directory", path.display())]
    NoScenarios {
        /// The directory.
        path: PathBuf,
    },
    /// The file is not valid TOML.
    #[error("{}:{line}:{column}: not valid TOML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A key is unknown, mistyped, missing or has an impossible value.
    #[error("{}:{line}: key `{key}`: {message}", path.display())]
    Key {
        /// The file.
        path: PathBuf,
        /// 1-based line of the key (for a missing key: its table's header, or 1).
        line: usize,
        /// Dotted key, e.g. `timing.ttl`.
        key: String,
        /// What kind of problem.
        kind: KeyErrorKind,
        /// What is wrong and, where possible, what to write instead.
        message: String,
    },
}

impl ScenarioError {
    /// The file or directory the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ScenarioError::Io { path, .. }
            | ScenarioError::NoScenarios { path }
            | ScenarioError::Syntax { path, .. }
            | ScenarioError::Key { path, .. } => path,
        }
    }

    /// The 1-based line, for errors inside a file.
    pub fn line(&self) -> Option<usize> {
        match self {
            ScenarioError::Syntax { line, .. } | ScenarioError::Key { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// The dotted key, for errors about a key.
    pub fn key(&self) -> Option<&str> {
        match self {
            ScenarioError::Key { key, .. } => Some(key),
            _ => None,
        }
    }

    /// The kind of key error, for errors about a key.
    pub fn kind(&self) -> Option<KeyErrorKind> {
        match self {
            ScenarioError::Key { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

pub(super) fn io_error(path: &Path, e: &std::io::Error) -> ScenarioError {
    ScenarioError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// 1-based line of a byte offset.
pub(super) fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// 1-based column (in characters) of a byte offset.
pub(super) fn column_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    let bytes = &text.as_bytes()[..end];
    let start = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    String::from_utf8_lossy(&bytes[start..]).chars().count() + 1
}
