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
        let mut v = Vec::new();
        self.each_arg(|arg| v.push(arg.to_string()));
        v
    }

    /// Each argument in order, as [`args`](Self::args) gives them, without building
    /// strings: the driver writes them straight into the request. `EVALSHA`'s second
    /// argument is the script's name here; the driver sends its SHA1 instead.
    pub fn each_arg(&self, mut f: impl FnMut(Arg<'_>)) {
        use Arg::{Number, Text};
        match self {
            Command::SetNx { key, value } => [Text("SETNX"), Text(key), Text(value)]
                .into_iter()
                .for_each(f),
            Command::SetNxPx { key, value, px } => [
                Text("SET"),
                Text(key),
                Text(value),
                Text("NX"),
                Text("PX"),
                Number(*px),
            ]
            .into_iter()
            .for_each(f),
            Command::Get { key } => [Text("GET"), Text(key)].into_iter().for_each(f),
            Command::Exists { key } => [Text("EXISTS"), Text(key)].into_iter().for_each(f),
            Command::SetPx { key, value, px } => {
                [Text("SET"), Text(key), Text(value), Text("PX"), Number(*px)]
                    .into_iter()
                    .for_each(f)
            }
            Command::GetSet { key, value } => [Text("GETSET"), Text(key), Text(value)]
                .into_iter()
                .for_each(f),
            Command::Del { key } => [Text("DEL"), Text(key)].into_iter().for_each(f),
            Command::PExpire { key, ms } => [Text("PEXPIRE"), Text(key), Number(*ms)]
                .into_iter()
                .for_each(f),
            Command::Incr { key } => [Text("INCR"), Text(key)].into_iter().for_each(f),
            Command::Eval { script, keys, args } => {
                f(Text("EVALSHA"));
                f(Text(script.name()));
                f(Number(u64::try_from(keys.len()).unwrap_or(u64::MAX)));
                keys.iter().chain(args).for_each(|a| f(Text(a)));
            }
            Command::Wait {
                replicas,
                timeout_ms,
            } => [
                Text("WAIT"),
                Number(u64::from(*replicas)),
                Number(*timeout_ms),
            ]
            .into_iter()
            .for_each(f),
            Command::Call { args } => args.iter().for_each(|a| f(Text(a))),
        }
    }
}

/// One argument of a [`Command`] as [`Command::each_arg`] walks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg<'a> {
    /// A name, key or value.
    Text(&'a str),
    /// A number, sent in decimal.
    Number(u64),
}

impl fmt::Display for Arg<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Text(s) => f.write_str(s),
            Arg::Number(n) => write!(f, "{n}"),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_are_the_command_as_typed() {
        let key = || "lock".to_string();
        let cases = [
            (
                Command::SetNxPx {
                    key: key(),
                    value: "t:1".into(),
                    px: 3000,
                },
                "SET lock t:1 NX PX 3000",
            ),
            (
                Command::SetPx {
                    key: key(),
                    value: "t".into(),
                    px: 5,
                },
                "SET lock t PX 5",
            ),
            (
                Command::SetNx {
                    key: key(),
                    value: "9".into(),
                },
                "SETNX lock 9",
            ),
            (
                Command::GetSet {
                    key: key(),
                    value: "9".into(),
                },
                "GETSET lock 9",
            ),
            (Command::Get { key: key() }, "GET lock"),
            (Command::Exists { key: key() }, "EXISTS lock"),
            (Command::Del { key: key() }, "DEL lock"),
            (Command::Incr { key: key() }, "INCR lock"),
            (Command::PExpire { key: key(), ms: 7 }, "PEXPIRE lock 7"),
            (
                Command::Wait {
                    replicas: 2,
                    timeout_ms: 100,
                },
                "WAIT 2 100",
            ),
            (
                Command::Eval {
                    script: Script::CompareAndDelete,
                    keys: vec![key()],
                    args: vec!["t:1".into()],
                },
                "EVALSHA compare-and-delete 1 lock t:1",
            ),
        ];
        for (command, typed) in cases {
            assert_eq!(command.to_string(), typed);
            let mut walked = Vec::new();
            command.each_arg(|a| walked.push(a.to_string()));
            assert_eq!(walked, command.args());
        }
    }
}
