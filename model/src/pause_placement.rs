//! Pause placement: a stop-the-world pause begins just before a tick and ends just after
//! one.
//!
//! A pause matters only through the ticks it spans. Between two ticks a paused client is
//! a client that takes no step, which a running client may also do; only at a tick does
//! it differ (its work, timers, waits and replies do not age, and its overdue steps do
//! not hold the clock back). Yet the model offers `Pause(c)` and `Resume(c)` at every
//! state, so each pause is searched at every point of the ticks it begins and ends in,
//! with every order of the other steps on either side of it. With five masters those
//! orders are many: this reduction keeps one point of each.
//!
//! - **`Pause(c)` only just before a tick**: it is offered only where the tick is then
//!   offered (with every client paused, when the budget allows more pauses: pausing
//!   only ever lets the tick come), and after it nothing but the tick or another pause
//!   is ([`State::pausing`]).
//! - **`Resume(c)` only just after a tick**: it is offered only while no other step has
//!   been taken since the last tick ([`State::stepped`]). A reply a Redlock fan-out only
//!   records and a Redlock request's delivery ([`crate::partial_order`]) do not count,
//!   so that taking them first, alone, keeps every resume on offer (neither reads
//!   whether a client is paused).
//!
//! **Why every verdict and every shortest counterexample's length is kept.** Take any
//! run of the model that ends in a state breaking a property. A `Pause(c)` commutes with
//! every later step of its tick: with `c` paused those are steps of other clients and
//! nodes, faults, and deliveries of `c`'s requests (which reach their nodes whether or
//! not `c` runs); none reads whether `c` is paused. So it moves to the end of its tick,
//! just before the tick, where the tick was offered (in the run, with `c` and any other
//! client paused there). If no tick follows in the run, or `c` crashes in the same tick,
//! or resumes in it, the pause changed nothing a property reads and is dropped (with
//! its resume). Likewise a `Resume(c)`
//! commutes with every earlier step of its tick (`c` took none but deliveries, and the
//! tick is not among them) and moves to just after the tick. The moved run is a run of
//! the model, no longer than the first, and ends in the same state, except for pauses
//! dropped, which no property reads. It is a run the reduced search takes. And the
//! reduced search takes only steps of the model, so what it finds is a run of the
//! model (re-checked, [`crate::recheck`]).
//!
//! Coverage (a pause during a hold) is kept too: every hold spans a tick (`work` is at
//! least one), and the pause just before that tick strikes during the hold.
//! `model/tests/reductions.rs` compares verdicts, lengths and coverage with the search
//! without this reduction on every scenario with a pause.

use crate::model::{Action, FaultKind, LockModel};
use crate::state::State;

impl LockModel {
    /// Whether the reduction can act on this model: it has pauses to place.
    pub fn pause_placement_applies(&self) -> bool {
        self.scenario.faults[FaultKind::Pause] > 0
    }

    /// Narrow the steps `out` offered from `s` to those whose pauses begin just before a
    /// tick and end just after one (see the module documentation).
    pub fn place_pauses(&self, s: &State, out: &mut Vec<Action>) {
        out.retain(|&a| match a {
            Action::Tick => true,
            Action::Pause(c) => {
                let more = u32::from(s.spent[FaultKind::Pause]) + 1
                    < self.scenario.faults[FaultKind::Pause];
                let mut paused = s.clone();
                for (i, cl) in paused.clients.iter_mut().enumerate() {
                    cl.paused |= more || i == usize::from(c);
                }
                self.tick_enabled(&paused)
            }
            Action::Resume(_) => !s.pausing && !s.stepped,
            _ => !s.pausing,
        });
    }

    /// Record in `next`, reached from `s` by `a`, where it stands between two ticks.
    pub fn mark_pause_points(&self, s: &State, a: Action, next: &mut State) {
        next.pausing = matches!(a, Action::Pause(_));
        let stepped = match a {
            Action::Tick => false,
            Action::Resume(_) => s.stepped,
            // A delivery reads nothing of a client's pause, so that the partial order
            // may take one alone and keep every resume on offer.
            Action::Deliver(..) if self.partial_order_applies() => s.stepped,
            Action::Receive(c, m) if self.partial_order_applies() => {
                s.stepped
                    || !s.clients[usize::from(c)]
                        .core
                        .machine
                        .records_only(usize::from(m))
            }
            _ => true,
        };
        // Read only while a client is paused: forgotten otherwise, so that it splits no
        // state.
        next.stepped = stepped && next.clients.iter().any(|c| c.paused);
    }
}
