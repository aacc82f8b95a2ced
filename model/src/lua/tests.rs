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
    let unknown = value("return redis.call('flushall')");
    assert!(
        matches!(&unknown, Reply::Error(e) if e.contains("unknown command")),
        "{unknown}"
    );
}

#[test]
fn runtime_errors_are_error_replies() {
    let r = value("local t = nil; return t.x");
    assert!(
        matches!(&r, Reply::Error(e) if e.starts_with("ERR script:1:")),
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
