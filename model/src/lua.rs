//! The model's Lua interpreter: Lua 5.1, the version Redis embeds, running a script's
//! text against the abstract Redis with Redis's scripting API and conversions.
//!
//! * `KEYS`, `ARGV`: tables of strings.
//! * `redis.call(name, ...)`: runs the command ([`Exec::call`]); an error reply raises a
//!   Lua error that ends the script with that error. `redis.pcall` returns it as a
//!   table `{err = message}` instead.
//! * `redis.error_reply(msg)` = `{err = msg}`, `redis.status_reply(msg)` = `{ok = msg}`.
//! * Replies to Lua: integer → number, bulk → string, nil → `false`, status → `{ok=..}`,
//!   error → `{err=..}`, array → table. Lua to replies: `nil`/`false` → nil, `true` →
//!   1, numbers → integers (truncated toward zero), strings → bulk, `{ok=..}` → status,
//!   `{err=..}` → error, other tables → arrays up to the first nil.
//!
//! The search runs scripts millions of times, so each thread keeps one Lua state, and
//! compiled chunks cached by their text.

use std::cell::RefCell;
use std::collections::HashMap;

use locklab::Reply;
use mlua::{Function, Lua, MultiValue, Table, Value};

use crate::redis::Exec;

/// The `redis` library, in Lua over one Rust function (`__locklab_call`).
const PRELUDE: &str = r#"
redis = {}
function redis.call(...)
  local r = __locklab_call(...)
  if type(r) == 'table' and r.err ~= nil then error(r.err, 0) end
  return r
end
function redis.pcall(...) return __locklab_call(...) end
function redis.error_reply(msg) return { err = msg } end
function redis.status_reply(msg) return { ok = msg } end
"#;

/// The chunk name in Lua's messages: `script:3: ...`.
const CHUNK: &str = "=script";

struct Interpreter {
    lua: Lua,
    chunks: RefCell<HashMap<String, Function>>,
}

impl Interpreter {
    fn new() -> Interpreter {
        let lua = Lua::new();
        lua.load(PRELUDE)
            .set_name("=prelude")
            .exec()
            .expect("the prelude is valid Lua");
        Interpreter {
            lua,
            chunks: RefCell::new(HashMap::new()),
        }
    }

    fn chunk(&self, text: &str) -> mlua::Result<Function> {
        if let Some(f) = self.chunks.borrow().get(text) {
            return Ok(f.clone());
        }
        let f = self.lua.load(text).set_name(CHUNK).into_function()?;
        self.chunks.borrow_mut().insert(text.to_string(), f.clone());
        Ok(f)
    }
}

/// A command a script called (its words) and the reply it got.
pub type ScriptCall = (Vec<String>, Reply);

thread_local! {
    static INTERPRETER: Interpreter = Interpreter::new();
    /// While [`recording`] runs: every command a script calls, with its reply.
    static RECORDING: RefCell<Option<Vec<ScriptCall>>> = const { RefCell::new(None) };
}

/// Runs `f` and returns, with its result, every command the scripts it ran called
/// (`redis.call`, `redis.pcall`), in order, each with its reply: what a trace shows
/// inside an `EVALSHA`. The search never records.
pub fn recording<T>(f: impl FnOnce() -> T) -> (T, Vec<ScriptCall>) {
    let outer = RECORDING.with_borrow_mut(|r| r.replace(Vec::new()));
    let result = f();
    let calls = RECORDING.with_borrow_mut(|r| std::mem::replace(r, outer));
    (result, calls.unwrap_or_default())
}

/// Whether [`recording`] is running on this thread.
pub(crate) fn is_recording() -> bool {
    RECORDING.with_borrow(Option::is_some)
}

/// A Lua syntax error: the line inside the script and Lua's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line in the script's text.
    pub line: usize,
    /// Lua's message without the chunk and line prefix.
    pub message: String,
}

/// Compile `text` without running it.
pub fn check(text: &str) -> Result<(), SyntaxError> {
    INTERPRETER.with(|i| match i.chunk(text) {
        Ok(_) => Ok(()),
        Err(e) => Err(syntax_error(&e)),
    })
}

fn syntax_error(e: &mlua::Error) -> SyntaxError {
    let text = match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    };
    // "script:3: 'end' expected near '<eof>'"
    let rest = text.strip_prefix("script:").unwrap_or(&text);
    let (line, message) = match rest.split_once(':') {
        Some((n, m)) => match n.parse() {
            Ok(n) => (n, m.trim().to_string()),
            Err(_) => (1, text.clone()),
        },
        None => (1, text.clone()),
    };
    SyntaxError { line, message }
}

/// The commands a script names literally, `redis.call('get', ...)` or
/// `redis.pcall("SET", ...)`, each with its 1-based line in the script.
pub fn called_commands(text: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for prefix in ["redis.call", "redis.pcall"] {
            let mut rest = line;
            while let Some(at) = rest.find(prefix) {
                rest = &rest[at + prefix.len()..];
                let after = rest.trim_start();
                let Some(after) = after.strip_prefix('(') else {
                    continue;
                };
                let after = after.trim_start();
                let Some(quote) = after.chars().next().filter(|c| *c == '\'' || *c == '"') else {
                    continue;
                };
                if let Some(end) = after[1..].find(quote) {
                    found.push((after[1..=end].to_string(), i + 1));
                }
            }
        }
    }
    found
}

/// Run `text` with `KEYS` and `ARGV` against `exec`, as Redis's `EVAL` does.
pub fn eval(exec: &mut Exec<'_>, text: &str, keys: &[String], args: &[String]) -> Reply {
    INTERPRETER.with(|i| {
        let chunk = match i.chunk(text) {
            Ok(f) => f,
            Err(e) => return Reply::Error(format!("ERR Error compiling script {e}")),
        };
        let lua = &i.lua;
        let ran = lua.scope(|scope| {
            let call = scope.create_function_mut(|lua, words: MultiValue| {
                let words = match command_words(&words) {
                    Ok(w) => w,
                    Err(e) => return to_lua(lua, &Reply::Error(e)),
                };
                let reply = exec.call(&words);
                RECORDING.with_borrow_mut(|r| {
                    if let Some(calls) = r {
                        calls.push((words, reply.clone()));
                    }
                });
                to_lua(lua, &reply)
            })?;
            let globals = lua.globals();
            globals.set("__locklab_call", call)?;
            globals.set(
                "KEYS",
                lua.create_sequence_from(keys.iter().map(String::as_str))?,
            )?;
            globals.set(
                "ARGV",
                lua.create_sequence_from(args.iter().map(String::as_str))?,
            )?;
            let value: Value = chunk.call(())?;
            Ok(from_lua(&value))
        });
        ran.unwrap_or_else(|e| Reply::Error(runtime_error(&e)))
    })
}

/// A Lua error as Redis's error reply: `redis.call`'s error as it was (`WRONGTYPE ...`),
/// anything else as `ERR` and Lua's message.
fn runtime_error(e: &mlua::Error) -> String {
    let message = match e {
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => return runtime_error(cause),
        other => other.to_string(),
    };
    let message = message.lines().next().unwrap_or_default().to_string();
    let coded = message
        .split_whitespace()
        .next()
        .is_some_and(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase()));
    if coded {
        message
    } else {
        format!("ERR {message}")
    }
}

/// `redis.call`'s arguments as words: strings as they are, numbers written as Lua
/// writes integers.
fn command_words(values: &MultiValue) -> Result<Vec<String>, String> {
    let bad = || "ERR Lua redis lib command arguments must be strings or integers".to_string();
    if values.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call".into());
    }
    values
        .iter()
        .map(|v| match v {
            Value::String(s) => Ok(s.to_string_lossy()),
            Value::Integer(n) => Ok(n.to_string()),
            Value::Number(n) if n.fract() == 0.0 && n.abs() < 1e15 => Ok(format!("{n:.0}")),
            Value::Number(n) => Ok(n.to_string()),
            _ => Err(bad()),
        })
        .collect()
}

/// A reply as the script sees it.
fn to_lua(lua: &Lua, reply: &Reply) -> mlua::Result<Value> {
    Ok(match reply {
        Reply::Nil => Value::Boolean(false),
        Reply::Ok => Value::Table(status(lua, "ok", "OK")?),
        Reply::Int(n) => Value::Number(int_to_number(*n)),
        Reply::Bulk(s) => Value::String(lua.create_string(s)?),
        Reply::Error(e) => Value::Table(status(lua, "err", e)?),
        Reply::Array(items) => {
            let t = lua.create_table()?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
    })
}

fn status(lua: &Lua, field: &str, text: &str) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(field, text)?;
    Ok(t)
}

/// Lua 5.1 numbers are doubles; a reply's integer becomes the nearest one, as in Redis.
#[allow(clippy::cast_precision_loss)]
fn int_to_number(n: i64) -> f64 {
    n as f64
}

/// The script's value as Redis replies it.
fn from_lua(value: &Value) -> Reply {
    match value {
        Value::Nil | Value::Boolean(false) => Reply::Nil,
        Value::Boolean(true) => Reply::Int(1),
        Value::Integer(n) => Reply::Int(*n),
        Value::Number(n) => Reply::Int(truncate(*n)),
        Value::String(s) => Reply::Bulk(s.to_string_lossy()),
        Value::Table(t) => {
            if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
                return Reply::Error(e.to_string_lossy());
            }
            if let Ok(Value::String(ok)) = t.raw_get::<Value>("ok") {
                let ok = ok.to_string_lossy();
                return if ok == "OK" {
                    Reply::Ok
                } else {
                    Reply::Bulk(ok)
                };
            }
            let mut items = Vec::new();
            for i in 1.. {
                match t.raw_get::<Value>(i) {
                    Ok(Value::Nil) | Err(_) => break,
                    Ok(v) => items.push(from_lua(&v)),
                }
            }
            Reply::Array(items)
        }
        _ => Reply::Nil,
    }
}

/// A double toward zero as Redis converts a Lua number (saturating outside i64).
#[allow(clippy::cast_possible_truncation)]
fn truncate(n: f64) -> i64 {
    // `as` saturates and maps NaN to 0; the truncation toward zero is Redis's rule.
    n.trunc() as i64
}

#[cfg(test)]
mod tests;
