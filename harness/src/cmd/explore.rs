//! `locklab explore SCENARIO [--port P]`: the stateright Explorer on 127.0.0.1.
//!
//! The Explorer prints actions with the model's `format_action` and states with their
//! `Debug` form. The model's state `Debug` is a field dump, so the Explorer runs a thin
//! wrapper model whose state prints as a person would describe it: the clock, what each
//! client does, the lock key on each node, requests in flight, the stock, faults spent;
//! and the path walked so far is drawn as the report's sequence diagram.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::net::TcpListener;
use std::sync::Arc;

use locklab_model::ids::{ClientId, NodeId};
use locklab_model::model::{Action, LockModel};
use locklab_model::scenario::Property;
use locklab_model::state::{Flight, State};
use locklab_model::trace;
use stateright::{Model, Path, Property as SrProperty};

use crate::cli::ExploreArgs;
use crate::scenario_args::resolve;
use crate::sequence::{self, key_text, svg};
use crate::Failure;

/// The scenario's model with human-readable states.
pub struct Explorable {
    model: Arc<LockModel>,
}

/// A model state that prints for people; equality and hash are the state's.
#[derive(Clone)]
pub struct Shown {
    state: State,
    model: Arc<LockModel>,
}

impl PartialEq for Shown {
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state
    }
}

impl Eq for Shown {}

impl Hash for Shown {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.state.hash(h)
    }
}

impl fmt::Debug for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (m, s) = (&*self.model, &self.state);
        let snap = trace::snapshot(m, s);
        writeln!(f, "clock t={}   stock {}", snap.clock, snap.stock)?;
        for (i, what) in snap.clients.iter().enumerate() {
            let clock = snap.client_clocks[i];
            let skew = if clock != snap.clock {
                format!("   (its clock reads {clock})")
            } else {
                String::new()
            };
            writeln!(f, "{}: {what}{skew}", ClientId::at(i))?;
        }
        for (n, key) in snap.keys.iter().enumerate() {
            let name = NodeId::at(n);
            let text = if snap.down.contains(&name) {
                "down".to_string()
            } else {
                format!("lock key {}", key_text(key.as_ref()))
            };
            let clock = snap.node_clocks[n];
            let skew = if clock != snap.clock {
                format!("   (its clock reads {clock})")
            } else {
                String::new()
            };
            writeln!(f, "{name}: {text}{skew}")?;
        }
        for (i, c) in s.clients.iter().enumerate() {
            for (slot, flight) in c.core.flights.iter().enumerate() {
                let Some(flight) = flight else { continue };
                let held = match &flight.held {
                    Some(reply) => format!(", reply {reply} held"),
                    None if flight.wait == Flight::LOST => ", lost with its connection".to_string(),
                    None if flight.blocked() => {
                        format!(", blocked ({} ticks to its answer at most)", flight.wait)
                    }
                    None => String::new(),
                };
                writeln!(
                    f,
                    "in flight: client{} -> master{} (node{}): {}{held}",
                    i + 1,
                    slot + 1,
                    flight.node + 1,
                    flight.command
                )?;
            }
        }
        if snap.rejected > 0 {
            writeln!(f, "stale accesses rejected by the store: {}", snap.rejected)?;
        }
        let spent: Vec<String> = s
            .spent
            .iter()
            .map(|(kind, n)| format!("{} {n}", kind.key()))
            .collect();
        write!(f, "faults spent: {}", spent.join(", "))
    }
}

impl Explorable {
    fn shown(&self, state: State) -> Shown {
        Shown {
            state,
            model: Arc::clone(&self.model),
        }
    }
}

fn holds(m: &Explorable, s: &Shown, p: Property) -> bool {
    m.model.holds(p, &s.state)
}

impl Model for Explorable {
    type State = Shown;
    type Action = Action;

    fn init_states(&self) -> Vec<Shown> {
        self.model
            .init_states()
            .into_iter()
            .map(|s| self.shown(s))
            .collect()
    }

    fn actions(&self, s: &Shown, out: &mut Vec<Action>) {
        self.model.actions(&s.state, out)
    }

    fn next_state(&self, s: &Shown, action: Action) -> Option<Shown> {
        self.model
            .next_state(&s.state, action)
            .map(|n| self.shown(n))
    }

    fn properties(&self) -> Vec<SrProperty<Self>> {
        vec![
            SrProperty::always("mutual_exclusion", |m, s| {
                holds(m, s, Property::MutualExclusion)
            }),
            SrProperty::always("owner_only_release", |m, s| {
                holds(m, s, Property::OwnerOnlyRelease)
            }),
            SrProperty::always("no_orphaned_lock", |m, s| {
                holds(m, s, Property::NoOrphanedLock)
            }),
            SrProperty::always("resource_safety", |m, s| {
                holds(m, s, Property::ResourceSafety)
            }),
            SrProperty::sometimes("purchase_completed", |_, s: &Shown| {
                LockModel::purchased(&s.state)
            }),
        ]
    }

    fn format_action(&self, action: &Action) -> String {
        action.to_string()
    }

    /// The request a delivery or timeout concerns, then the state after the step.
    fn format_step(&self, last: &Shown, action: Action) -> Option<String> {
        let next = self.next_state(last, action)?;
        use Action::*;
        let request = match action {
            Deliver(c, m) | Receive(c, m) | Timeout(c, m) | LoseReply(c, m) => last
                .state
                .clients
                .get(usize::from(c))
                .and_then(|c| c.core.flights.get(usize::from(m))?.as_ref())
                .map(|f| format!("request: {}\n", f.command)),
            DeliverLate(c, k) => last
                .state
                .clients
                .get(usize::from(c))
                .and_then(|c| c.core.strays.get(usize::from(k)))
                .map(|st| format!("request given up on: {}\n", st.flight.command)),
            Tick | Acquire(_) | Renew(_) | Read(_) | Write(_) | Release(_) | Reenter(_)
            | Replicate(_) | Pause(_) | Resume(_) | Crash(_) | Failover(..) | Restart(_)
            | Partition(..) | Heal(..) | NodeClockJump(_) | ClientClockJump(_) | SplitBrain(..)
            | Redirect(..) | NodeDrift(_) => None,
        };
        Some(format!("{}{next:?}", request.unwrap_or_default()))
    }

    /// The path so far as the report's sequence diagram (bands mark broken properties).
    fn as_svg(&self, path: Path<Shown, Action>) -> Option<String> {
        let actions = path.into_actions();
        let t = trace::build(&self.model, Property::MutualExclusion, &actions);
        Some(svg::render(&sequence::build(&t), "explorer"))
    }

    fn within_boundary(&self, s: &Shown) -> bool {
        self.model.within_boundary(&s.state)
    }
}

/// `locklab explore`: serves until interrupted.
pub fn run(args: &ExploreArgs) -> Result<i32, Failure> {
    let scenario = resolve(&args.scenario)?;
    let address = ("127.0.0.1", args.port);
    // The Explorer's server panics on a busy port; say so plainly instead.
    drop(TcpListener::bind(address).map_err(|e| {
        Failure::BadInput(format!(
            "127.0.0.1:{}: cannot listen ({e}); choose another --port",
            args.port
        ))
    })?);
    let model = Explorable {
        model: Arc::new(LockModel::new(&scenario)),
    };
    eprintln!(
        "Explorer for {} on http://127.0.0.1:{}/ (Ctrl-C to stop)",
        scenario.name, args.port
    );
    // Serves until the process is stopped.
    let _checker = model.checker().serve(address);
    Ok(0)
}
