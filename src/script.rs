//! The Lua scripts the designs run, each written once: real Redis runs the text, and so
//! does the model, in its embedded Lua 5.1 (`locklab-model`'s `lua` module) against its
//! abstract Redis. The harness's conformance test sends the same calls to a real Redis
//! and to the model and compares the replies.
//!
//! A custom lock's scripts ([`Script::Custom`]) come from its scenario, as text.

use std::sync::Arc;

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
}
