//! Redis commands by name, as a script's `redis.call` and a custom lock's
//! `command = [...]` give them: the subset of Redis the abstract node implements, with
//! Redis's replies and errors.
//!
//! Time is in the model's ticks: `PX`, `PEXPIRE` and `PTTL` count ticks (a real run
//! counts milliseconds, and `{ttl}` follows). The commands in seconds (`EX`, `EXPIRE`,
//! `TTL`) are refused when a scenario is loaded ([`refusal`]): in ticks they would mean
//! something else than on real Redis.

use locklab::Reply;

use crate::redis::{Exec, Value};

/// The commands this module implements, upper case.
pub const COMMANDS: &[&str] = &[
    "GET", "SET", "SETNX", "GETSET", "DEL", "EXISTS", "INCR", "PEXPIRE", "PTTL", "HEXISTS",
    "HINCRBY", "HGET", "HSET", "HDEL",
];

/// Why a command cannot be used in a custom lock, or `None` when it can.
pub fn refusal(name: &str) -> Option<String> {
    let upper = name.to_uppercase();
    if COMMANDS.contains(&upper.as_str()) {
        return None;
    }
    Some(match upper.as_str() {
        "EXPIRE" | "TTL" | "SETEX" => format!(
            "command `{name}` counts seconds; use PEXPIRE/PTTL/SET PX, in milliseconds, the unit of {{ttl}}"
        ),
        _ => format!(
            "command `{name}` is not implemented by the model's abstract Redis; it implements {}",
            COMMANDS.join(", ")
        ),
    })
}

fn err(message: &str) -> Reply {
    Reply::Error(format!("ERR {message}"))
}

fn arity(name: &str) -> Reply {
    err(&format!(
        "wrong number of arguments for '{}' command",
        name.to_lowercase()
    ))
}

fn not_integer() -> Reply {
    err("value is not an integer or out of range")
}

fn int(s: &str) -> Result<i64, Reply> {
    s.parse::<i64>().map_err(|_| not_integer())
}

/// A positive expiry in ticks, as Redis wants it (0 and below are an error for `SET`).
fn positive(s: &str, command: &str) -> Result<u64, Reply> {
    match s.parse::<i64>() {
        Ok(n) if n > 0 => Ok(n.unsigned_abs()),
        Ok(_) => Err(err(&format!("invalid expire time in '{command}' command"))),
        Err(_) => Err(not_integer()),
    }
}

impl Exec<'_> {
    /// Run a command given as words (`["SET", "k", "v", "NX", "PX", "3"]`).
    pub fn call(&mut self, words: &[String]) -> Reply {
        let Some((name, args)) = words.split_first() else {
            return err("empty command");
        };
        let upper = name.to_uppercase();
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let result = match (upper.as_str(), a.as_slice()) {
            ("GET", [key]) => Ok(self.get_reply(key)),
            ("SET", [key, value, options @ ..]) => self.set(key, value, options),
            ("SETNX", [key, value]) => Ok(if self.exists(key) {
                Reply::Int(0)
            } else {
                self.write(key, Value::Str((*value).to_string()), None);
                Reply::Int(1)
            }),
            ("GETSET", [key, value]) => match self.get(key) {
                Err(e) => Ok(Reply::Error(e)),
                Ok(old) => {
                    self.write(key, Value::Str((*value).to_string()), None);
                    Ok(old.map_or(Reply::Nil, Reply::Bulk))
                }
            },
            ("DEL", keys) if !keys.is_empty() => {
                Ok(Reply::Int(keys.iter().map(|k| self.del(k)).sum()))
            }
            ("EXISTS", keys) if !keys.is_empty() => Ok(Reply::Int(
                keys.iter().map(|k| i64::from(self.exists(k))).sum(),
            )),
            ("INCR", [key]) => Ok(self.run(&locklab::Command::Incr {
                key: (*key).to_string(),
            })),
            ("PEXPIRE", [key, ms]) => match int(ms) {
                // Redis deletes a key whose new expiry is not in the future.
                Ok(n) if n <= 0 => Ok(Reply::Int(self.del(key))),
                Ok(n) => Ok(Reply::Int(self.pexpire(key, n.unsigned_abs()))),
                Err(e) => Err(e),
            },
            ("PTTL", [key]) => Ok(Reply::Int(self.pttl(key))),
            ("HEXISTS", [key, field]) => Ok(self
                .hexists(key, field)
                .map_or_else(Reply::Error, |b| Reply::Int(i64::from(b)))),
            ("HINCRBY", [key, field, by]) => int(by).map(|by| {
                self.hincrby(key, field, by)
                    .map_or_else(Reply::Error, Reply::Int)
            }),
            ("HGET", [key, field]) => Ok(self.hget(key, field)),
            ("HSET", [key, pairs @ ..]) if !pairs.is_empty() && pairs.len() % 2 == 0 => {
                self.hset(key, pairs)
            }
            ("HDEL", [key, fields @ ..]) if !fields.is_empty() => Ok(self.hdel(key, fields)),
            (known, _) if COMMANDS.contains(&known) => Err(arity(name)),
            _ => Err(err(&format!(
                "unknown command '{name}' (not implemented by the model's abstract Redis)"
            ))),
        };
        result.unwrap_or_else(|e| e)
    }

    fn get_reply(&self, key: &str) -> Reply {
        match self.get(key) {
            Ok(v) => v.map_or(Reply::Nil, Reply::Bulk),
            Err(e) => Reply::Error(e),
        }
    }

    /// `SET key value [NX|XX] [PX ms]`.
    fn set(&mut self, key: &str, value: &str, options: &[&str]) -> Result<Reply, Reply> {
        let (mut nx, mut xx, mut px) = (false, false, None);
        let mut rest = options.iter();
        while let Some(option) = rest.next() {
            match option.to_uppercase().as_str() {
                "NX" => nx = true,
                "XX" => xx = true,
                "PX" => {
                    let ms = rest.next().ok_or_else(|| err("syntax error"))?;
                    px = Some(positive(ms, "set")?);
                }
                _ => return Err(err("syntax error")),
            }
        }
        if nx && xx {
            return Err(err("syntax error"));
        }
        let exists = self.exists(key);
        if (nx && exists) || (xx && !exists) {
            return Ok(Reply::Nil);
        }
        let at = px.map(|ms| self.deadline(ms));
        self.write(key, Value::Str(value.to_string()), at);
        Ok(Reply::Ok)
    }

    /// `HGET key field`: the count as a bulk string, as Redis keeps hash values.
    fn hget(&self, key: &str, field: &str) -> Reply {
        match self.hash(key) {
            Err(e) => Reply::Error(e),
            Ok(h) => h
                .and_then(|h| h.iter().find(|(f, _)| f == field))
                .map_or(Reply::Nil, |(_, n)| Reply::Bulk(n.to_string())),
        }
    }

    /// `HSET key field value ...`: the number of new fields. The abstract Redis keeps
    /// integer hash values only (a hold count); any other value is an error reply.
    fn hset(&mut self, key: &str, pairs: &[&str]) -> Result<Reply, Reply> {
        let mut parsed = Vec::new();
        for pair in pairs.chunks(2) {
            let n = pair[1]
                .parse::<i64>()
                .map_err(|_| err("the model's abstract Redis keeps only integer hash values"))?;
            parsed.push((pair[0], n));
        }
        let mut added = 0;
        for (field, n) in parsed {
            added += i64::from(self.set_field(key, field, n).map_err(Reply::Error)?);
        }
        Ok(Reply::Int(added))
    }

    /// `HDEL key field ...`: fields removed; the key goes with its last field.
    fn hdel(&mut self, key: &str, fields: &[&str]) -> Reply {
        match self.remove_fields(key, fields) {
            Ok(n) => Reply::Int(n),
            Err(e) => Reply::Error(e),
        }
    }
}
