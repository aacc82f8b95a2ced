//! The renewing designs (`watchdog`, `reentrant`) against a real Redis: the renewal task
//! keeps a lock past its ttl while the holder works, and stops after release, when the
//! guard or the lock handle is dropped, when the lock is lost, and while the client is
//! paused. Plus reentrant hold counting.

use crate::common::{self, ms, Raw, Redis};
use locklab::driver::{Lock, LockBuilder, LockError, PauseGate};
use locklab::{DesignId, RenewalOnError};

const TTL: u64 = 300;

async fn lock(design: DesignId, url: &str, key: &str) -> Lock {
    LockBuilder::new(design)
        .key(key)
        .node(url)
        .ttl(ms(TTL))
        .build()
        .await
        .unwrap()
}

/// The key lives on for 3 ttls while the holder works, then goes with the release.
async fn keeps_the_lock_past_its_ttl(design: DesignId) {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("keep");
    let a = lock(design, &url, &key).await;
    let b = lock(design, &url, &key).await;
    let g = a.try_acquire().await.unwrap().unwrap();
    for _ in 0..12 {
        tokio::time::sleep(ms(TTL / 4)).await;
        assert!(raw.exists(&key).await, "renewed past the ttl");
        assert!(!g.is_lost());
    }
    assert!(
        b.try_acquire().await.unwrap().is_none(),
        "still held after 3 ttls"
    );
    assert!(g.validity().unwrap() > ms(0));
    a.release(g).await.unwrap();
    assert!(!raw.exists(&key).await);
    assert!(b.try_acquire().await.unwrap().is_some());
}

#[tokio::test]
async fn watchdog_keeps_the_lock_past_its_ttl() {
    keeps_the_lock_past_its_ttl(DesignId::Watchdog).await;
}

#[tokio::test]
async fn reentrant_keeps_the_lock_past_its_ttl() {
    keeps_the_lock_past_its_ttl(DesignId::Reentrant).await;
}

/// After release the task renews nothing: a key planted with the old token (or owner
/// field) right after the release expires within one ttl.
#[tokio::test]
async fn watchdog_stops_renewing_after_release() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("after-release");
    let a = lock(DesignId::Watchdog, &url, &key).await;
    let g = a.try_acquire().await.unwrap().unwrap();
    let token = g.token();
    tokio::time::sleep(ms(TTL / 2)).await;
    a.release(g).await.unwrap();
    // A renewal would extend this key (it holds a's token).
    raw.set_px(&key, &token, TTL).await;
    assert!(
        raw.gone_within(&key, ms(TTL + 200)).await,
        "no renewal after release"
    );
}

/// Dropping the guard (a holder that forgets to release) stops the renewal: the key
/// expires within one ttl.
async fn stops_when_guard_dropped(design: DesignId) {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("drop-guard");
    let a = lock(design, &url, &key).await;
    let g = a.try_acquire().await.unwrap().unwrap();
    tokio::time::sleep(ms(TTL)).await;
    assert!(raw.exists(&key).await, "renewed while the guard lives");
    drop(g);
    assert!(
        raw.gone_within(&key, ms(TTL + 200)).await,
        "expired within one ttl"
    );
    // The handle can take the lock afresh.
    let g = a.try_acquire().await.unwrap().expect("free again");
    a.release(g).await.unwrap();
}

#[tokio::test]
async fn watchdog_stops_when_guard_dropped() {
    stops_when_guard_dropped(DesignId::Watchdog).await;
}

#[tokio::test]
async fn reentrant_stops_when_guard_dropped() {
    stops_when_guard_dropped(DesignId::Reentrant).await;
}

#[tokio::test]
async fn watchdog_stops_when_lock_dropped() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("drop-lock");
    let a = lock(DesignId::Watchdog, &url, &key).await;
    let g = a.try_acquire().await.unwrap().unwrap();
    tokio::time::sleep(ms(TTL)).await;
    assert!(raw.exists(&key).await);
    drop(a);
    assert!(
        raw.gone_within(&key, ms(TTL + 200)).await,
        "expired within one ttl"
    );
    assert!(g.is_lost(), "the guard sees its validity run out");
}

/// Another client's key under the same name (ours was lost): the renewal finds it not
/// ours, stops, and marks the guard lost; the other key is not extended.
#[tokio::test]
async fn watchdog_stops_on_loss_and_reports_it() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("loss");
    let a = lock(DesignId::Watchdog, &url, &key).await;
    let g = a.try_acquire().await.unwrap().unwrap();
    raw.set_px(&key, "someone-else", TTL).await;
    assert!(
        common::eventually(ms(2 * TTL), || async { g.is_lost() }).await,
        "the next renewal reports the loss"
    );
    assert!(g.validity().is_some());
    assert!(
        raw.gone_within(&key, ms(TTL + 200)).await,
        "the other key was not extended"
    );
    assert_eq!(raw.get(&key).await, None);
    assert!(matches!(a.release(g).await, Err(LockError::NotHeld { .. })));
}

/// A stop-the-world pause stops the watchdog too: the key expires and another client
/// gets in while the paused one still has its guard. (Kleppmann's point.)
#[tokio::test]
async fn paused_client_stops_renewing() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("pause");
    let gate = PauseGate::new();
    let a = LockBuilder::watchdog()
        .key(&key)
        .node(&url)
        .ttl(ms(TTL))
        .pause_gate(gate.clone())
        .build()
        .await
        .unwrap();
    let b = lock(DesignId::Watchdog, &url, &key).await;
    let ga = a.try_acquire().await.unwrap().unwrap();
    gate.pause();
    assert!(
        raw.gone_within(&key, ms(3 * TTL)).await,
        "no renewal while paused"
    );
    let gb = b.try_acquire().await.unwrap().expect("b gets in");
    gate.resume();
    assert!(ga.is_lost(), "a's validity ran out during the pause");
    assert!(common::eventually(ms(2 * TTL), || async { ga.is_lost() }).await);
    // a's renewal must not extend b's key, nor its release delete it.
    tokio::time::sleep(ms(TTL)).await;
    assert!(raw.exists(&key).await, "b's lock is renewed by b");
    assert!(matches!(
        a.release(ga).await,
        Err(LockError::NotHeld { .. })
    ));
    assert!(raw.exists(&key).await);
    b.release(gb).await.unwrap();
}

#[tokio::test]
async fn reentrant_counts_nest() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("nest");
    let a = lock(DesignId::Reentrant, &url, &key).await;
    let b = lock(DesignId::Reentrant, &url, &key).await;

    let g1 = a.try_acquire().await.unwrap().unwrap();
    let owner = g1.token();
    assert_eq!(raw.hget(&key, &owner).await, Some(1));
    let g2 = a.acquire().await.unwrap();
    assert_eq!(g2.token(), owner, "re-entry keeps the owner field");
    assert_eq!(raw.hget(&key, &owner).await, Some(2));
    assert_eq!((g1.holds(), g2.holds()), (2, 2));

    // Release once: still held, by a only.
    a.release(g2).await.unwrap();
    assert_eq!(raw.hget(&key, &owner).await, Some(1));
    assert!(b.try_acquire().await.unwrap().is_none());
    assert_eq!(g1.holds(), 1);
    // Still renewed.
    tokio::time::sleep(ms(TTL + 100)).await;
    assert!(raw.exists(&key).await);

    // Release again: gone.
    a.release(g1).await.unwrap();
    assert!(!raw.exists(&key).await);
    let gb = b.try_acquire().await.unwrap().expect("b gets it");
    b.release(gb).await.unwrap();

    // Three deep, released in any order.
    let gs = [
        a.try_acquire().await.unwrap().unwrap(),
        a.try_acquire().await.unwrap().unwrap(),
        a.try_acquire().await.unwrap().unwrap(),
    ];
    let owner = gs[0].token();
    assert_eq!(raw.hget(&key, &owner).await, Some(3));
    for (i, g) in gs.into_iter().enumerate() {
        a.release(g).await.unwrap();
        assert_eq!(raw.exists(&key).await, i < 2);
    }
}

/// A renewal that gets no answer (the node answers nobody for longer than the command
/// timeout) stops the renewal task by default, as Redisson's watchdog: the key then
/// expires under a holder that still has its guard. With `RenewalOnError::Retry` the
/// next renewal goes through and the lock stays.
async fn renewal_without_answer(design: DesignId, on_error: RenewalOnError) {
    const LONG: u64 = 900; // renewals every 300 ms
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("renewal-error");
    let a = LockBuilder::new(design)
        .key(&key)
        .node(&url)
        .ttl(ms(LONG))
        .command_timeout(ms(50))
        .renewal_on_error(on_error)
        .build()
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    let g = a.try_acquire().await.unwrap().unwrap();
    // The node is silent from 200 to 500 ms: the renewal due at 300 ms times out.
    tokio::time::sleep_until(started + ms(200)).await;
    raw.client_pause(300).await;
    tokio::time::sleep_until(started + ms(600)).await;
    // The hold stays, with its old lease (900 ms) still running.
    assert!(
        !g.is_lost(),
        "{design}: a renewal without answer keeps the hold"
    );
    match on_error {
        RenewalOnError::Stop => {
            // The late renewal may still run when the node wakes (500 ms): gone by 1400.
            assert!(
                raw.gone_within(&key, ms(2 * LONG)).await,
                "{design}: renewal stopped, the key expires"
            );
            // No renewal extended the holder's lease: only its validity tells it.
            assert!(g.is_lost(), "{design}: the old lease ran out");
        }
        RenewalOnError::Retry => {
            tokio::time::sleep_until(started + ms(2 * LONG)).await;
            assert!(raw.exists(&key).await, "{design}: renewed again");
            assert!(a.release(g).await.is_ok());
        }
    }
}

#[tokio::test]
async fn watchdog_stops_after_a_renewal_without_answer() {
    renewal_without_answer(DesignId::Watchdog, RenewalOnError::Stop).await;
}

#[tokio::test]
async fn watchdog_retries_after_a_renewal_without_answer_when_told() {
    renewal_without_answer(DesignId::Watchdog, RenewalOnError::Retry).await;
}

#[tokio::test]
async fn reentrant_stops_after_a_renewal_without_answer() {
    renewal_without_answer(DesignId::Reentrant, RenewalOnError::Stop).await;
}
