//! Every design's machine against the model's abstract Redis, in memory — no Docker, no
//! network: acquire, contention, release, renewal, expiry, loss, re-entry, fencing and
//! WAIT for every design, Redlock's quorum and partial release, and each pitfall's
//! defining flaw as the sequence of real commands that shows it.
//!
//! The shared tests judge each design by what it promises ([`expect`]); the world they
//! run in is `sim` (clients, nodes, links, one clock).

mod sim;

use locklab::resource::{Rejected, Stock};
use locklab::{Denied, DesignId, Fencing, Grant, LockConfig, Outcome, RenewalOnError};
use locklab_model::redis::Value;
use sim::{millis, Displaced, Link, Op, Sim, TTL};

/// What a design promises, by which the shared tests judge it.
#[derive(Clone, Copy, Debug)]
struct Expect {
    /// Masters the tests give it.
    masters: usize,
    /// Once its lease ran out, another client gets the lock.
    expires: bool,
    /// Its release removes only the caller's own lock (when run without interleaving).
    owner_checked_release: bool,
    /// It has a renewal command.
    extends: bool,
    /// Its renewal extends only the caller's own lock.
    renewal_checks_owner: bool,
    /// Its holder may take it again.
    reentrant: bool,
    /// The key left by an acquire whose reply was lost still runs out.
    orphan_expires: bool,
    /// Its acquire's first command writes the key (exists-set's only looks).
    acquire_writes_first: bool,
}

/// Exhaustive on purpose: a new design has to say what it promises here.
fn expect(design: DesignId) -> Expect {
    let pitfall = Expect {
        masters: 1,
        expires: true,
        owner_checked_release: false,
        extends: false,
        renewal_checks_owner: false,
        reentrant: false,
        orphan_expires: true,
        acquire_writes_first: true,
    };
    let lua = Expect {
        owner_checked_release: true,
        extends: true,
        renewal_checks_owner: true,
        ..pitfall
    };
    match design {
        DesignId::NaiveSetnx => Expect {
            expires: false,
            orphan_expires: false,
            ..pitfall
        },
        // The PEXPIRE never goes out when SETNX's reply is lost.
        DesignId::SetnxExpire => Expect {
            orphan_expires: false,
            ..pitfall
        },
        DesignId::ExistsSet => Expect {
            acquire_writes_first: false,
            ..pitfall
        },
        DesignId::GetsetTimestamp | DesignId::SetPxDel => pitfall,
        // Its renewal checks that some key is there, not whose.
        DesignId::GetExpireRenewal => Expect {
            renewal_checks_owner: false,
            ..lua
        },
        DesignId::SetPxGetDel => Expect {
            owner_checked_release: true,
            ..pitfall
        },
        DesignId::LuaRelease | DesignId::Watchdog => lua,
        DesignId::Reentrant => Expect {
            reentrant: true,
            ..lua
        },
        DesignId::Redlock => Expect { masters: 3, ..lua },
        // Not in DesignId::ALL: custom locks have their own tests (tests/custom.rs).
        DesignId::Custom => unreachable!("custom locks are tested in tests/custom.rs"),
    }
}

fn world(design: DesignId) -> Sim {
    Sim::new(design, expect(design).masters)
}

fn granted(design: DesignId, outcome: Outcome) -> Grant {
    match outcome {
        Outcome::Acquired(grant) => grant,
        other => panic!("{design}: expected the lock, got {other:?}"),
    }
}

/// The denial a design gives a client while somebody else holds the lock.
fn turned_away(design: DesignId, outcome: &Outcome) -> bool {
    match (design, outcome) {
        (DesignId::Redlock, Outcome::Denied(Denied::NoQuorum { granted: 0 })) => true,
        (DesignId::Reentrant, Outcome::Denied(Denied::Held { pttl: Some(p) })) => *p > 0,
        (DesignId::Redlock | DesignId::Reentrant, _) => false,
        (_, Outcome::Denied(Denied::Held { pttl: None })) => true,
        _ => false,
    }
}

/// Entries deleted or overwritten by a client that did not write them.
fn foreign(sim: &Sim) -> Vec<Displaced> {
    sim.displaced
        .iter()
        .filter(|d| d.owner != u8::try_from(d.by).ok())
        .cloned()
        .collect()
}

#[test]
fn acquire_then_release_frees_the_lock() {
    for design in DesignId::ALL {
        let e = expect(design);
        let mut sim = world(design);
        let (a, b) = (sim.client(), sim.client());
        let grant = granted(design, sim.acquire(a));
        let lease_end = e.expires.then(|| sim.cfg.lease_end(0));
        assert_eq!(grant.lease_end, lease_end, "{design}");
        assert_eq!((grant.holds, grant.fence), (1, None), "{design}");
        assert_eq!(sim.grant(a).as_ref(), Some(&grant), "{design}");
        assert_eq!(
            sim.holders(),
            vec![Some(grant.token.clone()); e.masters],
            "{design}: the key names the holder on every master"
        );
        sim.advance(10);
        assert_eq!(
            sim.release(a),
            Outcome::Released { holds_left: 0 },
            "{design}"
        );
        assert!(sim.free(), "{design}: {:?}", sim.holders());
        assert_eq!(sim.grant(a), None, "{design}");
        granted(design, sim.acquire(b));
        assert_eq!(foreign(&sim), vec![], "{design}");
    }
}

#[test]
fn a_held_lock_turns_others_away() {
    for design in DesignId::ALL {
        let mut sim = world(design);
        let (a, b) = (sim.client(), sim.client());
        let grant = granted(design, sim.acquire(a));
        sim.advance(TTL / 2);
        let outcome = sim.acquire(b);
        assert!(turned_away(design, &outcome), "{design}: {outcome:?}");
        if let Outcome::Denied(Denied::Held { pttl: Some(pttl) }) = outcome {
            assert_eq!(pttl, 500, "{design}: the holder's remaining time");
        }
        assert_eq!(sim.grant(b), None, "{design}");
        assert_eq!(sim.grant(a), Some(grant.clone()), "{design}");
        let masters = expect(design).masters;
        assert_eq!(sim.holders(), vec![Some(grant.token); masters], "{design}");
        assert_eq!(foreign(&sim), vec![], "{design}");
    }
}

#[test]
fn only_the_reentrant_design_lets_its_holder_in_again() {
    for design in DesignId::ALL {
        let mut sim = world(design);
        let a = sim.client();
        let first = granted(design, sim.acquire(a));
        sim.advance(10);
        let outcome = sim.acquire(a);
        if expect(design).reentrant {
            let again = granted(design, outcome);
            assert_eq!(again.token, first.token, "{design}: the same owner");
            assert_eq!(again.holds, 2, "{design}");
            assert_eq!(again.lease_end, Some(sim.cfg.lease_end(10)), "{design}");
            let Some(Value::Hash(fields)) = sim.value(0) else {
                panic!("{design}: a hash lock")
            };
            assert_eq!(
                fields,
                vec![(first.token.as_str().into(), "2".into())],
                "{design}"
            );
        } else {
            assert!(turned_away(design, &outcome), "{design}: {outcome:?}");
        }
        let masters = expect(design).masters;
        assert_eq!(
            sim.holders(),
            vec![Some(first.token); masters],
            "{design}: the first acquire's key stays"
        );
    }
}

#[test]
fn an_expired_lease_lets_the_next_client_in() {
    for design in DesignId::ALL {
        let mut sim = world(design);
        let (a, b) = (sim.client(), sim.client());
        let first = granted(design, sim.acquire(a));
        sim.advance(TTL + 1);
        let outcome = sim.acquire(b);
        if expect(design).expires {
            let second = granted(design, outcome);
            assert_ne!(second.token, first.token, "{design}");
            // a's machine cannot know; its grant says the lease is over.
            let validity = sim.grant(a).and_then(|g| g.validity(sim.clock(a)));
            assert!(validity.is_some_and(|v| v < 0), "{design}: {validity:?}");
        } else {
            assert!(turned_away(design, &outcome), "{design}: {outcome:?}");
        }
    }
}

#[test]
fn a_crashed_holder_blocks_others_until_its_lease_ends() {
    for design in DesignId::ALL {
        let mut sim = world(design);
        let (a, b) = (sim.client(), sim.client());
        granted(design, sim.acquire(a));
        sim.crash(a);
        assert_eq!(sim.grant(a), None, "{design}");
        sim.advance(TTL / 2);
        let outcome = sim.acquire(b);
        assert!(turned_away(design, &outcome), "{design}: {outcome:?}");
        if expect(design).expires {
            sim.advance(TTL);
            granted(design, sim.acquire(b));
        } else {
            // naive-setnx's flaw: nothing ever removes a crashed holder's key.
            sim.advance(100 * TTL);
            let outcome = sim.acquire(b);
            assert!(turned_away(design, &outcome), "{design}: {outcome:?}");
        }
    }
}

/// A holder that outlived its lease releases after the next client got in. The owner
/// checks say `NotHeld`; the blind `DEL` of `setnx-expire`, `getset-timestamp` and
/// `set-px-del` deletes the next holder's lock (their defining flaw).
#[test]
fn a_release_after_the_lease_ran_out() {
    for design in DesignId::ALL {
        let e = expect(design);
        if !e.expires {
            continue;
        }
        let mut sim = world(design);
        let (a, b, c) = (sim.client(), sim.client(), sim.client());
        granted(design, sim.acquire(a));
        sim.advance(TTL + 1);
        let next = granted(design, sim.acquire(b));
        // getset-timestamp's steal overwrote a's entry; only the release counts here.
        sim.displaced.clear();
        sim.advance(10);
        let outcome = sim.release(a);
        if e.owner_checked_release {
            assert_eq!(outcome, Outcome::NotHeld, "{design}");
            assert_eq!(sim.holders(), vec![Some(next.token); e.masters], "{design}");
            assert_eq!(foreign(&sim), vec![], "{design}");
        } else {
            assert_eq!(outcome, Outcome::Released { holds_left: 0 }, "{design}");
            assert!(sim.free(), "{design}: {:?}", sim.holders());
            let by_a = Displaced {
                by: a,
                node: 0,
                owner: Some(1),
            };
            assert_eq!(foreign(&sim), vec![by_a], "{design}");
            // b still believes it holds the lock, and c gets it too.
            assert!(sim.grant(b).is_some(), "{design}");
            granted(design, sim.acquire(c));
        }
    }
}

#[test]
fn renewal_extends_the_lease_where_the_design_has_one() {
    for design in DesignId::ALL {
        let e = expect(design);
        let mut sim = world(design);
        let (a, b) = (sim.client(), sim.client());
        let grant = granted(design, sim.acquire(a));
        sim.advance(TTL / 2);
        let outcome = sim.renew(a);
        if !e.extends {
            // Refused on the spot: nothing sent, the grant unchanged.
            assert_eq!(outcome, Outcome::NotHeld, "{design}");
            assert_eq!(sim.grant(a), Some(grant), "{design}");
            continue;
        }
        let lease_end = sim.cfg.lease_end(500);
        assert_eq!(outcome, Outcome::Extended { lease_end }, "{design}");
        assert_eq!(sim.grant(a).and_then(|g| g.lease_end), Some(lease_end));
        for node in 0..e.masters {
            let expires = sim.entry(node).and_then(|(_, at)| at);
            assert_eq!(expires, Some(1_500), "{design}: node {node}");
        }
        sim.advance(TTL / 2 + 1);
        let outcome = sim.acquire(b);
        assert!(turned_away(design, &outcome), "{design}: {outcome:?}");
        sim.advance(TTL / 2);
        granted(design, sim.acquire(b));
    }
}

#[test]
fn renewal_after_the_lease_ran_out_reports_not_held() {
    for design in DesignId::ALL {
        let e = expect(design);
        if !e.renewal_checks_owner {
            continue;
        }
        let mut sim = world(design);
        let (a, b) = (sim.client(), sim.client());
        granted(design, sim.acquire(a));
        sim.advance(TTL + 1);
        let next = granted(design, sim.acquire(b));
        sim.advance(10);
        assert_eq!(sim.renew(a), Outcome::NotHeld, "{design}");
        assert_eq!(sim.grant(a), None, "{design}");
        for node in 0..e.masters {
            let entry = sim.entry(node);
            assert_eq!(
                entry.map(|(_, at)| at),
                Some(Some(1_001 + 1_000)),
                "{design}: b's expiry untouched on node {node}"
            );
        }
        assert_eq!(sim.holders(), vec![Some(next.token); e.masters], "{design}");
    }
}

/// The watchdog's timer, run by hand: renewing every ttl/3 keeps the lock for five ttls;
/// once the renewals stop (a paused process), the lease runs out.
#[test]
fn renewing_every_third_of_the_ttl_keeps_the_lock() {
    for design in DesignId::ALL {
        if !expect(design).extends {
            continue;
        }
        let mut sim = world(design);
        let (a, b) = (sim.client(), sim.client());
        granted(design, sim.acquire(a));
        let interval = sim.cfg.renew_interval();
        while sim.now() < millis(5 * TTL) {
            sim.advance(interval);
            let outcome = sim.renew(a);
            assert!(
                matches!(outcome, Outcome::Extended { .. }),
                "{design} at {}: {outcome:?}",
                sim.now()
            );
            let outcome = sim.acquire(b);
            assert!(turned_away(design, &outcome), "{design}: {outcome:?}");
        }
        sim.advance(TTL);
        granted(design, sim.acquire(b));
    }
}

#[test]
fn an_unreachable_node_fails_the_call() {
    for design in DesignId::ALL {
        let e = expect(design);
        let mut sim = world(design);
        let a = sim.client();
        sim.links(Link::Down);
        let outcome = sim.acquire(a);
        let expected = match design {
            DesignId::Redlock => Denied::NoQuorum { granted: 0 },
            _ => Denied::Unavailable { node: 0 },
        };
        assert_eq!(outcome, Outcome::Denied(expected), "{design}");
        assert!(sim.free(), "{design}");
        sim.links(Link::Up);
        let grant = granted(design, sim.acquire(a));
        if e.masters > 1 {
            continue;
        }
        sim.links(Link::Down);
        if e.extends {
            // The lease may still be ours: keep the grant, whose lease runs out alone.
            let outcome = sim.renew(a);
            assert_eq!(outcome, Outcome::Unavailable { node: 0 }, "{design}");
            assert_eq!(sim.grant(a), Some(grant.clone()), "{design}");
        }
        let outcome = sim.release(a);
        assert_eq!(outcome, Outcome::Unavailable { node: 0 }, "{design}");
        assert_eq!(sim.holders(), vec![Some(grant.token)], "{design}");
    }
}

/// The acquire ran but its reply was lost: the client reports the node unavailable and
/// the key it set stays behind, as an orphan that only its expiry removes.
#[test]
fn a_lost_acquire_reply_leaves_an_orphan() {
    for design in DesignId::ALL {
        let e = expect(design);
        if e.masters > 1 {
            continue;
        }
        let mut sim = world(design);
        let (a, b) = (sim.client(), sim.client());
        sim.links(Link::ReplyLost);
        let outcome = sim.acquire(a);
        assert_eq!(
            outcome,
            Outcome::Denied(Denied::Unavailable { node: 0 }),
            "{design}"
        );
        assert_eq!(sim.grant(a), None, "{design}");
        if !e.acquire_writes_first {
            // Only the check ran; it left nothing behind.
            assert!(sim.free(), "{design}");
            continue;
        }
        assert!(!sim.free(), "{design}: the orphan");
        sim.links(Link::Up);
        let outcome = sim.acquire(b);
        assert!(turned_away(design, &outcome), "{design}: {outcome:?}");
        sim.advance(if e.orphan_expires { TTL + 1 } else { 100 * TTL });
        let outcome = sim.acquire(b);
        if e.orphan_expires {
            granted(design, outcome);
        } else {
            assert!(turned_away(design, &outcome), "{design}: {outcome:?}");
        }
    }
}

#[test]
fn fencing_tokens_grow_with_each_holder() {
    for design in DesignId::ALL {
        let mut cfg = LockConfig::new(design, "lock", TTL);
        cfg.masters = expect(design).masters;
        cfg.fencing = true;
        let mut sim = Sim::with_config(cfg);
        let (a, b) = (sim.client(), sim.client());
        assert_eq!(granted(design, sim.acquire(a)).fence, Some(1), "{design}");
        assert_eq!(sim.grant(a).and_then(|g| g.fence), Some(1), "{design}");
        let released = Outcome::Released { holds_left: 0 };
        assert_eq!(sim.release(a), released, "{design}");
        assert_eq!(granted(design, sim.acquire(b)).fence, Some(2), "{design}");
        assert_eq!(sim.release(b), released, "{design}");
        assert_eq!(granted(design, sim.acquire(a)).fence, Some(3), "{design}");
    }
}

/// `WAIT 1` on a node without replicas gets 0 acknowledgements: the acquire fails and
/// gives its grant back.
#[test]
fn an_unreplicated_grant_is_given_back() {
    for design in DesignId::ALL {
        let mut cfg = LockConfig::new(design, "lock", TTL);
        cfg.masters = expect(design).masters;
        cfg.wait_replicas = 1;
        let mut sim = Sim::with_config(cfg);
        let (a, b) = (sim.client(), sim.client());
        let outcome = sim.acquire(a);
        let expected = Outcome::Denied(Denied::NotReplicated { acks: 0 });
        assert_eq!(outcome, expected, "{design}");
        assert_eq!(sim.grant(a), None, "{design}");
        assert!(sim.free(), "{design}: {:?}", sim.holders());
        assert_eq!(sim.acquire(b), expected, "{design}");
    }
}

#[test]
fn reentrant_counts_holds_and_names_its_owner() {
    let mut sim = world(DesignId::Reentrant);
    let (a, b) = (sim.client(), sim.client());
    let grant = granted(DesignId::Reentrant, sim.acquire(a));
    granted(DesignId::Reentrant, sim.acquire(a));
    granted(DesignId::Reentrant, sim.acquire(a));
    assert_eq!(
        sim.value(0),
        Some(Value::Hash(vec![(grant.token.as_str().into(), "3".into())]))
    );
    assert_eq!(sim.release(a), Outcome::Released { holds_left: 2 });
    assert_eq!(sim.grant(a).map(|g| g.holds), Some(2));
    // Another owner's release is refused by the machine itself: it holds nothing.
    assert_eq!(sim.release(b), Outcome::NotHeld);
    assert_eq!(sim.release(a), Outcome::Released { holds_left: 1 });
    assert_eq!(
        sim.value(0),
        Some(Value::Hash(vec![(grant.token.as_str().into(), "1".into())]))
    );
    assert_eq!(sim.release(a), Outcome::Released { holds_left: 0 });
    assert!(sim.free());
    assert_eq!(sim.release(a), Outcome::NotHeld);
}

/// A re-entry that gets no answer, or finds the key taken, keeps the outer hold: the
/// holder still believes it holds the lock (Redis may still have it) and its watchdog
/// goes on; the next renewal tells whether the lock is still ours.
#[test]
fn a_failed_reentry_keeps_the_outer_hold() {
    let design = DesignId::Reentrant;
    let mut sim = world(design);
    let (a, b) = (sim.client(), sim.client());
    let grant = granted(design, sim.acquire(a));
    sim.links(Link::Down);
    assert_eq!(
        sim.acquire(a),
        Outcome::Denied(Denied::Unavailable { node: 0 })
    );
    assert_eq!(sim.grant(a), Some(grant.clone()), "the outer hold stays");
    assert!(sim.renewing(a), "and is still renewed");
    sim.links(Link::Up);
    // Still ours in Redis: it renews and releases as one hold.
    assert!(matches!(sim.renew(a), Outcome::Extended { .. }));
    // The lease runs out, another client takes the lock, and the re-entry is denied.
    sim.advance(TTL + 1);
    granted(design, sim.acquire(b));
    let outcome = sim.acquire(a);
    assert!(
        matches!(outcome, Outcome::Denied(Denied::Held { pttl: Some(p) }) if p > 0),
        "{outcome:?}"
    );
    assert_eq!(sim.grant(a).map(|g| g.holds), Some(1), "still one hold");
    assert_eq!(sim.renew(a), Outcome::NotHeld, "the renewal finds it gone");
    assert_eq!(sim.grant(a), None);
}

/// An inner unlock takes one hold off the local count whatever Redis answered, as
/// Redisson's does: one that gets no answer leaves the outer hold, still renewed; the
/// last local hold ends the hold even if Redis counts more (the key then expires).
#[test]
fn an_unanswered_inner_unlock_keeps_the_outer_hold() {
    let design = DesignId::Reentrant;
    let mut sim = world(design);
    let (a, b) = (sim.client(), sim.client());
    let grant = granted(design, sim.acquire(a));
    granted(design, sim.acquire(a));
    sim.links(Link::Down);
    assert_eq!(sim.release(a), Outcome::Unavailable { node: 0 });
    assert_eq!(sim.grant(a).map(|g| g.holds), Some(1), "the outer hold");
    assert!(sim.renewing(a));
    sim.links(Link::Up);
    // Redis still counts two holds (the unlock never arrived): the outer unlock is
    // answered 0 and ends the hold here; the key runs out by itself, unrenewed.
    assert_eq!(sim.release(a), Outcome::Released { holds_left: 0 });
    assert_eq!(sim.grant(a), None);
    assert!(!sim.renewing(a));
    assert_eq!(
        sim.value(0),
        Some(Value::Hash(vec![(grant.token.as_str().into(), "1".into())]))
    );
    sim.advance(TTL + 1);
    granted(design, sim.acquire(b));
}

/// A renewal that gets no answer stops the watchdog by default (it is sent once); with
/// `RenewalOnError::Retry` it goes on. Either way the hold stays, with its old lease, and
/// a fresh hold is renewed again.
#[test]
fn a_renewal_without_answer_stops_the_watchdog_unless_told_to_retry() {
    for design in [DesignId::Watchdog, DesignId::Reentrant] {
        for on_error in [RenewalOnError::Stop, RenewalOnError::Retry] {
            let mut cfg = LockConfig::new(design, "lock", TTL);
            cfg.renewal_on_error = on_error;
            let mut sim = Sim::with_config(cfg);
            let a = sim.client();
            let grant = granted(design, sim.acquire(a));
            assert!(sim.renewing(a), "{design}");
            sim.links(Link::ReplyLost);
            assert_eq!(sim.renew(a), Outcome::Unavailable { node: 0 }, "{design}");
            assert_eq!(sim.grant(a), Some(grant.clone()), "{design}: hold kept");
            assert_eq!(
                sim.renewing(a),
                on_error == RenewalOnError::Retry,
                "{design} {on_error:?}"
            );
            sim.links(Link::Up);
            if design == DesignId::Reentrant {
                // A re-entry does not restart a stopped renewal.
                granted(design, sim.acquire(a));
                assert_eq!(sim.renewing(a), on_error == RenewalOnError::Retry);
                assert_eq!(sim.release(a), Outcome::Released { holds_left: 1 });
            }
            assert_eq!(sim.release(a), Outcome::Released { holds_left: 0 });
            assert!(!sim.renewing(a), "{design}: nothing held");
            granted(design, sim.acquire(a));
            assert!(sim.renewing(a), "{design}: a fresh hold is renewed");
        }
    }
}

/// Designs that do not renew never ask for a renewal.
#[test]
fn only_renewing_designs_renew() {
    for design in DesignId::ALL {
        let mut sim = world(design);
        let a = sim.client();
        granted(design, sim.acquire(a));
        assert_eq!(sim.renewing(a), design.renews(), "{design}");
    }
}

fn redlock(masters: usize) -> Sim {
    Sim::new(DesignId::Redlock, masters)
}

#[test]
fn redlock_holds_with_a_majority_of_masters() {
    for (masters, down) in [(3, 1), (5, 2)] {
        let mut sim = redlock(masters);
        let a = sim.client();
        for node in 0..down {
            sim.link(node, Link::Down);
        }
        let grant = granted(DesignId::Redlock, sim.acquire(a));
        let holders = sim.holders();
        assert_eq!(holders[..down], vec![None; down]);
        assert_eq!(holders[down..], vec![Some(grant.token); masters - down]);
    }
}

/// Without a majority, the grants it did get are released before the denial.
#[test]
fn redlock_without_a_majority_releases_its_partial_grants() {
    for (masters, down) in [(3, 2), (5, 3)] {
        let mut sim = redlock(masters);
        let a = sim.client();
        for node in 0..down {
            sim.link(node, Link::Down);
        }
        let outcome = sim.acquire(a);
        let granted = masters - down;
        assert_eq!(outcome, Outcome::Denied(Denied::NoQuorum { granted }));
        assert!(sim.free(), "{:?}", sim.holders());
        let released: Vec<usize> = sim.displaced.iter().map(|d| d.node).collect();
        assert_eq!(released, (down..masters).collect::<Vec<_>>());
        assert_eq!(foreign(&sim), vec![]);
    }
}

/// Two clients race for three masters: a wins two, b one. b is denied and deletes its
/// one key; a's two stay.
#[test]
fn redlock_split_vote_denies_the_minority_and_releases_its_key() {
    let mut sim = redlock(3);
    let (a, b) = (sim.client(), sim.client());
    assert_eq!(sim.start(a, Op::Acquire), None);
    assert_eq!(sim.start(b, Op::Acquire), None);
    assert_eq!(sim.deliver(a, 0), None);
    assert_eq!(sim.deliver(a, 1), None);
    assert_eq!(sim.deliver(b, 2), None);
    assert_eq!(sim.deliver(b, 0), None);
    assert_eq!(sim.deliver(b, 1), None);
    let grant = granted(
        DesignId::Redlock,
        sim.deliver(a, 2).expect("a's last answer"),
    );
    assert!(sim.busy(b), "b releases its partial grant");
    assert_eq!(
        sim.finish(b),
        Outcome::Denied(Denied::NoQuorum { granted: 1 })
    );
    let token = Some(grant.token);
    assert_eq!(sim.holders(), vec![token.clone(), token, None]);
    assert_eq!(foreign(&sim), vec![]);
}

/// All masters granted, but the acquire took longer than the ttl minus the drift: no
/// validity left, so it is denied and released everywhere.
#[test]
fn redlock_slow_acquire_leaves_no_validity() {
    let mut sim = redlock(3);
    let a = sim.client();
    assert_eq!(sim.start(a, Op::Acquire), None);
    let left = u64::try_from(sim.cfg.lease_end(0)).expect("positive");
    sim.advance(left);
    let outcome = sim.finish(a);
    assert_eq!(outcome, Outcome::Denied(Denied::NoValidity { granted: 3 }));
    assert!(sim.free(), "{:?}", sim.holders());
    assert_eq!(sim.displaced.len(), 3, "released on every master");
}

#[test]
fn redlock_release_and_extend_with_masters_down() {
    let mut sim = redlock(3);
    let (a, b) = (sim.client(), sim.client());
    let grant = granted(DesignId::Redlock, sim.acquire(a));
    // One master down: the extend still has a majority; the release reaches two.
    sim.link(2, Link::Down);
    sim.advance(100);
    let lease_end = sim.cfg.lease_end(100);
    assert_eq!(sim.renew(a), Outcome::Extended { lease_end });
    assert_eq!(sim.release(a), Outcome::Released { holds_left: 0 });
    assert_eq!(sim.holders(), vec![None, None, Some(grant.token)]);
    granted(DesignId::Redlock, sim.acquire(b));
    // Two masters down: the extend fails and b gives up its grant.
    sim.link(1, Link::Down);
    assert_eq!(sim.renew(b), Outcome::NotHeld);
    assert_eq!(sim.grant(b), None);
}

/// The acquire ran on every master but every reply was lost: the release that follows
/// the failed quorum reaches the masters too and deletes the keys.
#[test]
fn redlock_cleans_up_after_lost_replies() {
    let mut sim = redlock(3);
    let a = sim.client();
    sim.links(Link::ReplyLost);
    let outcome = sim.acquire(a);
    assert_eq!(outcome, Outcome::Denied(Denied::NoQuorum { granted: 0 }));
    assert!(sim.free(), "{:?}", sim.holders());
}

/// Redlock's flaw without persistence: a master restarts empty and a second client
/// gets a majority while the first still holds.
#[test]
fn redlock_a_master_restarting_empty_admits_a_second_holder() {
    let mut sim = redlock(3);
    let (a, b) = (sim.client(), sim.client());
    sim.link(2, Link::Down);
    let first = granted(DesignId::Redlock, sim.acquire(a));
    sim.link(2, Link::Up);
    sim.restart(1);
    sim.advance(10);
    let second = granted(DesignId::Redlock, sim.acquire(b));
    let now = sim.now();
    assert!(first.validity(now).is_some_and(|v| v > 0));
    assert!(second.validity(now).is_some_and(|v| v > 0));
    assert_eq!(
        sim.holders(),
        vec![
            Some(first.token),
            Some(second.token.clone()),
            Some(second.token)
        ]
    );
}

/// setnx-expire's flaw: a crash between `SETNX` and `PEXPIRE` leaves a key without
/// expiry, held forever.
#[test]
fn setnx_expire_a_crash_before_pexpire_holds_the_lock_forever() {
    let mut sim = world(DesignId::SetnxExpire);
    let (a, b) = (sim.client(), sim.client());
    assert_eq!(sim.start(a, Op::Acquire), None);
    assert_eq!(sim.deliver(a, 0), None, "the PEXPIRE is next");
    sim.crash(a);
    assert_eq!(sim.entry(0).map(|(_, at)| at), Some(None), "no expiry");
    sim.advance(100 * TTL);
    let outcome = sim.acquire(b);
    assert!(turned_away(DesignId::SetnxExpire, &outcome), "{outcome:?}");
}

/// getset-timestamp's flaw on clock skew: a client whose clock runs ahead reads a live
/// lock's expiry as past and steals it.
#[test]
fn getset_timestamp_a_fast_clock_steals_a_live_lock() {
    let mut sim = world(DesignId::GetsetTimestamp);
    let (a, b) = (sim.client(), sim.client());
    granted(DesignId::GetsetTimestamp, sim.acquire(a));
    sim.skew(b, millis(2 * TTL));
    sim.advance(10);
    granted(DesignId::GetsetTimestamp, sim.acquire(b));
    let now = sim.now();
    assert!(sim
        .grant(a)
        .and_then(|g| g.validity(now))
        .is_some_and(|v| v > 0));
    assert!(sim.grant(b).is_some());
}

/// getset-timestamp's flaw with two stealers: both read the same expired value; the
/// first `GETSET` wins, the second loses but has already overwritten the winner's
/// expiry with its own.
#[test]
fn getset_timestamp_the_losing_stealer_overwrites_the_winners_expiry() {
    let mut sim = world(DesignId::GetsetTimestamp);
    let (a, b, c) = (sim.client(), sim.client(), sim.client());
    granted(DesignId::GetsetTimestamp, sim.acquire(a));
    sim.advance(TTL + 1);
    // c's clock runs ahead, so that its expiry differs from b's.
    sim.skew(c, 300);
    for stealer in [b, c] {
        assert_eq!(sim.start(stealer, Op::Acquire), None);
        assert_eq!(sim.deliver(stealer, 0), None, "SETNX fails");
        assert_eq!(sim.deliver(stealer, 0), None, "GET sees the old expiry");
    }
    let won = granted(
        DesignId::GetsetTimestamp,
        sim.deliver(b, 0).expect("b's GETSET"),
    );
    let lost = sim.deliver(c, 0).expect("c's GETSET");
    assert!(turned_away(DesignId::GetsetTimestamp, &lost), "{lost:?}");
    let c_expiry = (sim.clock(c) + millis(TTL)).to_string();
    assert_eq!(
        sim.holder(0),
        Some(c_expiry.as_str().into()),
        "the loser's expiry"
    );
    assert_ne!(sim.holder(0), Some(won.token));
    assert_eq!(
        foreign(&sim),
        vec![
            Displaced {
                by: b,
                node: 0,
                owner: Some(0)
            },
            Displaced {
                by: c,
                node: 0,
                owner: Some(1)
            }
        ]
    );
}

/// set-px-get-del's flaw: the key expires between the release's `GET` and its `DEL`,
/// the next client takes it, and the `DEL` deletes the next holder's lock.
#[test]
fn set_px_get_del_deletes_the_next_holder_in_the_gap() {
    let mut sim = world(DesignId::SetPxGetDel);
    let (a, b) = (sim.client(), sim.client());
    granted(DesignId::SetPxGetDel, sim.acquire(a));
    sim.advance(TTL - 1);
    assert_eq!(sim.start(a, Op::Release), None);
    assert_eq!(sim.deliver(a, 0), None, "GET matches; DEL is next");
    sim.advance(1);
    let next = granted(DesignId::SetPxGetDel, sim.acquire(b));
    assert_eq!(sim.holder(0), Some(next.token));
    assert_eq!(sim.deliver(a, 0), Some(Outcome::Released { holds_left: 0 }));
    assert!(sim.free());
    assert!(sim.grant(b).is_some(), "b believes it holds the lock");
    assert_eq!(
        foreign(&sim),
        vec![Displaced {
            by: a,
            node: 0,
            owner: Some(1)
        }]
    );
}

/// exists-set's flaw: both clients check before either sets, both see no key, and
/// both set it: two holders with no fault at all.
#[test]
fn exists_set_two_clients_both_see_no_key() {
    let design = DesignId::ExistsSet;
    let mut sim = world(design);
    let (a, b) = (sim.client(), sim.client());
    assert_eq!(sim.start(a, Op::Acquire), None);
    assert_eq!(sim.start(b, Op::Acquire), None);
    assert_eq!(sim.deliver(a, 0), None, "EXISTS 0; SET is next");
    assert_eq!(sim.deliver(b, 0), None, "EXISTS 0 for b too");
    granted(design, sim.deliver(a, 0).unwrap());
    let next = granted(design, sim.deliver(b, 0).unwrap());
    assert!(
        sim.grant(a).is_some() && sim.grant(b).is_some(),
        "both hold"
    );
    assert_eq!(sim.holder(0), Some(next.token), "b's SET overwrote a's");
    // Checked one after the other, the second client is turned away.
    let mut sim = world(design);
    let (a, b) = (sim.client(), sim.client());
    granted(design, sim.acquire(a));
    assert_eq!(sim.acquire(b), Outcome::Denied(Denied::Held { pttl: None }));
}

/// get-expire-renewal's flaw: a holder whose lease ran out renews the lock the next
/// client has taken since (its GET finds a key, whose it does not ask) and believes its
/// own lease extended.
#[test]
fn get_expire_renewal_extends_the_next_holders_lock() {
    let design = DesignId::GetExpireRenewal;
    let mut sim = world(design);
    let (a, b) = (sim.client(), sim.client());
    granted(design, sim.acquire(a));
    sim.advance(TTL + 1);
    let next = granted(design, sim.acquire(b));
    sim.advance(10);
    let outcome = sim.renew(a);
    assert!(matches!(outcome, Outcome::Extended { .. }), "{outcome:?}");
    assert!(
        sim.grant(a).is_some() && sim.grant(b).is_some(),
        "both hold"
    );
    assert_eq!(sim.holder(0), Some(next.token));
    assert_eq!(
        sim.entry(0).and_then(|(_, at)| at),
        Some(1_011 + 1_000),
        "b's expiry moved by a"
    );
    assert_eq!(
        foreign(&sim),
        vec![Displaced {
            by: a,
            node: 0,
            owner: Some(1)
        }]
    );
}

/// lua-release's flaw: a holder paused past its lease still has its grant when the next
/// client gets the lock; only a fencing token stops its late write.
#[test]
fn lua_release_a_paused_holder_is_stopped_only_by_fencing() {
    let mut cfg = LockConfig::new(DesignId::LuaRelease, "lock", TTL);
    cfg.fencing = true;
    let mut sim = Sim::with_config(cfg);
    let (a, b) = (sim.client(), sim.client());
    let mut stock = Stock::new(10, Fencing::All);
    let first = granted(DesignId::LuaRelease, sim.acquire(a));
    let read = stock.read(first.fence).expect("a reads");
    sim.advance(TTL + 1);
    let second = granted(DesignId::LuaRelease, sim.acquire(b));
    assert!(sim.grant(a).is_some(), "a's machine still holds its grant");
    stock.write(second.fence, read - 1).expect("b writes");
    assert_eq!(
        stock.write(first.fence, read - 1),
        Err(Rejected {
            token: 1,
            newest: 2
        })
    );
    assert!(stock.consistent());
}

/// The contract the model checker's partial-order reduction rests on
/// (`LockMachine::records_only`): while a Redlock fan-out waits for more than one
/// master, an answer is only recorded, whatever it says and whenever it comes; answers
/// of one operation commute; only Redlock records answers.
#[test]
fn redlock_records_every_answer_but_the_last_in_any_order() {
    use locklab::{LockMachine, NoAnswer, Reply, Step};
    let mut cfg = LockConfig::new(DesignId::Redlock, "lock", 100);
    cfg.masters = 5;
    let held = |answers: &[Result<Reply, NoAnswer>]| {
        let mut m = LockMachine::new(&cfg);
        m.acquire(&cfg, 0, "t1");
        for (node, a) in answers.iter().enumerate() {
            m.on_answer(&cfg, node, a.clone(), 1);
        }
        m
    };
    let ok = || Ok(Reply::Ok);
    let grants = [ok(), ok(), ok(), ok(), ok()];
    // An acquire (granted by three masters, one refusal, one silence), a release and an
    // extension of a held lock.
    type Answers = Vec<Result<Reply, NoAnswer>>;
    let ops: Vec<(&str, LockMachine, Answers)> = {
        let mut acquiring = LockMachine::new(&cfg);
        acquiring.acquire(&cfg, 0, "t1");
        let mut releasing = held(&grants);
        releasing.release(&cfg, 2);
        let mut extending = held(&grants);
        extending.renew(&cfg, 2);
        let deleted = Ok(Reply::Int(1));
        vec![
            (
                "acquire",
                acquiring,
                vec![ok(), ok(), Ok(Reply::Nil), Err(NoAnswer), ok()],
            ),
            ("release", releasing, vec![deleted.clone(); 5]),
            (
                "extend",
                extending,
                vec![
                    deleted,
                    Ok(Reply::Int(0)),
                    Ok(Reply::Int(1)),
                    Ok(Reply::Int(1)),
                    Ok(Reply::Int(1)),
                ],
            ),
        ]
    };
    for (name, start, answers) in ops {
        let mut finals: Vec<(LockMachine, Step)> = Vec::new();
        // Every order of the five masters' answers; the recorded ones at scattered times,
        // the last at time 3.
        let mut orders = vec![vec![0usize, 1, 2, 3, 4]];
        while let Some(next) = next_permutation(orders.last().unwrap()) {
            orders.push(next);
        }
        assert_eq!(orders.len(), 120);
        for order in orders {
            let mut m = start.clone();
            for (k, &node) in order.iter().enumerate() {
                let last = k == order.len() - 1;
                assert_eq!(m.records_only(node), !last, "{name} {order:?} step {k}");
                let now = if last { 3 } else { [0, 40, -7, 99][k] };
                let step = m.on_answer(&cfg, node, answers[node].clone(), now);
                if !last {
                    assert_eq!(step, Step::default(), "{name} {order:?} step {k}");
                    assert!(m.busy(), "{name} {order:?} step {k}");
                } else {
                    finals.push((m.clone(), step));
                }
            }
        }
        assert!(
            finals.windows(2).all(|w| w[0] == w[1]),
            "{name}: every order ends alike"
        );
        assert!(
            finals[0].1.outcome.is_some() || !finals[0].1.sends.is_empty(),
            "{name}"
        );
    }
    // No other design records an answer: each has one request out at a time.
    for design in DesignId::ALL {
        if design == DesignId::Redlock || design == DesignId::Custom {
            continue;
        }
        let cfg = LockConfig::new(design, "lock", 100);
        let mut m = LockMachine::new(&cfg);
        m.acquire(&cfg, 0, "t1");
        assert!(!m.records_only(0), "{design}");
    }
}

/// The next permutation in lexicographic order, if any.
fn next_permutation(p: &[usize]) -> Option<Vec<usize>> {
    let mut v = p.to_vec();
    let i = (0..v.len().saturating_sub(1))
        .rev()
        .find(|&i| v[i] < v[i + 1])?;
    let j = (i + 1..v.len()).rev().find(|&j| v[j] > v[i])?;
    v.swap(i, j);
    v[i + 1..].reverse();
    Some(v)
}
