//! Redis commands by name, as a script's `redis.call` and a custom lock's
//! `command = [...]` give them: the subset of Redis the abstract node implements, each
//! with the options Redis 7 has, with Redis's replies and errors.
//!
//! Times are in Redis's units, converted to the node's ticks at `tick_ms` ([`Exec`]):
//! `PX`, `PXAT`, `PEXPIRE`, `PEXPIREAT`, `PTTL` in milliseconds, `EX`, `EXAT`,
//! `EXPIRE`, `EXPIREAT`, `TTL` in seconds, `TIME` from the node's clock (tick `t` is
//! `t × tick_ms` ms after the epoch). A time between two ticks cannot be modelled: it
//! sets [`Exec::unmodelled`], as does a command this module does not implement when a
//! script names it at run time (the scenario reader refuses literal ones, [`refusal`]).

use locklab::Reply;

use crate::redis::{Exec, Value};

/// The commands this module implements, upper case.
pub const COMMANDS: &[&str] = &[
    "GET",
    "SET",
    "SETNX",
    "GETSET",
    "GETDEL",
    "DEL",
    "UNLINK",
    "EXISTS",
    "INCR",
    "INCRBY",
    "DECR",
    "DECRBY",
    "EXPIRE",
    "PEXPIRE",
    "EXPIREAT",
    "PEXPIREAT",
    "TTL",
    "PTTL",
    "HSET",
    "HGET",
    "HGETALL",
    "HLEN",
    "HDEL",
    "HEXISTS",
    "HINCRBY",
    "LPUSH",
    "RPUSH",
    "LPOP",
    "RPOP",
    "LLEN",
    "PUBLISH",
    "TIME",
];

/// Why a command cannot be used in a custom lock, or `None` when it can.
pub fn refusal(name: &str) -> Option<String> {
    let upper = name.to_uppercase();
    if COMMANDS.contains(&upper.as_str()) {
        return None;
    }
    Some(format!(
        "command `{name}` is not implemented by the model's abstract Redis; it implements {}",
        COMMANDS.join(", ")
    ))
}

/// The time arguments of a command given as words: each one's index in `words` and
/// its unit in milliseconds (1000 for seconds). The scenario reader checks literal
/// ones against `tick_ms`.
pub fn time_arguments(words: &[String]) -> Vec<(usize, u64)> {
    let Some(name) = words.first() else {
        return Vec::new();
    };
    match name.to_uppercase().as_str() {
        "PEXPIRE" | "PEXPIREAT" => vec![(2, 1)],
        "EXPIRE" | "EXPIREAT" => vec![(2, 1000)],
        "SET" => words
            .iter()
            .enumerate()
            .skip(3)
            .filter_map(|(i, w)| match w.to_uppercase().as_str() {
                "PX" | "PXAT" => Some((i + 1, 1)),
                "EX" | "EXAT" => Some((i + 1, 1000)),
                _ => None,
            })
            .filter(|(i, _)| *i < words.len())
            .collect(),
        _ => Vec::new(),
    }
}

/// The Unix time of tick 0 of every node's clock, in ms (rounded down to a whole
/// tick): November 2023, so that `TIME`, `EXAT` and `PXAT` read as on a real node, and
/// an absolute time a script computes back from `TIME` stays after the epoch.
pub const EPOCH_MS: i64 = 1_700_000_000_000;

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

fn invalid_expire(command: &str) -> Reply {
    err(&format!("invalid expire time in '{command}' command"))
}

/// How `SET` expires: none, keep the old expiry, or at an absolute time in ms.
enum SetExpiry {
    Clear,
    Keep,
    /// At this many ms on the node's clock; the option as written, for messages.
    At(i64, String),
}

/// `EXPIRE`'s conditions (`NX`, `XX`, `GT`, `LT`).
#[derive(Default)]
struct ExpireFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl ExpireFlags {
    fn parse(options: &[&str]) -> Result<Self, Reply> {
        let mut f = ExpireFlags::default();
        for option in options {
            match option.to_uppercase().as_str() {
                "NX" => f.nx = true,
                "XX" => f.xx = true,
                "GT" => f.gt = true,
                "LT" => f.lt = true,
                _ => return Err(err(&format!("Unsupported option {option}"))),
            }
        }
        if f.nx && (f.xx || f.gt || f.lt) {
            return Err(err(
                "NX and XX, GT or LT options at the same time are not compatible",
            ));
        }
        if f.gt && f.lt {
            return Err(err("GT and LT options at the same time are not compatible"));
        }
        Ok(f)
    }

    /// Whether a key whose expiry is `current` (ms; `None`: none) takes `when`.
    fn allow(&self, current: Option<i64>, when: i64) -> bool {
        !((self.nx && current.is_some())
            || (self.xx && current.is_none())
            || (self.gt && current.is_none_or(|c| when <= c))
            || (self.lt && current.is_some_and(|c| when >= c)))
    }
}

impl Exec<'_> {
    /// Run a command given as words (`["SET", "k", "v", "NX", "PX", "300"]`).
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
                self.write(key, Value::Str((*value).into()), None);
                Reply::Int(1)
            }),
            ("GETSET", [key, value]) => match self.get(key) {
                Err(e) => Ok(Reply::Error(e)),
                Ok(old) => {
                    self.write(key, Value::Str((*value).into()), None);
                    Ok(old.map_or(Reply::Nil, Reply::Bulk))
                }
            },
            ("GETDEL", [key]) => Ok(match self.get(key) {
                Err(e) => Reply::Error(e),
                Ok(None) => Reply::Nil,
                Ok(Some(v)) => {
                    self.del(key);
                    Reply::Bulk(v)
                }
            }),
            ("DEL" | "UNLINK", keys) if !keys.is_empty() => {
                Ok(Reply::Int(keys.iter().map(|k| self.del(k)).sum()))
            }
            ("EXISTS", keys) if !keys.is_empty() => Ok(Reply::Int(
                keys.iter().map(|k| i64::from(self.exists(k))).sum(),
            )),
            ("INCR", [key]) => Ok(self.incr_by(key, 1)),
            ("DECR", [key]) => Ok(self.incr_by(key, -1)),
            ("INCRBY", [key, by]) => int(by).map(|by| self.incr_by(key, by)),
            ("DECRBY", [key, by]) => int(by).and_then(|by| {
                by.checked_neg()
                    .map(|by| self.incr_by(key, by))
                    .ok_or_else(|| err("decrement would overflow"))
            }),
            ("EXPIRE", [key, t, options @ ..]) => {
                self.expire(key, t, options, 1000, false, "expire")
            }
            ("PEXPIRE", [key, t, options @ ..]) => {
                self.expire(key, t, options, 1, false, "pexpire")
            }
            ("EXPIREAT", [key, t, options @ ..]) => {
                self.expire(key, t, options, 1000, true, "expireat")
            }
            ("PEXPIREAT", [key, t, options @ ..]) => {
                self.expire(key, t, options, 1, true, "pexpireat")
            }
            ("TTL", [key]) => Ok(Reply::Int(self.ttl_ms(key).map_or_else(
                |code| code,
                // Redis rounds to the nearest second.
                |ms| (ms + 500) / 1000,
            ))),
            ("PTTL", [key]) => Ok(Reply::Int(self.ttl_ms(key).unwrap_or_else(|code| code))),
            ("HEXISTS", [key, field]) => Ok(self
                .hexists(key, field)
                .map_or_else(Reply::Error, |b| Reply::Int(i64::from(b)))),
            ("HINCRBY", [key, field, by]) => int(by).map(|by| {
                self.hincrby(key, field, by)
                    .map_or_else(Reply::Error, Reply::Int)
            }),
            ("HGET", [key, field]) => Ok(self.hget(key, field)),
            ("HGETALL", [key]) => Ok(match self.hash(key) {
                Err(e) => Reply::Error(e),
                Ok(h) => Reply::Array(
                    h.into_iter()
                        .flatten()
                        .flat_map(|(f, v)| [Reply::Bulk(f.to_string()), Reply::Bulk(v.to_string())])
                        .collect(),
                ),
            }),
            ("HLEN", [key]) => Ok(match self.hash(key) {
                Err(e) => Reply::Error(e),
                Ok(h) => Reply::Int(h.map_or(0, |h| i64::try_from(h.len()).unwrap_or(i64::MAX))),
            }),
            ("HSET", [key, pairs @ ..]) if !pairs.is_empty() && pairs.len() % 2 == 0 => {
                Ok(self.hset(key, pairs))
            }
            ("HDEL", [key, fields @ ..]) if !fields.is_empty() => Ok(self.hdel(key, fields)),
            ("LPUSH" | "RPUSH", [key, elements @ ..]) if !elements.is_empty() => Ok(self
                .push(key, elements, upper == "LPUSH")
                .map_or_else(Reply::Error, Reply::Int)),
            ("LPOP" | "RPOP", [key]) => Ok(self
                .pop(key, upper == "LPOP")
                .map_or_else(Reply::Error, |e| e.map_or(Reply::Nil, Reply::Bulk))),
            ("LLEN", [key]) => Ok(match self.list(key) {
                Err(e) => Reply::Error(e),
                Ok(l) => Reply::Int(l.map_or(0, |l| i64::try_from(l.len()).unwrap_or(i64::MAX))),
            }),
            // Nobody subscribes in the model.
            ("PUBLISH", [_, _]) => Ok(Reply::Int(0)),
            ("TIME", []) => Ok(self.time()),
            (known, _) if COMMANDS.contains(&known) => Err(arity(name)),
            _ => {
                self.unmodelled = Some(format!(
                    "command `{name}`, which the model's abstract Redis does not implement"
                ));
                Err(err(&format!("unknown command '{name}'")))
            }
        };
        result.unwrap_or_else(|e| e)
    }

    fn get_reply(&self, key: &str) -> Reply {
        match self.get(key) {
            Err(e) => Reply::Error(e),
            Ok(v) => v.map_or(Reply::Nil, Reply::Bulk),
        }
    }

    fn tick_ms_signed(&self) -> i64 {
        i64::try_from(self.tick_ms()).unwrap_or(i64::MAX)
    }

    /// Tick 0 of the node's clock, in whole ticks after the Unix epoch.
    fn epoch_ticks(&self) -> i64 {
        EPOCH_MS / self.tick_ms_signed()
    }

    /// The node's clock in ms after the Unix epoch.
    fn now_ms(&self) -> i64 {
        self.clock()
            .saturating_add(self.epoch_ticks())
            .saturating_mul(self.tick_ms_signed())
    }

    /// The tick of `ms` on the node's clock, when it is a whole tick; else the run is
    /// unmodelled (`what` names the argument).
    fn tick_of(&mut self, ms: i64, what: &str) -> Result<i64, Reply> {
        let tick_ms = self.tick_ms_signed();
        if ms % tick_ms == 0 {
            return Ok(ms / tick_ms - self.epoch_ticks());
        }
        let message =
            format!("{what} is not a whole number of {tick_ms} ms ticks (timing.tick_ms)");
        self.unmodelled = Some(message.clone());
        Err(err(&message))
    }

    /// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`.
    fn set(&mut self, key: &str, value: &str, options: &[&str]) -> Result<Reply, Reply> {
        let (mut nx, mut xx, mut get) = (false, false, false);
        let mut expiry: Option<(&str, &str)> = None;
        let mut keep = false;
        let mut rest = options.iter();
        while let Some(option) = rest.next() {
            match option.to_uppercase().as_str() {
                "NX" if !xx => nx = true,
                "XX" if !nx => xx = true,
                "GET" => get = true,
                "KEEPTTL" if expiry.is_none() => keep = true,
                "EX" | "PX" | "EXAT" | "PXAT" if expiry.is_none() && !keep => {
                    let t = rest.next().ok_or_else(|| err("syntax error"))?;
                    expiry = Some((option, t));
                }
                _ => return Err(err("syntax error")),
            }
        }
        let expiry = match expiry {
            None if keep => SetExpiry::Keep,
            None => SetExpiry::Clear,
            Some((unit, t)) => {
                let n = int(t)?;
                if n <= 0 {
                    return Err(invalid_expire("set"));
                }
                let upper = unit.to_uppercase();
                let ms = if upper.starts_with('E') {
                    n.checked_mul(1000).ok_or_else(|| invalid_expire("set"))?
                } else {
                    n
                };
                let at = if upper.ends_with("AT") {
                    ms
                } else {
                    ms.checked_add(self.now_ms())
                        .ok_or_else(|| invalid_expire("set"))?
                };
                SetExpiry::At(at, format!("{unit} {t}"))
            }
        };
        let old = if get {
            Some(self.get(key).map_err(Reply::Error)?)
        } else {
            None
        };
        let exists = self.exists(key);
        let answer = |done: Reply| {
            old.clone()
                .map_or(done, |o| o.map_or(Reply::Nil, Reply::Bulk))
        };
        if (nx && exists) || (xx && !exists) {
            return Ok(answer(Reply::Nil));
        }
        let at = match expiry {
            SetExpiry::Clear => None,
            SetExpiry::Keep => self.data().entry(key).and_then(|e| e.expires_at),
            SetExpiry::At(ms, what) => {
                let tick = self.tick_of(ms, &format!("SET ... {what}"))?;
                if tick <= self.clock() {
                    // Already expired: Redis deletes the key instead.
                    self.del(key);
                    return Ok(answer(Reply::Ok));
                }
                Some(tick)
            }
        };
        self.write(key, Value::Str(value.into()), at);
        Ok(answer(Reply::Ok))
    }

    /// `EXPIRE`, `PEXPIRE` (relative) and `EXPIREAT`, `PEXPIREAT` (`absolute`), with
    /// `NX`, `XX`, `GT`, `LT`; `unit` is ms per unit of `t`.
    fn expire(
        &mut self,
        key: &str,
        t: &str,
        options: &[&str],
        unit: i64,
        absolute: bool,
        command: &str,
    ) -> Result<Reply, Reply> {
        let n = int(t)?;
        let flags = ExpireFlags::parse(options)?;
        let base = if absolute { 0 } else { self.now_ms() };
        let when = n
            .checked_mul(unit)
            .and_then(|ms| ms.checked_add(base))
            .ok_or_else(|| invalid_expire(command))?;
        if !self.exists(key) {
            return Ok(Reply::Int(0));
        }
        let current = match self.ttl_ms(key) {
            Ok(ms) => Some(self.now_ms() + ms),
            Err(_) => None,
        };
        if !flags.allow(current, when) {
            return Ok(Reply::Int(0));
        }
        let what = format!("{} {t}", command.to_uppercase());
        let tick = self.tick_of(when, &what)?;
        if tick <= self.clock() {
            // Redis deletes a key whose new expiry is not in the future.
            return Ok(Reply::Int(self.del(key)));
        }
        Ok(Reply::Int(self.expire_at(key, tick)))
    }

    /// The time to live of `key` in ms; `Err(-2)` when missing, `Err(-1)` without expiry.
    fn ttl_ms(&self, key: &str) -> Result<i64, i64> {
        match self.pttl(key) {
            ticks if ticks < 0 => Err(ticks),
            ticks => Ok(ticks.saturating_mul(self.tick_ms_signed())),
        }
    }

    /// `TIME`: seconds and microseconds of the node's clock.
    fn time(&self) -> Reply {
        let ms = self.now_ms();
        Reply::Array(vec![
            Reply::Bulk(ms.div_euclid(1000).to_string()),
            Reply::Bulk((ms.rem_euclid(1000) * 1000).to_string()),
        ])
    }

    /// `INCRBY key by` (and `INCR`, `DECR`, `DECRBY`): the new value. The key keeps its
    /// expiry and its owner (a new key is the client's).
    fn incr_by(&mut self, key: &str, by: i64) -> Reply {
        let old = match self.get(key) {
            Err(e) => return Reply::Error(e),
            Ok(None) => 0,
            Ok(Some(v)) => match v.parse::<i64>() {
                Ok(n) => n,
                Err(_) => return not_integer(),
            },
        };
        let Some(n) = old.checked_add(by) else {
            return err("increment or decrement would overflow");
        };
        self.set_counter(key, n);
        Reply::Int(n)
    }

    /// `HGET key field`.
    fn hget(&self, key: &str, field: &str) -> Reply {
        match self.hash(key) {
            Err(e) => Reply::Error(e),
            Ok(h) => h
                .and_then(|h| h.iter().find(|(f, _)| f == field))
                .map_or(Reply::Nil, |(_, v)| Reply::Bulk(v.to_string())),
        }
    }

    /// `HSET key field value ...`: the number of new fields.
    fn hset(&mut self, key: &str, pairs: &[&str]) -> Reply {
        if let Err(e) = self.hash(key) {
            return Reply::Error(e);
        }
        let mut added = 0;
        for pair in pairs.chunks(2) {
            match self.set_field(key, pair[0], pair[1]) {
                Ok(new) => added += i64::from(new),
                Err(e) => return Reply::Error(e),
            }
        }
        Reply::Int(added)
    }

    /// `HDEL key field ...`: fields removed; the key goes with its last field.
    fn hdel(&mut self, key: &str, fields: &[&str]) -> Reply {
        match self.remove_fields(key, fields) {
            Ok(n) => Reply::Int(n),
            Err(e) => Reply::Error(e),
        }
    }
}

#[cfg(test)]
mod tests;
