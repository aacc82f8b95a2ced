//! A team's own lock (design `custom`) run by the production driver against a real
//! Redis: the steps a scenario's `[lock]` table gives, sent as written (commands, and
//! scripts by EVALSHA), with the renewal task for a lock that renews. A correct lock
//! behaves as `lua-release`/`watchdog` do; a flawed one does what its flaw says, for
//! real. The builder refuses steps it cannot send.

use std::time::Duration;

use crate::common::{self, ms, Raw, Redis};
use locklab::design::custom::{CustomLock, Expected, LockStep};
use locklab::driver::{Lock, LockBuilder, LockError};
use locklab::DesignId;

const TTL: u64 = 300;

const COMPARE_AND_DELETE: &str = "
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
";

const COMPARE_AND_PEXPIRE: &str = "
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
";

fn set_nx_px() -> LockStep {
    LockStep::command(
        ["SET", "{key}", "{token}", "NX", "PX", "{ttl}"],
        Expected::Str("OK".into()),
    )
}

/// examples/custom/correct.toml's lock, with or without its renewal.
fn correct(renews: bool) -> CustomLock {
    let lock = CustomLock::new(
        set_nx_px(),
        LockStep::script(
            "release",
            COMPARE_AND_DELETE,
            ["{key}"],
            ["{token}"],
            Expected::Int(1),
        ),
    );
    if !renews {
        return lock;
    }
    lock.renewed_by(LockStep::script(
        "renew",
        COMPARE_AND_PEXPIRE,
        ["{key}"],
        ["{token}", "{ttl}"],
        Expected::Int(1),
    ))
}

fn builder(lock: CustomLock, url: &str, key: &str) -> LockBuilder {
    LockBuilder::custom(lock)
        .key(key)
        .node(url)
        .ttl(ms(TTL))
        .retry_count(0)
        .command_timeout(ms(500))
}

async fn build(lock: CustomLock, url: &str, key: &str) -> Lock {
    builder(lock, url, key).build().await.unwrap()
}

#[tokio::test]
async fn a_custom_lock_acquires_contends_releases_and_expires() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("custom-basics");
    let a = build(correct(false), &url, &key).await;
    let b = build(correct(false), &url, &key).await;

    let g = a
        .try_acquire()
        .await
        .unwrap()
        .expect("a free lock is granted");
    // The acquire is the team's SET NX PX with the placeholders filled in.
    let pttl = raw.pttl(&key).await;
    assert!(
        0 < pttl && pttl <= i64::try_from(TTL).unwrap(),
        "pttl {pttl}"
    );
    assert!(raw.get(&key).await.is_some_and(|v| !v.is_empty()));
    assert!(b.try_acquire().await.unwrap().is_none(), "b is denied");

    a.release(g)
        .await
        .expect("the compare-and-delete script answers 1");
    assert!(!raw.exists(&key).await);

    // Without renewal the lease runs out, and the late release is told so.
    let g = b
        .try_acquire()
        .await
        .unwrap()
        .expect("b takes the freed lock");
    tokio::time::sleep(ms(TTL + 100)).await;
    assert!(!raw.exists(&key).await, "the lease ran out");
    let err = b
        .release(g)
        .await
        .expect_err("the script answers 0: not held");
    assert!(matches!(err, LockError::NotHeld { .. }), "{err:?}");
    // No renewal step, so no extend either.
    let g = a.try_acquire().await.unwrap().unwrap();
    let err = a.extend(&g).await.expect_err("no renewal step");
    assert!(matches!(err, LockError::Unsupported { .. }), "{err:?}");
}

#[tokio::test]
async fn a_custom_renewal_keeps_the_lease_while_held() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("custom-renew");
    let a = build(correct(true), &url, &key).await;
    let b = build(correct(true), &url, &key).await;
    let g = a.try_acquire().await.unwrap().unwrap();
    // Three leases long: the renewal task runs the team's script every ttl/3.
    tokio::time::sleep(ms(3 * TTL)).await;
    assert!(raw.exists(&key).await, "renewed past its ttl");
    assert!(!g.is_lost());
    assert!(
        b.try_acquire().await.unwrap().is_none(),
        "b is still denied"
    );
    // An explicit extend runs the same step.
    let left = a.extend(&g).await.expect("extend through the renewal step");
    assert!(left <= ms(TTL));
    a.release(g).await.unwrap();
    assert!(!raw.exists(&key).await);

    // With the renewal task off, the same lock expires while held.
    let c = builder(correct(true), &url, &key)
        .watchdog_enabled(false)
        .build()
        .await
        .unwrap();
    let _g = c.try_acquire().await.unwrap().unwrap();
    tokio::time::sleep(ms(TTL + 150)).await;
    assert!(!raw.exists(&key).await, "no renewal ran");
}

#[tokio::test]
async fn a_release_that_deletes_any_holder_deletes_the_next_holders_lock() {
    // examples/custom/release-deletes-any.toml: the script forgot the compare.
    let delete_any = CustomLock::new(
        set_nx_px(),
        LockStep::script(
            "release",
            "redis.call('del', KEYS[1])\nreturn 1",
            ["{key}"],
            ["{token}"],
            Expected::Int(1),
        ),
    );
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("custom-delete-any");
    let a = build(delete_any.clone(), &url, &key).await;
    let b = build(delete_any.clone(), &url, &key).await;
    let ga = a.try_acquire().await.unwrap().unwrap();
    tokio::time::sleep(ms(TTL + 100)).await;
    let gb = b
        .try_acquire()
        .await
        .unwrap()
        .expect("b takes the expired lock");
    a.release(ga).await.expect("the blind DEL answers 1");
    assert!(!raw.exists(&key).await, "a deleted b's lock");
    assert!(!gb.is_lost(), "b still believes it holds the lock");
    let c = build(delete_any, &url, &key).await;
    assert!(c.try_acquire().await.unwrap().is_some(), "a third gets in");

    // The same sequence with the correct lock leaves b's lock alone.
    let key = common::key("custom-compare");
    let a = build(correct(false), &url, &key).await;
    let b = build(correct(false), &url, &key).await;
    let ga = a.try_acquire().await.unwrap().unwrap();
    tokio::time::sleep(ms(TTL + 100)).await;
    let _gb = b.try_acquire().await.unwrap().unwrap();
    assert!(a.release(ga).await.is_err(), "not held any more");
    assert!(raw.exists(&key).await, "b's lock survives");
}

#[test]
fn the_builder_refuses_steps_it_cannot_send() {
    let config = |b: LockBuilder| match b.node("redis://127.0.0.1:1").key("k").config() {
        Err(LockError::Config(m)) => m,
        other => panic!("expected a config error, got {other:?}"),
    };
    // The design alone has no steps.
    assert!(config(LockBuilder::new(DesignId::Custom)).contains("LockBuilder::custom"));
    // A misspelt placeholder, named with its text.
    let mut lock = correct(false);
    lock.acquire = vec![LockStep::command(
        ["SET", "{key}", "{tokn}", "NX", "PX", "{ttl}"],
        Expected::Str("OK".into()),
    )];
    let m = config(LockBuilder::custom(lock));
    assert!(m.contains("`{tokn}`") && m.contains("{token}"), "{m}");
    // An empty command.
    let mut lock = correct(false);
    lock.release = LockStep::command(Vec::<String>::new(), Expected::Int(1));
    assert!(config(LockBuilder::custom(lock)).contains("release step is an empty command"));
    // An acquire of no step, and a partial release without a re-entry.
    let mut lock = correct(false);
    lock.acquire.clear();
    assert!(config(LockBuilder::custom(lock)).contains("the acquire has no step"));
    let mut lock = correct(false);
    lock.released_partly = Some(Expected::Int(0));
    assert!(config(LockBuilder::custom(lock)).contains("released_partly needs a re-entry step"));
    // A renewal interval that lets the lease lapse.
    let m = config(LockBuilder::custom(correct(true)).renew_interval(Duration::from_secs(10)));
    assert!(m.contains("renewal interval"), "{m}");
    // And a good lock passes, with its steps in the configuration.
    let cfg = LockBuilder::custom(correct(true))
        .node("redis://127.0.0.1:1")
        .key("k")
        .renew_interval(ms(100))
        .config()
        .unwrap();
    assert_eq!(cfg.design, DesignId::Custom);
    assert_eq!(cfg.renew_every, Some(100));
    assert!(cfg.renews());
}

/// Redisson's lock scripts as a custom lock with a re-entry step: the same `Lock`
/// re-enters, the hash counts two holds, the inner release leaves the key, the outer
/// one deletes it. And an acquire of two steps, `SETNX` then `PEXPIRE`, each its own
/// round trip: the key has its lease once the acquire returns.
#[tokio::test]
async fn a_reentrant_custom_lock_counts_holds_and_a_two_step_acquire_sets_the_lease() {
    const LOCK: &str = "
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])";
    const UNLOCK: &str = "
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 0
end
redis.call('del', KEYS[1])
return 1";
    let step = |name: &str, text: &str, success: Expected| {
        LockStep::script(name, text, ["{key}"], ["{ttl}", "{token}"], success)
    };
    let lock = CustomLock::new(
        step("acquire", LOCK, Expected::Nil),
        step("release", UNLOCK, Expected::Int(1)),
    )
    .reentered_by(step("reenter", LOCK, Expected::Nil), Expected::Int(0));
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("custom-reentrant");
    let a = build(lock.clone(), &url, &key).await;
    let b = build(lock, &url, &key).await;
    let outer = a.try_acquire().await.unwrap().expect("a takes it");
    let inner = a.try_acquire().await.unwrap().expect("a re-enters");
    assert_eq!(inner.holds(), 2);
    assert_eq!(raw.hget(&key, &outer.token()).await, Some(2));
    assert!(b.try_acquire().await.unwrap().is_none(), "b is denied");
    a.release(inner).await.expect("the inner unlock answers 0");
    assert_eq!(raw.hget(&key, &outer.token()).await, Some(1));
    assert!(b.try_acquire().await.unwrap().is_none(), "still held once");
    a.release(outer).await.expect("the last unlock answers 1");
    assert!(!raw.exists(&key).await);

    let two_steps = CustomLock::new(
        LockStep::command(["SETNX", "{key}", "{token}"], Expected::Int(1)),
        LockStep::script(
            "release",
            COMPARE_AND_DELETE,
            ["{key}"],
            ["{token}"],
            Expected::Int(1),
        ),
    )
    .acquire_then(LockStep::command(
        ["PEXPIRE", "{key}", "{ttl}"],
        Expected::Int(1),
    ));
    let c = build(two_steps, &url, &key).await;
    let g = c.try_acquire().await.unwrap().expect("both steps succeed");
    let pttl = raw.pttl(&key).await;
    assert!(
        pttl > 0 && pttl <= i64::try_from(TTL).unwrap(),
        "pttl {pttl}"
    );
    c.release(g).await.unwrap();
    assert!(!raw.exists(&key).await);
}
