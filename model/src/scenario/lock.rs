//! `[lock]`: a custom lock's steps (design `custom`). Each step is one command or one
//! Lua script with the reply that means success; everything a mistake can hide in is
//! checked here, at load time: unknown keys, a step with both or neither of `command`
//! and `script`, a command the abstract Redis does not implement (also inside a script,
//! from its literal `redis.call('X'` names outside comments), a library the model's Lua
//! does not implement (`struct`, `cmsgpack`), a Lua syntax error (the file line of the
//! script's line), a literal time in a command that is not a whole number of ticks, a
//! missing success reply, a misspelt placeholder.

use std::path::Path;
use std::sync::Arc;

use locklab::design::custom::{misspelt_placeholder, Action, CustomLock, Expected, LockStep};
use locklab::CustomScript;
use toml::de::DeValue;

use super::parse::{Parser, Result};
use super::read::{Entry, Field, Section};
use super::{KeyErrorKind, ScenarioError, ScenarioLock};
use crate::{call, lua};

pub(super) const LOCK_KEYS: &[&str] = &["acquire", "release", "renew", "reenter"];
/// The most steps an acquire may have.
const MAX_ACQUIRE_STEPS: usize = 8;
const ACQUIRE_KEYS: &[&str] = &[
    "command",
    "script",
    "script_file",
    "keys",
    "args",
    "granted",
];
const RELEASE_KEYS: &[&str] = &[
    "command",
    "script",
    "script_file",
    "keys",
    "args",
    "released",
    "released_partly",
];
const REENTER_KEYS: &[&str] = &[
    "command",
    "script",
    "script_file",
    "keys",
    "args",
    "reentered",
];
const RENEW_KEYS: &[&str] = &[
    "command",
    "script",
    "script_file",
    "keys",
    "args",
    "renewed",
    "every",
];

impl Parser<'_> {
    /// `[lock]`, for design `custom`.
    pub(super) fn lock(&self, lock: &Section<'_, '_>, tick_ms: u64) -> Result<ScenarioLock> {
        if lock.table.is_none() {
            return Err(self.err(
                1,
                "lock".into(),
                KeyErrorKind::Missing,
                "design `custom` needs a [lock] table with acquire and release steps",
            ));
        }
        self.check_unknown(lock)?;
        let acquire = self.acquire_steps(lock, tick_ms)?;
        let release_section = self.step_section(lock, "release", "lock.release", RELEASE_KEYS)?;
        let release = self.step(lock, &release_section, "release", "released", tick_ms)?;
        let released_partly = match release_section.get("released_partly") {
            None => None,
            Some(_) => Some(self.success(&release_section, "released_partly")?),
        };
        let (renew, every) = match lock.get("renew") {
            None => (None, None),
            Some(_) => {
                let section = self.step_section(lock, "renew", "lock.renew", RENEW_KEYS)?;
                let renew = self.step(lock, &section, "renew", "renewed", tick_ms)?;
                let every = self.u32_opt(&section, "every")?;
                if let Some(every) = &every {
                    self.at_least(&section, "every", every, 1)?;
                }
                (Some(renew), every.map(|f| f.value))
            }
        };
        let reenter = self.reenter(lock, &acquire, tick_ms)?;
        let refuse = |key: &str, message: String| {
            let line = release_section
                .get(key)
                .map_or(release_section.line, |e| self.line(&e.span()));
            Err(self.err(
                line,
                release_section.dotted(key),
                KeyErrorKind::InvalidValue,
                message,
            ))
        };
        if released_partly.is_some() && reenter.is_none() {
            return refuse(
                "released_partly",
                "released_partly needs a re-entry step (`reenter`): without one a hold is \
                 never one of several"
                    .into(),
            );
        }
        if released_partly.as_ref() == Some(&release.success) {
            return refuse(
                "released_partly",
                format!(
                    "released_partly and released are both {}: the reply must tell a partial \
                     release from the last one",
                    release.success
                ),
            );
        }
        Ok(ScenarioLock {
            lock: CustomLock {
                acquire,
                release,
                released_partly,
                renew,
                reenter,
            },
            every,
        })
    }

    /// `acquire`: one step (a table), or several sent one after another (an array of
    /// tables), each its own round trip.
    fn acquire_steps(&self, lock: &Section<'_, '_>, tick_ms: u64) -> Result<Vec<LockStep>> {
        let Some(entry) = lock.get("acquire") else {
            return Err(self.missing(lock, "acquire", ""));
        };
        let DeValue::Array(items) = entry.get_ref() else {
            let section = self.step_section(lock, "acquire", "lock.acquire", ACQUIRE_KEYS)?;
            return Ok(vec![
                self.step(lock, &section, "acquire", "granted", tick_ms)?
            ]);
        };
        let bad = |message: &str| {
            Err(self.err(
                self.line(&entry.span()),
                lock.dotted("acquire"),
                KeyErrorKind::InvalidValue,
                message.to_string(),
            ))
        };
        if items.is_empty() {
            return bad("an acquire of no step; write at least one");
        }
        if items.len() > MAX_ACQUIRE_STEPS {
            return bad("an acquire of more than 8 steps");
        }
        let mut steps = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let section = self.step_table(lock, "acquire", item, "lock.acquire", ACQUIRE_KEYS)?;
            let name = format!("acquire[{}]", i + 1);
            steps.push(self.step(lock, &section, &name, "granted", tick_ms)?);
        }
        Ok(steps)
    }

    /// `reenter`: a step (`reentered` its success reply), or `"acquire"` for the acquire's
    /// step sent again with the held token.
    fn reenter(
        &self,
        lock: &Section<'_, '_>,
        acquire: &[LockStep],
        tick_ms: u64,
    ) -> Result<Option<LockStep>> {
        let Some(entry) = lock.get("reenter") else {
            return Ok(None);
        };
        if let DeValue::String(word) = entry.get_ref() {
            let bad = |message: String| {
                Err(self.err(
                    self.line(&entry.span()),
                    lock.dotted("reenter"),
                    KeyErrorKind::InvalidValue,
                    message,
                ))
            };
            if word != "acquire" {
                return bad(format!(
                    "`{word}` is not a step; write \"acquire\" (the acquire's step again) or a \
                     step table"
                ));
            }
            let [step] = acquire else {
                return bad("reenter = \"acquire\" needs an acquire of one step".into());
            };
            let mut step = step.clone();
            if let Action::Script { script, .. } = &mut step.action {
                script.name = Arc::from("reenter");
            }
            return Ok(Some(step));
        }
        let section = self.step_section(lock, "reenter", "lock.reenter", REENTER_KEYS)?;
        Ok(Some(self.step(
            lock,
            &section,
            "reenter",
            "reentered",
            tick_ms,
        )?))
    }

    fn step_section<'a, 'i>(
        &self,
        lock: &Section<'a, 'i>,
        key: &str,
        name: &'static str,
        valid: &'static [&'static str],
    ) -> Result<Section<'a, 'i>> {
        let Some(entry) = lock.get(key) else {
            return Err(self.missing(lock, key, ""));
        };
        self.step_table(lock, key, entry, name, valid)
    }

    /// A step's table, its keys checked.
    fn step_table<'a, 'i>(
        &self,
        lock: &Section<'a, 'i>,
        key: &str,
        entry: &'a Entry<'i>,
        name: &'static str,
        valid: &'static [&'static str],
    ) -> Result<Section<'a, 'i>> {
        let DeValue::Table(table) = entry.get_ref() else {
            return Err(self.wrong_type(
                lock,
                key,
                entry,
                "a table ({ command = [...] } or { script = \"...\", keys = [...], args = [...] })",
            ));
        };
        let section = Section {
            name,
            table: Some(table),
            line: self.line(&entry.span()),
            valid,
        };
        self.check_unknown(&section)?;
        Ok(section)
    }

    /// One step: its action and its success reply (key `success`).
    fn step(
        &self,
        lock: &Section<'_, '_>,
        section: &Section<'_, '_>,
        name: &str,
        success: &str,
        tick_ms: u64,
    ) -> Result<LockStep> {
        let command = self.strings(section, "command")?;
        let inline = self.string(section, "script")?;
        let file = self.string(section, "script_file")?;
        let keys = self.strings(section, "keys")?;
        let args = self.strings(section, "args")?;
        let given: Vec<(&str, usize)> = [
            ("command", command.as_ref().map(|c| c.line)),
            ("script", inline.as_ref().map(|s| s.line)),
            ("script_file", file.as_ref().map(|f| f.line)),
        ]
        .into_iter()
        .filter_map(|(key, line)| Some((key, line?)))
        .collect();
        if let [_, .., (key, line)] = given.as_slice() {
            return Err(self.err(
                *line,
                section.dotted(key),
                KeyErrorKind::InvalidValue,
                "a step is one of `command`, `script` and `script_file`, not two",
            ));
        }
        let script = match (inline, file) {
            (Some(script), _) => {
                let first = self.script_first_line(section, script.line);
                self.script_text(section, "script", &script.value, |line| {
                    (first + line - 1, format!("line {line} of the script"))
                })?;
                Some(script)
            }
            (None, Some(file)) => Some(self.script_file(section, &file)?),
            (None, None) => None,
        };
        let action = match (command, script) {
            (Some(command), None) => {
                for (key, field) in [("keys", &keys), ("args", &args)] {
                    if let Some(field) = field {
                        return Err(self.err(
                            field.line,
                            section.dotted(key),
                            KeyErrorKind::InvalidValue,
                            format!("{key} go with a script; a command writes its arguments in `command`"),
                        ));
                    }
                }
                self.command_words(section, &command, tick_ms)?;
                Action::Command(command.value)
            }
            (None, Some(script)) => {
                let mut fields = Vec::new();
                for (key, field) in [("keys", keys), ("args", args)] {
                    let field = field.unwrap_or(Field {
                        value: Vec::new(),
                        line: section.line,
                    });
                    self.placeholders(section, key, &field)?;
                    fields.push(field.value);
                }
                let [keys, args] = <[Vec<String>; 2]>::try_from(fields).expect("two fields");
                Action::Script {
                    script: CustomScript {
                        name: Arc::from(name),
                        text: Arc::from(script.value.as_str()),
                    },
                    keys,
                    args,
                }
            }
            (None, None) => {
                return Err(self.err(
                    section.line,
                    lock.dotted(name),
                    KeyErrorKind::Missing,
                    "a step needs `command = [...]`, `script = \"...\"` or `script_file = \"...\"`",
                ))
            }
            (Some(_), Some(_)) => unreachable!("refused above"),
        };
        let success = self.success(section, success)?;
        Ok(LockStep { action, success })
    }

    /// The error for a required key that is missing, with `hint` appended.
    fn missing(&self, section: &Section<'_, '_>, key: &str, hint: &str) -> ScenarioError {
        match self.required(section, key, None::<Field<()>>) {
            Err(ScenarioError::Key {
                path,
                line,
                key,
                kind,
                message,
            }) => ScenarioError::Key {
                path,
                line,
                key,
                kind,
                message: message + hint,
            },
            Err(other) => other,
            Ok(_) => unreachable!("a missing field is an error"),
        }
    }

    /// An array of strings.
    fn strings(&self, section: &Section<'_, '_>, key: &str) -> Result<Option<Field<Vec<String>>>> {
        let Some(entry) = section.get(key) else {
            return Ok(None);
        };
        let DeValue::Array(items) = entry.get_ref() else {
            return Err(self.wrong_type(section, key, entry, "an array of strings"));
        };
        let mut value = Vec::new();
        for item in items {
            match item.get_ref() {
                DeValue::String(s) => value.push(s.to_string()),
                _ => return Err(self.wrong_type(section, key, item, "an array of strings")),
            }
        }
        Ok(Some(Field {
            value,
            line: self.line(&entry.span()),
        }))
    }

    /// A command: a known name first, placeholders spelt right, literal times whole
    /// ticks.
    fn command_words(
        &self,
        section: &Section<'_, '_>,
        command: &Field<Vec<String>>,
        tick_ms: u64,
    ) -> Result<()> {
        let bad = |message: String| {
            self.err(
                command.line,
                section.dotted("command"),
                KeyErrorKind::InvalidValue,
                message,
            )
        };
        let Some(name) = command.value.first() else {
            return Err(bad(
                "an empty command; write its name first, e.g. [\"SET\", \"{key}\", ...]".into(),
            ));
        };
        if let Some(why) = call::refusal(name) {
            return Err(bad(why));
        }
        for (i, unit_ms) in call::time_arguments(&command.value) {
            let word = &command.value[i];
            let Ok(n) = word.parse::<i64>() else {
                continue;
            };
            let whole = n
                .checked_mul(i64::try_from(unit_ms).unwrap_or(i64::MAX))
                .is_some_and(|ms| ms % i64::try_from(tick_ms).unwrap_or(i64::MAX) == 0);
            if !whole {
                let unit = if unit_ms == 1 { "ms" } else { "s" };
                return Err(bad(format!(
                    "`{} {word}` ({word} {unit}) is not a whole number of ticks of {tick_ms} ms \
                     (timing.tick_ms): the model's clock cannot place that expiry",
                    command.value[i - 1]
                )));
            }
        }
        self.placeholders(section, "command", command)
    }

    /// Every `{word}` is a known placeholder.
    fn placeholders(
        &self,
        section: &Section<'_, '_>,
        key: &str,
        field: &Field<Vec<String>>,
    ) -> Result<()> {
        for s in &field.value {
            if let Some(why) = misspelt_placeholder(s) {
                return Err(self.err(
                    field.line,
                    section.dotted(key),
                    KeyErrorKind::InvalidValue,
                    why,
                ));
            }
        }
        Ok(())
    }

    /// `script_file = "release.lua"`: the file's text, read relative to the scenario
    /// file, checked as an inline script is; errors name the file and its line.
    fn script_file(
        &self,
        section: &Section<'_, '_>,
        file: &Field<String>,
    ) -> Result<Field<String>> {
        let dir = self.path.parent().unwrap_or(Path::new(""));
        let path = dir.join(&file.value);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            self.err(
                file.line,
                section.dotted("script_file"),
                KeyErrorKind::InvalidValue,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        self.script_text(section, "script_file", &text, |line| {
            (file.line, format!("line {line} of {}", file.value))
        })?;
        Ok(Field {
            value: text,
            line: file.line,
        })
    }

    /// A script compiles, names no library the model lacks, and every command it names
    /// literally is implemented. `at` gives, for a line of the script, the scenario
    /// file's line to name and how to name the script's line.
    fn script_text(
        &self,
        section: &Section<'_, '_>,
        key: &str,
        text: &str,
        at: impl Fn(usize) -> (usize, String),
    ) -> Result<()> {
        let refuse = |line: usize, why: String| {
            let (file_line, where_) = at(line);
            self.err(
                file_line,
                section.dotted(key),
                KeyErrorKind::InvalidValue,
                format!("{where_}: {why}"),
            )
        };
        if let Err(e) = lua::check(text) {
            let (file_line, where_) = at(e.line);
            return Err(self.err(
                file_line,
                section.dotted(key),
                KeyErrorKind::InvalidValue,
                format!("Lua syntax error at {where_}: {}", e.message),
            ));
        }
        if let Some((library, line)) = lua::unimplemented_libraries(text).first() {
            return Err(refuse(
                *line,
                format!("the `{library}` library is not implemented by the model's Lua"),
            ));
        }
        for (name, line) in lua::called_commands(text) {
            if let Some(why) = call::refusal(&name) {
                return Err(refuse(line, why));
            }
        }
        Ok(())
    }

    /// The file line of a script's first line: a multi-line string that opens with a
    /// newline (`"""` at the end of the line) starts on the next one.
    fn script_first_line(&self, section: &Section<'_, '_>, line: usize) -> usize {
        let Some(entry) = section.get("script") else {
            return line;
        };
        let raw = &self.text[entry.span()];
        let opens_line = ["\"\"\"\n", "'''\n", "\"\"\"\r\n", "'''\r\n"]
            .iter()
            .any(|open| raw.starts_with(open));
        line + usize::from(opens_line)
    }

    /// The success reply: a string, an integer, or "nil".
    fn success(&self, section: &Section<'_, '_>, key: &str) -> Result<Expected> {
        let Some(entry) = section.get(key) else {
            return Err(self.missing(
                section,
                key,
                "; write the reply that means success: a string (\"OK\"), an integer, or \"nil\"",
            ));
        };
        match entry.get_ref() {
            DeValue::String(s) if s == "nil" => Ok(Expected::Nil),
            DeValue::String(s) => Ok(Expected::Str(s.to_string())),
            DeValue::Integer(int) => i128::from_str_radix(int.as_str(), int.radix())
                .ok()
                .and_then(|n| i64::try_from(n).ok())
                .map(Expected::Int)
                .ok_or_else(|| {
                    self.err(
                        self.line(&entry.span()),
                        section.dotted(key),
                        KeyErrorKind::InvalidValue,
                        format!("`{}` is not a 64-bit integer", int.as_str()),
                    )
                }),
            _ => Err(self.wrong_type(section, key, entry, "a string, an integer or \"nil\"")),
        }
    }
}
