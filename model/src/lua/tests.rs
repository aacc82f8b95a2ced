use locklab::Reply;

use super::{called_commands, check, eval};
use crate::redis::{Data, Exec};

fn run(data: &mut Data, text: &str, keys: &[&str], args: &[&str]) -> Reply {
    let keys: Vec<String> = keys.iter().map(|s| s.to_string()).collect();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    eval(&mut Exec::new(data, 0, 0), text, &keys, &args)
}

fn value(text: &str) -> Reply {
    run(&mut Data::default(), text, &[], &[])
}

#[test]
fn lua_values_convert_as_redis_converts_them() {
    assert_eq!(value("return nil"), Reply::Nil);
    assert_eq!(value("return false"), Reply::Nil);
    assert_eq!(value("return true"), Reply::Int(1));
    assert_eq!(value("return 3.99"), Reply::Int(3));
    assert_eq!(value("return -3.99"), Reply::Int(-3));
    assert_eq!(value("return 'x'"), Reply::Bulk("x".into()));
    assert_eq!(value("return {ok='OK'}"), Reply::Ok);
    assert_eq!(
        value("return redis.status_reply('PONG')"),
        Reply::Bulk("PONG".into())
    );
    assert_eq!(
        value("return redis.error_reply('MINE nope')"),
        Reply::Error("MINE nope".into())
    );
    assert_eq!(
        value("return {1, 'a', nil, 4}"),
        Reply::Array(vec![Reply::Int(1), Reply::Bulk("a".into())])
    );
}

#[test]
fn replies_convert_to_lua_as_redis_converts_them() {
    let mut d = Data::default();
    // A missing key reads as false, not nil; an integer as a number.
    assert_eq!(
        run(
            &mut d,
            "return redis.call('get', KEYS[1]) == false",
            &["k"],
            &[]
        ),
        Reply::Int(1)
    );
    assert_eq!(
        run(
            &mut d,
            "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 5).ok",
            &["k"],
            &["v"]
        ),
        Reply::Bulk("OK".into())
    );
    assert_eq!(
        run(
            &mut d,
            "return redis.call('pttl', KEYS[1]) + 1",
            &["k"],
            &[]
        ),
        Reply::Int(6)
    );
    assert_eq!(
        run(&mut d, "return redis.call('get', KEYS[1])", &["k"], &[]),
        Reply::Bulk("v".into())
    );
}

#[test]
fn call_raises_and_pcall_returns_the_error() {
    let mut d = Data::default();
    run(
        &mut d,
        "redis.call('hincrby', KEYS[1], 'f', 1)",
        &["h"],
        &[],
    );
    let wrongtype = run(&mut d, "return redis.call('get', KEYS[1])", &["h"], &[]);
    assert!(
        matches!(&wrongtype, Reply::Error(e) if e.starts_with("WRONGTYPE")),
        "{wrongtype}"
    );
    let caught = run(
        &mut d,
        "local r = redis.pcall('get', KEYS[1]); return type(r) == 'table' and r.err ~= nil",
        &["h"],
        &[],
    );
    assert_eq!(caught, Reply::Int(1));
}

#[test]
fn a_command_named_at_run_time_that_the_model_lacks_is_unmodelled() {
    let mut d = Data::default();
    let mut ex = Exec::new(&mut d, 0, 0);
    // Not a tail call (`return redis.pcall(cmd)`), whose frame Lua 5.1 drops with its line.
    let text = "local cmd = 'flush' .. 'all'\nlocal r = redis.pcall(cmd)\nreturn r";
    let r = eval(&mut ex, text, &[], &[]);
    assert!(matches!(&r, Reply::Error(_)), "{r}");
    let what = ex.unmodelled.expect("unmodelled");
    assert!(what.contains("`flushall`"), "{what}");
    assert_eq!(ex.script_line, Some(2));
    // One the model has runs: UNLINK by a computed name.
    let mut d = Data::default();
    run(&mut d, "redis.call('set', KEYS[1], 'v')", &["k"], &[]);
    let r = run(
        &mut d,
        "local cmd = 'unlink'; return redis.call(cmd, KEYS[1])",
        &["k"],
        &[],
    );
    assert_eq!(r, Reply::Int(1));
}

#[test]
fn runtime_errors_are_error_replies() {
    let r = value("local t = nil; return t.x");
    assert!(
        matches!(&r, Reply::Error(e) if e.starts_with("ERR user_script:1:")),
        "{r}"
    );
    let r = value("return redis.call('get', {})");
    assert!(
        matches!(&r, Reply::Error(e) if e.contains("must be strings or integers")),
        "{r}"
    );
}

#[test]
fn scripts_write_through_to_the_data_with_their_owner() {
    let mut d = Data::default();
    let set = "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])";
    let mut ex = Exec::new(&mut d, 0, 3);
    let r = eval(&mut ex, set, &["k".into()], &["a".into(), "4".into()]);
    assert_eq!(r, Reply::Ok);
    let entry = d.entry("k").expect("set");
    assert_eq!((entry.owner, entry.expires_at), (Some(3), Some(4)));
    let del = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
    let mut ex = Exec::new(&mut d, 1, 1);
    assert_eq!(
        eval(&mut ex, del, &["k".into()], &["a".into()]),
        Reply::Int(1)
    );
    assert_eq!(ex.effect.displaced, vec![Some(3)]);
}

#[test]
fn syntax_errors_name_the_line_in_the_script() {
    assert_eq!(check("return 1"), Ok(()));
    let e = check("local x = 1\nif x then\n  return 2\n").unwrap_err();
    assert_eq!(e.line, 4, "{e:?}");
    assert!(e.message.contains("'end' expected"), "{e:?}");
}

#[test]
fn literal_command_names_are_found_with_their_lines() {
    let text = "if redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.pcall( \"DEL\", KEYS[1])\nend\nlocal c = 'x'; redis.call(c)";
    assert_eq!(
        called_commands(text),
        vec![("get".to_string(), 1), ("DEL".to_string(), 2)]
    );
}

fn error_of(text: &str) -> String {
    match value(text) {
        Reply::Error(e) => e,
        other => panic!("{text}: {other}"),
    }
}

#[test]
fn redis_log_and_its_levels_run_and_are_checked_as_redis_checks_them() {
    let mut d = Data::default();
    run(
        &mut d,
        "return redis.call('set', KEYS[1], 'a')",
        &["k"],
        &[],
    );
    let release =
        "redis.log(redis.LOG_NOTICE, 'releasing', KEYS[1])\nreturn redis.call('del', KEYS[1])";
    assert_eq!(run(&mut d, release, &["k"], &[]), Reply::Int(1));
    assert_eq!(
        value("return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}"),
        Reply::Array((0..4).map(Reply::Int).collect())
    );
    assert!(error_of("redis.log(redis.LOG_NOTICE)").contains("requires two arguments"));
    assert!(error_of("redis.log('a', 'b')").contains("First argument must be a number"));
    assert!(error_of("redis.log(9, 'b')").contains("Invalid debug level."));
}

#[test]
fn globals_are_read_only_and_nothing_outlives_a_run() {
    let mut d = Data::default();
    let mut ex = Exec::new(&mut d, 0, 0);
    let r = eval(
        &mut ex,
        "local x = 1\nowner = ARGV[1]\nreturn 1",
        &[],
        &["a".into()],
    );
    assert!(
        matches!(&r, Reply::Error(e) if e.starts_with("ERR user_script:2: Attempt to modify a readonly table")),
        "{r}"
    );
    assert_eq!(ex.script_line, Some(2));
    assert!(error_of("return owner")
        .contains("Script attempted to access nonexistent global variable 'owner'"));
    for text in [
        "string.x = 1",
        "redis.call = nil",
        "rawset(_G, 'y', 1)",
        "KEYS = {}",
        "setmetatable(_G, nil)",
    ] {
        assert!(
            error_of(text).contains("Attempt to modify a readonly table"),
            "{text}"
        );
    }
    assert_eq!(value("return string.x"), Reply::Nil);
    for name in [
        "os", "io", "loadfile", "dofile", "print", "debug", "require", "setfenv",
    ] {
        assert!(
            error_of(&format!("return {name}")).contains("nonexistent global variable"),
            "{name}"
        );
    }
    // A chunk the script compiles runs in the same environment.
    assert!(error_of("loadstring('z = 1')()").contains("readonly table"));
    assert_eq!(value("return loadstring('return 1 + 1')()"), Reply::Int(2));
    // KEYS and ARGV are this run's.
    let keys = ["a".to_string()];
    let r = eval(
        &mut Exec::new(&mut Data::default(), 0, 0),
        "return #KEYS",
        &keys,
        &[],
    );
    assert_eq!(r, Reply::Int(1));
    assert_eq!(value("return #KEYS"), Reply::Int(0));
}

#[test]
fn cjson_bit_and_sha1hex_answer_as_on_redis() {
    // Each expected text is real Redis 7's answer to the same script.
    let bulk = |s: &str| Reply::Bulk(s.into());
    assert_eq!(
        value("return cjson.encode({1,2,'a/b',{x=1.5}})"),
        bulk(r#"[1,2,"a\/b",{"x":1.5}]"#)
    );
    assert_eq!(value("return cjson.encode({})"), bulk("{}"));
    assert_eq!(
        value("return cjson.encode({[1]=1,[3]=3})"),
        bulk("[1,null,3]")
    );
    assert_eq!(
        value("return cjson.encode({1e15, 0.1, 123456789012345, -0.0, 1/3, 100})"),
        bulk("[1e+15,0.1,1.2345678901234e+14,-0,0.33333333333333,100]")
    );
    assert_eq!(
        value("return cjson.encode({a=cjson.null})"),
        bulk(r#"{"a":null}"#)
    );
    assert_eq!(
        value("return cjson.encode({s='\"\\\\\\1\\127x'})"),
        bulk(r#"{"s":"\"\\\u0001\u007fx"}"#)
    );
    assert!(error_of("return cjson.encode({[1]=1,[20]=2})").contains("excessively sparse array"));
    assert!(error_of("return cjson.encode(function() end)").contains("Cannot serialise function"));
    assert_eq!(
        value("local t = cjson.decode('{\"a\":[1,2,{\"b\":null}],\"c\":1.5}') return {t.a[2], tostring(t.a[3].b == cjson.null), tostring(t.c)}"),
        Reply::Array(vec![Reply::Int(2), bulk("true"), bulk("1.5")])
    );
    assert!(matches!(
        value("return cjson.decode('[1,')"),
        Reply::Error(_)
    ));
    assert_eq!(
        value("return {bit.tobit(2^32+5), bit.tohex(-1, -4), bit.lshift(1, 33), bit.rshift(-1, 28), bit.arshift(-16, 2), bit.rol(0x12345678, 8), bit.bswap(0x12345678), bit.bnot(0), bit.bxor(5,3,1), bit.tohex(255)}"),
        Reply::Array(vec![
            Reply::Int(5),
            bulk("FFFF"),
            Reply::Int(2),
            Reply::Int(15),
            Reply::Int(-4),
            Reply::Int(878_082_066),
            Reply::Int(2_018_915_346),
            Reply::Int(-1),
            Reply::Int(7),
            bulk("000000ff"),
        ])
    );
    assert_eq!(
        value("return redis.sha1hex('abc')"),
        bulk("a9993e364706816aba3e25717850c26c9cd0d89d")
    );
}

#[test]
fn setresp_replicate_commands_and_set_repl() {
    let mut d = Data::default();
    run(&mut d, "redis.call('hset', KEYS[1], 'f', 'v')", &["h"], &[]);
    assert_eq!(
        run(
            &mut d,
            "redis.setresp(3); return redis.call('get', 'missing') == nil",
            &[],
            &[]
        ),
        Reply::Int(1)
    );
    assert_eq!(
        run(
            &mut d,
            "return redis.call('get', 'missing') == false",
            &[],
            &[]
        ),
        Reply::Int(1),
        "each run starts in RESP2"
    );
    assert_eq!(
        run(
            &mut d,
            "redis.setresp(3); return redis.call('hgetall', KEYS[1]).map.f",
            &["h"],
            &[]
        ),
        Reply::Bulk("v".into())
    );
    assert!(error_of("redis.setresp(4)").contains("RESP version must be 2 or 3."));
    assert_eq!(value("return redis.replicate_commands()"), Reply::Int(1));
    assert_eq!(
        value("redis.set_repl(redis.REPL_ALL) return 1"),
        Reply::Int(1)
    );
    assert!(error_of("redis.set_repl(9)").contains("Invalid replication flags"));
    let mut d = Data::default();
    let mut ex = Exec::new(&mut d, 0, 0);
    eval(&mut ex, "redis.set_repl(redis.REPL_NONE)", &[], &[]);
    assert!(ex.unmodelled.is_some_and(|w| w.contains("REPL_REPLICA")));
    let mut ex = Exec::new(&mut d, 0, 0);
    eval(
        &mut ex,
        "local s = 'str' .. 'uct'\nreturn _G[s].pack('>I', 1)",
        &[],
        &[],
    );
    assert!(
        ex.unmodelled.is_some_and(|w| w.contains("struct")),
        "struct"
    );
    assert_eq!(ex.script_line, Some(2));
}

#[test]
fn the_literal_scan_ignores_comments() {
    let text = "-- redis.call('publish', 'c', 'm')\n--[[ redis.call('flushall')\n]] return redis.call(\"get\", KEYS[1]) -- cmsgpack\nlocal s = '-- not a comment'; return struct.pack('i', 1)";
    assert_eq!(called_commands(text), vec![("get".to_string(), 3)]);
    assert_eq!(super::unimplemented_libraries(text), vec![("struct", 4)]);
    assert!(super::unimplemented_libraries("return 'struct'").is_empty());
}
