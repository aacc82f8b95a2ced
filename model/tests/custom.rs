//! Custom locks (`design = "custom"`) in the model: a custom lock whose steps are the
//! built-in designs' own commands and Lua texts must explore exactly the states of that
//! design, with the same verdicts and counterexample lengths. The built-in designs send
//! typed commands (`SET NX PX` as `Command::SetNxPx`) and their own scripts; the custom
//! lock sends its SET by name (model/src/call.rs) and its scripts as scenario text, and
//! its replies go through the custom machine's success replies: agreement on whole
//! searches compares the two paths on every reachable input.

use locklab::Script;
use locklab_model::model::LockModel;
use locklab_model::scenario::{Property, Scenario};
use locklab_model::search::{search, SearchOptions, SearchResult};

/// `[lock]` with the built-in scripts' texts; `renew` for the watchdog.
fn lock_table(renew: bool) -> String {
    let mut t = format!(
        "[lock]\nacquire = {{ command = [\"SET\", \"{{key}}\", \"{{token}}\", \"NX\", \"PX\", \"{{ttl}}\"], granted = \"OK\" }}\n\
         release = {{ script = {:?}, keys = [\"{{key}}\"], args = [\"{{token}}\"], released = 1 }}\n",
        Script::CompareAndDelete.lua()
    );
    if renew {
        t.push_str(&format!(
            "renew = {{ script = {:?}, keys = [\"{{key}}\"], args = [\"{{token}}\", \"{{ttl}}\"], renewed = 1 }}\n",
            Script::CompareAndPexpire.lua()
        ));
    }
    t
}

fn scenario(design: &str, body: &str) -> Scenario {
    let text = format!(
        "name = \"s\"\ndesign = \"{design}\"\n{body}\n[expect]\nmutual_exclusion = \"holds\"\n\
         owner_only_release = \"holds\"\nno_orphaned_lock = \"holds\"\nresource_safety = \"holds\"\n"
    );
    Scenario::parse(&text, "s.toml").unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Without symmetry reduction: which of two symmetric states stands for both depends
/// on a hash of the state, commands included, so only the plain search gives the same
/// state counts for different command values. Tokens keep their names: a custom lock's
/// always do (its scripts may read a token's text), so the built-in design's must too
/// for the counts to compare.
fn check(sc: &Scenario) -> SearchResult {
    let opts = SearchOptions {
        threads: 1,
        symmetry: false,
        token_names: false,
        ..SearchOptions::default()
    };
    search(&LockModel::new(sc), &opts, |_| {})
}

/// What must agree: state counts, and per property the counterexample length.
fn summary(r: &SearchResult) -> (u64, u64, Vec<(Property, Option<usize>)>) {
    let verdicts = Property::ALL
        .iter()
        .map(|&p| (p, r.counterexample(p).map(<[_]>::len)))
        .collect();
    (r.states, r.unique_states, verdicts)
}

const BODIES: &[&str] = &[
    // A slow holder: the lease runs out under it.
    "[clients]\ncount = 2\n[timing]\nttl = 3\nwork = 1\nmax_step_delay = 1\nhorizon = 10\n",
    // A pause and a lost reply.
    "[clients]\ncount = 2\n[timing]\nttl = 3\nwork = 2\nmax_step_delay = 1\nhorizon = 7\n[faults]\npauses = 1\nlost_replies = 1\n",
    // A failover to a replica that missed the lock.
    "[topology]\nreplicas = 1\n[clients]\ncount = 2\n[timing]\nttl = 3\nwork = 1\nmax_step_delay = 1\nhorizon = 6\n[faults]\nfailovers = 1\n",
];

#[test]
fn a_custom_lock_with_lua_release_texts_explores_what_lua_release_explores() {
    for body in BODIES {
        let builtin = check(&scenario("lua-release", body));
        let custom = check(&scenario("custom", &format!("{}{body}", lock_table(false))));
        assert_eq!(summary(&custom), summary(&builtin), "{body}");
        assert!(custom.purchased, "{body}");
    }
}

#[test]
fn a_custom_lock_with_watchdog_texts_explores_what_watchdog_explores() {
    for body in [
        // Renewal keeps a long critical section alive.
        "[clients]\ncount = 2\n[timing]\nttl = 3\nwork = 4\nmax_step_delay = 1\nhorizon = 8\n",
        // A pause stops the watchdog too.
        "[clients]\ncount = 2\n[timing]\nttl = 3\nwork = 4\nmax_step_delay = 1\nhorizon = 7\n[faults]\npauses = 1\n",
    ] {
        let builtin = check(&scenario("watchdog", body));
        let custom = check(&scenario("custom", &format!("{}{body}", lock_table(true))));
        assert_eq!(summary(&custom), summary(&builtin), "{body}");
    }
}

/// The model holds no lock logic of its own: the one-line change from the
/// compare-and-delete to a plain `DEL` in the release script flips owner_only_release.
#[test]
fn a_release_script_that_deletes_any_holder_breaks_owner_only_release() {
    let body = BODIES[0];
    let safe = check(&scenario("custom", &format!("{}{body}", lock_table(false))));
    assert!(safe.counterexample(Property::OwnerOnlyRelease).is_none());
    let broken_lock = lock_table(false).replace(
        &format!("{:?}", Script::CompareAndDelete.lua()),
        "\"return redis.call('del', KEYS[1])\"",
    );
    let sc = scenario("custom", &format!("{broken_lock}{body}"));
    let broken = check(&sc);
    let path = broken
        .counterexample(Property::OwnerOnlyRelease)
        .expect("owner_only_release broken");
    // The trace carries the custom lock with the keys of its file, so that it replays
    // without the file (`locklab replay TRACE.json`).
    let trace = locklab_model::trace::build(&LockModel::new(&sc), Property::OwnerOnlyRelease, path);
    let again = trace.scenario().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.lock, sc.lock);
    // The step that runs the release shows what the script did inside Redis: the DEL
    // of another client's entry, with its reply.
    let last = trace.steps.last().expect("a step");
    assert!(
        last.command
            .as_deref()
            .is_some_and(|c| c.starts_with("EVALSHA")),
        "{last:?}"
    );
    assert_eq!(last.script_calls, ["del lock -> (integer) 1"]);
    assert!(trace.narrate().contains("runs del lock -> (integer) 1"));
    // Steps that run no script show none.
    assert!(
        trace
            .steps
            .iter()
            .filter(|s| s.script_calls.is_empty())
            .count()
            > 1
    );
}
