//! Time without a horizon: a scenario that sets no `timing.horizon` is checked for all
//! time. Before a state is stored, every time it keeps is moved so that its clock reads
//! 0 ([`LockModel::rebase`]), and a time too far in the past to matter is held at the
//! latest value that answers every later comparison the same way. Two states that differ
//! only by when they happen are then one state; with attempts bounded, every counter
//! capped and every time within a bounded distance of the clock, the states are finitely
//! many, the search ends, and a "holds" is a proof for every run however long.
//!
//! The times a state keeps:
//! - the clock, `State::now`;
//! - each entry's expiry, on its node's clock (`now` + the node's offset);
//! - the times a client's lock machine keeps (the start of an operation, a lease end), on
//!   its client's clock (`now` + the client's offset)
//!   ([`locklab::LockMachine::shift_times`]).
//!
//! Everything else is a duration already: offsets, the ages of legs, waits, ticks since a
//! renewal or of work, and the times inside commands and replies (`PX`, `PTTL`).
//!
//! Why moving them changes nothing (the exactness argument, checked by the tests below
//! on the states of every scenario that can run without a horizon):
//! 1. **Shifting.** A state is read only through its clocks: a node compares an expiry
//!    with its clock and answers `PTTL` as their difference; a machine compares a kept
//!    time plus a constant (the ttl, less the drift allowance) with the clock it is
//!    given, or reports their difference. Moving every time and the clock by the same
//!    amount leaves every such comparison and difference as it was. Nothing reads the
//!    clock's absolute value, with two exceptions that are refused without a horizon
//!    ([`needs_horizon`]): `getset-timestamp` writes a client's clock into the lock's
//!    value (a time inside Redis data, commands and replies), and a custom lock that
//!    calls `TIME` or sets an absolute expiry reads the node's clock as a date.
//! 2. **Holding the past.** Clocks never run backwards: `now` only grows, and offsets
//!    only grow (clock jumps and drift move clocks forward; a restart keeps its node's
//!    clock). So an expiry at or before `now` is expired on every node from now on
//!    (each node's clock is at least `now`), and every reader treats the entry as gone
//!    (`Exec::new` drops it first); the orphaned-lock check asks only whether it has an
//!    expiry. It is held at `now`. A machine time more than a ttl before `now` is read
//!    only as "this lease has ended" (a start plus the ttl, less the drift allowance, at
//!    or before any later clock of its client; a lease end before it): it is held at
//!    `now − ttl − 1`, which answers the same. Lease ends kept only to be reported are
//!    held too: no step reads them ([`crate::forget`] forgets them altogether).
//! 3. **No end.** Without a horizon the tick is offered whenever no step or leg is
//!    overdue (`LockModel::tick_enabled`), as before the horizon.
//!
//! Counterexamples are replayed from the initial state without rebasing (as forgetting
//! is undone), so a trace shows every time as the run has it, counted from tick 0.

use locklab::DesignId;

use crate::model::LockModel;
use crate::scenario::Scenario;
use crate::state::State;

/// Why `scenario`'s lock needs a horizon: it puts an absolute time into Redis, whose
/// value a relative clock would not keep. `None` when its time can be made relative.
pub fn needs_horizon(scenario: &Scenario) -> Option<String> {
    absolute_time(scenario.design, scenario.lock.as_ref().map(|l| &l.lock))
}

/// [`needs_horizon`] on a design and its custom lock, for the scenario reader.
pub(crate) fn absolute_time(
    design: DesignId,
    lock: Option<&locklab::design::CustomLock>,
) -> Option<String> {
    if design == DesignId::GetsetTimestamp {
        return Some(
            "getset-timestamp writes its client's clock into the lock's value, an absolute \
             time"
                .to_string(),
        );
    }
    for (name, step) in lock?.steps() {
        let found = match &step.action {
            locklab::design::custom::Action::Command(words) => words
                .iter()
                .find_map(|w| ABSOLUTE.iter().find(|a| a.eq_ignore_ascii_case(w)).copied()),
            locklab::design::custom::Action::Script { script, .. } => {
                crate::lua::literal_word(&script.text, &ABSOLUTE).map(|(w, _)| w)
            }
        };
        if let Some(word) = found {
            return Some(format!(
                "the lock's `{name}` step names `{word}`, which reads or writes the node's \
                 clock as a date"
            ));
        }
    }
    None
}

/// The command names and options that read or write a node's clock as a date.
const ABSOLUTE: [&str; 5] = ["TIME", "EXPIREAT", "PEXPIREAT", "EXAT", "PXAT"];

impl LockModel {
    /// Whether the scenario's time is relative (it has no horizon): states are rebased.
    pub fn relative_time(&self) -> bool {
        self.scenario.timing.horizon.is_none()
    }

    /// Move every time `s` keeps so that its clock reads 0, holding times too far in the
    /// past to matter (the module's argument). Nothing to do with a horizon.
    pub fn rebase(&self, s: &mut State) {
        if !self.relative_time() {
            return;
        }
        let by = -i64::from(s.now);
        s.now = 0;
        for node in &mut s.nodes {
            for (_, e) in &mut node.data.entries {
                if let Some(at) = &mut e.expires_at {
                    *at = (*at + by).max(0);
                }
            }
        }
        let floor = -i64::from(self.scenario.timing.ttl) - 1;
        for c in &mut s.clients {
            c.core.machine.shift_times(by, floor);
        }
    }
}

#[cfg(test)]
mod tests;
