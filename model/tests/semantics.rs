//! The model's semantics of the network and of faults, each against a small scenario
//! written here: the reply leg, a crash that leaves its requests on the wire, lost
//! replies, orphans of any origin, arrival at any tick and fault coverage.

use locklab_model::model::{Action, LockModel};
use locklab_model::scenario::{Property, Scenario};
use locklab_model::search::{replay, search, SearchOptions};
use locklab_model::state::Phase;

fn scenario(design: &str, ttl: u32, work: u32, horizon: u32, extra: &str) -> Scenario {
    parse(&text(design, ttl, work, horizon, extra))
}

fn parse(text: &str) -> Scenario {
    Scenario::parse(text, "semantics.toml").expect("test scenario parses")
}

fn text(design: &str, ttl: u32, work: u32, horizon: u32, extra: &str) -> String {
    format!(
        r#"name = "semantics"
design = "{design}"
[clients]
count = 2
[timing]
ttl = {ttl}
work = {work}
max_step_delay = 1
horizon = {horizon}
{extra}
[expect]
mutual_exclusion = "holds"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "holds"
"#
    )
}

fn check(sc: &Scenario) -> locklab_model::search::SearchResult {
    let options = SearchOptions {
        threads: 1,
        max_depth: None,
        ..SearchOptions::default()
    };
    search(&LockModel::new(sc), &options, |_| {})
}

/// A reply takes its own leg: the clock may tick between the execution of a command and
/// the client reading its reply, and the client does not hold the lock before it reads.
#[test]
fn the_reply_travels_after_the_command_ran() {
    let sc = scenario("lua-release", 5, 1, 10, "");
    let model = LockModel::new(&sc);
    use Action::*;
    let states = replay(&model, &[Acquire(0), Deliver(0, 0), Tick, Receive(0, 0)])
        .expect("the reply is read a tick after the SET ran");
    let executed = &states[2];
    assert_eq!(executed.clients[0].core.phase, Phase::Acquiring);
    assert!(
        executed.nodes[0].data.entry("lock").is_some(),
        "the SET ran"
    );
    assert!(states[4].clients[0].holding());
}

/// With the reply leg, a lease of 4 ticks no longer covers the slowest critical section
/// of lua-release (request, reply, read, work, write: each up to a tick late); 5 does.
#[test]
fn a_late_reply_eats_into_the_lease() {
    let tight = check(&scenario("lua-release", 4, 1, 10, ""));
    assert!(tight.counterexample(Property::MutualExclusion).is_some());
    let enough = check(&scenario("lua-release", 5, 1, 10, ""));
    assert!(enough.purchased);
    assert!(enough.counterexample(Property::MutualExclusion).is_none());
}

/// A request already sent still reaches Redis after its sender died: naive SETNX sent,
/// then the crash, then the SET runs and leaves a key nobody will ever delete.
#[test]
fn a_crash_leaves_its_requests_on_the_wire() {
    let sc = scenario("naive-setnx", 4, 1, 8, "[faults]\ncrashes = 1");
    let model = LockModel::new(&sc);
    use Action::*;
    let states = replay(&model, &[Acquire(0), Crash(0), Deliver(0, 0)])
        .expect("the request of a crashed client is still delivered");
    let last = states.last().unwrap();
    assert_eq!(
        last.nodes[0].data.entry("lock").and_then(|e| e.owner),
        Some(0)
    );
    assert!(
        last.clients[0].core.flights.iter().all(Option::is_none),
        "no reply is read"
    );
    assert!(!model.holds(Property::NoOrphanedLock, last));
}

/// A lost reply: the SET NX PX ran and took the lock, its reply never came, the client
/// timed out and gave up; the lock stays taken until it expires.
#[test]
fn a_lost_reply_times_out_a_command_that_ran() {
    let sc = scenario("lua-release", 5, 1, 10, "[faults]\nlost_replies = 1");
    let model = LockModel::new(&sc);
    use Action::*;
    let states = replay(&model, &[Acquire(0), Deliver(0, 0), LoseReply(0, 0)])
        .expect("a reply in flight can be lost");
    let last = states.last().unwrap();
    assert_eq!(
        last.nodes[0].data.entry("lock").and_then(|e| e.owner),
        Some(0)
    );
    assert!(!last.clients[0].holding(), "the client saw a timeout");
    assert_eq!(last.spent[locklab_model::fault::FaultKind::LostReply], 1);
    assert!(
        replay(
            &model,
            &[
                Acquire(0),
                Deliver(0, 0),
                LoseReply(0, 0),
                Acquire(0),
                Deliver(0, 0),
                LoseReply(0, 0)
            ]
        )
        .is_none(),
        "one lost reply in the budget"
    );
}

/// Orphans of any origin: naive SETNX whose reply is lost leaves a key without expiry
/// that its live owner does not believe it holds. Before, only a crashed owner's key
/// counted, and this scenario held.
#[test]
fn a_lost_reply_orphans_a_lock_without_expiry() {
    let r = check(&scenario(
        "naive-setnx",
        4,
        1,
        8,
        "[faults]\nlost_replies = 1",
    ));
    let c = r
        .counterexample(Property::NoOrphanedLock)
        .expect("the lost reply orphans the lock");
    assert!(c.iter().any(|a| matches!(a, Action::LoseReply(..))));
    let none = check(&scenario("naive-setnx", 4, 1, 8, ""));
    assert!(none.counterexample(Property::NoOrphanedLock).is_none());
}

/// `arrival = "any"`: a client's first attempt may come at any tick; with "start" the
/// clock cannot pass `max_step_delay` ticks before every client has attempted.
#[test]
fn clients_may_arrive_at_any_tick() {
    use stateright::Model;
    let offered_tick_after_one = |arrival: &str| {
        let sc = parse(
            &text("lua-release", 5, 1, 10, "")
                .replace("count = 2", &format!("count = 2\narrival = \"{arrival}\"")),
        );
        let model = LockModel::new(&sc);
        let states = replay(&model, &[Action::Tick]).unwrap();
        let mut actions = Vec::new();
        model.actions(states.last().unwrap(), &mut actions);
        actions.contains(&Action::Tick)
    };
    assert!(!offered_tick_after_one("start"));
    assert!(offered_tick_after_one("any"));
}

/// Coverage: which fault kinds some explored behaviour injects while a client holds the
/// lock, and whether a client attempts while a holder's lease is gone without it knowing.
#[test]
fn coverage_reports_faults_during_holds_and_attempts_after_a_loss() {
    use locklab_model::model::FaultKind;
    let r = check(&scenario("lua-release", 3, 2, 8, "[faults]\npauses = 1"));
    assert!(r.coverage.fault_during_hold(FaultKind::Pause));
    assert!(
        !r.coverage.fault_during_hold(FaultKind::Crash),
        "no crash budget"
    );
    assert!(!r.coverage.fault_during_hold(FaultKind::SplitBrain));
    // A split brain is a fault of the budget like the others: a "holds" that never
    // split a holder's master from its replica would be vacuous.
    let split = check(&scenario(
        "lua-release",
        7,
        1,
        8,
        "[topology]\nmasters = 1\nreplicas = 1\n[faults]\nsplit_brains = 1",
    ));
    assert!(split.coverage.fault_during_hold(FaultKind::SplitBrain));
    assert!(!split.coverage.fault_during_hold(FaultKind::Failover));
    assert!(
        r.coverage.attempt_after_loss,
        "a paused holder's lease runs out"
    );
    // A single client: nobody else ever attempts.
    let alone = parse(
        &text("lua-release", 3, 2, 8, "[faults]\npauses = 1").replace("count = 2", "count = 1"),
    );
    let r = check(&alone);
    assert!(r.coverage.fault_during_hold(FaultKind::Pause));
    assert!(!r.coverage.attempt_after_loss);
}

/// The first action of `path` that delivers a request its client gave up on, with the
/// command it carried (read off the state before the step).
fn late_delivery(model: &LockModel, path: &[Action]) -> Option<String> {
    let states = replay(model, path)?;
    path.iter().zip(&states).find_map(|(a, before)| match *a {
        Action::DeliverLate(c, k) => before.clients[c as usize]
            .core
            .strays
            .get(k as usize)
            .map(|st| st.flight.command.to_string()),
        _ => None,
    })
}

/// A request outlives its client's timeout: a blind `DEL` cut off by the network times
/// out and the holder moves on, but the bytes are in the socket; once the link heals
/// the DEL runs and deletes the lock the next client took after the lease ran out.
/// Before, a timed-out request vanished and this scenario held.
#[test]
fn a_release_given_up_on_lands_after_the_heal() {
    let sc = scenario("set-px-del", 8, 1, 14, "[faults]\npartitions = 1");
    let r = check(&sc);
    let path = r
        .counterexample(Property::OwnerOnlyRelease)
        .expect("the late DEL deletes the next holder's lock");
    let model = LockModel::new(&sc);
    assert_eq!(late_delivery(&model, path).as_deref(), Some("DEL lock"));
    assert!(path.iter().any(|a| matches!(a, Action::Heal(..))));
    // Without the partition the lease outlasts the critical section: it holds.
    let calm = check(&scenario("set-px-del", 8, 1, 14, ""));
    assert!(calm.counterexample(Property::OwnerOnlyRelease).is_none());
}

/// An acquire that lands after its client gave up takes the lock for nobody: the SETNX
/// (no expiry) runs once the link heals, and its client, which timed out, never
/// deletes the key.
#[test]
fn an_acquire_given_up_on_takes_the_lock_for_nobody() {
    let sc = scenario("naive-setnx", 4, 1, 10, "[faults]\npartitions = 1");
    let model = LockModel::new(&sc);
    use Action::*;
    let path = [
        Acquire(0),
        Partition(0, 0),
        Timeout(0, 0),
        Heal(0, 0),
        DeliverLate(0, 0),
    ];
    let states = replay(&model, &path).expect("the SETNX given up on still arrives");
    let timed_out = &states[3];
    assert_eq!(
        timed_out.clients[0].core.strays.len(),
        1,
        "kept on the wire"
    );
    assert!(timed_out.nodes[0].data.entry("lock").is_none());
    let last = states.last().unwrap();
    assert_eq!(
        last.nodes[0].data.entry("lock").and_then(|e| e.owner),
        Some(0)
    );
    assert!(last.clients[0].core.strays.is_empty());
    assert!(!last.clients[0].holding());
    assert!(!model.holds(Property::NoOrphanedLock, last));
    // It arrives within the step bound once the link works: the clock cannot pass it.
    let healed = replay(&model, &path[..4]).unwrap();
    let mut offered = Vec::new();
    stateright::Model::actions(&model, healed.last().unwrap(), &mut offered);
    assert!(offered.contains(&DeliverLate(0, 0)));
    let aged = replay(
        &model,
        &[Acquire(0), Partition(0, 0), Timeout(0, 0), Heal(0, 0), Tick],
    )
    .expect("a tick may pass once");
    let mut offered = Vec::new();
    stateright::Model::actions(&model, aged.last().unwrap(), &mut offered);
    assert!(offered.contains(&DeliverLate(0, 0)));
    assert!(
        !offered.contains(&Tick),
        "an overdue late request holds the clock"
    );
}

/// A request on its way to a node that restarts is lost with the connection.
#[test]
fn a_restart_drops_the_requests_given_up_on() {
    let sc = scenario(
        "naive-setnx",
        4,
        1,
        10,
        "[faults]\npartitions = 1\nrestarts = 1",
    );
    let model = LockModel::new(&sc);
    use Action::*;
    let states = replay(
        &model,
        &[Acquire(0), Partition(0, 0), Timeout(0, 0), Restart(0)],
    )
    .unwrap();
    assert!(states.last().unwrap().clients[0].core.strays.is_empty());
}

/// A renewal given up on lands after the lease ran out: get-expire-renewal's
/// `PEXPIRE`, cut off and timed out (the watchdog then stops), reaches Redis after the
/// next client took the lock and extends that client's lock.
#[test]
fn a_renewal_given_up_on_extends_the_next_holders_lock() {
    let sc = scenario("get-expire-renewal", 9, 12, 11, "[faults]\npartitions = 1");
    let r = check(&sc);
    let path = r
        .counterexample(Property::OwnerOnlyRelease)
        .expect("the late PEXPIRE extends another client's lock");
    let model = LockModel::new(&sc);
    let late = late_delivery(&model, path).expect("a request given up on lands");
    assert!(late.starts_with("PEXPIRE lock"), "{late}");
}

/// Replay `steps`, each only where the model offers it; `None` at the first step it
/// does not offer.
fn offered_path(model: &LockModel, steps: &[Action]) -> Option<Vec<locklab_model::state::State>> {
    let mut states = vec![stateright::Model::init_states(model).remove(0)];
    for &a in steps {
        let last = states.last()?;
        let mut offered = Vec::new();
        stateright::Model::actions(model, last, &mut offered);
        if !offered.contains(&a) {
            return None;
        }
        states.push(stateright::Model::next_state(model, last, a)?);
    }
    Some(states)
}

/// Each pending step has its own bound: a renewal due at t=1 (every ttl/3 = 1 tick) is
/// taken by t=2 with `max_step_delay = 1`, whatever else the client does meanwhile.
/// Before, one counter per client was reset by any of its steps, so the read at t=1
/// and the write at t=2 let the clock run on to t=3 with the renewal still unsent.
#[test]
fn a_due_renewal_is_bounded_on_its_own() {
    let sc = parse(&text("watchdog", 3, 1, 8, "").replace("count = 2", "count = 1"));
    let model = LockModel::new(&sc);
    use Action::*;
    let busy = [
        Acquire(0),
        Deliver(0, 0),
        Receive(0, 0),
        Tick,
        Read(0),
        Tick,
        Write(0),
    ];
    let states = offered_path(&model, &busy).expect("the holder reads and writes");
    assert_eq!(states.last().unwrap().now, 2);
    let mut late = busy.to_vec();
    late.push(Tick);
    assert!(
        offered_path(&model, &late).is_none(),
        "the clock waits for the overdue renewal"
    );
    let mut renewed = busy.to_vec();
    renewed.extend([Renew(0), Tick]);
    assert!(offered_path(&model, &renewed).is_some());
}

/// A renewal in flight runs beside the holder's own work: the stock read and write are
/// the application's steps, not the lock's, so they are offered (and bounded by
/// `max_step_delay`, the clock waiting for them) while the renewal is on the wire; only
/// the release waits for its answer. Before, a renewal made the holder's write no step
/// at all, so the clock ran on past the lease while the write waited: the watchdog
/// around `WAIT 1` broke mutual exclusion with no fault, where the same lock without
/// the watchdog (or with the renewal's answer in) holds.
#[test]
fn a_renewal_in_flight_holds_up_only_the_release() {
    let sc = parse(&text("watchdog", 3, 1, 8, "").replace("count = 2", "count = 1"));
    let model = LockModel::new(&sc);
    use Action::*;
    let renewing = [
        Acquire(0),
        Deliver(0, 0),
        Receive(0, 0),
        Tick,
        Renew(0),
        Read(0),
        Tick,
        Write(0),
    ];
    let states = offered_path(&model, &renewing).expect("read and write beside the renewal");
    let last = states.last().unwrap();
    assert!(
        last.clients[0].core.machine.busy(),
        "the renewal is still out"
    );
    assert!(
        offered_path(&model, &[&renewing[..], &[Release(0)]].concat()).is_none(),
        "the release waits for the renewal's answer"
    );
    assert!(offered_path(
        &model,
        &[&renewing[..], &[Deliver(0, 0), Receive(0, 0), Release(0)]].concat()
    )
    .is_some());
    // The write is a pending step: the clock does not run past it while it waits.
    let waiting = &renewing[..6];
    assert!(offered_path(&model, &[waiting, &[Tick]].concat()).is_some());
    assert!(
        offered_path(&model, &[waiting, &[Tick, Tick]].concat()).is_none(),
        "the overdue write holds the clock"
    );

    // Without a fault, the watchdog around WAIT 1 holds as the same lock without it
    // does: a lease of 7 ticks covers the acquire, the WAIT and the work.
    let wait = |design: &str| {
        let extra = "[topology]\nmasters = 1\nreplicas = 1";
        let text =
            text(design, 7, 1, 16, extra).replace("design = ", "wait_replicas = 1\ndesign = ");
        check(&parse(&text))
    };
    for design in ["watchdog", "lua-release"] {
        let result = wait(design);
        assert!(result.purchased, "{design}");
        assert!(
            result.counterexample(Property::MutualExclusion).is_none(),
            "{design}: a renewal cannot shorten a lease"
        );
    }
}

/// An orphan is a lock where clients write it: a replica's copy of a deleted key blocks
/// nobody, and goes when the replica catches up. Before, naive SETNX with one replica
/// and no fault broke no_orphaned_lock: the holder deleted its key on the master and
/// finished while the replica still had the copy. Promoted by a failover, the copy
/// serves, and is an orphan then.
#[test]
fn a_replicas_copy_is_no_orphan_until_it_serves() {
    let replica = "[topology]\nmasters = 1\nreplicas = 1";
    let quiet = check(&scenario("naive-setnx", 4, 1, 12, replica));
    assert!(quiet.purchased);
    assert!(
        quiet.counterexample(Property::NoOrphanedLock).is_none(),
        "a replica that merely lags orphans nothing"
    );
    let sc = scenario("naive-setnx", 4, 1, 12, replica);
    let model = LockModel::new(&sc);
    let stale = crate_levels(&model, 14)
        .into_iter()
        .flatten()
        .find(|s| {
            let copy = s.nodes[1].data.entry("lock");
            let owner = copy
                .and_then(|e| e.owner)
                .map(|o| &s.clients[usize::from(o)]);
            s.nodes[0].data.entry("lock").is_none()
                && copy.is_some_and(|e| e.expires_at.is_none())
                && owner.is_some_and(|c| c.core.phase == Phase::Done)
        })
        .expect("a replica still has the key its holder deleted");
    assert!(model.holds(Property::NoOrphanedLock, &stale));

    let failover = format!("{replica}\n[faults]\nfailovers = 1");
    let promoted = check(&scenario("naive-setnx", 4, 1, 12, &failover));
    assert!(
        promoted.counterexample(Property::NoOrphanedLock).is_some(),
        "the promoted copy serves, and nobody will delete it"
    );
}

fn crate_levels(model: &LockModel, depth: usize) -> Vec<Vec<locklab_model::state::State>> {
    locklab_model::model::levels(model, depth)
}

/// Split brains of any shape: the partition leaves some replicas on the old master's
/// side, where they keep following it, and Sentinel ranks only the replicas it reaches.
/// Before, every replica followed the promoted node and the most advanced replica was
/// promoted even when Sentinel could not reach it.
#[test]
fn a_split_brain_leaves_replicas_on_both_sides() {
    let sc = parse(
        &text(
            "lua-release",
            7,
            1,
            8,
            "[topology]\nmasters = 1\nreplicas = 3\npromotion = \"most-advanced\"\n[faults]\nsplit_brains = 1",
        )
        .replace("name = \"semantics\"", "name = \"semantics\"\nwait_replicas = 1"),
    );
    assert_eq!(sc.wait_replicas, 1);
    let model = LockModel::new(&sc);
    use Action::*;
    // client1's SET reaches the master and node2 (replica 1) copies it.
    let states = replay(&model, &[Acquire(0), Deliver(0, 0), Replicate(1)]).unwrap();
    let mut offered = Vec::new();
    stateright::Model::actions(&model, states.last().unwrap(), &mut offered);
    let splits: Vec<Action> = offered
        .into_iter()
        .filter(|a| matches!(a, SplitBrain(..)))
        .collect();
    // node2 is the most advanced: promoted when Sentinel reaches it (any sides of the
    // others); node3 or node4 only when node2 is on the old master's side.
    for split in [
        SplitBrain(0, 1, 0),
        SplitBrain(0, 1, 0b010),
        SplitBrain(0, 1, 0b110),
        SplitBrain(0, 2, 0b001),
        SplitBrain(0, 3, 0b001),
        SplitBrain(0, 2, 0b101),
        SplitBrain(0, 3, 0b011),
    ] {
        assert!(splits.contains(&split), "{split:?} in {splits:?}");
    }
    assert!(!splits.contains(&SplitBrain(0, 2, 0)), "{splits:?}");
    assert!(!splits.contains(&SplitBrain(0, 3, 0b100)), "{splits:?}");
    // node2 stays with the old master and acknowledges its WAIT; node4 follows node3.
    let split = replay(
        &model,
        &[
            Acquire(0),
            Deliver(0, 0),
            Replicate(1),
            Receive(0, 0),
            SplitBrain(0, 2, 0b001),
            Deliver(0, 0),
        ],
    )
    .unwrap();
    let last = split.last().unwrap();
    assert_eq!(last.nodes[1].replica_of, Some(0));
    assert_eq!(last.nodes[3].replica_of, Some(2));
    let wait = last.clients[0].core.flights[0].as_ref().unwrap();
    assert_eq!(
        wait.held,
        Some(locklab::Reply::Int(1)),
        "node2 acknowledges"
    );
}

/// Redlock's client contract: the validity an acquire leaves (ttl − elapsed − the
/// drift allowance) must cover the holder's work, or the holder gives the lock back.
/// Then the allowance decides: masters whose clocks run one tick fast break mutual
/// exclusion without an allowance and not with one tick of it; without drift both
/// hold. Before, the holder never looked at its validity, and the allowance changed
/// nothing (the same states with 0 and 4).
#[test]
fn redlocks_drift_allowance_decides_the_verdict() {
    let verdict = |drift: u32, allowance: u32| {
        let sc = parse(
            &text("redlock", 5, 1, 8, "")
                .replace(
                    "horizon = 8",
                    &format!("horizon = 8\nnode_drift = {drift}\ndrift_allowance = {allowance}"),
                )
                .replace("[timing]", "[topology]\nmasters = 1\n[timing]"),
        );
        let r = check(&sc);
        assert!(r.purchased, "drift {drift}, allowance {allowance}");
        r.counterexample(Property::MutualExclusion)
            .map(|path| path.iter().any(|a| matches!(a, Action::NodeDrift(_))))
    };
    assert_eq!(verdict(1, 0), Some(true), "violated, by drift");
    assert_eq!(verdict(1, 1), None);
    assert_eq!(verdict(0, 0), None);
    assert_eq!(verdict(0, 1), None);
}

/// `min_validity` says what validity the client holds the lock on. By default one that
/// covers the slowest critical section, the client's side of Redlock's contract; `0`
/// any positive validity, as the Redlock spec, pottery and rslock accept a lock. With a
/// 4-tick lease, an acquire whose legs each take their tick leaves too little for the
/// read, the work and the write: the libraries' rule breaks mutual exclusion with step
/// delays alone, the contract's gives the grants back and holds.
#[test]
fn redlocks_min_validity_decides_what_it_holds_on() {
    let verdict = |extra: &str| {
        let sc = parse(
            &text("redlock", 4, 1, 10, "")
                .replace(
                    "horizon = 10",
                    &format!("horizon = 10\ndrift_allowance = 0\n{extra}"),
                )
                .replace("[timing]", "[topology]\nmasters = 3\n[timing]"),
        );
        let r = check(&sc);
        assert!(r.purchased, "{extra:?}");
        r.counterexample(Property::MutualExclusion).is_some()
    };
    assert!(
        verdict("min_validity = 0"),
        "any positive validity is too little"
    );
    assert!(!verdict(""), "the default covers the critical section");
    assert!(!verdict("min_validity = 3"), "the default, written out");
}

/// Coverage that can fail: a lease lost under a holder that still believes it holds,
/// and nobody attempting afterwards, makes a "holds" vacuous. watchdog-lost-renewal with
/// one attempt per client: the renewal's reply is lost, the watchdog stops, the lease
/// runs out under the long critical section, but the other client has tried already;
/// arriving at any tick, it gets in.
#[test]
fn no_attempt_after_a_lost_lease_is_reported() {
    let body = |arrival: &str| {
        parse(
            &text("watchdog", 6, 7, 15, "[faults]\nlost_replies = 1").replace(
                "count = 2",
                &format!("count = 2\nattempts = 1\narrival = \"{arrival}\""),
            ),
        )
    };
    let once = check(&body("start"));
    assert!(once.coverage.lease_lost);
    assert!(!once.coverage.attempt_after_loss);
    assert!(once.coverage.no_attempt_after_loss());
    assert!(once.counterexample(Property::MutualExclusion).is_none());
    let any = check(&body("any"));
    assert!(any.coverage.attempt_after_loss);
    assert!(any.counterexample(Property::MutualExclusion).is_some());
}

/// A release whose DEL ran while its reply was on the wire is no lost lease, and a
/// fault of a client that does not hold the lock strikes no hold. Before, both counted:
/// an attempt after any release met `attempt_after_loss`, and a lost reply to another
/// client's acquire met "a lost reply struck a hold".
#[test]
fn coverage_counts_only_what_strikes_a_hold() {
    let calm = check(&scenario("lua-release", 8, 1, 10, ""));
    assert!(calm.counterexample(Property::MutualExclusion).is_none());
    assert!(!calm.coverage.lease_lost, "no lease is lost without faults");
    assert!(!calm.coverage.attempt_after_loss);
    let sc = scenario("lua-release", 5, 1, 10, "[faults]\nlost_replies = 1");
    let model = LockModel::new(&sc);
    use Action::*;
    // client1 holds; client2's SET ran and its reply is on the wire.
    let states = replay(
        &model,
        &[
            Acquire(0),
            Deliver(0, 0),
            Receive(0, 0),
            Acquire(1),
            Deliver(1, 0),
        ],
    )
    .unwrap();
    let s = states.last().unwrap();
    assert!(s.clients[0].holding());
    assert!(
        !model.strikes_a_hold(s, LoseReply(1, 0)),
        "client2 holds nothing"
    );
    let released = replay(
        &model,
        &[
            Acquire(0),
            Deliver(0, 0),
            Receive(0, 0),
            Read(0),
            Tick,
            Write(0),
            Release(0),
            Deliver(0, 0),
        ],
    )
    .unwrap();
    let s = released.last().unwrap();
    assert!(
        model.strikes_a_hold(s, LoseReply(0, 0)),
        "the holder's release reply"
    );
    assert!(!model.lease_lost(s, 0), "its own DEL ran: no lease lost");
}

/// One client of lua-release with `WAIT 1`, one replica and a WAIT timeout of `timeout`
/// ticks.
fn waiting_client(timeout: u32) -> Scenario {
    let extra = format!("wait_timeout = {timeout}\n[topology]\nmasters = 1\nreplicas = 1");
    parse(
        &text("lua-release", 7, 1, 12, &extra)
            .replace("count = 2", "count = 1")
            .replace("design = ", "wait_replicas = 1\ndesign = "),
    )
}

/// The steps offered from the last state of `states`.
fn offered(model: &LockModel, states: &[locklab_model::state::State]) -> Vec<Action> {
    let mut out = Vec::new();
    stateright::Model::actions(model, states.last().unwrap(), &mut out);
    out
}

/// Real Redis's `WAIT 1 T` blocks until a replica has acknowledged the writes so far, or
/// until T ms pass, and answers how many did. With `timing.wait_timeout` the model's
/// WAIT does the same in ticks: delivered while the replica lags, it blocks (no reply, no
/// leg the clock waits for); the replica catching up within the timeout answers it 1 —
/// also in the tick its timeout ends in, which began part way through the tick the WAIT
/// was delivered in — and otherwise the tick that ends the timeout answers it 0.
#[test]
fn a_blocked_wait_answers_when_a_replica_catches_up_or_at_its_timeout() {
    use locklab::Reply;
    use Action::*;
    let sc = waiting_client(1);
    let model = LockModel::new(&sc);
    let sent = [Acquire(0), Deliver(0, 0), Receive(0, 0), Deliver(0, 0)];
    let blocked = offered_path(&model, &sent).expect("the SET, its reply, the WAIT");
    let wait = blocked.last().unwrap().clients[0].core.flights[0]
        .clone()
        .expect("the WAIT is out");
    assert_eq!(wait.command.to_string(), "WAIT 1 1", "its timeout in ticks");
    assert!(wait.blocked() && wait.held.is_none(), "{wait:?}");
    let now = offered(&model, &blocked);
    assert!(!now.contains(&Receive(0, 0)) && !now.contains(&Deliver(0, 0)));
    assert!(now.contains(&Tick) && now.contains(&Replicate(1)));

    // The replica catches up a tick later, before the timeout ends: 1.
    let caught_up = [&sent[..], &[Tick, Replicate(1)]].concat();
    let states = offered_path(&model, &caught_up).expect("a tick, then the replica");
    let answered = states.last().unwrap().clients[0].core.flights[0].clone();
    assert_eq!(
        answered.as_ref().and_then(|f| f.held.clone()),
        Some(Reply::Int(1))
    );
    assert!(answered.is_some_and(|f| !f.blocked() && f.age == 0));
    let granted = offered_path(&model, &[&caught_up[..], &[Receive(0, 0)]].concat())
        .expect("the client reads the WAIT's answer");
    assert!(granted.last().unwrap().clients[0].holding());

    // No replica by the tick that ends the timeout: 0, and the acquire fails.
    let timed_out = [&sent[..], &[Tick, Tick]].concat();
    let states = offered_path(&model, &timed_out).expect("the clock does not wait for it");
    let answer = states.last().unwrap().clients[0].core.flights[0].clone();
    assert_eq!(answer.and_then(|f| f.held), Some(Reply::Int(0)));
    let late = offered_path(&model, &[&timed_out[..], &[Replicate(1)]].concat()).unwrap();
    assert_eq!(
        late.last().unwrap().clients[0].core.flights[0]
            .clone()
            .and_then(|f| f.held),
        Some(Reply::Int(0)),
        "a replica after the timeout changes nothing"
    );
    let refused = offered_path(&model, &[&timed_out[..], &[Receive(0, 0)]].concat()).unwrap();
    assert!(!refused.last().unwrap().clients[0].holding());

    // A replica in sync before the WAIT: it answers at its delivery, as without a
    // timeout.
    let in_sync = [
        Acquire(0),
        Deliver(0, 0),
        Replicate(1),
        Receive(0, 0),
        Deliver(0, 0),
    ];
    let states = offered_path(&model, &in_sync).unwrap();
    let f = states.last().unwrap().clients[0].core.flights[0]
        .clone()
        .unwrap();
    assert_eq!((f.blocked(), f.held), (false, Some(Reply::Int(1))));

    // Without a timeout the WAIT answers at its delivery: 0, the replica lagging.
    let model = LockModel::new(&waiting_client(0));
    let states = offered_path(&model, &sent).unwrap();
    let f = states.last().unwrap().clients[0].core.flights[0]
        .clone()
        .unwrap();
    assert_eq!((f.blocked(), f.held), (false, Some(Reply::Int(0))));
}

/// A WAIT that runs out of time answers fewer replicas than it waits for: real Redis
/// counts acknowledgements of the WAIT's writes, and one that came would have answered
/// it. So a replica whose copy matches the master only because the lock key expired on
/// both (it never had the key) does not count at the timeout.
#[test]
fn a_timed_out_wait_counts_no_replica_that_acknowledged_nothing() {
    use locklab::Reply;
    use Action::*;
    let model = LockModel::new(&waiting_client(8));
    let mut path = vec![Acquire(0), Deliver(0, 0), Receive(0, 0), Deliver(0, 0)];
    path.extend([Tick; 9]);
    let states = offered_path(&model, &path).expect("nine ticks: the clock waits for nothing");
    let last = states.last().unwrap();
    assert!(
        last.nodes.iter().all(|n| n.data.entry("lock").is_none()),
        "expired"
    );
    assert_eq!(last.nodes[0].data, last.nodes[1].data, "the copies match");
    let answer = last.clients[0].core.flights[0].clone().and_then(|f| f.held);
    assert_eq!(answer, Some(Reply::Int(0)));
    assert!(states[states.len() - 2].clients[0].core.flights[0]
        .as_ref()
        .is_some_and(|f| f.blocked()));
}

/// A blocked WAIT goes as any request goes: a crash of its client drops it, and a node
/// that restarts or dies (a failover) drops the connection it blocks on, so that only its
/// client's timeout answers it, within the step bound.
#[test]
fn a_blocked_wait_goes_with_its_connection() {
    use Action::*;
    let extra = "wait_timeout = 3\n[topology]\nmasters = 1\nreplicas = 1\n\
                 [faults]\ncrashes = 1\nrestarts = 1\nfailovers = 1";
    let sc = parse(
        &text("lua-release", 7, 1, 12, extra)
            .replace("count = 2", "count = 1")
            .replace("design = ", "wait_replicas = 1\ndesign = "),
    );
    let model = LockModel::new(&sc);
    let sent = [Acquire(0), Deliver(0, 0), Receive(0, 0), Deliver(0, 0)];
    let crashed = offered_path(&model, &[&sent[..], &[Crash(0)]].concat()).unwrap();
    assert!(crashed.last().unwrap().clients[0].core.flights[0].is_none());
    for fault in [Restart(0), Failover(0, 1)] {
        let states = offered_path(&model, &[&sent[..], &[fault]].concat()).unwrap();
        let f = states.last().unwrap().clients[0].core.flights[0]
            .clone()
            .unwrap();
        assert_eq!(f.wait, locklab_model::state::Flight::LOST, "{fault:?}");
        let now = offered(&model, &states);
        assert!(now.contains(&Timeout(0, 0)), "{fault:?}: {now:?}");
        assert!(!now.contains(&Receive(0, 0)), "{fault:?}");
        let aged = offered_path(&model, &[&sent[..], &[fault, Tick]].concat()).unwrap();
        assert!(
            !offered(&model, &aged).contains(&Tick),
            "{fault:?}: the overdue timeout holds the clock"
        );
    }
}

/// A Redis that restarts is a new process with new connections: a request its client
/// sent to the old one and it had not read yet is never executed (the new process
/// never reads it), and the client learns nothing until its timeout, within the step
/// bound. The restarted node's empty data does not take it: a `SET NX PX` that would
/// now succeed there is not run. A crashed client's lost request just goes.
#[test]
fn a_request_on_its_way_to_a_node_that_restarts_is_lost() {
    use Action::*;
    let sc = parse(&text(
        "lua-release",
        7,
        1,
        12,
        "[faults]\ncrashes = 1\nrestarts = 1",
    ));
    let model = LockModel::new(&sc);
    let lost = offered_path(&model, &[Acquire(0), Restart(0)]).unwrap();
    let f = lost.last().unwrap().clients[0].core.flights[0]
        .clone()
        .expect("the request stays, for its client's timeout");
    assert_eq!(f.wait, locklab_model::state::Flight::LOST);
    let now = offered(&model, &lost);
    assert!(!now.contains(&Deliver(0, 0)), "{now:?}");
    assert!(now.contains(&Timeout(0, 0)), "{now:?}");
    let aged = offered_path(&model, &[Acquire(0), Restart(0), Tick]).unwrap();
    assert!(
        !offered(&model, &aged).contains(&Tick),
        "the overdue timeout holds the clock"
    );
    let timed_out = offered_path(&model, &[Acquire(0), Restart(0), Timeout(0, 0)]).unwrap();
    let after = timed_out.last().unwrap();
    assert!(after.clients[0].core.flights[0].is_none());
    assert!(
        after.clients[0].core.strays.is_empty(),
        "nothing stays on the wire"
    );
    assert!(after.nodes[0].data.entries.is_empty(), "the SET never ran");
    // A request sent after the restart reaches the new process.
    let again = offered_path(&model, &[Restart(0), Acquire(0), Deliver(0, 0)]).unwrap();
    assert!(!again.last().unwrap().nodes[0].data.entries.is_empty());
    // A crashed client's request, once its node restarts, is gone.
    let crashed = offered_path(&model, &[Acquire(0), Crash(0), Restart(0)]).unwrap();
    assert!(crashed.last().unwrap().clients[0].core.flights[0].is_none());
    // A reply already on its way back is not taken back.
    let replied = offered_path(&model, &[Acquire(0), Deliver(0, 0), Restart(0)]).unwrap();
    assert!(offered(&model, &replied).contains(&Receive(0, 0)));
}

/// lua-release with `WAIT 1`, one replica, a 7-tick lease, `work = 1` and
/// `max_step_delay = 1`, no faults. From the world first: real Redis's `WAIT 1 100` at
/// 100 ms ticks, sent late in a tick, is answered by a replica that acknowledges 99 ms
/// later, in the next tick; the grant then comes a tick after a WAIT answered at once,
/// and the lease that covered the slowest critical section by a tick (with a 6-tick
/// lease step delays alone break it) no longer does: a second client takes the expired
/// key while the first has not written. With `wait_timeout = 0` (the WAIT answers at its
/// delivery) it holds; with a one-tick timeout mutual exclusion breaks, by a WAIT that
/// blocked and a replica that answered it a tick later; a tick more of lease covers that
/// tick again.
#[test]
fn a_wait_that_blocks_a_tick_eats_into_the_lease() {
    let verdict = |ttl: u32, timeout: u32| {
        let extra = format!("wait_timeout = {timeout}\n[topology]\nmasters = 1\nreplicas = 1");
        let sc = parse(
            &text("lua-release", ttl, 1, 16, &extra)
                .replace("design = ", "wait_replicas = 1\ndesign = "),
        );
        let r = check(&sc);
        assert!(r.purchased, "ttl {ttl}, wait_timeout {timeout}");
        (sc, r)
    };
    let (_, calm) = verdict(7, 0);
    assert!(calm.counterexample(Property::MutualExclusion).is_none());
    let (sc, blocking) = verdict(7, 1);
    let path = blocking
        .counterexample(Property::MutualExclusion)
        .expect("a WAIT answered a tick late breaks the 7-tick lease");
    // The break needs the WAIT to block and a replica to answer it a tick later.
    let model = LockModel::new(&sc);
    let trace = locklab_model::trace::build(&model, Property::MutualExclusion, path);
    assert_eq!(trace.steps.len(), path.len());
    assert!(trace.steps.iter().any(|s| s.blocks));
    let answer = trace
        .steps
        .iter()
        .position(|s| s.waits_answered.iter().any(|w| w.reply == "(integer) 1"))
        .expect("a replica's catch-up answers the blocked WAIT");
    assert!(matches!(trace.actions[answer], Action::Replicate(_)));
    let delivered = trace.steps.iter().position(|s| s.blocks).unwrap();
    assert_eq!(
        trace.steps[answer].after.clock,
        trace.steps[delivered].after.clock + 1,
        "answered in the tick after its delivery"
    );
    let told = trace.narrate();
    assert!(told.contains("WAIT 1 1 -> blocks"), "{told}");
    assert!(told.contains("answers -> (integer) 1"), "{told}");
    let (_, longer) = verdict(8, 1);
    assert!(longer.counterexample(Property::MutualExclusion).is_none());
}
