//! Conformance of what a custom lock may send, case by case: each case runs side by
//! side on the model's abstract Redis (`locklab_model::redis::Exec`, its scripts in the
//! model's Lua, `model/src/lua.rs`) and on a real Redis in a container, and every reply
//! must agree. The cases cover the scripting environment (`redis.log` and its levels,
//! read-only globals, no `os`/`io`/`loadfile`/`dofile`, `cjson`, `bit`, `sha1hex`,
//! `setresp`, `replicate_commands`, `set_repl`, `pcall`, `error_reply`,
//! `status_reply`) and every command and option of `model/src/call.rs`, with times in
//! Redis's units: the model runs at 100 ms a tick, and the real node's clock is stepped
//! (libclockshift) by the same time the model's advances.
//!
//! Replies compare exactly, except: an error from a script, where Redis appends
//! ` script: <sha>, on @user_script:<line>.`, compares without that suffix;
//! `PTTL`/`TTL` compare within the real time a case takes (Redis's clock runs on
//! between commands, the model's does not); `TIME` compares by its shape.

use std::sync::Arc;
use std::time::Duration;

use locklab::driver::{Node, NodeTimeouts};
use locklab::{Command, CustomScript, Reply, Script};
use locklab_cluster::Cluster;
use locklab_model::redis::{Data, Exec};

const TICK_MS: u64 = 100;
/// Real milliseconds a case may take between a `PTTL` and what the model says.
const SLACK_MS: i64 = 150;

#[derive(Clone, Copy, Debug)]
enum Check {
    Exact,
    /// An integer at most [`SLACK_MS`] (or one second, for `TTL`) below the model's.
    Below(i64),
    Shape,
}

#[derive(Clone, Debug)]
enum Step {
    /// A command by name; `K` is the case's key, `H` its hash key.
    Cmd(&'static str, Check),
    /// A script with `KEYS = {K, H}` and the given `ARGV`.
    Lua(&'static str, &'static [&'static str]),
    /// Both clocks advance by this many ms (a whole number of ticks).
    Advance(u64),
}

use Check::{Below, Exact, Shape};
use Step::{Advance, Cmd, Lua};

fn cmd(words: &'static str) -> Step {
    Cmd(words, Exact)
}

/// The cases: (name, steps). Each runs on its own keys.
fn cases() -> Vec<(&'static str, Vec<Step>)> {
    vec![
        ("redis.log in a release", vec![
            cmd("SET K tok"),
            Lua("redis.log(redis.LOG_NOTICE, 'releasing', KEYS[1])\nreturn redis.call('del', KEYS[1])", &[]),
            Lua("return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}", &[]),
            Lua("redis.log(redis.LOG_WARNING)", &[]),
            Lua("redis.log('a', 'b')", &[]),
            Lua("redis.log(7, 'b')", &[]),
        ]),
        ("globals are read-only", vec![
            Lua("local x = 1\nowner = ARGV[1]\nreturn 1", &["tok"]),
            Lua("return owner", &[]),
            Lua("string.x = 1", &[]),
            Lua("rawset(_G, 'y', 1)", &[]),
            Lua("KEYS = {}", &[]),
            Lua("return type(string.x)", &[]),
            Lua("loadstring('z = 1')()", &[]),
            Lua("return loadstring('return 1 + 1')()", &[]),
        ]),
        ("no os, io, loadfile, dofile, print, debug", vec![
            Lua("return os", &[]),
            Lua("return io", &[]),
            Lua("return loadfile", &[]),
            Lua("return dofile", &[]),
            Lua("return print", &[]),
            Lua("return debug", &[]),
            Lua("return {type(string), type(table), type(math), type(coroutine), type(bit), type(cjson), type(struct), type(cmsgpack), type(redis), type(_G), type(unpack), type(gcinfo)}", &[]),
        ]),
        ("cjson, bit, sha1hex", vec![
            Lua("return cjson.encode({1, 2, 'a/b', {x = 1.5}})", &[]),
            Lua("return cjson.encode({[1] = 1, [3] = 3})", &[]),
            Lua("return cjson.encode({1e15, 0.1, 123456789012345, -0.0, 1/3, 100, {}})", &[]),
            Lua("return cjson.encode({s = '\"\\\\\\1\\127x\\n\\t'})", &[]),
            Lua("return cjson.encode({a = cjson.null, [2] = false})", &[]),
            Lua("local t = cjson.decode(ARGV[1]) return {t.a[2], tostring(t.a[3].b == cjson.null), tostring(t.c), t.d}", &["{\"a\":[1,2,{\"b\":null}],\"c\":1.5,\"d\":\"x\"}"]),
            Lua("return {bit.tobit(2^32 + 5), bit.tohex(-1, -4), bit.lshift(1, 33), bit.rshift(-1, 28), bit.arshift(-16, 2), bit.rol(0x12345678, 8), bit.ror(0x12345678, 4), bit.bswap(0x12345678), bit.bnot(0), bit.band(0xff, 0x0f, 0x3), bit.bor(1, 2, 4), bit.bxor(5, 3, 1), bit.tohex(255), bit.tohex(0xabc, 2)}", &[]),
            Lua("return redis.sha1hex(ARGV[1])", &["abc"]),
            Lua("return redis.sha1hex('')", &[]),
        ]),
        ("setresp, replicate_commands, set_repl", vec![
            cmd("HSET H f v"),
            Lua("redis.setresp(3) return redis.call('get', KEYS[1]) == nil", &[]),
            Lua("return redis.call('get', KEYS[1]) == false", &[]),
            Lua("redis.setresp(3) return redis.call('hgetall', KEYS[2]).map.f", &[]),
            Lua("redis.setresp(4)", &[]),
            Lua("return redis.replicate_commands()", &[]),
            Lua("redis.set_repl(redis.REPL_ALL) return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}", &[]),
            Lua("redis.set_repl(9)", &[]),
        ]),
        ("pcall, error_reply, status_reply", vec![
            cmd("HSET H f v"),
            Lua("local r = redis.pcall('get', KEYS[2]) return {type(r), r.err}", &[]),
            Lua("return redis.call('get', KEYS[2])", &[]),
            Lua("return redis.error_reply('MINE nope')", &[]),
            Lua("return redis.status_reply('PONG')", &[]),
            Lua("local x = nil return x + 1", &[]),
            Lua("return {1, 'a', true, false, 3.99, -3.99}", &[]),
            Lua("local c = 'un' .. 'link' return redis.call(c, KEYS[2])", &[]),
        ]),
        ("SET options", vec![
            cmd("SET K a XX"),
            cmd("SET K a NX GET"),
            cmd("SET K b NX GET"),
            cmd("SET K b XX GET PX 500"),
            Cmd("PTTL K", Below(SLACK_MS)),
            cmd("SET K c KEEPTTL"),
            Cmd("PTTL K", Below(SLACK_MS)),
            cmd("SET K c"),
            cmd("PTTL K"),
            cmd("SET K d NX EX 10"),
            cmd("SET K d XX EX 10"),
            Cmd("TTL K", Below(1)),
            cmd("SET K a NX XX"),
            cmd("SET K a EX 1 PX 1"),
            cmd("SET K a KEEPTTL EX 1"),
            cmd("SET K a PX"),
            cmd("SET K a EX 0"),
            cmd("SET K a PX -5"),
            cmd("SET K a PX x"),
            cmd("SET H a GET"),
            cmd("SET K a FOO"),
            Lua("local t = redis.call('time') local ms = t[1] * 1000 + math.floor(t[2] / 1000)\nms = ms - ms % 100\nreturn redis.call('set', KEYS[1], 'v', 'PXAT', ms + 700)", &[]),
            Cmd("PTTL K", Below(SLACK_MS + 100)),
            Lua("local t = redis.call('time') return redis.call('set', KEYS[1], 'v', 'EXAT', t[1] + 5)", &[]),
            Cmd("TTL K", Below(1)),
            Lua("local t = redis.call('time') return redis.call('set', KEYS[1], 'v', 'EXAT', t[1] - 5)", &[]),
            cmd("EXISTS K"),
            cmd("SET K a PXAT 1000"),
            cmd("EXISTS K"),
        ]),
        ("EXPIRE family options", vec![
            cmd("EXPIRE K 10"),
            cmd("SET K a"),
            cmd("PEXPIRE K 500 XX"),
            cmd("PEXPIRE K 500 GT"),
            cmd("PEXPIRE K 500 LT"),
            cmd("PEXPIRE K 500 NX"),
            cmd("PEXPIRE K 400 NX"),
            cmd("PEXPIRE K 400 GT"),
            cmd("EXPIRE K 1 GT"),
            cmd("PEXPIRE K 2000 LT"),
            cmd("PEXPIRE K 300 LT XX"),
            Cmd("PTTL K", Below(SLACK_MS)),
            cmd("EXPIRE K 20 NX XX"),
            cmd("EXPIRE K 20 GT LT"),
            cmd("EXPIRE K 20 YY"),
            cmd("EXPIRE K x"),
            cmd("PEXPIRE K 0"),
            cmd("EXISTS K"),
            cmd("SET K a"),
            cmd("EXPIRE K -1"),
            cmd("EXISTS K"),
            cmd("SET K a"),
            Lua("local t = redis.call('time') return redis.call('expireat', KEYS[1], t[1] + 30)", &[]),
            Cmd("TTL K", Below(1)),
            Lua("local t = redis.call('time') local ms = t[1] * 1000 + math.floor(t[2] / 1000)\nms = ms - ms % 100\nreturn redis.call('pexpireat', KEYS[1], ms + 900, 'LT')", &[]),
            Cmd("PTTL K", Below(SLACK_MS + 100)),
            cmd("EXPIREAT K 1"),
            cmd("EXISTS K"),
            cmd("TTL K"),
            cmd("PTTL K"),
        ]),
        ("keys, counters, hashes, publish, time", vec![
            cmd("GET K"),
            cmd("SET K a"),
            cmd("GET K"),
            cmd("EXISTS K K H"),
            cmd("GETDEL K"),
            cmd("GETDEL K"),
            cmd("SET K a"),
            cmd("UNLINK K H"),
            cmd("SET K a"),
            cmd("DEL K K"),
            cmd("INCR K"),
            cmd("INCRBY K 5"),
            cmd("DECR K"),
            cmd("DECRBY K 10"),
            cmd("INCRBY K x"),
            cmd("SET K a"),
            cmd("INCR K"),
            cmd("HSET H owner tok count 1"),
            cmd("HSET H owner tok2"),
            cmd("HGET H owner"),
            cmd("HGET H none"),
            cmd("HLEN H"),
            cmd("HEXISTS H count"),
            cmd("HEXISTS H none"),
            cmd("HINCRBY H count 2"),
            cmd("HINCRBY H owner 1"),
            cmd("HINCRBY H count x"),
            cmd("HGETALL H"),
            cmd("HGET K owner"),
            cmd("HSET K f v"),
            cmd("GET H"),
            cmd("HSET H f"),
            cmd("HDEL H owner count none"),
            cmd("HLEN H"),
            cmd("HGETALL H"),
            cmd("EXISTS H"),
            cmd("LPUSH L a b"),
            cmd("RPUSH L c"),
            cmd("LLEN L"),
            cmd("LPOP L"),
            cmd("RPOP L"),
            cmd("GET L"),
            cmd("HGET L f"),
            cmd("INCR L"),
            cmd("SET K a"),
            cmd("LPUSH K x"),
            cmd("LLEN K"),
            cmd("PEXPIRE L 500"),
            cmd("LPOP L"),
            cmd("LPOP L"),
            cmd("EXISTS L"),
            cmd("LLEN L"),
            cmd("RPOP L"),
            cmd("LPUSH L"),
            cmd("LPUSH L z"),
            cmd("DEL L"),
            cmd("PUBLISH K msg"),
            Cmd("TIME", Shape),
            cmd("GET"),
            cmd("SET K"),
        ]),
        // Every "still there" and "gone" is at least 500 ms (shifted, not slept) away
        // from the expiry, so that real time a loaded machine spends between two
        // commands cannot turn one into the other.
        ("units: PX and EX expire on the clock", vec![
            cmd("SET K a NX PX 1000"),
            Advance(500),
            Cmd("PTTL K", Below(SLACK_MS)),
            cmd("GET K"),
            Advance(1000),
            cmd("GET K"),
            cmd("SET K a NX EX 2"),
            Advance(1500),
            cmd("EXISTS K"),
            Advance(1000),
            cmd("EXISTS K"),
            cmd("SET K a"),
            cmd("PEXPIRE K 1000"),
            Advance(700),
            cmd("PEXPIRE K 1000 XX"),
            // Gone by now without the renewal (1,200 ms after the first PEXPIRE).
            Advance(500),
            cmd("EXISTS K"),
            Advance(1000),
            cmd("EXISTS K"),
        ]),
    ]
}

fn words(text: &str, key: &str, hash: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| match w {
            "K" => key.to_string(),
            "H" => hash.to_string(),
            w => w.to_string(),
        })
        .collect()
}

/// An error without the suffix Redis gives a script's error.
fn normalise(r: &Reply) -> Reply {
    match r {
        Reply::Error(e) => Reply::Error(
            e.split(" script: ")
                .next()
                .unwrap_or(e)
                .trim_end()
                .to_string(),
        ),
        other => other.clone(),
    }
}

fn shape(r: &Reply) -> String {
    match r {
        Reply::Array(items) => format!(
            "[{}]",
            items.iter().map(shape).collect::<Vec<_>>().join(",")
        ),
        Reply::Bulk(_) => "bulk".into(),
        Reply::Int(_) => "int".into(),
        other => format!("{other:?}"),
    }
}

fn agree(check: Check, model: &Reply, real: &Reply) -> bool {
    match check {
        Exact => normalise(model) == normalise(real),
        Shape => shape(model) == shape(real),
        Below(slack) => match (model, real) {
            (Reply::Int(m), Reply::Int(r)) if *m < 0 => m == r,
            (Reply::Int(m), Reply::Int(r)) => *r <= *m && *r >= *m - slack,
            _ => false,
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_and_commands_run_on_the_model_as_on_redis() {
    if let Err(e) = locklab_cluster::preflight() {
        panic!("this test needs Docker and the Redis image: {e}");
    }
    let cluster = Cluster::builder()
        .clock_control(true)
        .start()
        .await
        .unwrap_or_else(|e| panic!("cluster start failed: {e}"));
    let master = cluster.master(0);
    let timeouts = NodeTimeouts {
        connect: Duration::from_secs(5),
        command: Duration::from_secs(5),
    };
    let node = Arc::new(Node::new(0, &master.url(), timeouts).expect("a valid URL"));
    node.connect().await.expect("the node answers");
    let mut offset_ms = 0i64;
    let mut failures = Vec::new();
    let mut compared = 0;
    for (n, (name, steps)) in cases().into_iter().enumerate() {
        let (key, hash) = (format!("case{n}:k"), format!("case{n}:h"));
        let mut data = Data::default();
        let mut clock = 0i64;
        for step in &steps {
            let (command, check) = match step {
                Advance(ms) => {
                    offset_ms += i64::try_from(*ms).expect("small");
                    master
                        .set_clock_offset_ms(offset_ms)
                        .await
                        .expect("clock control");
                    clock += i64::try_from(ms / TICK_MS).expect("small");
                    continue;
                }
                Cmd(text, check) => (
                    Command::Call {
                        args: words(text, &key, &hash),
                    },
                    *check,
                ),
                Lua(text, args) => (
                    Command::Eval {
                        script: Script::Custom(CustomScript {
                            name: "case".into(),
                            text: (*text).into(),
                        }),
                        keys: vec![key.clone(), hash.clone()],
                        args: args.iter().map(|s| s.to_string()).collect(),
                    },
                    Exact,
                ),
            };
            let mut exec = Exec::new(&mut data, clock, 0).with_tick_ms(TICK_MS);
            let model = exec.run(&command);
            let unmodelled = exec.unmodelled.clone();
            let real = match node.execute(&command).await {
                Ok(r) => r,
                Err(e) => Reply::Error(format!("(driver) {e}")),
            };
            compared += 1;
            if unmodelled.is_some() || !agree(check, &model, &real) {
                failures.push(format!(
                    "{name}: {step:?}\n    model: {model:?}{}\n    redis: {real:?}",
                    unmodelled
                        .map(|u| format!(" (unmodelled: {u})"))
                        .unwrap_or_default()
                ));
            }
        }
    }
    master.set_clock_offset_ms(0).await.expect("clock control");
    eprintln!("{compared} steps compared");
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
