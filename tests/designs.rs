//! Every single-node design against a real Redis: acquire, contention, release, expiry;
//! the safe designs' guarantees; the pitfalls' flaws; typed errors for unreachable and
//! unresponsive nodes.

use std::time::Duration;

use crate::common::{self, ms, Raw, Redis};
use locklab::driver::{Lock, LockBuilder, LockError, PauseGate};
use locklab::DesignId;

const TTL: u64 = 300;

fn builder(design: DesignId, url: &str, key: &str) -> LockBuilder {
    locklab::driver::LockBuilder::pitfall(design)
        .key(key)
        .node(url)
        .ttl(ms(TTL))
        .retry_count(0)
        .command_timeout(ms(500))
}

async fn lock(design: DesignId, url: &str, key: &str) -> Lock {
    builder(design, url, key).build().await.unwrap()
}

/// Acquire, contention, release, expiry, for any single-node design.
async fn basics(design: DesignId) {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key(design.as_str());
    let a = lock(design, &url, &key).await;
    let b = lock(design, &url, &key).await;

    // Acquire.
    let g = a
        .try_acquire()
        .await
        .unwrap()
        .expect("a free lock is granted");
    assert!(raw.exists(&key).await);
    assert!(!g.is_lost());
    let pttl = raw.pttl(&key).await;
    match design {
        // No expiry in Redis at all.
        DesignId::NaiveSetnx | DesignId::GetsetTimestamp => assert_eq!(pttl, -1),
        _ => assert!(
            0 < pttl && pttl <= i64::try_from(TTL).unwrap(),
            "pttl {pttl}"
        ),
    }

    // Contention: a second client is denied.
    assert!(
        b.try_acquire().await.unwrap().is_none(),
        "{design}: second client denied"
    );

    // Release: the key is gone and the other client gets it.
    a.release(g).await.unwrap();
    assert!(!raw.exists(&key).await, "{design}: released key gone");
    let gb = b
        .try_acquire()
        .await
        .unwrap()
        .expect("free again after release");

    // Expiry: the holder vanishes without releasing (its guard and handle dropped);
    // after the ttl another client gets the lock, except with naive-setnx.
    drop(gb);
    drop(b);
    tokio::time::sleep(ms(TTL + 100)).await;
    let got = a.try_acquire().await.unwrap();
    if design == DesignId::NaiveSetnx {
        // The pitfall: held forever.
        assert!(got.is_none(), "naive-setnx never expires");
        assert_eq!(raw.pttl(&key).await, -1);
        tokio::time::sleep(ms(2 * TTL)).await;
        assert!(a.try_acquire().await.unwrap().is_none());
    } else {
        let g = got.expect("after the ttl another client gets the lock");
        a.release(g).await.unwrap();
        assert!(!raw.exists(&key).await);
    }
}

#[tokio::test]
async fn naive_setnx_basics_and_held_forever() {
    basics(DesignId::NaiveSetnx).await;
}

#[tokio::test]
async fn setnx_expire_basics() {
    basics(DesignId::SetnxExpire).await;
}

#[tokio::test]
async fn getset_timestamp_basics() {
    basics(DesignId::GetsetTimestamp).await;
}

#[tokio::test]
async fn set_px_del_basics() {
    basics(DesignId::SetPxDel).await;
}

#[tokio::test]
async fn exists_set_basics() {
    basics(DesignId::ExistsSet).await;
}

#[tokio::test]
async fn get_expire_renewal_basics() {
    basics(DesignId::GetExpireRenewal).await;
}

#[tokio::test]
async fn set_px_get_del_basics() {
    basics(DesignId::SetPxGetDel).await;
}

#[tokio::test]
async fn lua_release_basics() {
    basics(DesignId::LuaRelease).await;
}

#[tokio::test]
async fn watchdog_basics() {
    // Renewal does not get in the way of contention, release or expiry once dropped.
    basics(DesignId::Watchdog).await;
}

#[tokio::test]
async fn reentrant_basics() {
    basics(DesignId::Reentrant).await;
}

#[tokio::test]
async fn redlock_on_one_node_basics() {
    basics(DesignId::Redlock).await;
}

#[tokio::test]
async fn plain_builder_refuses_pitfalls() {
    for design in DesignId::ALL {
        let r = LockBuilder::new(design)
            .key("k")
            .node("redis://127.0.0.1:1")
            .build()
            .await;
        let safe = matches!(
            design,
            DesignId::LuaRelease | DesignId::Watchdog | DesignId::Reentrant | DesignId::Redlock
        );
        if design == DesignId::Redlock {
            // Builds with masters down (they reconnect later); fails on acquire.
            let e = r.unwrap().try_acquire().await.unwrap_err();
            assert!(
                matches!(&e, LockError::NoQuorum { failures, .. } if failures[0].node() == Some(0)),
                "{e:?}"
            );
        } else if safe {
            // Gets as far as connecting.
            assert!(
                matches!(r, Err(LockError::Unreachable { node: 0, .. })),
                "{design}: {r:?}"
            );
        } else {
            assert!(
                matches!(r, Err(LockError::PitfallDesign { design: d }) if d == design),
                "{design}: {r:?}"
            );
        }
    }
}

/// The safe designs' release never deletes another owner's lock: the holder's lease
/// runs out (for the renewing designs, because the client is paused), another client
/// takes the lock, and the late release leaves it alone.
async fn owner_only_release(design: DesignId) {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("owner-only");
    let gate = PauseGate::new();
    let a = LockBuilder::new(design)
        .key(&key)
        .node(&url)
        .ttl(ms(TTL))
        .pause_gate(gate.clone())
        .build()
        .await
        .unwrap();
    let b = LockBuilder::new(design)
        .key(&key)
        .node(&url)
        .ttl(ms(TTL))
        .build()
        .await
        .unwrap();

    let ga = a.try_acquire().await.unwrap().unwrap();
    // Stop the world for client a: no renewal, nothing sent.
    gate.pause();
    assert!(
        raw.gone_within(&key, ms(3 * TTL)).await,
        "a's lease ran out"
    );
    let gb = b
        .try_acquire()
        .await
        .unwrap()
        .expect("b gets the expired lock");
    gate.resume();

    assert!(ga.is_lost(), "a's validity has run out");
    let r = a.release(ga).await;
    assert!(
        matches!(r, Err(LockError::NotHeld { .. })),
        "late release: {r:?}"
    );
    assert!(raw.exists(&key).await, "b's lock survives a's late release");
    assert!(!gb.is_lost());
    b.release(gb).await.unwrap();
    assert!(!raw.exists(&key).await);
}

#[tokio::test]
async fn lua_release_never_deletes_another_owners_lock() {
    owner_only_release(DesignId::LuaRelease).await;
}

#[tokio::test]
async fn watchdog_never_deletes_another_owners_lock() {
    owner_only_release(DesignId::Watchdog).await;
}

#[tokio::test]
async fn reentrant_never_deletes_another_owners_lock() {
    owner_only_release(DesignId::Reentrant).await;
}

/// `extend` while held pushes the expiry out; after expiry it fails, reports the guard
/// lost, and never re-acquires.
async fn extend_after_expiry(design: DesignId) {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("extend");
    let a = LockBuilder::new(design)
        .key(&key)
        .node(&url)
        .ttl(ms(TTL))
        .build()
        .await
        .unwrap();

    let g = a.try_acquire().await.unwrap().unwrap();
    tokio::time::sleep(ms(TTL / 2)).await;
    let validity = a.extend(&g).await.unwrap();
    assert!(
        validity > ms(TTL / 2) && validity <= ms(TTL),
        "{validity:?}"
    );
    assert!(
        raw.pttl(&key).await > i64::try_from(TTL / 2).unwrap(),
        "expiry pushed out"
    );
    a.release(g).await.unwrap();

    let g = a.try_acquire().await.unwrap().unwrap();
    // Gone behind the holder's back (for the renewing design: renewals cannot help a
    // key that is deleted).
    raw.del(&key).await;
    let r = a.extend(&g).await;
    assert!(matches!(r, Err(LockError::NotHeld { .. })), "{r:?}");
    assert!(g.is_lost());
    assert!(!raw.exists(&key).await, "extend never re-acquires");
    assert!(matches!(a.release(g).await, Err(LockError::NotHeld { .. })));

    // Expired by itself.
    let g = a.try_acquire().await.unwrap().unwrap();
    if design.renews() {
        return; // the watchdog keeps it; see tests/watchdog.rs
    }
    assert!(raw.gone_within(&key, ms(3 * TTL)).await);
    assert!(matches!(a.extend(&g).await, Err(LockError::NotHeld { .. })));
    assert!(!raw.exists(&key).await, "extend never re-acquires");
    assert!(g.is_lost());
}

#[tokio::test]
async fn lua_release_extend_after_expiry_fails() {
    extend_after_expiry(DesignId::LuaRelease).await;
}

#[tokio::test]
async fn reentrant_extend_after_loss_fails() {
    extend_after_expiry(DesignId::Reentrant).await;
}

#[tokio::test]
async fn pitfalls_cannot_extend() {
    let redis = Redis::start(1).await;
    let a = lock(DesignId::SetPxDel, &redis.url(0), "k").await;
    let g = a.try_acquire().await.unwrap().unwrap();
    assert!(matches!(
        a.extend(&g).await,
        Err(LockError::Unsupported { .. })
    ));
    a.release(g).await.unwrap();
}

#[tokio::test]
async fn fencing_tokens_strictly_increase() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let key = common::key("fence");
    let mk = || {
        LockBuilder::lua_release()
            .key(&key)
            .node(&url)
            .ttl(ms(TTL))
            .fencing(true)
            .build()
    };
    let (a, b) = (mk().await.unwrap(), mk().await.unwrap());
    let mut last = 0;
    for i in 0..6 {
        let lock = if i % 2 == 0 { &a } else { &b };
        let g = lock.try_acquire().await.unwrap().unwrap();
        let token = g.fencing_token().expect("fencing on");
        assert!(token > last, "{token} after {last}");
        last = token;
        lock.release(g).await.unwrap();
    }
    // Without fencing there is no token.
    let c = LockBuilder::lua_release()
        .key(&key)
        .node(&url)
        .build()
        .await
        .unwrap();
    let g = c.try_acquire().await.unwrap().unwrap();
    assert_eq!(g.fencing_token(), None);
    c.release(g).await.unwrap();
}

#[tokio::test]
async fn non_reentrant_designs_refuse_a_second_hold() {
    let redis = Redis::start(1).await;
    let a = LockBuilder::lua_release()
        .key("k")
        .node(redis.url(0))
        .ttl(ms(TTL))
        .build()
        .await
        .unwrap();
    let g = a.try_acquire().await.unwrap().unwrap();
    assert!(matches!(
        a.try_acquire().await,
        Err(LockError::AlreadyHeld { .. })
    ));
    assert!(matches!(
        a.acquire().await,
        Err(LockError::AlreadyHeld { .. })
    ));
    a.release(g).await.unwrap();
    let g = a.try_acquire().await.unwrap().expect("free again");
    a.release(g).await.unwrap();
}

#[tokio::test]
async fn acquire_retries_until_free_then_gives_up_when_busy() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let key = common::key("retry");
    let a = LockBuilder::lua_release()
        .key(&key)
        .node(&url)
        .ttl(ms(TTL))
        .build()
        .await
        .unwrap();
    let b = LockBuilder::lua_release()
        .key(&key)
        .node(&url)
        .ttl(ms(TTL))
        .retry_count(20)
        .retry_delay(ms(50))
        .retry_jitter(ms(20))
        .seed(7)
        .build()
        .await
        .unwrap();
    let ga = a.try_acquire().await.unwrap().unwrap();
    // a never releases: b gets in once a's lease expires.
    let gb = b
        .acquire()
        .await
        .expect("b retries until a's lease expires");
    assert!(ga.is_lost());
    b.release(gb).await.unwrap();

    // With few retries against a watchdog holder: Busy.
    let w = LockBuilder::watchdog()
        .key(&key)
        .node(&url)
        .ttl(ms(TTL))
        .build()
        .await
        .unwrap();
    let gw = w.try_acquire().await.unwrap().unwrap();
    let c = LockBuilder::lua_release()
        .key(&key)
        .node(&url)
        .retry_count(2)
        .retry_delay(ms(20))
        .build()
        .await
        .unwrap();
    let r = c.acquire().await;
    assert!(
        matches!(r, Err(LockError::Busy { attempts: 3, .. })),
        "{r:?}"
    );
    w.release(gw).await.unwrap();
}

// ---------------------------------------------------------------- errors

#[tokio::test]
async fn unreachable_node_error_names_it() {
    let r = LockBuilder::lua_release()
        .key("k")
        .node("redis://127.0.0.1:1")
        .build()
        .await;
    let e = r.unwrap_err();
    assert!(matches!(e, LockError::Unreachable { node: 0, .. }), "{e:?}");
    assert!(e.to_string().contains("127.0.0.1:1"), "{e}");
}

#[tokio::test]
async fn stopped_node_error_names_it() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let a = LockBuilder::lua_release()
        .key("k")
        .node(&url)
        .ttl(ms(TTL))
        .build()
        .await
        .unwrap();
    redis.stop(0).await;
    let e = a.try_acquire().await.unwrap_err();
    assert!(matches!(e, LockError::Unreachable { node: 0, .. }), "{e:?}");
    let port = url.rsplit(':').next().unwrap();
    assert!(e.to_string().contains(port), "{e}");
    // And so does a new handle.
    let e = LockBuilder::lua_release()
        .key("k")
        .node(&url)
        .build()
        .await
        .unwrap_err();
    assert!(matches!(e, LockError::Unreachable { node: 0, .. }), "{e:?}");
}

#[tokio::test]
async fn paused_node_times_out_naming_it() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("timeout");
    let a = builder(DesignId::LuaRelease, &url, &key)
        .command_timeout(ms(100))
        .build()
        .await
        .unwrap();
    redis.pause(0).await;
    let started = std::time::Instant::now();
    let e = a.try_acquire().await.unwrap_err();
    let took = started.elapsed();
    redis.unpause(0).await;
    assert!(
        matches!(&e, LockError::Timeout { node: 0, during, .. } if during == "SET"),
        "{e:?}"
    );
    assert!(
        e.to_string().contains(url.trim_start_matches("redis://")),
        "{e}"
    );
    assert!(
        took < Duration::from_secs(2),
        "the timeout is the one set: {took:?}"
    );
    // A timed-out acquire is "maybe acquired": the SET reached Redis and the key
    // expires by itself.
    assert!(raw.gone_within(&key, ms(3 * TTL)).await);
    // The node answers again on the same handle.
    let g = a
        .try_acquire()
        .await
        .unwrap()
        .expect("acquired after unpause");
    a.release(g).await.unwrap();
}

// ---------------------------------------------------------------- pitfalls' flaws

/// A holder past its ttl releases with a blind `DEL` (or `DEL` without owner identity)
/// and deletes the next holder's lock.
async fn late_blind_release_deletes_next_holder(design: DesignId) {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("blind-del");
    let a = lock(design, &url, &key).await;
    let b = lock(design, &url, &key).await;
    let ga = a.try_acquire().await.unwrap().unwrap();
    tokio::time::sleep(ms(TTL + 100)).await;
    let gb = b
        .try_acquire()
        .await
        .unwrap()
        .expect("b takes the expired lock");
    assert!(raw.exists(&key).await);
    a.release(ga).await.expect("the blind DEL succeeds");
    assert!(!raw.exists(&key).await, "{design}: a deleted b's lock");
    assert!(!gb.is_lost(), "b still believes it holds the lock");
    // A third client gets in while b holds it: mutual exclusion is gone.
    let c = lock(design, &url, &key).await;
    assert!(c.try_acquire().await.unwrap().is_some());
}

#[tokio::test]
async fn set_px_del_holder_past_ttl_deletes_next_holders_lock() {
    late_blind_release_deletes_next_holder(DesignId::SetPxDel).await;
}

#[tokio::test]
async fn setnx_expire_holder_past_ttl_deletes_next_holders_lock() {
    late_blind_release_deletes_next_holder(DesignId::SetnxExpire).await;
}

#[tokio::test]
async fn getset_timestamp_release_deletes_the_stealers_lock() {
    late_blind_release_deletes_next_holder(DesignId::GetsetTimestamp).await;
}

/// set-px-get-del: the `GET` says "mine", the key expires and is taken before the `DEL`
/// arrives, and the `DEL` removes the new holder's lock. The gap is opened by pausing
/// the releasing client (its `GET` reply is held by the pause gate).
#[tokio::test]
async fn set_px_get_del_check_then_act_race() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("get-del");
    let ttl = 1000;
    let gate = PauseGate::new();
    let a = builder(DesignId::SetPxGetDel, &url, &key)
        .ttl(ms(ttl))
        .command_timeout(ms(10_000))
        .pause_gate(gate.clone())
        .build()
        .await
        .unwrap();
    let b = builder(DesignId::SetPxGetDel, &url, &key)
        .ttl(ms(ttl))
        .build()
        .await
        .unwrap();
    let ga = a.try_acquire().await.unwrap().unwrap();

    // Hold the node so that a's GET is in flight when the client pauses.
    redis.pause(0).await;
    let release = tokio::spawn(async move {
        let r = a.release(ga).await;
        (a, r)
    });
    tokio::time::sleep(ms(100)).await;
    gate.pause();
    redis.unpause(0).await;
    // The GET answered a's token; a sits on it. The key expires, b takes it.
    assert!(raw.gone_within(&key, ms(3 * ttl)).await);
    let gb = b
        .try_acquire()
        .await
        .unwrap()
        .expect("b takes the expired lock");
    gate.resume();
    let (_a, r) = release.await.unwrap();
    r.expect("a's check passed, its DEL went through");
    assert!(!raw.exists(&key).await, "a's DEL removed b's lock");
    assert!(!gb.is_lost(), "b still believes it holds the lock");
}

#[tokio::test]
async fn wait_for_missing_replicas_fails_the_acquire_and_releases() {
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("wait");
    let a = LockBuilder::lua_release()
        .key(&key)
        .node(&url)
        .ttl(ms(TTL))
        .wait_replicas(1)
        .wait_timeout(ms(50))
        .build()
        .await
        .unwrap();
    let e = a.try_acquire().await.unwrap_err();
    assert!(
        matches!(e, LockError::NotReplicated { acks: 0, wanted: 1 }),
        "{e:?}"
    );
    assert!(
        !raw.exists(&key).await,
        "the unreplicated grant was released"
    );
}

#[tokio::test]
async fn wait_for_a_present_replica_succeeds() {
    let redis = Redis::with_replicas(1, 1).await;
    let url = redis.url(0);
    let key = common::key("wait-ok");
    let a = LockBuilder::lua_release()
        .key(&key)
        .node(&url)
        // The lease must outlive the longest WAIT: a replica still in its first sync
        // on a loaded machine can hold WAIT past a short ttl, and the lock would expire
        // before the release this test makes.
        .ttl(ms(10_000))
        .wait_replicas(1)
        // WAIT returns as soon as the replica acknowledges, and blocks up to its timeout
        // otherwise: a long one only costs time on a loaded machine, where the replica
        // can take a while. The per-command timeout must exceed it.
        .wait_timeout(ms(3000))
        .command_timeout(ms(5000))
        .fencing(true)
        .build()
        .await
        .unwrap();
    let g = a
        .try_acquire()
        .await
        .unwrap()
        .expect("replicated to the one replica");
    assert!(g.fencing_token().is_some());
    a.release(g).await.unwrap();
}

#[tokio::test]
async fn wait_longer_than_the_command_timeout_gets_its_answer() {
    // No replica: WAIT blocks for its whole timeout, three times the command timeout.
    // The driver must wait for its answer (0 acks) rather than time the node out.
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let raw = Raw::new(&url).await;
    let key = common::key("wait-long");
    let a = LockBuilder::lua_release()
        .key(&key)
        .node(&url)
        .ttl(ms(5000))
        .command_timeout(ms(200))
        .wait_replicas(1)
        .wait_timeout(ms(600))
        .build()
        .await
        .unwrap();
    let e = a.try_acquire().await.unwrap_err();
    assert!(
        matches!(e, LockError::NotReplicated { acks: 0, wanted: 1 }),
        "{e:?}"
    );
    assert!(!raw.exists(&key).await, "the grant was released");
}

/// The number of clients connected to the node, by `INFO clients` on `probe`.
async fn connected_clients(probe: &mut redis::aio::MultiplexedConnection) -> usize {
    let info: String = redis::cmd("INFO")
        .arg("clients")
        .query_async(probe)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("INFO clients has connected_clients")
}

#[tokio::test]
async fn locks_given_one_connections_share_a_connection_per_node() {
    use locklab::driver::Connections;
    let redis = Redis::start(1).await;
    let url = redis.url(0);
    let mut probe = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let before = connected_clients(&mut probe).await;
    let shared = Connections::new();
    let build = |key: String, wait: u32| {
        LockBuilder::lua_release()
            .key(key)
            .node(&url)
            .ttl(ms(5000))
            .retry_count(0)
            .wait_replicas(wait)
            .wait_timeout(ms(10))
            .connections(&shared)
            .build()
    };
    let key = common::key("shared");
    let a = build(key.clone(), 0).await.unwrap();
    let b = build(key.clone(), 0).await.unwrap();
    let mut others = Vec::new();
    for i in 0..4 {
        others.push(build(format!("{key}:{i}"), 0).await.unwrap());
    }
    // Six locks, one connection.
    assert_eq!(connected_clients(&mut probe).await, before + 1);

    // Each lock is still its own client: the second is denied, then gets it.
    let g = a.try_acquire().await.unwrap().expect("free");
    assert!(b.try_acquire().await.unwrap().is_none());
    a.release(g).await.unwrap();
    let g = b.try_acquire().await.unwrap().expect("free again");
    b.release(g).await.unwrap();
    for l in &others {
        let g = l.try_acquire().await.unwrap().expect("own key");
        l.release(g).await.unwrap();
    }

    // A lock that WAITs keeps a connection of its own.
    let _w = build(common::key("shared-wait"), 1).await.unwrap();
    assert_eq!(connected_clients(&mut probe).await, before + 2);
}
