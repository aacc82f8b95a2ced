//! The model's Lua interpreter: Lua 5.1, the version Redis embeds, running a script's
//! text against the abstract Redis in the environment Redis 7 gives it.
//!
//! * Globals: `KEYS`, `ARGV` (tables of strings), the base functions Redis keeps
//!   (`assert`, `error`, `pcall`, `xpcall`, `type`, `tostring`, `tonumber`, `pairs`,
//!   `ipairs`, `next`, `select`, `unpack`, `rawget`, `rawset`, `rawequal`,
//!   `getmetatable`, `setmetatable`, `load`, `loadstring`, `collectgarbage`, `gcinfo`,
//!   `_VERSION`, `_G`), the `string`, `table`, `math`, `coroutine`, `bit` (`lua/bit.rs`) and
//!   `cjson` (`lua/cjson.rs`) libraries and `redis`. No `os`, `io`, `print`, `loadfile`,
//!   `dofile`, `debug`. `struct` and `cmsgpack` exist but are not implemented: the
//!   scenario reader refuses a script that names them, and a run that reaches them is
//!   unmodelled ([`Exec::unmodelled`]).
//! * As in Redis 7 the globals and the libraries are read-only: writing a global (also
//!   with `rawset`) fails with "Attempt to modify a readonly table", reading a missing
//!   one with "Script attempted to access nonexistent global variable". So a run keeps
//!   nothing for the next.
//! * `redis.call(name, ...)`: runs the command ([`Exec::call`]); an error reply raises a
//!   Lua error that ends the script with that error. `redis.pcall` returns it as a
//!   table `{err = message}` instead. `redis.error_reply(msg)` = `{err = msg}`,
//!   `redis.status_reply(msg)` = `{ok = msg}`, `redis.log(level, ...)` (checked, then
//!   dropped) with `LOG_DEBUG` .. `LOG_WARNING`, `redis.sha1hex`, `redis.setresp(2|3)`,
//!   `redis.replicate_commands()` (true), `redis.set_repl(flags)` with `REPL_*`: the
//!   model replicates every write, so flags without `REPL_REPLICA` are unmodelled.
//! * Replies to Lua: integer → number, bulk → string, nil → `false` (`nil` after
//!   `setresp(3)`), status → `{ok=..}`, error → `{err=..}`, array → table (`HGETALL`
//!   after `setresp(3)`: `{map = {field = value}}`). Lua to replies: `nil`/`false` → nil,
//!   `true` → 1, numbers → integers (truncated toward zero), strings → bulk, `{ok=..}` →
//!   status, `{err=..}` → error, other tables → arrays up to the first nil.
//!
//! The search runs scripts millions of times, so each thread keeps one Lua state, and
//! compiled chunks cached by their text.

mod bit;
mod cjson;
mod scan;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use locklab::Reply;
use mlua::{Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};

use crate::redis::Exec;

pub use scan::{called_commands, literal_word, unimplemented_libraries};

/// Redis's scripting environment, in Lua, built once per interpreter from the full
/// globals. Takes the `hook` table (Rust's side: `call`, `unmodelled`, `sha1hex`, `resp`)
/// and the `run` table (this run's `KEYS` and `ARGV`); returns the environment every
/// script runs in.
const ENVIRONMENT: &str = r#"
local hook, run, bit, cjson = ...
local G = _G
local error, type, select, tostring = error, type, select, tostring
local rawset, setmetatable, setfenv = rawset, setmetatable, setfenv
local readonly = {}
local function refuse() error('Attempt to modify a readonly table', 2) end
local function protect(t)
  local proxy = setmetatable({}, { __index = t, __newindex = refuse, __metatable = false })
  readonly[proxy] = true
  return proxy
end
local function unimplemented(name)
  return setmetatable({}, { __index = function(_, k)
    hook.unmodelled('the ' .. name .. ' library (' .. name .. '.' .. tostring(k) .. ')')
  end, __newindex = refuse, __metatable = false })
end

local redis = {
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
  REDIS_VERSION = '7.0.15', REDIS_VERSION_NUM = 0x00070f,
}
function redis.call(...)
  local r = hook.call(...)
  if type(r) == 'table' and r.err ~= nil then error(r.err, 0) end
  return r
end
function redis.pcall(...) return hook.call(...) end
function redis.error_reply(msg) return { err = msg } end
function redis.status_reply(msg) return { ok = msg } end
function redis.log(level, ...)
  if select('#', ...) < 1 then error('redis.log() requires two arguments or more.', 0) end
  if type(level) ~= 'number' then error('First argument must be a number (log level).', 0) end
  if level < 0 or level > 3 then error('Invalid debug level.', 0) end
end
function redis.sha1hex(...)
  if select('#', ...) ~= 1 then error('wrong number of arguments', 0) end
  return hook.sha1hex(tostring((...)))
end
function redis.setresp(...)
  if select('#', ...) ~= 1 then error('redis.setresp() requires one argument.', 0) end
  local v = ...
  if v ~= 2 and v ~= 3 then error('ERR RESP version must be 2 or 3.', 0) end
  hook.resp = v
end
function redis.replicate_commands() return true end
function redis.set_repl(...)
  if select('#', ...) ~= 1 then error('redis.set_repl() requires one argument.', 0) end
  local flags = ...
  if type(flags) ~= 'number' or flags < 0 or flags > 3 then
    error('Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.', 0)
  end
  if flags < 2 then
    hook.unmodelled('redis.set_repl without REPL_REPLICA (the model replicates every write)')
  end
end

local env
local base = {}
for _, name in ipairs({ 'assert', 'collectgarbage', 'error', 'gcinfo', 'getmetatable',
    'ipairs', 'next', 'pairs', 'pcall', 'rawequal', 'rawget', 'select', 'tonumber',
    'tostring', 'type', 'unpack', 'xpcall', '_VERSION' }) do
  base[name] = G[name]
end
for _, name in ipairs({ 'string', 'table', 'math', 'coroutine' }) do
  base[name] = protect(G[name])
end
base.bit = protect(bit)
base.cjson = protect(cjson)
base.redis = protect(redis)
base.struct = unimplemented('struct')
base.cmsgpack = unimplemented('cmsgpack')
function base.rawset(t, k, v)
  if t == env or readonly[t] then error('Attempt to modify a readonly table', 0) end
  return rawset(t, k, v)
end
function base.setmetatable(t, m)
  if t == env or readonly[t] then error('Attempt to modify a readonly table', 0) end
  return setmetatable(t, m)
end
-- Chunks a script compiles run in its environment too.
local function confined(f, e)
  if f then setfenv(f, env) end
  return f, e
end
function base.loadstring(...) return confined(G.loadstring(...)) end
function base.load(...) return confined(G.load(...)) end

env = setmetatable({}, {
  __index = function(_, k)
    local v = run[k]
    if v ~= nil then return v end
    v = base[k]
    if v ~= nil then return v end
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
  end,
  __newindex = refuse,
  __metatable = false,
})
base._G = env
return env
"#;

/// The chunk name in Lua's messages, Redis's: `user_script:3: ...`.
const CHUNK: &str = "=user_script";
const CHUNK_PREFIX: &str = "user_script:";

struct Interpreter {
    lua: Lua,
    /// Rust's side of the environment: `call`, `unmodelled`, `sha1hex`, `resp`.
    hook: Table,
    /// `KEYS` and `ARGV` of the running script.
    run: Table,
    /// The read-only environment every script runs in.
    env: Table,
    chunks: RefCell<HashMap<String, Function>>,
}

impl Interpreter {
    fn new() -> Interpreter {
        // Lua 5.1's base library holds `coroutine`.
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::default()).expect("Lua's standard libraries");
        let build = || -> mlua::Result<(Table, Table, Table)> {
            let hook = lua.create_table()?;
            hook.set(
                "sha1hex",
                lua.create_function(|_, s: mlua::LuaString| {
                    Ok(sha1_smol::Sha1::from(&*s.as_bytes()).digest().to_string())
                })?,
            )?;
            let run = lua.create_table()?;
            let env: Table = lua.load(ENVIRONMENT).set_name("=environment").call((
                hook.clone(),
                run.clone(),
                bit::library(&lua)?,
                cjson::library(&lua)?,
            ))?;
            Ok((hook, run, env))
        };
        let (hook, run, env) = build().expect("the scripting environment is valid Lua");
        Interpreter {
            lua,
            hook,
            run,
            env,
            chunks: RefCell::new(HashMap::new()),
        }
    }

    fn chunk(&self, text: &str) -> mlua::Result<Function> {
        if let Some(f) = self.chunks.borrow().get(text) {
            return Ok(f.clone());
        }
        let f = self
            .lua
            .load(text)
            .set_name(CHUNK)
            .set_environment(self.env.clone())
            .into_function()?;
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
    // "user_script:3: 'end' expected near '<eof>'"
    let rest = text.strip_prefix(CHUNK_PREFIX).unwrap_or(&text);
    let (line, message) = match rest.split_once(':') {
        Some((n, m)) => match n.parse() {
            Ok(n) => (n, m.trim().to_string()),
            Err(_) => (1, text.clone()),
        },
        None => (1, text.clone()),
    };
    SyntaxError { line, message }
}

/// Run `text` with `KEYS` and `ARGV` against `exec`, as Redis's `EVAL` does. A run
/// that fails sets [`Exec::script_line`] to the line it failed at; one that reaches
/// something the model does not implement stops there, with [`Exec::unmodelled`] set.
pub fn eval(exec: &mut Exec<'_>, text: &str, keys: &[String], args: &[String]) -> Reply {
    INTERPRETER.with(|i| {
        let chunk = match i.chunk(text) {
            Ok(f) => f,
            Err(e) => return Reply::Error(format!("ERR Error compiling script {e}")),
        };
        let lua = &i.lua;
        // The script's line of the last `redis.call`: where its error is raised.
        let call_line = Cell::new(None);
        let exec = RefCell::new(exec);
        let ran = lua.scope(|scope| {
            let call = scope.create_function(|lua, words: MultiValue| {
                call_line.set(script_line(lua));
                let words = match command_words(&words) {
                    Ok(w) => w,
                    Err(e) => return to_lua(lua, &Reply::Error(e), false),
                };
                let mut exec = exec.borrow_mut();
                let reply = exec.call(&words);
                if let Some(what) = &exec.unmodelled {
                    return Err(mlua::Error::RuntimeError(what.clone()));
                }
                RECORDING.with_borrow_mut(|r| {
                    if let Some(calls) = r {
                        calls.push((words.clone(), reply.clone()));
                    }
                });
                let resp3 = i.hook.raw_get::<Option<i64>>("resp")? == Some(3);
                if resp3 && words[0].eq_ignore_ascii_case("hgetall") {
                    return hash_map(lua, &reply);
                }
                to_lua(lua, &reply, resp3)
            })?;
            let unmodelled = scope.create_function(|lua, what: String| {
                call_line.set(script_line(lua));
                let message = format!("a script uses {what}, which the model does not implement");
                exec.borrow_mut().unmodelled = Some(message.clone());
                Err::<(), _>(mlua::Error::RuntimeError(message))
            })?;
            i.hook.raw_set("call", call)?;
            i.hook.raw_set("unmodelled", unmodelled)?;
            i.hook.raw_set("resp", 2)?;
            i.run.raw_set(
                "KEYS",
                lua.create_sequence_from(keys.iter().map(String::as_str))?,
            )?;
            i.run.raw_set(
                "ARGV",
                lua.create_sequence_from(args.iter().map(String::as_str))?,
            )?;
            let value: Value = chunk.call(())?;
            Ok(from_lua(&value))
        });
        let exec = exec.into_inner();
        ran.unwrap_or_else(|e| {
            let message = runtime_error(&e);
            exec.script_line = error_line(&message).or(call_line.get());
            Reply::Error(message)
        })
    })
}

/// The line of the script being run, from the innermost frame of its chunk.
fn script_line(lua: &Lua) -> Option<usize> {
    (1..8).find_map(|level| {
        lua.inspect_stack(level, |d| {
            let source = d.source();
            (source.short_src.as_deref() == Some("user_script"))
                .then(|| d.current_line())
                .flatten()
        })
        .flatten()
    })
}

/// The line in an error message Lua raised in the script (`ERR user_script:3: ...`).
fn error_line(message: &str) -> Option<usize> {
    let rest = message.strip_prefix("ERR ").unwrap_or(message);
    let rest = rest.strip_prefix(CHUNK_PREFIX)?;
    rest.split_once(':')?.0.parse().ok()
}

/// `HGETALL`'s reply after `redis.setresp(3)`: `{map = {field = value}}`.
fn hash_map(lua: &Lua, reply: &Reply) -> mlua::Result<Value> {
    let Reply::Array(items) = reply else {
        return to_lua(lua, reply, true);
    };
    let map = lua.create_table()?;
    for pair in items.chunks(2) {
        if let [Reply::Bulk(f), Reply::Bulk(v)] = pair {
            map.raw_set(f.as_str(), v.as_str())?;
        }
    }
    let t = lua.create_table()?;
    t.raw_set("map", map)?;
    Ok(Value::Table(t))
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

/// A reply as the script sees it (`resp3`: after `redis.setresp(3)`).
fn to_lua(lua: &Lua, reply: &Reply, resp3: bool) -> mlua::Result<Value> {
    Ok(match reply {
        Reply::Nil if resp3 => Value::Nil,
        Reply::Nil => Value::Boolean(false),
        Reply::Ok => Value::Table(status(lua, "ok", "OK")?),
        Reply::Int(n) => Value::Number(int_to_number(*n)),
        Reply::Bulk(s) => Value::String(lua.create_string(s)?),
        Reply::Error(e) => Value::Table(status(lua, "err", e)?),
        Reply::Array(items) => {
            let t = lua.create_table()?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item, resp3)?)?;
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
