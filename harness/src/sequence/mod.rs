//! A counterexample as a sequence diagram: clients and Redis nodes are lanes, each trace
//! step is a row (an arrow for a command or a reply, a mark for a fault or a local step,
//! a rule for a clock tick), with the clocks and the lock key on every node after it.
//!
//! Built from a [`Trace`] alone (the JSON a `check` writes), so a diagram can be drawn
//! from a trace file without the model; [`text`] draws it for a terminal, [`svg`] for
//! the report.

pub mod svg;
pub mod text;

use std::collections::HashMap;

use locklab_model::ids::{Actor, ClientId, MasterId, NodeId};
use locklab_model::model::Action;
use locklab_model::scenario::Property;
use locklab_model::trace::{KeyState, Snapshot, Trace, TraceStep};
use serde_json::Value as Json;

/// A participant: a client process or a Redis node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    /// `client1`, `node2`.
    pub name: String,
    /// A node's role at the start (`master1`, `replica of master1`); empty for clients.
    pub role: String,
}

/// What a row shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A client sends commands to nodes (several at once for Redlock).
    Request { from: usize, to: Vec<usize> },
    /// A node executes a request and answers; `held` when the client is paused and the
    /// reply waits in its buffer.
    Reply { from: usize, to: usize, held: bool },
    /// A held reply finally reaches the resumed client.
    HeldReply { from: usize, to: usize },
    /// A node copies its master's data.
    Replicate { from: usize, to: usize },
    /// Something a client does on its own: reads or writes the stock, a timeout.
    Local { at: usize },
    /// A fault from the budget, on the lanes it hits.
    Fault { at: Vec<usize> },
    /// The end of a fault (a resume, a healed link).
    Recover { at: Vec<usize> },
    /// The global clock advances.
    Tick,
}

/// One row of the diagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The trace step (a follow-up request shares its reply's step).
    pub step: usize,
    /// The global clock after the step.
    pub clock: i64,
    pub event: Event,
    /// What happened, in words (`SET lock t1 NX PX 4`, `OK`, `paused (stop-the-world)`).
    pub label: String,
    /// After the step: each node's lock key (`t1 client1 ttl 3`, `-`, `down`).
    pub keys: Vec<String>,
    /// After the step: the clocks that differ from the global clock (`client2 8`).
    pub skew: Vec<String>,
    /// Properties that broke at this step.
    pub broken: Vec<String>,
    /// When a property broke: what each client was doing.
    pub clients: Vec<String>,
    /// The client lanes paused (stop-the-world) after the step, until a later row
    /// resumes them: drawn on their lifelines.
    pub paused: Vec<usize>,
}

/// The diagram of one counterexample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sequence {
    /// `lua-release-pause`.
    pub scenario: String,
    /// The property the trace breaks.
    pub property: Property,
    /// Clients first, then nodes.
    pub lanes: Vec<Lane>,
    pub clients: usize,
    /// The lock key on each node and the skewed clocks before the first step.
    pub initial_keys: Vec<String>,
    pub rows: Vec<Row>,
}

impl Sequence {
    /// The lane of a node.
    pub fn node_lane(&self, node: usize) -> usize {
        self.clients + node
    }

    pub fn nodes(&self) -> usize {
        self.lanes.len() - self.clients
    }
}

/// The node that executed a delivery (its step's actor).
fn node_of(actor: Actor) -> usize {
    match actor {
        Actor::Node(n) => n.index(),
        Actor::Client(_) | Actor::Clock | Actor::Nemesis => 0,
    }
}

/// The lock key as a short cell: `t1 client1 ttl 3`, `{t1:1 2} client1 no ttl`.
pub fn key_text(key: Option<&KeyState>) -> String {
    let Some(k) = key else {
        return "-".to_string();
    };
    let value = match &k.value {
        Json::String(s) => s.clone(),
        Json::Object(fields) => {
            let inner: Vec<String> = fields.iter().map(|(f, n)| format!("{f}:{n}")).collect();
            format!("{{{}}}", inner.join(" "))
        }
        other => other.to_string(),
    };
    let owner = k.owner.map_or_else(|| "?".to_string(), |o| o.to_string());
    let ttl = match k.ttl {
        Some(t) => format!("ttl {t}"),
        None => "no ttl".to_string(),
    };
    format!("{value} {owner} {ttl}")
}

fn keys_of(s: &Snapshot) -> Vec<String> {
    s.keys
        .iter()
        .enumerate()
        .map(|(n, k)| {
            if s.down.contains(&NodeId::at(n)) {
                "down".to_string()
            } else {
                key_text(k.as_ref())
            }
        })
        .collect()
}

fn skew_of(s: &Snapshot) -> Vec<String> {
    let clients = s
        .client_clocks
        .iter()
        .enumerate()
        .map(|(i, &c)| (ClientId::at(i).to_string(), c));
    let nodes = s
        .node_clocks
        .iter()
        .enumerate()
        .map(|(i, &c)| (NodeId::at(i).to_string(), c));
    clients
        .chain(nodes)
        .filter(|(_, c)| *c != s.clock)
        .map(|(name, c)| format!("{name} {c}"))
        .collect()
}

/// The clients a snapshot says are paused (`"critical section (next: write), paused"`).
fn paused_of(s: &Snapshot) -> Vec<usize> {
    s.clients
        .iter()
        .enumerate()
        .filter(|(_, what)| what.ends_with(", paused"))
        .map(|(c, _)| c)
        .collect()
}

/// Builds the diagram of `trace`.
pub fn build(trace: &Trace) -> Sequence {
    let clients = trace.initial.client_clocks.len();
    let nodes = trace.initial.node_clocks.len();
    let topology = &trace.scenario.topology;
    let masters = usize::try_from(topology.masters).unwrap_or(usize::MAX);
    let replicas = usize::try_from(topology.replicas).unwrap_or(usize::MAX);
    // Nodes are masters first, then each master's replicas in turn.
    let master_of = |n: usize| (n >= masters && replicas > 0).then(|| (n - masters) / replicas);
    let mut lanes: Vec<Lane> = (0..clients)
        .map(|i| Lane {
            name: ClientId::at(i).to_string(),
            role: String::new(),
        })
        .collect();
    lanes.extend((0..nodes).map(|n| Lane {
        name: NodeId::at(n).to_string(),
        role: match master_of(n) {
            Some(m) => format!("replica of {}", MasterId::at(m)),
            None => MasterId::at(n).to_string(),
        },
    }));
    // Which node serves each master slot (changes on failover); and where each client's
    // request to a slot went.
    let mut serving: Vec<usize> = (0..masters).collect();
    let mut flights: HashMap<(usize, usize), usize> = HashMap::new();
    let mut rows = Vec::new();
    let mut last = &trace.initial;
    for (step, &action) in trace.steps.iter().zip(&trace.actions) {
        let row = |event: Event, label: String| Row {
            step: step.step,
            clock: step.after.clock,
            event,
            label,
            keys: keys_of(&step.after),
            skew: skew_of(&step.after),
            broken: Vec::new(),
            clients: Vec::new(),
            paused: paused_of(&step.after),
        };
        let mut out: Vec<Row> = Vec::new();
        let slot_node = |m: usize, serving: &[usize]| serving.get(m).copied().unwrap_or(m);
        let rejected = step.after.rejected > last.rejected;
        use Action::*;
        match action {
            Tick => out.push(row(Event::Tick, format!("t = {}", step.after.clock))),
            Deliver(c, _) => {
                let c = usize::from(c);
                let n = node_of(step.actor);
                let command = step.command.clone().unwrap_or_default();
                let reply = step.reply.clone().unwrap_or_else(|| "?".to_string());
                // The node executes the command; its reply travels on its own leg and
                // reaches the client at a later `Receive` step.
                if step.blocks {
                    // A WAIT short of replicas: no reply until a replica catches up or
                    // its timeout runs out (a later step's `waits_answered`).
                    out.push(row(
                        Event::Local { at: clients + n },
                        format!("{command} blocks: fewer replicas in sync than it waits for"),
                    ));
                } else {
                    let label = if step.held {
                        format!("{command} → {reply} (held: {} paused)", lanes[c].name)
                    } else {
                        format!("{command} → {reply} (reply in flight)")
                    };
                    out.push(row(
                        Event::Reply {
                            from: clients + n,
                            to: c,
                            held: true,
                        },
                        label,
                    ));
                }
                out.extend(follow_ups(step, clients, c, &mut flights, &row));
            }
            DeliverLate(c, _) => {
                let c = usize::from(c);
                let n = node_of(step.actor);
                let command = step.command.clone().unwrap_or_default();
                let reply = step.reply.clone().unwrap_or_else(|| "?".to_string());
                out.push(row(
                    Event::Request {
                        from: c,
                        to: vec![clients + n],
                    },
                    format!("{command} given up on, arrives late → {reply} (nobody reads it)"),
                ));
            }
            Receive(c, m) => {
                let (c, m) = (usize::from(c), usize::from(m));
                let n = flights
                    .get(&(c, m))
                    .copied()
                    .unwrap_or_else(|| slot_node(m, &serving));
                let reply = step.reply.clone().unwrap_or_else(|| "?".to_string());
                out.push(row(
                    Event::HeldReply {
                        from: clients + n,
                        to: c,
                    },
                    format!("reply {reply} arrives"),
                ));
                out.extend(follow_ups(step, clients, c, &mut flights, &row));
            }
            Timeout(c, _) => {
                let c = usize::from(c);
                let command = step.command.clone().unwrap_or_default();
                out.push(row(
                    Event::Local { at: c },
                    format!("{command}: no answer (timeout)"),
                ));
                out.extend(follow_ups(step, clients, c, &mut flights, &row));
            }
            LoseReply(c, m) => {
                let (c, m) = (usize::from(c), usize::from(m));
                let n = flights
                    .get(&(c, m))
                    .copied()
                    .unwrap_or_else(|| slot_node(m, &serving));
                let command = step.command.clone().unwrap_or_default();
                out.push(row(
                    Event::Fault {
                        at: vec![c, clients + n],
                    },
                    format!("FAULT reply to {command} lost: no answer (timeout)"),
                ));
                out.extend(follow_ups(step, clients, c, &mut flights, &row));
            }
            Read(c) => {
                let c = usize::from(c);
                let label = if rejected {
                    "read REJECTED: stale fencing token".to_string()
                } else {
                    format!("read stock = {}", step.after.stock)
                };
                out.push(row(Event::Local { at: c }, label));
                out.extend(follow_ups(step, clients, c, &mut flights, &row));
            }
            Write(c) => {
                let c = usize::from(c);
                let label = if rejected {
                    "write REJECTED: stale fencing token".to_string()
                } else if step.after.stock == last.stock {
                    format!("write stock {} (unchanged)", step.after.stock)
                } else {
                    format!("write stock {} → {}", last.stock, step.after.stock)
                };
                out.push(row(Event::Local { at: c }, label));
                out.extend(follow_ups(step, clients, c, &mut flights, &row));
            }
            Acquire(c) => out.push(sends(step, clients, c, "acquire", &mut flights, &row)),
            Release(c) => out.push(sends(step, clients, c, "release", &mut flights, &row)),
            Renew(c) => out.push(sends(
                step,
                clients,
                c,
                "watchdog renews",
                &mut flights,
                &row,
            )),
            Reenter(c) => out.push(sends(step, clients, c, "re-enter", &mut flights, &row)),
            Replicate(n) => {
                let n = usize::from(n);
                let from = master_of(n).map_or(n, |m| slot_node(m, &serving));
                out.push(row(
                    Event::Replicate {
                        from: clients + from,
                        to: clients + n,
                    },
                    "replicates".to_string(),
                ));
            }
            Resume(c) => out.push(row(
                Event::Recover {
                    at: vec![usize::from(c)],
                },
                "resumes".to_string(),
            )),
            Heal(c, m) => out.push(row(
                Event::Recover {
                    at: vec![
                        usize::from(c),
                        clients + slot_node(usize::from(m), &serving),
                    ],
                },
                format!("link to {} healed", MasterId::from(m)),
            )),
            Pause(c) => out.push(row(
                Event::Fault {
                    at: vec![usize::from(c)],
                },
                "FAULT paused (stop-the-world)".to_string(),
            )),
            Crash(c) => out.push(row(
                Event::Fault {
                    at: vec![usize::from(c)],
                },
                "FAULT crashes".to_string(),
            )),
            Failover(m, new) | SplitBrain(m, new, _) => {
                let (m, new) = (usize::from(m), usize::from(new));
                let old = slot_node(m, &serving);
                if let Some(s) = serving.get_mut(m) {
                    *s = new;
                }
                let fate = if matches!(action, Failover(..)) {
                    "dies"
                } else {
                    "split off, still serving its side"
                };
                out.push(row(
                    Event::Fault {
                        at: vec![clients + old, clients + new],
                    },
                    format!(
                        "FAULT {} ({}) {fate}, {} promoted",
                        NodeId::at(old),
                        MasterId::at(m),
                        NodeId::at(new)
                    ),
                ));
            }
            Restart(n) => out.push(row(
                Event::Fault {
                    at: vec![clients + usize::from(n)],
                },
                "FAULT restarts empty".to_string(),
            )),
            Partition(c, m) => out.push(row(
                Event::Fault {
                    at: vec![
                        usize::from(c),
                        clients + slot_node(usize::from(m), &serving),
                    ],
                },
                format!("FAULT link to {} cut", MasterId::from(m)),
            )),
            NodeClockJump(n) => {
                let n = usize::from(n);
                let jump = step.after.node_clocks.get(n).copied().unwrap_or(0)
                    - last.node_clocks.get(n).copied().unwrap_or(0);
                out.push(row(
                    Event::Fault {
                        at: vec![clients + n],
                    },
                    format!("FAULT clock jumps +{jump}"),
                ));
            }
            NodeDrift(n) => {
                let n = usize::from(n);
                out.push(row(
                    Event::Fault {
                        at: vec![clients + n],
                    },
                    "FAULT clock runs fast (+1 tick)".to_string(),
                ));
            }
            Redirect(c, m) => out.push(row(
                Event::Local { at: usize::from(c) },
                format!("learns the new {} from Sentinel", MasterId::from(m)),
            )),
            ClientClockJump(c) => {
                let c = usize::from(c);
                let jump = step.after.client_clocks.get(c).copied().unwrap_or(0)
                    - last.client_clocks.get(c).copied().unwrap_or(0);
                out.push(row(
                    Event::Fault { at: vec![c] },
                    format!("FAULT clock jumps +{jump}"),
                ));
            }
        }
        // A WAIT that blocked answers at this step (a replica caught up, or its timeout
        // ran out): its reply starts back.
        for w in &step.waits_answered {
            out.push(row(
                Event::Reply {
                    from: clients + w.node.index(),
                    to: w.client.index(),
                    held: true,
                },
                format!("{} answers → {} (reply in flight)", w.command, w.reply),
            ));
        }
        if let Some(r) = out.last_mut() {
            r.broken = step.broken.iter().map(|p| p.as_str().to_string()).collect();
            if !r.broken.is_empty() {
                r.clients = step
                    .after
                    .clients
                    .iter()
                    .enumerate()
                    .map(|(i, s)| format!("{}: {s}", ClientId::at(i)))
                    .collect();
            }
        }
        rows.extend(out);
        last = &step.after;
    }
    Sequence {
        scenario: trace.scenario.name.clone(),
        property: trace.property,
        lanes,
        clients,
        initial_keys: keys_of(&trace.initial),
        rows,
    }
}

/// The request row of a step that sends, recording where each request went.
fn request(
    step: &TraceStep,
    clients: usize,
    client: usize,
    flights: &mut HashMap<(usize, usize), usize>,
    row: &dyn Fn(Event, String) -> Row,
) -> Row {
    let mut to = Vec::new();
    for s in &step.sent {
        let n = s.node.index();
        flights.insert((client, s.master.index()), n);
        if !to.contains(&(clients + n)) {
            to.push(clients + n);
        }
    }
    let label = if step.sent.iter().all(|s| s.command == step.sent[0].command) {
        step.sent[0].command.clone()
    } else {
        step.sent
            .iter()
            .map(|s| format!("{}: {}", s.node, s.command))
            .collect::<Vec<_>>()
            .join("; ")
    };
    row(Event::Request { from: client, to }, label)
}

/// The row of a step that may send (acquire, release, renew, re-enter): the request,
/// labelled with what the client does, or a local mark when nothing was sent.
fn sends(
    step: &TraceStep,
    clients: usize,
    client: u8,
    what: &str,
    flights: &mut HashMap<(usize, usize), usize>,
    row: &dyn Fn(Event, String) -> Row,
) -> Row {
    let client = usize::from(client);
    if step.sent.is_empty() {
        return row(Event::Local { at: client }, what.to_string());
    }
    let mut r = request(step, clients, client, flights, row);
    r.label = format!("{what}: {}", step.command.clone().unwrap_or_default());
    r
}

/// The requests a reply (or a local step) triggers, as a second row of the same step.
fn follow_ups(
    step: &TraceStep,
    clients: usize,
    client: usize,
    flights: &mut HashMap<(usize, usize), usize>,
    row: &dyn Fn(Event, String) -> Row,
) -> Option<Row> {
    (!step.sent.is_empty()).then(|| {
        let mut r = request(step, clients, client, flights, row);
        r.label = format!("then {}", r.label);
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_model::model::LockModel;
    use locklab_model::scenario::{Property, Scenario};
    use locklab_model::trace;

    pub(crate) const PAUSE: &str = r#"name = "pause"
design = "lua-release"

[clients]
count = 2

[timing]
ttl = 4
work = 1
max_step_delay = 1
horizon = 10

[faults]
pauses = 1

[expect]
mutual_exclusion = "violated"
owner_only_release = "holds"
no_orphaned_lock = "holds"
resource_safety = "violated"
"#;

    /// client1 acquires and is paused before its reply arrives; the lease runs out,
    /// client2 acquires and gets its reply; client1 resumes and gets its held OK: both
    /// hold.
    pub(crate) fn pause_trace() -> Trace {
        use Action::*;
        let scenario = Scenario::parse(PAUSE, "pause.toml").unwrap();
        let model = LockModel::new(&scenario);
        let mut path = vec![Acquire(0), Pause(0), Deliver(0, 0)];
        path.extend([Tick; 4]);
        path.extend([
            Acquire(1),
            Deliver(1, 0),
            Receive(1, 0),
            Resume(0),
            Receive(0, 0),
        ]);
        let t = trace::build(&model, Property::MutualExclusion, &path);
        assert_eq!(t.steps.len(), path.len(), "the path applies");
        t
    }

    #[test]
    fn rows_follow_the_trace_with_lanes_arrows_and_the_break() {
        let t = pause_trace();
        let s = build(&t);
        let names: Vec<&str> = s.lanes.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["client1", "client2", "node1"]);
        assert_eq!(s.lanes[2].role, "master1");
        assert_eq!(s.rows.len(), t.steps.len());
        assert_eq!(
            s.rows[0].event,
            Event::Request {
                from: 0,
                to: vec![2]
            }
        );
        assert_eq!(s.rows[0].label, "acquire: SET lock t1 NX PX 4");
        assert_eq!(s.rows[1].event, Event::Fault { at: vec![0] });
        assert_eq!(
            s.rows[2].event,
            Event::Reply {
                from: 2,
                to: 0,
                held: true
            }
        );
        assert_eq!(s.rows[2].keys, ["t1 client1 ttl 4"]);
        assert_eq!(s.rows[3].event, Event::Tick);
        assert_eq!(s.rows[3].keys, ["t1 client1 ttl 3"]);
        // The key expired at t=4; client2 takes it.
        assert_eq!(s.rows[6].keys, ["-"]);
        assert_eq!(s.rows[8].keys, ["t2 client2 ttl 4"]);
        let last = s.rows.last().unwrap();
        assert_eq!(last.event, Event::HeldReply { from: 2, to: 0 });
        assert_eq!(last.broken, ["mutual_exclusion"]);
        assert!(last.clients[0].starts_with("client1: critical section"));
        assert!(s.rows[..s.rows.len() - 1]
            .iter()
            .all(|r| r.broken.is_empty()));
    }
}
