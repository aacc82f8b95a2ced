use locklab::Reply;

use super::{time_arguments, EPOCH_MS};
use crate::redis::{Data, Exec};

/// Runs `words` at tick `clock` with 100 ms ticks.
fn call(data: &mut Data, clock: i64, words: &str) -> (Reply, Option<String>) {
    let words: Vec<String> = words.split_whitespace().map(str::to_string).collect();
    let mut ex = Exec::new(data, clock, 0).with_tick_ms(100);
    let reply = ex.call(&words);
    (reply, ex.unmodelled)
}

fn reply(data: &mut Data, clock: i64, words: &str) -> Reply {
    let (r, unmodelled) = call(data, clock, words);
    assert_eq!(unmodelled, None, "{words}");
    r
}

#[test]
fn times_are_in_redis_units_converted_at_tick_ms() {
    let mut d = Data::default();
    assert_eq!(reply(&mut d, 0, "SET k a NX PX 300"), Reply::Ok);
    assert_eq!(d.entry("k").and_then(|e| e.expires_at), Some(3));
    assert_eq!(reply(&mut d, 1, "PTTL k"), Reply::Int(200));
    assert_eq!(reply(&mut d, 1, "TTL k"), Reply::Int(0));
    assert_eq!(reply(&mut d, 1, "SET k a EX 10"), Reply::Ok);
    assert_eq!(d.entry("k").and_then(|e| e.expires_at), Some(101));
    assert_eq!(reply(&mut d, 1, "TTL k"), Reply::Int(10));
    // Tick 0 is EPOCH_MS after the Unix epoch.
    let at = |ms: i64| format!("{}", EPOCH_MS + ms);
    assert_eq!(
        reply(&mut d, 2, &format!("PEXPIREAT k {}", at(1000))),
        Reply::Int(1)
    );
    assert_eq!(d.entry("k").and_then(|e| e.expires_at), Some(10));
    let seconds = (EPOCH_MS / 1000 + 2).to_string();
    assert_eq!(
        reply(&mut d, 2, &format!("EXPIREAT k {seconds}")),
        Reply::Int(1)
    );
    assert_eq!(d.entry("k").and_then(|e| e.expires_at), Some(20));
    assert_eq!(
        reply(&mut d, 25, "TIME"),
        Reply::Array(vec![
            Reply::Bulk((EPOCH_MS / 1000 + 2).to_string()),
            Reply::Bulk("500000".into())
        ])
    );
    reply(&mut d, 25, "SET k a");
    assert_eq!(reply(&mut d, 25, "EXPIREAT k 1"), Reply::Int(1));
    assert!(d.entry("k").is_none(), "a time in the past deletes");
    // 250 ms falls between two ticks.
    let (r, unmodelled) = call(&mut d, 0, "SET k a PX 250");
    assert!(matches!(r, Reply::Error(_)));
    assert!(unmodelled.is_some_and(|w| w.contains("PX 250")));
    assert_eq!(
        time_arguments(&["SET", "k", "v", "NX", "EX", "10"].map(String::from)),
        vec![(5, 1000)]
    );
    assert_eq!(
        time_arguments(&["pexpire", "k", "300", "XX"].map(String::from)),
        vec![(2, 1)]
    );
}

#[test]
fn set_options() {
    let mut d = Data::default();
    assert_eq!(reply(&mut d, 0, "SET k a XX"), Reply::Nil);
    assert_eq!(reply(&mut d, 0, "SET k a NX GET"), Reply::Nil);
    assert_eq!(reply(&mut d, 0, "SET k b NX GET"), Reply::Bulk("a".into()));
    assert_eq!(
        reply(&mut d, 0, "SET k b XX GET PX 500"),
        Reply::Bulk("a".into())
    );
    assert_eq!(reply(&mut d, 0, "SET k c KEEPTTL"), Reply::Ok);
    assert_eq!(d.entry("k").and_then(|e| e.expires_at), Some(5));
    assert_eq!(reply(&mut d, 0, "SET k c"), Reply::Ok);
    assert_eq!(d.entry("k").and_then(|e| e.expires_at), None);
    assert_eq!(
        reply(&mut d, 3, &format!("SET k c PXAT {}", EPOCH_MS + 200)),
        Reply::Ok
    );
    assert!(d.entry("k").is_none(), "an expiry in the past deletes");
    for bad in [
        "SET k a NX XX",
        "SET k a EX 1 PX 1",
        "SET k a KEEPTTL EX 1",
        "SET k a PX",
    ] {
        assert_eq!(
            reply(&mut d, 0, bad),
            Reply::Error("ERR syntax error".into()),
            "{bad}"
        );
    }
    assert_eq!(
        reply(&mut d, 0, "SET k a EX 0"),
        Reply::Error("ERR invalid expire time in 'set' command".into())
    );
}

#[test]
fn expire_options() {
    let mut d = Data::default();
    reply(&mut d, 0, "SET k a");
    assert_eq!(reply(&mut d, 0, "PEXPIRE k 500 XX"), Reply::Int(0));
    assert_eq!(reply(&mut d, 0, "PEXPIRE k 500 GT"), Reply::Int(0));
    assert_eq!(reply(&mut d, 0, "PEXPIRE k 500 NX"), Reply::Int(1));
    assert_eq!(reply(&mut d, 0, "PEXPIRE k 400 NX"), Reply::Int(0));
    assert_eq!(reply(&mut d, 0, "PEXPIRE k 400 GT"), Reply::Int(0));
    assert_eq!(reply(&mut d, 0, "PEXPIRE k 600 GT"), Reply::Int(1));
    assert_eq!(reply(&mut d, 0, "PEXPIRE k 700 LT"), Reply::Int(0));
    assert_eq!(reply(&mut d, 0, "EXPIRE k 1 LT XX"), Reply::Int(0));
    assert_eq!(reply(&mut d, 0, "PEXPIRE k 300 LT XX"), Reply::Int(1));
    assert_eq!(d.entry("k").and_then(|e| e.expires_at), Some(3));
    assert_eq!(
        reply(&mut d, 0, "PEXPIRE k 300 NX XX"),
        Reply::Error("ERR NX and XX, GT or LT options at the same time are not compatible".into())
    );
    assert_eq!(
        reply(&mut d, 0, "PEXPIRE k 300 GT LT"),
        Reply::Error("ERR GT and LT options at the same time are not compatible".into())
    );
    assert_eq!(
        reply(&mut d, 0, "PEXPIRE k 300 YY"),
        Reply::Error("ERR Unsupported option YY".into())
    );
    assert_eq!(reply(&mut d, 0, "PEXPIRE k 0"), Reply::Int(1));
    assert!(d.entry("k").is_none());
}

#[test]
fn counters_hashes_and_the_rest() {
    let mut d = Data::default();
    assert_eq!(reply(&mut d, 0, "INCRBY n 5"), Reply::Int(5));
    assert_eq!(reply(&mut d, 0, "DECR n"), Reply::Int(4));
    assert_eq!(reply(&mut d, 0, "DECRBY n 10"), Reply::Int(-6));
    assert_eq!(reply(&mut d, 0, "HSET h owner tok count 1"), Reply::Int(2));
    assert_eq!(reply(&mut d, 0, "HGET h owner"), Reply::Bulk("tok".into()));
    assert_eq!(reply(&mut d, 0, "HLEN h"), Reply::Int(2));
    assert_eq!(reply(&mut d, 0, "HINCRBY h count 2"), Reply::Int(3));
    assert_eq!(
        reply(&mut d, 0, "HINCRBY h owner 1"),
        Reply::Error("ERR hash value is not an integer".into())
    );
    assert_eq!(
        reply(&mut d, 0, "HGETALL h"),
        Reply::Array(
            ["owner", "tok", "count", "3"]
                .map(|s| Reply::Bulk(s.into()))
                .to_vec()
        )
    );
    assert_eq!(reply(&mut d, 0, "HDEL h owner count"), Reply::Int(2));
    assert_eq!(reply(&mut d, 0, "EXISTS h"), Reply::Int(0));
    reply(&mut d, 0, "SET k a");
    assert_eq!(reply(&mut d, 0, "GETDEL k"), Reply::Bulk("a".into()));
    assert_eq!(reply(&mut d, 0, "GETDEL k"), Reply::Nil);
    reply(&mut d, 0, "SET k a");
    assert_eq!(reply(&mut d, 0, "UNLINK k k2"), Reply::Int(1));
    assert_eq!(reply(&mut d, 0, "PUBLISH ch msg"), Reply::Int(0));
    let (r, unmodelled) = call(&mut d, 0, "FLUSHALL");
    assert!(matches!(r, Reply::Error(_)));
    assert!(unmodelled.is_some_and(|w| w.contains("`FLUSHALL`")));
}
