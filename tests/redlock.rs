//! Redlock on 3 and 5 independent Redis masters: quorum with a minority stopped, clean
//! failure with a majority stopped (no partial keys left), parallel fan-out with
//! per-node timeouts, validity, fencing and extend.

use std::time::{Duration, Instant};

use crate::common::{self, ms, Raw, Redis};
use locklab::driver::{Lock, LockBuilder, LockError, PauseGate};

const TTL: u64 = 500;

async fn redlock(urls: &[String], key: &str) -> Lock {
    LockBuilder::redlock()
        .key(key)
        .nodes(urls.iter().cloned())
        .ttl(ms(TTL))
        .retry_count(0)
        .command_timeout(ms(200))
        .connect_timeout(ms(200))
        .build()
        .await
        .unwrap()
}

async fn raws(urls: &[String]) -> Vec<Raw> {
    let mut v = Vec::new();
    for url in urls {
        v.push(Raw::new(url).await);
    }
    v
}

#[tokio::test]
async fn redlock_3_acquire_contention_release_extend_fencing() {
    let redis = Redis::start(3).await;
    let urls = redis.urls();
    let raw = raws(&urls).await;
    let key = common::key("redlock");
    let a = redlock(&urls, &key).await;
    let b = redlock(&urls, &key).await;

    let g = a.try_acquire().await.unwrap().expect("granted");
    for r in &raw {
        assert_eq!(
            r.get(&key).await,
            Some(g.token()),
            "the key is on every master"
        );
    }
    // Validity = ttl − elapsed − drift (1 % + 2 ms).
    let drift = ms(TTL / 100 + 2);
    assert!(
        g.validity().unwrap() <= ms(TTL) - drift,
        "{:?}",
        g.validity()
    );
    assert!(b.try_acquire().await.unwrap().is_none(), "contention");

    // Extend on every master.
    tokio::time::sleep(ms(TTL / 2)).await;
    let v = a.extend(&g).await.unwrap();
    assert!(v > ms(TTL / 2), "{v:?}");
    for r in &raw {
        assert!(r.pttl(&key).await > i64::try_from(TTL / 2).unwrap());
    }
    a.release(g).await.unwrap();
    for r in &raw {
        assert!(!r.exists(&key).await, "released on every master");
    }

    // Extend after expiry fails and never re-acquires.
    let g = a.try_acquire().await.unwrap().unwrap();
    for r in &raw {
        assert!(r.gone_within(&key, ms(3 * TTL)).await);
    }
    assert!(matches!(a.extend(&g).await, Err(LockError::NotHeld { .. })));
    assert!(g.is_lost());
    for r in &raw {
        assert!(!r.exists(&key).await, "extend never re-acquires");
    }

    // Fencing tokens strictly increase across clients.
    let fkey = common::key("redlock-fence");
    let mk = || {
        LockBuilder::redlock()
            .key(&fkey)
            .nodes(urls.iter().cloned())
            .ttl(ms(TTL))
            .fencing(true)
            .build()
    };
    let (c, d) = (mk().await.unwrap(), mk().await.unwrap());
    let mut last = 0;
    for i in 0..6 {
        let lock = if i % 2 == 0 { &c } else { &d };
        let g = lock.try_acquire().await.unwrap().unwrap();
        let t = g.fencing_token().unwrap();
        assert!(t > last, "{t} after {last}");
        last = t;
        lock.release(g).await.unwrap();
    }
}

/// Stop masters one by one (never node 0): the lock works while a majority is up, and
/// fails cleanly without: an error naming the stopped nodes, no key left behind.
async fn minority_then_majority_stopped(n: usize) {
    let redis = Redis::start(n).await;
    let urls = redis.urls();
    let raw = raws(&urls).await;
    let key = common::key("quorum");
    let a = redlock(&urls, &key).await;
    let quorum = n / 2 + 1;

    let mut stopped = Vec::new();
    for i in (quorum..n).rev() {
        redis.stop(i).await;
        stopped.push(i);
    }
    // A minority is down: still granted, on the live masters.
    let g = a.try_acquire().await.unwrap().expect("a majority is up");
    for (i, r) in raw.iter().enumerate().take(quorum) {
        assert!(r.exists(&key).await, "key on live master {i}");
    }
    a.release(g).await.unwrap();
    for r in raw.iter().take(quorum) {
        assert!(!r.exists(&key).await);
    }

    // One more down: no majority.
    let i = quorum - 1;
    redis.stop(i).await;
    stopped.push(i);
    let e = a.try_acquire().await.unwrap_err();
    let LockError::NoQuorum {
        granted,
        quorum: q,
        failures,
        ..
    } = &e
    else {
        panic!("expected NoQuorum, got {e:?}");
    };
    assert_eq!((*granted, *q), (n - stopped.len(), quorum));
    let mut named: Vec<usize> = failures.iter().filter_map(LockError::node).collect();
    named.sort();
    stopped.sort();
    assert_eq!(named, stopped, "{e}");
    for f in failures {
        assert!(
            matches!(f, LockError::Unreachable { .. } | LockError::Timeout { .. }),
            "{f:?}"
        );
    }
    for (i, r) in raw.iter().enumerate().take(quorum - 1) {
        assert!(!r.exists(&key).await, "no partial key left on master {i}");
    }
    // acquire() retries, then gives the last error.
    let b = LockBuilder::redlock()
        .key(&key)
        .nodes(urls.iter().cloned())
        .ttl(ms(TTL))
        .retry_count(1)
        .retry_delay(ms(10))
        .build()
        .await
        .expect("redlock builds with masters down");
    assert!(matches!(b.acquire().await, Err(LockError::NoQuorum { .. })));
}

#[tokio::test]
async fn redlock_3_minority_then_majority_stopped() {
    minority_then_majority_stopped(3).await;
}

#[tokio::test]
async fn redlock_5_minority_then_majority_stopped() {
    minority_then_majority_stopped(5).await;
}

/// Paused masters time out (each named), in parallel: one timeout's wait, not one per
/// node; the elapsed time is taken off the validity.
#[tokio::test]
async fn redlock_5_paused_masters_time_out_in_parallel() {
    let redis = Redis::start(5).await;
    let urls = redis.urls();
    let raw = raws(&urls).await;
    let key = common::key("paused");
    let timeout = ms(200);
    let a = redlock(&urls, &key).await;
    redis.pause(3).await;
    redis.pause(4).await;

    let started = Instant::now();
    let g = a.try_acquire().await.unwrap().expect("3 of 5 granted");
    let took = started.elapsed();
    assert!(took >= timeout, "waited for the paused masters: {took:?}");
    assert!(
        took < 2 * timeout,
        "the masters were asked in parallel: {took:?}"
    );
    assert!(
        g.validity().unwrap() <= ms(TTL) - timeout,
        "{:?}",
        g.validity()
    );
    a.release(g).await.unwrap();

    redis.pause(2).await;
    let e = a.try_acquire().await.unwrap_err();
    let LockError::NoQuorum { failures, .. } = &e else {
        panic!("expected NoQuorum, got {e:?}");
    };
    let mut named: Vec<usize> = failures.iter().filter_map(LockError::node).collect();
    named.sort();
    assert_eq!(named, [2, 3, 4], "{e}");
    for f in failures {
        assert!(
            matches!(f, LockError::Timeout { during, .. } if during == "SET" || during == "EVALSHA"),
            "{f:?}"
        );
        assert!(f.to_string().contains("127.0.0.1:"), "{f}");
    }
    for r in raw.iter().take(2) {
        assert!(!r.exists(&key).await, "no partial key on the live masters");
    }
    for i in 2..5 {
        redis.unpause(i).await;
    }
    // The paused masters may have taken the SET ("maybe acquired"): it goes away, by
    // the queued release or by expiry.
    for r in &raw {
        assert!(r.gone_within(&key, ms(3 * TTL)).await);
    }
    let g = a.try_acquire().await.unwrap().expect("all masters back");
    a.release(g).await.unwrap();
}

#[tokio::test]
async fn redlock_with_an_unreachable_url_still_reaches_quorum() {
    let redis = Redis::start(2).await;
    let mut urls = redis.urls();
    urls.push("redis://127.0.0.1:1".to_string());
    let key = common::key("one-bad-url");
    let a = redlock(&urls, &key).await;
    let g = a.try_acquire().await.unwrap().expect("2 of 3 granted");
    assert!(g.validity().unwrap() > Duration::ZERO);
    a.release(g).await.unwrap();
}

/// Uneven legs: while the client is slow, its legs to the masters the gate makes fast
/// take no time, so those masters grant (and start the lease) a step delay before the
/// slow ones, as the model's legs are each delayed on their own.
#[tokio::test]
async fn redlock_3_fast_legs_reach_their_masters_first() {
    let redis = Redis::start(3).await;
    let urls = redis.urls();
    let raw = raws(&urls).await;
    let key = common::key("legs");
    let gate = PauseGate::new();
    let lock = LockBuilder::redlock()
        .key(&key)
        .nodes(urls.iter().cloned())
        .ttl(ms(2000))
        .retry_count(0)
        .pause_gate(gate.clone())
        .build()
        .await
        .unwrap();
    gate.slow_steps(ms(150));
    gate.fast_legs(&[0]);
    let start = Instant::now();
    let g = lock
        .try_acquire()
        .await
        .unwrap()
        .expect("granted: 2 × 150 ms leave validity of a 2 s lease");
    // The slow legs out and back: at least two step delays, side by side.
    assert!(start.elapsed() >= ms(300), "{:?}", start.elapsed());
    gate.steady();
    let pttl: Vec<i64> = pttls(&raw, &key).await;
    // Master 0 granted about 150 ms before masters 1 and 2 (its lease ends earlier).
    assert!(pttl[1] - pttl[0] >= 100, "PTTLs {pttl:?}");
    assert!(pttl[2] - pttl[0] >= 100, "PTTLs {pttl:?}");
    assert!((pttl[1] - pttl[2]).abs() < 100, "PTTLs {pttl:?}");
    lock.release(g).await.unwrap();
}

/// The lock key's PTTL on each master, in order.
async fn pttls(raw: &[Raw], key: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for r in raw {
        out.push(r.pttl(key).await);
    }
    out
}

/// An acquire so slow that a majority's grants leave no validity is refused as such
/// (not as "held by another client"), and its grants are released: the client's steps
/// are slowed through its pause gate, as a loaded machine would.
#[tokio::test]
async fn redlock_3_slow_acquire_has_no_validity() {
    let redis = Redis::start(3).await;
    let urls = redis.urls();
    let raw = raws(&urls).await;
    let key = common::key("slow");
    let gate = PauseGate::new();
    let build = |retries: u32| {
        LockBuilder::redlock()
            .key(&key)
            .nodes(urls.iter().cloned())
            .ttl(ms(150))
            .retry_count(retries)
            .retry_delay(ms(10))
            .pause_gate(gate.clone())
            .build()
    };
    let lock = build(0).await.unwrap();
    // One passage before the fan-out and one after the replies (side by side, as the
    // model's legs travel): 2 × 80 ms outlast the 150 ms lease.
    gate.slow_steps(ms(80));
    let e = lock.try_acquire().await.unwrap_err();
    assert!(
        matches!(
            e,
            LockError::NoValidity {
                granted: 3,
                masters: 3,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.is_retryable());
    assert!(e.to_string().contains("no validity was left"), "{e}");
    for (i, r) in raw.iter().enumerate() {
        assert!(
            !r.exists(&key).await,
            "the grant on master {i} was released"
        );
    }
    let retrying = build(1).await.unwrap();
    assert!(matches!(
        retrying.acquire().await,
        Err(LockError::NoValidity { .. })
    ));
    // 2 × 40 ms leave validity; one passage per reply, one after another, would take
    // 4 × 40 ms, more than the lease.
    gate.slow_steps(ms(40));
    let g = lock
        .try_acquire()
        .await
        .unwrap()
        .expect("granted: one delay for the sends, one for the replies");
    assert!(g.validity().unwrap() > Duration::ZERO);
    lock.release(g).await.unwrap();
    // At full speed the same lock is granted.
    gate.steady();
    let g = lock
        .try_acquire()
        .await
        .unwrap()
        .expect("granted when not slow");
    lock.release(g).await.unwrap();
}
