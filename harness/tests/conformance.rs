//! Conformance: the model's abstract Redis (`locklab_model::redis`, whose scripts run
//! in the model's Lua interpreter, `model/src/lua.rs`) against a real Redis in a
//! container.
//!
//! Seeded random sequences of the commands the designs send (`SETNX`, `SET NX PX`, `GET`,
//! `GETSET`, `DEL`, `PEXPIRE`, `INCR`, every built-in Lua script — the reentrant ones work
//! on hashes through `HINCRBY`/`HEXISTS`), and of what a custom lock may send: commands
//! by name (`Command::Call`, the path of a `command = [...]` step and of a script's
//! `redis.call`: `GET`, `SET` with `NX`/`XX`/`PX`, `SETNX`, `GETSET`, `DEL`, `EXISTS`,
//! `INCR`, `PEXPIRE`, `PTTL`, `HEXISTS`, `HINCRBY`, `HGET`, `HSET`, `HDEL`, and malformed
//! ones) and Lua scripts of its own ([`CUSTOM_SCRIPTS`]: `redis.pcall`,
//! `redis.error_reply`, `redis.status_reply`, arrays, booleans, fractions, runtime
//! errors), with time passing and keys expiring, go to both: the model through
//! `Exec::run`, Redis through `locklab::driver::Node::execute` (the translation the
//! harness replays with). Every reply must agree (errors by their code), and after every
//! tick each key's type, value, hash counts and remaining time to live must agree too.
//!
//! # Time
//!
//! The model's node clock counts ticks; a tick is `T` ms on the real node. Every command
//! of tick `t` runs, from sending to reply, inside the first 40 % of the tick,
//! `[tT, tT + 0.4T)`, and a time to live of `k` ticks is sent as `kT − T/2` ms. A key that
//! the model expires at tick `e` therefore expires on the real node within
//! `[eT − T/2, eT − T/10)`: after every command of tick `e − 1`, before any of tick `e`.
//! No comparison is made near an expiry; a remaining `PTTL` of `r` ms is `⌈r/T⌉` ticks.
//!
//! Two time bases:
//! - **real time**: `T` = 150 ms of wall time. A command that ends outside its window (a
//!   loaded machine) makes its sequence inconclusive, never failed: the sequence runs
//!   again from the start, on fresh keys, with `T` doubled.
//! - **stepped clock**: the node's wall clock is stepped by 60 s per tick
//!   (libclockshift, `Node::set_clock_offset_ms`), so many long sequences run in little
//!   real time, and the windows hold by a wide margin.
//!
//! # Seeds
//!
//! Sequence `i` uses seed `base + i`; `base` is fixed unless `LOCKLAB_CONFORMANCE_SEED`
//! sets it (`LOCKLAB_CONFORMANCE_SEQUENCES` sets how many). A failure prints its seed and
//! the command line that runs that sequence alone.
//!
//! Not covered here: `EXPIRE` (seconds) and direct `HINCRBY` — no design sends them, so
//! locklab's `Command` has neither (hashes are reached through the reentrant scripts;
//! `conformance_scripts.rs` runs every command option and the scripting environment
//! case by case);
//! `WAIT`, which the model answers from its replicas, not from a node's data; a script
//! that returns an array holding an error reply: Redis sends the array, but redis-rs
//! (and so the driver) reports the nested error as the whole reply, where the model
//! keeps the array (no lock step can succeed on either, so no verdict depends on it).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab::driver::{Node, NodeTimeouts};
use locklab::{Command, CustomScript, Reply, Script};
use locklab_cluster::Cluster;
use locklab_model::redis::{Data, Exec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use redis::aio::MultiplexedConnection;
use tokio::task::JoinSet;

const DEFAULT_SEED: u64 = 0x00C0_4F0E;
/// Values the sequences store: lock tokens, and numbers (so that `INCR` sometimes works
/// on a lock key and `GETSET` sometimes replaces a counter).
const VALUES: [&str; 5] = ["t1", "t2", "t3", "7", "41"];
/// Reentrant owner fields.
const OWNERS: [&str; 2] = ["o1", "o2"];
/// Time to live of generated commands, in ticks: short, so keys expire often.
const MAX_TTL: u64 = 4;
/// The part of a tick in which its commands must have run.
const WINDOW_PERCENT: u64 = 40;
/// How often a late real-time sequence is retried (with the tick doubled each time).
const REAL_TIME_ATTEMPTS: usize = 4;

/// The keys of one sequence: a lock (string or reentrant hash) and a fencing counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Lock,
    Fence,
}

const KEYS: [Key; 2] = [Key::Lock, Key::Fence];

impl Key {
    fn name(self, prefix: &str) -> String {
        match self {
            Key::Lock => format!("{prefix}lock"),
            Key::Fence => format!("{prefix}fence"),
        }
    }
}

/// One generated operation; times are in ticks.
#[derive(Clone, Debug)]
enum Op {
    SetNx(Key, &'static str),
    SetNxPx(Key, &'static str, u64),
    SetPx(Key, &'static str, u64),
    Get(Key),
    Exists(Key),
    GetSet(Key, &'static str),
    Del(Key),
    PExpire(Key, u64),
    Incr(Key),
    /// A script with its one text argument (token or owner field) and a time to live.
    Eval(Script, Key, &'static str, u64),
    /// A command by name, as a custom lock's `command = [...]` step sends it (and as a
    /// script's `redis.call` reaches the model: `model/src/call.rs`).
    Call(Vec<Word>),
    /// A custom lock's Lua script (one of [`CUSTOM_SCRIPTS`]) with its keys and args.
    Custom(usize, Vec<Word>, Vec<Word>),
}

/// One word of a command or script call, filled in per side.
#[derive(Clone, Debug)]
enum Word {
    Lit(&'static str),
    Key(Key),
    /// A time to live of that many ticks, in the side's unit.
    Ttl(u64),
}

/// Scripts in the style teams write their locks, with what they exercise: Redis's
/// Lua-to-reply conversions (status, error, array, boolean, fractions) and the commands
/// a script may call. Each takes `KEYS[1]` and `ARGV[1]` (a value), `ARGV[2]` (a time
/// to live).
const CUSTOM_SCRIPTS: [(&str, &str); 10] = [
    (
        "compare-and-delete",
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end \
         return 0",
    ),
    ("delete-any", "redis.call('del', KEYS[1])\nreturn 1"),
    // The renewal that resurrects: SET without NX/XX answers a status reply.
    (
        "reset-renewal",
        "return redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])",
    ),
    // Redisson-style hash lock: nil when taken, else the holder's PTTL.
    (
        "hash-acquire",
        "if (redis.call('exists', KEYS[1]) == 0) or \
            (redis.call('hexists', KEYS[1], ARGV[1]) == 1) then \
           redis.call('hincrby', KEYS[1], ARGV[1], 1); \
           redis.call('pexpire', KEYS[1], ARGV[2]); return nil; end; \
         return redis.call('pttl', KEYS[1]);",
    ),
    (
        "hash-release",
        "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end \
         local n = redis.call('hincrby', KEYS[1], ARGV[1], -1) \
         if n > 0 then return 0 end \
         redis.call('hdel', KEYS[1], ARGV[1]) redis.call('del', KEYS[1]) return 1",
    ),
    // pcall hands the error back as a table; error_reply and status_reply build replies.
    (
        "pcall-incr",
        "local r = redis.pcall('incr', KEYS[1]) \
         if type(r) == 'table' and r.err then return redis.error_reply('LOCKED ' .. r.err) end \
         if r > 40 then return redis.status_reply('HIGH') end return r",
    ),
    (
        "array",
        "return {redis.call('exists', KEYS[1]), ARGV[1], false}",
    ),
    ("truncate", "return {3.99, -2.5, 7, nil, 8}"),
    ("boolean", "return redis.call('exists', KEYS[1]) == 1"),
    // A runtime error inside the script: an error reply, as in Redis.
    ("runtime-error", "return redis.call('incr', KEYS[1]) + nil"),
];

impl Op {
    /// The command, with each time to live of `k` ticks given as `ms(k)`.
    fn command(&self, prefix: &str, ms: impl Fn(u64) -> u64) -> Command {
        let k = |key: &Key| key.name(prefix);
        match self {
            Op::SetNx(key, v) => Command::SetNx {
                key: k(key),
                value: v.to_string(),
            },
            Op::SetNxPx(key, v, ttl) => Command::SetNxPx {
                key: k(key),
                value: v.to_string(),
                px: ms(*ttl),
            },
            Op::SetPx(key, v, ttl) => Command::SetPx {
                key: k(key),
                value: v.to_string(),
                px: ms(*ttl),
            },
            Op::Get(key) => Command::Get { key: k(key) },
            Op::Exists(key) => Command::Exists { key: k(key) },
            Op::GetSet(key, v) => Command::GetSet {
                key: k(key),
                value: v.to_string(),
            },
            Op::Del(key) => Command::Del { key: k(key) },
            Op::PExpire(key, ttl) => Command::PExpire {
                key: k(key),
                ms: ms(*ttl),
            },
            Op::Incr(key) => Command::Incr { key: k(key) },
            Op::Eval(script, key, arg, ttl) => {
                let args = match script {
                    Script::CompareAndDelete => vec![arg.to_string()],
                    Script::CompareAndPexpire => vec![arg.to_string(), ms(*ttl).to_string()],
                    Script::ReentrantLock | Script::ReentrantUnlock | Script::ReentrantRenew => {
                        vec![ms(*ttl).to_string(), arg.to_string()]
                    }
                    Script::Custom(_) => unreachable!("custom scripts are Op::Custom"),
                };
                Command::Eval {
                    script: script.clone(),
                    keys: vec![k(key)],
                    args,
                }
            }
            Op::Call(words) => Command::Call {
                args: fill(words, prefix, &ms),
            },
            Op::Custom(i, keys, args) => {
                let (name, text) = CUSTOM_SCRIPTS[*i];
                Command::Eval {
                    script: Script::Custom(CustomScript {
                        name: name.into(),
                        text: text.into(),
                    }),
                    keys: fill(keys, prefix, &ms),
                    args: fill(args, prefix, &ms),
                }
            }
        }
    }

    /// Whether an integer reply is a time to live (compared in ticks).
    fn replies_time(&self) -> bool {
        match self {
            Op::Eval(Script::ReentrantLock, ..) => true,
            Op::Call(words) => matches!(words.first(), Some(Word::Lit("PTTL"))),
            Op::Custom(i, ..) => CUSTOM_SCRIPTS[*i].0 == "hash-acquire",
            _ => false,
        }
    }

    /// A name for the coverage table.
    fn kind(&self) -> String {
        let kind = match self {
            Op::SetNx(..) => "SETNX",
            Op::SetNxPx(..) => "SET NX PX",
            Op::SetPx(..) => "SET PX",
            Op::Get(_) => "GET",
            Op::Exists(_) => "EXISTS",
            Op::GetSet(..) => "GETSET",
            Op::Del(_) => "DEL",
            Op::PExpire(..) => "PEXPIRE",
            Op::Incr(_) => "INCR",
            Op::Eval(s, ..) => s.name(),
            Op::Call(words) => {
                return match words.first() {
                    Some(Word::Lit(name)) => format!("call {name}"),
                    _ => "call ?".to_string(),
                }
            }
            Op::Custom(i, ..) => return format!("custom {}", CUSTOM_SCRIPTS[*i].0),
        };
        kind.to_string()
    }
}

fn fill(words: &[Word], prefix: &str, ms: &impl Fn(u64) -> u64) -> Vec<String> {
    words
        .iter()
        .map(|w| match w {
            Word::Lit(s) => (*s).to_string(),
            Word::Key(k) => k.name(prefix),
            Word::Ttl(t) => ms(*t).to_string(),
        })
        .collect()
}

/// What a sequence mostly does with its lock key, so that every design's paths are
/// reached: string locks, reentrant hash locks, both mixed (type errors), or a custom
/// lock's commands by name and scripts.
#[derive(Clone, Copy, Debug)]
enum Flavor {
    Strings,
    Hashes,
    Mixed,
    Custom,
}

/// A sequence's operations, one list per tick (an empty list: time only passes).
fn generate(seed: u64, ticks: usize) -> Vec<Vec<Op>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let flavor = [
        Flavor::Strings,
        Flavor::Hashes,
        Flavor::Mixed,
        Flavor::Custom,
    ][rng.random_range(0..4)];
    (0..ticks)
        .map(|_| {
            let n = match rng.random_range(0..100) {
                0..25 => 0,
                25..60 => 1,
                60..85 => 2,
                _ => 3,
            };
            (0..n).map(|_| random_op(&mut rng, flavor)).collect()
        })
        .collect()
}

fn random_op(rng: &mut ChaCha8Rng, flavor: Flavor) -> Op {
    // Mostly the lock key; sometimes the counter, so types and commands get mixed.
    let key = if rng.random_range(0..100) < 85 {
        Key::Lock
    } else {
        Key::Fence
    };
    let value = VALUES[rng.random_range(0..VALUES.len())];
    let owner = OWNERS[rng.random_range(0..OWNERS.len())];
    let ttl = rng.random_range(1..=MAX_TTL);
    let hashes = match flavor {
        Flavor::Strings => rng.random_range(0..100) < 8,
        Flavor::Hashes => rng.random_range(0..100) < 85,
        Flavor::Mixed => rng.random_bool(0.5),
        Flavor::Custom => return random_custom_op(rng, key, value, owner, ttl),
    };
    if hashes {
        return match rng.random_range(0..100) {
            0..40 => Op::Eval(Script::ReentrantLock, key, owner, ttl),
            40..70 => Op::Eval(Script::ReentrantUnlock, key, owner, ttl),
            70..85 => Op::Eval(Script::ReentrantRenew, key, owner, ttl),
            85..90 => Op::Del(key),
            90..95 => Op::PExpire(key, ttl),
            95..98 => Op::Get(key),
            _ => Op::Exists(key),
        };
    }
    match rng.random_range(0..100) {
        0..12 => Op::SetNxPx(key, value, ttl),
        12..16 => Op::SetPx(key, value, ttl),
        16..22 => Op::SetNx(key, value),
        22..28 => Op::Get(key),
        28..32 => Op::Exists(key),
        32..40 => Op::GetSet(key, value),
        40..48 => Op::Del(key),
        48..56 => Op::PExpire(key, ttl),
        56..68 => Op::Incr(if rng.random_bool(0.7) {
            Key::Fence
        } else {
            key
        }),
        68..84 => Op::Eval(Script::CompareAndDelete, key, value, ttl),
        _ => Op::Eval(Script::CompareAndPexpire, key, value, ttl),
    }
}

/// A custom lock's step: a command by name (sometimes a malformed one, which both sides
/// must refuse alike) or one of [`CUSTOM_SCRIPTS`].
fn random_custom_op(
    rng: &mut ChaCha8Rng,
    key: Key,
    value: &'static str,
    owner: &'static str,
    ttl: u64,
) -> Op {
    use Word::{Key as K, Lit as L, Ttl as T};
    let other = if key == Key::Lock {
        Key::Fence
    } else {
        Key::Lock
    };
    let n = ["1", "2", "-1"][rng.random_range(0..3)];
    let call = match rng.random_range(0..100) {
        0..6 => vec![L("SET"), K(key), L(value), L("NX"), L("PX"), T(ttl)],
        6..10 => vec![L("SET"), K(key), L(value), L("XX"), L("PX"), T(ttl)],
        10..13 => vec![L("SET"), K(key), L(value), L("PX"), T(ttl)],
        13..15 => vec![L("SET"), K(key), L(value)],
        15..18 => vec![L("SETNX"), K(key), L(value)],
        18..23 => vec![L("GET"), K(key)],
        23..26 => vec![L("GETSET"), K(key), L(value)],
        26..30 => vec![L("DEL"), K(key)],
        30..32 => vec![L("DEL"), K(key), K(other)],
        32..35 => vec![L("EXISTS"), K(key), K(other)],
        35..39 => vec![L("INCR"), K(key)],
        39..43 => vec![L("PEXPIRE"), K(key), T(ttl)],
        43..44 => vec![L("PEXPIRE"), K(key), L("0")],
        44..48 => vec![L("PTTL"), K(key)],
        48..51 => vec![L("HEXISTS"), K(key), L(owner)],
        51..55 => vec![L("HINCRBY"), K(key), L(owner), L(n)],
        55..57 => vec![L("HGET"), K(key), L(owner)],
        57..60 => vec![L("HSET"), K(key), L(owner), L(n)],
        60..62 => vec![L("HDEL"), K(key), L(owner)],
        // Mistakes a team's step may hold: arity, syntax, a number that is not one.
        62..63 => vec![L("GET")],
        63..64 => vec![L("SET"), K(key), L(value), L("PX")],
        64..65 => vec![L("PEXPIRE"), K(key), L("soon")],
        65..66 => vec![L("HINCRBY"), K(key), L(owner), L("x")],
        _ => {
            let i = rng.random_range(0..CUSTOM_SCRIPTS.len());
            let arg = if CUSTOM_SCRIPTS[i].0.starts_with("hash") {
                owner
            } else {
                value
            };
            return Op::Custom(i, vec![K(key)], vec![L(arg), T(ttl)]);
        }
    };
    Op::Call(call)
}

/// How ticks map to the real node's time.
#[derive(Clone, Copy, Debug)]
struct TimeBase {
    /// Milliseconds of the node's clock per tick.
    tick_ms: u64,
    /// The node's clock is stepped a tick at a time instead of waiting for real time.
    stepped: bool,
}

impl TimeBase {
    /// A time to live of `ticks` as sent to Redis: half a tick short, so that the key
    /// expires in the second half of a tick, away from every command.
    fn ttl_ms(self, ticks: u64) -> u64 {
        ticks * self.tick_ms - self.tick_ms / 2
    }

    /// A remaining time to live in ms as ticks of the model (negative codes unchanged).
    fn ticks(self, ms: i64) -> i64 {
        if ms < 0 {
            ms
        } else {
            let tick = i64::try_from(self.tick_ms).unwrap();
            (ms + tick - 1) / tick
        }
    }

    fn window(self) -> Duration {
        Duration::from_millis(self.tick_ms * WINDOW_PERCENT / 100)
    }

    fn name(self) -> String {
        if self.stepped {
            format!("stepped clock, {} ms per tick", self.tick_ms)
        } else {
            format!("real time, {} ms per tick", self.tick_ms)
        }
    }
}

/// The errors compare by code (`WRONGTYPE`, `ERR`): Redis adds the script's name and line
/// to an error raised inside a script, which no design reads.
fn error_code(e: &str) -> &str {
    e.split_whitespace().next().unwrap_or("")
}

/// Whether the model's reply to `op` agrees with Redis'.
fn agree(op: &Op, model: &Reply, real: &Reply, base: TimeBase) -> bool {
    match (model, real) {
        (Reply::Error(m), Reply::Error(r)) => error_code(m) == error_code(r),
        // The reentrant locks answer a held lock with its PTTL: compare in ticks.
        (Reply::Int(m), Reply::Int(r)) if op.replies_time() => *m == base.ticks(*r),
        _ => model == real,
    }
}

/// What a key looks like: the same shape read from the model and from Redis.
#[derive(Clone, Debug, PartialEq, Eq)]
enum KeyView {
    Missing,
    Str {
        value: String,
        ttl: Option<i64>,
    },
    Hash {
        fields: Vec<(String, i64)>,
        ttl: Option<i64>,
    },
}

/// Reads a key of the model through the script host interface (so the view does not
/// depend on the model's representation). Hash fields are looked up by owner name: only
/// those are ever written.
fn model_view(exec: &mut Exec<'_>, key: &str) -> KeyView {
    if !exec.exists(key) {
        return KeyView::Missing;
    }
    let ttl = match exec.pttl(key) {
        -1 => None,
        t => Some(t),
    };
    match exec.get(key) {
        Ok(value) => KeyView::Str {
            value: value.expect("an existing string key has a value"),
            ttl,
        },
        Err(_) => {
            let mut fields = Vec::new();
            for owner in OWNERS {
                if exec.hexists(key, owner).expect("a hash") {
                    let n = exec.hincrby(key, owner, 0).expect("a hash");
                    fields.push((owner.to_string(), n));
                }
            }
            KeyView::Hash { fields, ttl }
        }
    }
}

/// Type, PTTL and contents of a key in one atomic call.
const DUMP_LUA: &str = "local t = redis.call('type', KEYS[1])['ok'] \
     if t == 'none' then return {t} end \
     local r = {t, redis.call('pttl', KEYS[1])} \
     local v \
     if t == 'string' then v = {redis.call('get', KEYS[1])} \
     else v = redis.call('hgetall', KEYS[1]) end \
     for _, x in ipairs(v) do r[#r + 1] = x end \
     return r";

async fn real_view(
    conn: &mut MultiplexedConnection,
    key: &str,
    base: TimeBase,
) -> Result<KeyView, String> {
    let items: Vec<redis::Value> = redis::Script::new(DUMP_LUA)
        .key(key)
        .invoke_async(conn)
        .await
        .map_err(|e| format!("dump of {key}: {e}"))?;
    let text = |v: &redis::Value| match v {
        redis::Value::BulkString(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        other => Err(format!("dump of {key}: unexpected {other:?}")),
    };
    let int = |v: &redis::Value| match v {
        redis::Value::Int(i) => Ok(*i),
        other => Err(format!("dump of {key}: unexpected {other:?}")),
    };
    let kind = text(&items[0])?;
    if kind == "none" {
        return Ok(KeyView::Missing);
    }
    let ttl = match int(&items[1])? {
        -1 => None,
        ms => Some(base.ticks(ms)),
    };
    match kind.as_str() {
        "string" => Ok(KeyView::Str {
            value: text(&items[2])?,
            ttl,
        }),
        "hash" => {
            let mut fields = Vec::new();
            for pair in items[2..].chunks(2) {
                let n = text(&pair[1])?
                    .parse()
                    .map_err(|e| format!("dump of {key}: {e}"))?;
                fields.push((text(&pair[0])?, n));
            }
            fields.sort();
            Ok(KeyView::Hash { fields, ttl })
        }
        other => Err(format!("dump of {key}: type {other}")),
    }
}

/// How a sequence ended (or where it is).
#[derive(Clone, Debug)]
enum Status {
    Running,
    /// Every command ran in its window and every reply agreed.
    Agreed,
    /// A command ended outside its window at this tick: nothing can be concluded.
    Late(usize),
    Failed(String),
}

/// One sequence: its operations, the model node's data, and what happened so far.
struct Sequence {
    index: usize,
    seed: u64,
    prefix: String,
    ops: Vec<Vec<Op>>,
    data: Data,
    log: Vec<String>,
    status: Status,
    /// Replies seen, per operation kind and reply shape (for the coverage check).
    replies: BTreeMap<(String, String), usize>,
    /// Keys the model dropped at a tick boundary, i.e. expiries compared with Redis.
    expiries: usize,
}

impl Sequence {
    fn new(index: usize, seed: u64, ticks: usize, attempt: usize) -> Sequence {
        Sequence {
            index,
            seed,
            prefix: format!("s{index}a{attempt}:"),
            ops: generate(seed, ticks),
            data: Data::default(),
            log: Vec::new(),
            status: Status::Running,
            replies: BTreeMap::new(),
            expiries: 0,
        }
    }

    fn fail(&mut self, what: String) {
        let mut msg = format!(
            "sequence {} (seed {}): {what}\nhistory (real reply | model reply):\n",
            self.index, self.seed
        );
        for line in self.log.iter().rev().take(40).rev() {
            msg.push_str("  ");
            msg.push_str(line);
            msg.push('\n');
        }
        self.status = Status::Failed(msg);
    }

    /// Runs tick `t`: every operation on both sides, then the key views. `tick_start`
    /// is the real instant at which the node's clock entered the tick.
    async fn run_tick(
        &mut self,
        t: usize,
        node: &Node,
        mut conn: MultiplexedConnection,
        base: TimeBase,
        tick_start: Instant,
    ) {
        let deadline = tick_start + base.window();
        let clock = i64::try_from(t).unwrap();
        // Keys that the model's clock expired since the last tick.
        let before: Vec<bool> = KEYS
            .iter()
            .map(|k| self.data.entry(&k.name(&self.prefix)).is_some())
            .collect();
        self.data.expire(clock);
        for (k, was) in KEYS.iter().zip(before) {
            if was && self.data.entry(&k.name(&self.prefix)).is_none() {
                self.expiries += 1;
            }
        }
        for op in self.ops[t].clone() {
            let real_cmd = op.command(&self.prefix, |k| base.ttl_ms(k));
            let model_cmd = op.command(&self.prefix, |k| k);
            let real = node.execute(&real_cmd).await;
            if Instant::now() >= deadline {
                self.status = Status::Late(t);
                return;
            }
            let real = match real {
                Ok(r) => r,
                Err(e) => return self.fail(format!("tick {t}: {real_cmd}: {e}")),
            };
            let model = Exec::new(&mut self.data, clock, 0).run(&model_cmd);
            self.log
                .push(format!("tick {t}: {real_cmd} -> {real} | {model}"));
            *self
                .replies
                .entry((op.kind(), reply_shape(&model)))
                .or_default() += 1;
            if !agree(&op, &model, &real, base) {
                return self.fail(format!(
                    "tick {t}: {real_cmd}: Redis replied {real}, the model {model}"
                ));
            }
        }
        for key in KEYS {
            let name = key.name(&self.prefix);
            let real = real_view(&mut conn, &name, base).await;
            if Instant::now() >= deadline {
                self.status = Status::Late(t);
                return;
            }
            let real = match real {
                Ok(v) => v,
                Err(e) => return self.fail(format!("tick {t}: {e}")),
            };
            let model = model_view(&mut Exec::new(&mut self.data, clock, 0), &name);
            if real != model {
                return self.fail(format!(
                    "end of tick {t}: key {name} is {real:?} on Redis, {model:?} in the model"
                ));
            }
        }
        if t + 1 == self.ops.len() {
            self.status = Status::Agreed;
        }
    }
}

fn reply_shape(r: &Reply) -> String {
    match r {
        Reply::Nil => "nil".into(),
        Reply::Ok => "OK".into(),
        Reply::Int(i) if (-2..=1).contains(i) => format!("{i}"),
        Reply::Int(_) => "int".into(),
        Reply::Bulk(_) => "bulk".into(),
        Reply::Error(e) => error_code(e).to_string(),
        Reply::Array(_) => "array".into(),
    }
}

/// Runs the sequences in lockstep, tick by tick, against `cluster`'s first master.
async fn run_sequences(
    cluster: &Cluster,
    mut seqs: Vec<Sequence>,
    base: TimeBase,
) -> Result<Vec<Sequence>, String> {
    let master = cluster.master(0);
    let timeouts = NodeTimeouts {
        connect: Duration::from_secs(5),
        command: Duration::from_secs(5),
    };
    let node = Arc::new(Node::new(0, &master.url(), timeouts).expect("a valid URL"));
    let client = redis::Client::open(master.url()).expect("a valid URL");
    let conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| format!("connect to {}: {e}", master.name()))?;
    node.connect().await.expect("the node answers");
    let ticks = seqs.iter().map(|s| s.ops.len()).max().unwrap_or(0);
    let start = Instant::now();
    for t in 0..ticks {
        let tick_start = if base.stepped {
            // The node's clock reads real time + offset: the offset takes back the real
            // time elapsed so far, so tick t begins at start + tT on the node's clock.
            let now = Instant::now();
            let elapsed = i64::try_from(now.duration_since(start).as_millis()).unwrap();
            master
                .set_clock_offset_ms(i64::try_from(t as u64 * base.tick_ms).unwrap() - elapsed)
                .await
                .map_err(|e| e.to_string())?;
            now
        } else {
            let at = start + Duration::from_millis(t as u64 * base.tick_ms);
            tokio::time::sleep_until(at.into()).await;
            at
        };
        let mut tasks = JoinSet::new();
        for mut seq in seqs.drain(..) {
            let (node, conn) = (node.clone(), conn.clone());
            tasks.spawn(async move {
                if matches!(seq.status, Status::Running) && t < seq.ops.len() {
                    seq.run_tick(t, &node, conn, base, tick_start).await;
                }
                seq
            });
        }
        seqs = tasks.join_all().await;
    }
    seqs.sort_by_key(|s| s.index);
    Ok(seqs)
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v}: expected an unsigned integer")),
    )
}

/// The seeds to run: `count` consecutive ones from the base (see the module docs).
/// The flag says whether they are the default set, on which coverage is asserted.
fn seeds(count: u64) -> (Vec<u64>, bool) {
    let base = env_u64("LOCKLAB_CONFORMANCE_SEED");
    let count = env_u64("LOCKLAB_CONFORMANCE_SEQUENCES").unwrap_or(count);
    let default = base.is_none() && count >= 4;
    let base = base.unwrap_or(DEFAULT_SEED);
    ((0..count).map(|i| base.wrapping_add(i)).collect(), default)
}

async fn start_cluster(clock_control: bool) -> Cluster {
    if let Err(e) = locklab_cluster::preflight() {
        panic!("the conformance test needs Docker and the Redis image: {e}");
    }
    Cluster::builder()
        .clock_control(clock_control)
        .start()
        .await
        .unwrap_or_else(|e| panic!("cluster start failed: {e}"))
}

/// Totals over the sequences that agreed, printed, and checked on the default seeds: a
/// run that never reached a reply shape or an expiry would prove little.
fn check_coverage(seqs: &[Sequence], base: TimeBase, assert: bool) {
    let mut replies: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut expiries = 0;
    for s in seqs {
        for (k, n) in &s.replies {
            *replies.entry(k.clone()).or_default() += n;
        }
        expiries += s.expiries;
    }
    eprintln!("{}: {} sequences agreed", base.name(), seqs.len());
    eprintln!("  keys expired by the clock: {expiries}");
    for ((kind, shape), n) in &replies {
        eprintln!("  {kind:<22} {shape:<10} {n}");
    }
    if !assert {
        return;
    }
    assert!(expiries >= 10, "only {expiries} expiries were compared");
    let needed: &[(&str, &str)] = &[
        ("SETNX", "1"),
        ("SETNX", "0"),
        ("SET NX PX", "OK"),
        ("SET NX PX", "nil"),
        ("GET", "bulk"),
        ("GET", "nil"),
        ("GET", "WRONGTYPE"),
        ("GETSET", "bulk"),
        ("GETSET", "nil"),
        ("DEL", "1"),
        ("DEL", "0"),
        ("PEXPIRE", "1"),
        ("PEXPIRE", "0"),
        ("INCR", "int"),
        ("INCR", "ERR"),
        ("compare-and-delete", "1"),
        ("compare-and-delete", "0"),
        ("compare-and-delete", "WRONGTYPE"),
        ("compare-and-pexpire", "1"),
        ("compare-and-pexpire", "0"),
        ("reentrant-lock", "nil"),
        ("reentrant-lock", "int"),
        ("reentrant-lock", "WRONGTYPE"),
        ("reentrant-unlock", "nil"),
        ("reentrant-unlock", "0"),
        ("reentrant-unlock", "1"),
        ("reentrant-renew", "1"),
        ("reentrant-renew", "0"),
        // A custom lock's commands by name and its own scripts.
        ("call SET", "OK"),
        ("call SET", "nil"),
        ("call SET", "ERR"),
        ("call GET", "WRONGTYPE"),
        ("call PEXPIRE", "1"),
        ("call PTTL", "int"),
        ("call PTTL", "-2"),
        ("call HINCRBY", "int"),
        ("call EXISTS", "int"),
        ("custom delete-any", "1"),
        ("custom reset-renewal", "OK"),
        ("custom hash-acquire", "nil"),
        ("custom hash-release", "1"),
        ("custom pcall-incr", "LOCKED"),
        ("custom pcall-incr", "bulk"),
        ("custom array", "array"),
        ("custom boolean", "nil"),
        ("custom runtime-error", "ERR"),
    ];
    let missing: Vec<_> = needed
        .iter()
        .filter(|(k, s)| !replies.contains_key(&(k.to_string(), s.to_string())))
        .collect();
    assert!(
        missing.is_empty(),
        "the default seeds never produced {missing:?}"
    );
}

/// Panics with every failure; returns the sequences that agreed.
fn settle(seqs: Vec<Sequence>, base: TimeBase) -> (Vec<Sequence>, Vec<Sequence>) {
    let mut failures = Vec::new();
    let mut agreed = Vec::new();
    let mut late = Vec::new();
    for s in seqs {
        match &s.status {
            Status::Agreed => agreed.push(s),
            Status::Late(_) => late.push(s),
            Status::Failed(msg) => failures.push(format!(
                "{msg}reproduce: LOCKLAB_CONFORMANCE_SEED={} LOCKLAB_CONFORMANCE_SEQUENCES=1 \
                 cargo test --release -p locklab-harness --test real_redis conformance::{}",
                s.seed,
                if base.stepped {
                    "model_agrees_with_redis_on_a_stepped_clock"
                } else {
                    "model_agrees_with_redis_in_real_time"
                }
            )),
            Status::Running => failures.push(format!("sequence {} never finished", s.index)),
        }
    }
    assert!(
        failures.is_empty(),
        "the model's Redis disagrees with real Redis ({}):\n\n{}",
        base.name(),
        failures.join("\n\n")
    );
    (agreed, late)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_agrees_with_redis_in_real_time() {
    const TICKS: usize = 32;
    let (seeds, _) = seeds(6);
    let cluster = start_cluster(false).await;
    let mut base = TimeBase {
        tick_ms: 150,
        stepped: false,
    };
    let mut todo: Vec<Sequence> = seeds
        .iter()
        .enumerate()
        .map(|(i, &seed)| Sequence::new(i, seed, TICKS, 0))
        .collect();
    let mut agreed = Vec::new();
    let mut outcome = Ok(());
    for attempt in 0..REAL_TIME_ATTEMPTS {
        let seqs = match run_sequences(&cluster, todo, base).await {
            Ok(s) => s,
            Err(e) => {
                outcome = Err(e);
                todo = Vec::new();
                break;
            }
        };
        let (ok, late) = settle(seqs, base);
        agreed.extend(ok);
        for s in &late {
            if let Status::Late(t) = s.status {
                eprintln!(
                    "sequence {} (seed {}): a command ended after {} ms of tick {t}; \
                     running it again with {} ms ticks",
                    s.index,
                    s.seed,
                    base.window().as_millis(),
                    base.tick_ms * 2
                );
            }
        }
        todo = late
            .into_iter()
            .map(|s| Sequence::new(s.index, s.seed, TICKS, attempt + 1))
            .collect();
        if todo.is_empty() {
            break;
        }
        base.tick_ms *= 2;
    }
    cluster.shutdown().await.expect("cluster shutdown");
    outcome.expect("the real-time run");
    assert!(
        todo.is_empty(),
        "the machine is too loaded to judge expiry: {} sequences ran late even with {} ms \
         ticks",
        todo.len(),
        base.tick_ms / 2
    );
    // Coverage is asserted on the stepped run, which is long enough to reach every
    // reply; here it is printed.
    check_coverage(&agreed, base, false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_agrees_with_redis_on_a_stepped_clock() {
    const TICKS: usize = 48;
    let (seeds, default) = seeds(32);
    let cluster = start_cluster(true).await;
    let base = TimeBase {
        tick_ms: 60_000,
        stepped: true,
    };
    let seqs: Vec<Sequence> = seeds
        .iter()
        .enumerate()
        .map(|(i, &seed)| Sequence::new(i, seed, TICKS, 0))
        .collect();
    let result = run_sequences(&cluster, seqs, base).await;
    cluster.shutdown().await.expect("cluster shutdown");
    let seqs = result.unwrap_or_else(|e| panic!("stepped-clock run: {e}"));
    let (agreed, late) = settle(seqs, base);
    assert!(
        late.is_empty(),
        "{} sequences took more than {} s of real time within one tick",
        late.len(),
        base.window().as_secs()
    );
    check_coverage(&agreed, base, default);
}

#[test]
fn the_same_seed_gives_the_same_sequence() {
    let a = format!("{:?}", generate(5, 40));
    assert_eq!(a, format!("{:?}", generate(5, 40)));
    assert_ne!(a, format!("{:?}", generate(6, 40)));
}
