//! The history checker on hand-built histories: each property violated, and holding.

use locklab::{DesignId, Fencing};
use locklab_harness::run::checker::check;
use locklab_harness::run::history::{Event, History};
use locklab_model::scenario::Property;

fn history(design: DesignId, events: Vec<Event>) -> History {
    let mut h = History::new(design, Fencing::Off, 10);
    for (i, e) in events.into_iter().enumerate() {
        h.push(i as f64, e);
    }
    h
}

fn start(c: usize) -> Event {
    Event::AcquireStart {
        client: c,
        token: format!("t{}", c + 1),
    }
}

fn acquired(c: usize) -> Event {
    Event::Acquired {
        client: c,
        fence: None,
    }
}

fn write(c: usize, value: i64, stock: i64) -> Event {
    Event::StockWrite {
        client: c,
        token: None,
        value,
        accepted: true,
        stock,
    }
}

fn violated(h: &History) -> Vec<Property> {
    check(h).violations.iter().map(|v| v.property).collect()
}

/// Two purchases one after the other, each inside its own lease.
fn orderly() -> Vec<Event> {
    vec![
        start(0),
        acquired(0),
        write(0, 9, 9),
        Event::Leave { client: 0 },
        Event::ReleaseStart { client: 0 },
        Event::Done { client: 0 },
        start(1),
        acquired(1),
        write(1, 8, 8),
        Event::Leave { client: 1 },
        Event::Done { client: 1 },
    ]
}

#[test]
fn an_orderly_history_breaks_nothing() {
    assert_eq!(violated(&history(DesignId::LuaRelease, orderly())), vec![]);
}

#[test]
fn overlapping_critical_sections_break_mutual_exclusion_and_a_lost_update_resource_safety() {
    let h = history(
        DesignId::LuaRelease,
        vec![
            start(0),
            acquired(0),
            start(1),
            acquired(1),
            write(1, 9, 9),
            Event::Leave { client: 1 },
            write(0, 9, 9),
            Event::Leave { client: 0 },
        ],
    );
    assert_eq!(
        violated(&h),
        vec![Property::MutualExclusion, Property::ResourceSafety]
    );
    let v = &check(&h).violations[0];
    assert_eq!(v.ms, 3.0, "at the second grant");
}

#[test]
fn a_crashed_holder_leaves_the_critical_section() {
    let h = history(
        DesignId::LuaRelease,
        vec![
            start(0),
            acquired(0),
            Event::Crash { client: 0 },
            start(1),
            acquired(1),
        ],
    );
    assert_eq!(violated(&h), vec![]);
}

#[test]
fn deleting_a_holders_entry_breaks_owner_only_release() {
    let h = history(
        DesignId::SetPxDel,
        vec![
            start(0),
            acquired(0),
            start(1),
            Event::Displaced {
                node: 0,
                by: 1,
                owner: 0,
            },
        ],
    );
    assert_eq!(violated(&h), vec![Property::OwnerOnlyRelease]);
}

#[test]
fn deleting_ones_own_entry_or_a_finished_clients_entry_is_allowed() {
    let own = history(
        DesignId::SetPxDel,
        vec![
            start(0),
            acquired(0),
            Event::Displaced {
                node: 0,
                by: 0,
                owner: 0,
            },
        ],
    );
    assert_eq!(violated(&own), vec![]);
    let finished = history(
        DesignId::SetPxDel,
        vec![
            start(0),
            acquired(0),
            Event::Done { client: 0 },
            start(1),
            Event::Displaced {
                node: 0,
                by: 1,
                owner: 0,
            },
        ],
    );
    assert_eq!(violated(&finished), vec![]);
}

#[test]
fn a_crashed_owners_key_without_expiry_is_an_orphan() {
    let events = vec![
        start(0),
        acquired(0),
        Event::Crash { client: 0 },
        Event::KeyObserved {
            node: 0,
            owner: Some(0),
            pttl_ms: -1,
        },
    ];
    assert_eq!(
        violated(&history(DesignId::NaiveSetnx, events.clone())),
        vec![Property::NoOrphanedLock]
    );
    // getset-timestamp keeps its expiry in the value: not an orphan (as in the model).
    assert_eq!(
        violated(&history(DesignId::GetsetTimestamp, events)),
        vec![]
    );
}

/// An orphan of any origin: the owner is alive but gave up (its acquire timed out on a
/// SETNX that ran) or finished (its release got no answer and never ran).
#[test]
fn a_key_without_expiry_that_no_live_client_believes_it_holds_is_an_orphan() {
    let key = Event::KeyObserved {
        node: 0,
        owner: Some(0),
        pttl_ms: -1,
    };
    let timed_out = vec![
        start(0),
        Event::AcquireFailed {
            client: 0,
            outcome: "Denied(Unavailable { node: 0 })".into(),
        },
        key.clone(),
    ];
    assert_eq!(
        violated(&history(DesignId::NaiveSetnx, timed_out)),
        vec![Property::NoOrphanedLock]
    );
    let finished = vec![start(0), acquired(0), Event::Done { client: 0 }, key];
    assert_eq!(
        violated(&history(DesignId::NaiveSetnx, finished)),
        vec![Property::NoOrphanedLock]
    );
}

#[test]
fn a_key_without_expiry_of_a_live_owner_or_with_expiry_is_no_orphan() {
    let live = history(
        DesignId::NaiveSetnx,
        vec![
            start(0),
            acquired(0),
            Event::KeyObserved {
                node: 0,
                owner: Some(0),
                pttl_ms: -1,
            },
        ],
    );
    assert_eq!(violated(&live), vec![]);
    let expiring = history(
        DesignId::SetnxExpire,
        vec![
            start(0),
            acquired(0),
            Event::Crash { client: 0 },
            Event::KeyObserved {
                node: 0,
                owner: Some(0),
                pttl_ms: 300,
            },
        ],
    );
    assert_eq!(violated(&expiring), vec![]);
}

#[test]
fn a_rejected_stale_write_keeps_the_resource_safe() {
    let mut h = history(
        DesignId::LuaRelease,
        vec![
            start(0),
            acquired(0),
            Event::Crash { client: 0 },
            start(1),
            acquired(1),
            write(1, 9, 9),
            Event::StockWrite {
                client: 0,
                token: Some(1),
                value: 9,
                accepted: false,
                stock: 9,
            },
        ],
    );
    h.fencing = Fencing::All;
    assert_eq!(violated(&h), vec![]);
}
