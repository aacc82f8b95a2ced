//! The Lua scripts the designs run, each written once: the Lua text for real Redis and,
//! beside it, a Rust function that states its semantics for the model's abstract Redis.
//!
//! The two must agree; the harness's conformance test sends the same calls to a real
//! Redis and to the model and compares the replies.
//!
//! A custom lock's scripts ([`Script::Custom`]) have no Rust restatement: the model runs
//! their text in its embedded Lua interpreter (`locklab-model`'s `lua` module).

use std::sync::Arc;

use crate::command::Reply;

/// A server's data as a script sees it. The model's abstract Redis implements this;
/// each method has the meaning of the Redis command of the same name.
pub trait ScriptHost {
    /// `GET key`: `Err` with a `WRONGTYPE` message when the key holds a hash.
    fn get(&self, key: &str) -> Result<Option<String>, String>;
    /// `DEL key`: 1 when removed.
    fn del(&mut self, key: &str) -> i64;
    /// `EXISTS key`.
    fn exists(&self, key: &str) -> bool;
    /// `PEXPIRE key ms`: 1 when the key exists.
    fn pexpire(&mut self, key: &str, ms: u64) -> i64;
    /// `PTTL key`: -2 when missing, -1 without expiry.
    fn pttl(&self, key: &str) -> i64;
    /// `HEXISTS key field`.
    fn hexists(&self, key: &str, field: &str) -> Result<bool, String>;
    /// `HINCRBY key field by`: the new count.
    fn hincrby(&mut self, key: &str, field: &str, by: i64) -> Result<i64, String>;
}

/// A script a scenario brings: its Lua text, named by the step that runs it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CustomScript {
    /// The step it serves (`acquire`, `release`, `renew`), for traces.
    pub name: Arc<str>,
    /// The Lua text, sent to Redis as it is.
    pub text: Arc<str>,
}

/// The scripts. Arguments follow the Lua text: `KEYS[1]` is the lock key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Script {
    /// Delete the key only when it holds my token. `ARGV[1]` = token. Returns 1 or 0.
    CompareAndDelete,
    /// Extend the key only when it holds my token. `ARGV[1]` = token, `ARGV[2]` = ms.
    /// Returns 1 or 0.
    CompareAndPexpire,
    /// Redisson's reentrant lock: `ARGV[1]` = lease ms, `ARGV[2]` = owner field.
    /// Returns nil when acquired (or re-entered), else the holder's remaining PTTL.
    ReentrantLock,
    /// Redisson's reentrant unlock: `ARGV[1]` = lease ms, `ARGV[2]` = owner field.
    /// Returns nil when not the owner, 0 when still held (count > 0), 1 when deleted.
    ReentrantUnlock,
    /// Redisson's renewal: `ARGV[1]` = lease ms, `ARGV[2]` = owner field. Returns 1 or 0.
    ReentrantRenew,
    /// A custom lock's script (scenario `[lock]`), identified by its text.
    Custom(CustomScript),
}

impl Script {
    /// Every built-in script.
    pub const ALL: [Script; 5] = [
        Script::CompareAndDelete,
        Script::CompareAndPexpire,
        Script::ReentrantLock,
        Script::ReentrantUnlock,
        Script::ReentrantRenew,
    ];

    /// A short name for traces.
    pub fn name(&self) -> &str {
        match self {
            Script::CompareAndDelete => "compare-and-delete",
            Script::CompareAndPexpire => "compare-and-pexpire",
            Script::ReentrantLock => "reentrant-lock",
            Script::ReentrantUnlock => "reentrant-unlock",
            Script::ReentrantRenew => "reentrant-renew",
            Script::Custom(c) => &c.name,
        }
    }

    /// Whether the script may change data.
    pub fn is_write(&self) -> bool {
        true
    }

    /// The Lua text sent to real Redis.
    pub fn lua(&self) -> &str {
        match self {
            Script::CompareAndDelete => {
                "if redis.call('get', KEYS[1]) == ARGV[1] then \
                   return redis.call('del', KEYS[1]) \
                 else return 0 end"
            }
            Script::CompareAndPexpire => {
                "if redis.call('get', KEYS[1]) == ARGV[1] then \
                   return redis.call('pexpire', KEYS[1], ARGV[2]) \
                 else return 0 end"
            }
            Script::ReentrantLock => {
                "if (redis.call('exists', KEYS[1]) == 0) then \
                   redis.call('hincrby', KEYS[1], ARGV[2], 1); \
                   redis.call('pexpire', KEYS[1], ARGV[1]); \
                   return nil; \
                 end; \
                 if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
                   redis.call('hincrby', KEYS[1], ARGV[2], 1); \
                   redis.call('pexpire', KEYS[1], ARGV[1]); \
                   return nil; \
                 end; \
                 return redis.call('pttl', KEYS[1]);"
            }
            Script::ReentrantUnlock => {
                "if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then return nil; end; \
                 local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); \
                 if (counter > 0) then \
                   redis.call('pexpire', KEYS[1], ARGV[1]); \
                   return 0; \
                 else \
                   redis.call('del', KEYS[1]); \
                   return 1; \
                 end;"
            }
            Script::ReentrantRenew => {
                "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
                   redis.call('pexpire', KEYS[1], ARGV[1]); \
                   return 1; \
                 end; \
                 return 0;"
            }
            Script::Custom(c) => &c.text,
        }
    }

    /// The script's semantics, for the model: what the Lua text does, step by step.
    /// A Redis error inside the script (such as `WRONGTYPE`) aborts it with that error.
    /// A custom script has no restatement: the answer is an error saying so (the model
    /// runs custom text in its interpreter and never calls this for one).
    pub fn run(&self, host: &mut dyn ScriptHost, keys: &[String], args: &[String]) -> Reply {
        match self.try_run(host, keys, args) {
            Ok(r) => r,
            Err(e) => Reply::Error(e),
        }
    }

    fn try_run(
        &self,
        host: &mut dyn ScriptHost,
        keys: &[String],
        args: &[String],
    ) -> Result<Reply, String> {
        let key = keys.first().ok_or("script needs KEYS[1]")?.as_str();
        let arg = |i: usize| args.get(i).map(String::as_str).ok_or("missing ARGV");
        let ms = |i: usize| -> Result<u64, String> {
            arg(i)?
                .parse::<u64>()
                .map_err(|_| "ERR value is not an integer".to_string())
        };
        Ok(match self {
            Script::CompareAndDelete => {
                if host.get(key)?.as_deref() == Some(arg(0)?) {
                    Reply::Int(host.del(key))
                } else {
                    Reply::Int(0)
                }
            }
            Script::CompareAndPexpire => {
                if host.get(key)?.as_deref() == Some(arg(0)?) {
                    Reply::Int(host.pexpire(key, ms(1)?))
                } else {
                    Reply::Int(0)
                }
            }
            Script::ReentrantLock => {
                let (lease, owner) = (ms(0)?, arg(1)?);
                if !host.exists(key) || host.hexists(key, owner)? {
                    host.hincrby(key, owner, 1)?;
                    host.pexpire(key, lease);
                    Reply::Nil
                } else {
                    Reply::Int(host.pttl(key))
                }
            }
            Script::ReentrantUnlock => {
                let (lease, owner) = (ms(0)?, arg(1)?);
                if !host.hexists(key, owner)? {
                    Reply::Nil
                } else if host.hincrby(key, owner, -1)? > 0 {
                    host.pexpire(key, lease);
                    Reply::Int(0)
                } else {
                    host.del(key);
                    Reply::Int(1)
                }
            }
            Script::ReentrantRenew => {
                let (lease, owner) = (ms(0)?, arg(1)?);
                if host.hexists(key, owner)? {
                    host.pexpire(key, lease);
                    Reply::Int(1)
                } else {
                    Reply::Int(0)
                }
            }
            Script::Custom(c) => {
                return Err(format!(
                    "ERR script `{}` has no Rust restatement; run its text in a Lua interpreter",
                    c.name
                ))
            }
        })
    }
}
