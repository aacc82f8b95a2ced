//! locklab's own Redis commands and replies.
//!
//! The designs speak these types, never redis-rs types: the async driver translates them
//! to real commands, the model executes them against its abstract Redis.

use std::fmt;

use crate::script::Script;

/// A Redis command a design asks to send. Times are milliseconds on the server's clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// `SETNX key value`: 1 when set, 0 when the key exists.
    SetNx { key: String, value: String },
    /// `SET key value NX PX ms`: `+OK` when set, nil when the key exists.
    SetNxPx { key: String, value: String, px: u64 },
    /// `GET key`: the value or nil.
    Get { key: String },
    /// `EXISTS key`: 1 when the key exists, else 0.
    Exists { key: String },
    /// `SET key value PX ms`: `+OK`; always sets, whoever had the key.
    SetPx { key: String, value: String, px: u64 },
    /// `GETSET key value`: the old value or nil; always sets (and clears any expiry).
    GetSet { key: String, value: String },
    /// `DEL key`: the number of keys removed.
    Del { key: String },
    /// `PEXPIRE key ms`: 1 when the key exists, else 0.
    PExpire { key: String, ms: u64 },
    /// `INCR key`: the new value.
    Incr { key: String },
    /// `EVALSHA`/`EVAL` of one of locklab's scripts.
    Eval {
        script: Script,
        keys: Vec<String>,
        args: Vec<String>,
    },
    /// `WAIT replicas timeout`: how many replicas acknowledged all writes so far.
    Wait { replicas: u32, timeout_ms: u64 },
    /// A command given word by word, as a custom lock's `command = [...]` writes it
    /// (`["SET", "lock", "tok", "NX", "PX", "3000"]`); the first word is the name and
    /// the second the key. The model runs it through the same dispatcher as a script's
    /// `redis.call`.
    Call { args: Vec<String> },
}

/// Commands (upper case) that only read: not replicated, not a write of a script.
pub const READ_ONLY_COMMANDS: &[&str] = &["GET", "EXISTS", "PTTL", "TTL", "HGET", "HEXISTS"];

impl Command {
    /// Whether the command changes data (and so is replicated).
    pub fn is_write(&self) -> bool {
        match self {
            Command::Get { .. } | Command::Exists { .. } | Command::Wait { .. } => false,
            Command::Eval { script, .. } => script.is_write(),
            Command::Call { args } => args
                .first()
                .is_none_or(|name| !READ_ONLY_COMMANDS.contains(&name.to_uppercase().as_str())),
            _ => true,
        }
    }

    /// The keys the command touches.
    pub fn keys(&self) -> Vec<&str> {
        match self {
            Command::SetNx { key, .. }
            | Command::SetNxPx { key, .. }
            | Command::Get { key }
            | Command::Exists { key }
            | Command::SetPx { key, .. }
            | Command::GetSet { key, .. }
            | Command::Del { key }
            | Command::PExpire { key, .. }
            | Command::Incr { key } => vec![key.as_str()],
            Command::Eval { keys, .. } => keys.iter().map(String::as_str).collect(),
            Command::Wait { .. } => Vec::new(),
            Command::Call { args } => args.get(1).map(String::as_str).into_iter().collect(),
        }
    }

    /// The command as an argument vector, the way redis-cli would type it.
    pub fn args(&self) -> Vec<String> {
        let s = |x: &str| x.to_string();
        match self {
            Command::SetNx { key, value } => vec![s("SETNX"), key.clone(), value.clone()],
            Command::SetNxPx { key, value, px } => vec![
                s("SET"),
                key.clone(),
                value.clone(),
                s("NX"),
                s("PX"),
                px.to_string(),
            ],
            Command::Get { key } => vec![s("GET"), key.clone()],
            Command::Exists { key } => vec![s("EXISTS"), key.clone()],
            Command::SetPx { key, value, px } => vec![
                s("SET"),
                key.clone(),
                value.clone(),
                s("PX"),
                px.to_string(),
            ],
            Command::GetSet { key, value } => vec![s("GETSET"), key.clone(), value.clone()],
            Command::Del { key } => vec![s("DEL"), key.clone()],
            Command::PExpire { key, ms } => vec![s("PEXPIRE"), key.clone(), ms.to_string()],
            Command::Incr { key } => vec![s("INCR"), key.clone()],
            Command::Eval { script, keys, args } => {
                let mut v = vec![
                    s("EVALSHA"),
                    script.name().to_string(),
                    keys.len().to_string(),
                ];
                v.extend(keys.iter().cloned());
                v.extend(args.iter().cloned());
                v
            }
            Command::Wait {
                replicas,
                timeout_ms,
            } => vec![s("WAIT"), replicas.to_string(), timeout_ms.to_string()],
            Command::Call { args } => args.clone(),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.args().join(" "))
    }
}

/// A reply from Redis, reduced to what the designs look at.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reply {
    /// The nil bulk string (or nil from a script).
    Nil,
    /// A status reply such as `+OK`.
    Ok,
    /// An integer reply.
    Int(i64),
    /// A bulk string.
    Bulk(String),
    /// An error reply, e.g. `WRONGTYPE ...`.
    Error(String),
    /// An array (a script that returns a Lua table).
    Array(Vec<Reply>),
}

impl Reply {
    /// The integer, if the reply is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Reply::Int(i) => Some(*i),
            Reply::Bulk(s) => s.parse().ok(),
            _ => None,
        }
    }
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Nil => f.write_str("(nil)"),
            Reply::Ok => f.write_str("OK"),
            Reply::Int(i) => write!(f, "(integer) {i}"),
            Reply::Bulk(s) => write!(f, "\"{s}\""),
            Reply::Error(e) => write!(f, "(error) {e}"),
            Reply::Array(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
        }
    }
}
