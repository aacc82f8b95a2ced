//! JSON traces of counterexamples.
//!
//! A trace is the scenario, the broken property, a snapshot of the initial state and one
//! entry per step: the action (as narrated), who took it, the Redis command the step sent
//! or executed and the reply, the clocks after the step, the lock key on every node, the
//! stock, and which properties broke at that step. The `actions` array holds the same
//! path as the model's own [`Action`]s, one per step, so a trace can be replayed (by the
//! model with [`crate::search::replay`], or against real Redis by the harness) and every
//! narrator matches on the enum itself.
//!
//! ```json
//! {
//!   "scenario": { "name": "lua-release-slow-holder", "design": "lua-release", ... },
//!   "property": "mutual_exclusion",
//!   "initial": { "clock": 0, "client_clocks": [0, 0], "node_clocks": [0], "keys": [null], ... },
//!   "steps": [
//!     { "step": 1, "action": "client1 acquire", "actor": "client1",
//!       "command": "SET lock t1 NX PX 3", "reply": null, "clock": 0, ... ,
//!       "keys": [null], "stock": 10, "broken": [] },
//!     ...
//!   ],
//!   "actions": [ { "kind": "Acquire", "args": 0 }, { "kind": "Deliver", "args": [0, 0] },
//!                { "kind": "Tick" }, ... ],
//!   "cause": { "needs": [ { "ingredient": "pauses", "struck": "holder" } ] }
//! }
//! ```
//!
//! A `WAIT` that blocks on its node (`[timing] wait_timeout`) has no reply at its
//! delivery: that step says `"blocks": true`, and the step that answers it (a replica's
//! `Replicate`, or the `Tick` that ends its timeout) lists it under `waits_answered`
//! (`client`, `master`, `node`, `command`, `reply`). Both are left out where they do not
//! apply, so that the traces of scenarios without a WAIT timeout read as before.
//!
//! `cause`, written once computed ([`crate::cause`]), lists what the violation needs:
//! each fault kind (`[faults]` key) or `step_delays` without which the property holds,
//! with whom a client fault struck in this trace (`holder`, `acquiring`, `waiting`,
//! `finished`), and under `undecided` those a bounded search could not decide.
//!
//! The fields are typed: `scenario` is the [`Scenario`] (its keys written sorted, read
//! back through the scenario file's parser and checks), `property` and `broken` are
//! [`Property`] values, and the names of clients, nodes, master slots and actors are the
//! ids of [`crate::ids`], written as `client1`, `node1`, `master1`, `clock`, `nemesis`.
//!
//! Each entry of `actions` is [`Action`] as serde derives it (adjacently tagged): `kind`
//! is the variant's name and `args` its fields in declaration order, a single number for
//! a one-field variant, an array for two, absent for `Tick`. Indexes are the model's,
//! counted from 0 (`"args": 0` in `Acquire` is `client1` in the narration):
//!
//! | `kind` | `args` |
//! |---|---|
//! | `Tick` | none |
//! | `Acquire`, `Renew`, `Read`, `Write`, `Release`, `Reenter`, `Pause`, `Resume`, `Crash`, `ClientClockJump` | client |
//! | `Deliver`, `Receive`, `Timeout`, `Partition`, `Heal` | `[client, master]` |
//! | `Replicate`, `Restart`, `NodeClockJump` | node |
//! | `Failover` | `[master, node]` (the replica promoted) |
//!
//! `master` is a master slot of the design, `node` a physical node (masters first, then
//! replicas). A variant added to [`Action`] gets its encoding from the derive; an entry
//! that does not decode is refused naming its index (`actions[3]: unknown variant ...`).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value as Json;
use stateright::Model;

use crate::cause::Cause;
use crate::ids::{Actor, ClientId, MasterId, NodeId};
use crate::model::{Action, LockModel, Op};
use crate::redis::{Text, Value};
use crate::scenario::{Property, Scenario};
use crate::state::{Phase, State};

/// Why a trace could not be read or used.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not a trace: bad JSON, a missing or mistyped field, an embedded
    /// scenario the scenario parser refuses (`scenario: key ...`).
    #[error("{path}: not a locklab trace: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// `actions` does not have one entry per step.
    #[error("{path}: actions: {actions} entries but steps has {steps}; one action per step")]
    Length {
        path: PathBuf,
        actions: usize,
        steps: usize,
    },
}

/// The lock key as stored on one node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyState {
    /// The value: a string (the token or timestamp), for a hash an object of fields
    /// to counts (reentrant design), for a list an array.
    pub value: Json,
    /// Ghost state: the client whose command last wrote the entry (`"client1"`).
    pub owner: Option<ClientId>,
    /// Remaining time to live on the node's clock (`expires_at − node clock`), or null
    /// when the key has no expiry.
    pub ttl: Option<i64>,
}

/// The observable state at one moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The global logical clock (ticks).
    pub clock: i64,
    /// Each client's clock reading.
    pub client_clocks: Vec<i64>,
    /// Each node's clock reading (masters first, then replicas).
    pub node_clocks: Vec<i64>,
    /// Per node, the lock key, or null when the node does not have it.
    pub keys: Vec<Option<KeyState>>,
    /// Nodes that are down (`"node1"`), if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub down: Vec<NodeId>,
    /// The protected stock counter.
    pub stock: i64,
    /// Accesses the fenced store rejected so far (stale token).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rejected: u32,
    /// What each client is doing (`"idle"`, `"acquiring"`, `"critical section (next: write)"`,
    /// ... with `", paused"` while paused).
    pub clients: Vec<String>,
}

/// A command a step put in flight.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sent {
    /// The master slot (`"master1"`).
    pub master: MasterId,
    /// The physical node serving it (`"node1"`).
    pub node: NodeId,
    /// The command, as redis-cli would type it.
    pub command: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A `WAIT` that blocked on its node, answered by a step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitAnswered {
    /// The client that sent it.
    pub client: ClientId,
    /// The master slot it was sent on.
    pub master: MasterId,
    /// The node it blocked on.
    pub node: NodeId,
    /// The command (`WAIT 1 2`).
    pub command: String,
    /// Its reply: the replicas that acknowledged (`(integer) 1`).
    pub reply: String,
}

/// The `WAIT`s that blocked before step `action` and have their reply after it.
fn waits_answered(action: Action, before: &State, after: &State) -> Vec<WaitAnswered> {
    if !matches!(action, Action::Tick | Action::Replicate(_)) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (c, (b, a)) in before.clients.iter().zip(&after.clients).enumerate() {
        for (m, (fb, fa)) in b.core.flights.iter().zip(&a.core.flights).enumerate() {
            if let (Some(fb), Some(fa)) = (fb, fa) {
                if let (true, Some(reply)) = (fb.waiting(), &fa.held) {
                    out.push(WaitAnswered {
                        client: ClientId::at(c),
                        master: MasterId::at(m),
                        node: fa.node.into(),
                        command: fa.command.to_string(),
                        reply: reply.to_string(),
                    });
                }
            }
        }
    }
    out
}

/// One step of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceStep {
    /// 1-based step number.
    pub step: usize,
    /// The action, narrated (`"client1 acquire"`).
    pub action: String,
    /// Who took the step: `"client1"`, `"node2"` (a request executed, a replica catching
    /// up), `"clock"` (a tick) or `"nemesis"` (a fault, a resume, a heal).
    pub actor: Actor,
    /// The command the step executed (Deliver), answered (Receive, Timeout) or sent
    /// (Acquire, Release, Renew, Reenter); commands sent to several masters are listed
    /// once when equal, otherwise joined by `"; "`.
    pub command: Option<String>,
    /// The reply to `command` (redis-cli style: `OK`, `(nil)`, `(integer) 1`, `"t1"`),
    /// or null when there is none (a timeout, or a step that only sends).
    pub reply: Option<String>,
    /// The reply was executed but is held: the client is paused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
    /// The request delivered is a `WAIT` short of replicas that blocks on its node
    /// (`timing.wait_timeout` above 0): no reply yet; a later step answers it
    /// (`waits_answered`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocks: bool,
    /// The `WAIT`s blocking on their nodes that this step answered: a replica caught
    /// up (`Replicate`), or a timeout ran out (`Tick`). Each reply then travels back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waits_answered: Vec<WaitAnswered>,
    /// The commands the executed script ran (`redis.call`), each with its reply:
    /// `"DEL lock -> (integer) 1"`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub script_calls: Vec<String>,
    /// Every command the step put in flight, follow-ups to a reply included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sent: Vec<Sent>,
    /// The state after the step.
    #[serde(flatten)]
    pub after: Snapshot,
    /// Properties that held before the step and not after it.
    pub broken: Vec<Property>,
}

/// A counterexample, ready to be written as JSON.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Trace {
    /// The scenario, with the keys of its file (plus `path`); read back through the
    /// scenario parser, so a trace holds a valid scenario or does not load.
    #[serde(serialize_with = "sorted_keys", deserialize_with = "decode_scenario")]
    pub scenario: Scenario,
    /// The property the trace breaks (`"mutual_exclusion"`).
    pub property: Property,
    /// The state before the first step.
    pub initial: Snapshot,
    /// One entry per step.
    pub steps: Vec<TraceStep>,
    /// The steps as model actions, one per entry of `steps`.
    #[serde(deserialize_with = "decode_actions")]
    pub actions: Vec<Action>,
    /// What the violation needs ([`crate::cause`]), once computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
}

/// `actions`, decoded entry by entry so an error names the entry that failed.
fn decode_actions<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Action>, D::Error> {
    let entries = Vec::<Json>::deserialize(d)?;
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
            Action::deserialize(entry)
                .map_err(|e| serde::de::Error::custom(format_args!("actions[{index}]: {e}")))
        })
        .collect()
}

/// The scenario with every object's keys sorted, as a JSON value writes them: the
/// field order every trace was written in.
fn sorted_keys<S: Serializer>(scenario: &Scenario, serializer: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(scenario)
        .map_err(serde::ser::Error::custom)?
        .serialize(serializer)
}

/// `scenario`, its error prefixed with the field as `actions`' are.
fn decode_scenario<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Scenario, D::Error> {
    Scenario::deserialize(d).map_err(|e| serde::de::Error::custom(format_args!("scenario: {e}")))
}

fn key_state(model: &LockModel, s: &State, n: usize) -> Option<KeyState> {
    let node = &s.nodes[n];
    if !node.alive {
        return None;
    }
    let e = node.data.entry(&model.cfg.key)?;
    let value = match &e.value {
        Value::Str(v) => Json::String(v.to_string()),
        Value::List(items) => Json::from(items.iter().map(Text::as_str).collect::<Vec<_>>()),
        Value::Hash(fields) => Json::Object(
            fields
                .iter()
                // A hold count as a number, as the reentrant designs read it.
                .map(|(f, v)| {
                    let value = v
                        .parse::<i64>()
                        .map_or_else(|_| Json::from(v.as_str()), Json::from);
                    (f.to_string(), value)
                })
                .collect(),
        ),
    };
    Some(KeyState {
        value,
        owner: e.owner.map(ClientId::from),
        ttl: e.expires_at.map(|at| at - model.node_clock(s, n)),
    })
}

fn op_name(op: Option<&Op>) -> &'static str {
    match op {
        Some(Op::Reenter) => "re-enter",
        Some(Op::Read) => "read",
        Some(Op::Write) => "write",
        Some(Op::Release) => "release",
        None => "end",
    }
}

fn client_status(model: &LockModel, s: &State, i: usize) -> String {
    let c = &s.clients[i];
    let program = model.program();
    let mut out = match &c.core.phase {
        Phase::Idle => "idle".to_string(),
        Phase::Acquiring => "acquiring".to_string(),
        Phase::Critical { pc, .. } => {
            let next = op_name(program.get(*pc as usize));
            if model.in_critical_section(c) {
                format!("critical section (next: {next})")
            } else {
                format!("holding (next: {next})")
            }
        }
        Phase::Waiting { pc, .. } => {
            let op = op_name(program.get(*pc as usize));
            if model.in_critical_section(c) {
                format!("critical section (waiting: {op})")
            } else {
                format!("waiting: {op}")
            }
        }
        Phase::Done => "done".to_string(),
        Phase::Crashed => "crashed".to_string(),
    };
    if c.paused {
        out.push_str(", paused");
    }
    out
}

/// The observable state of `s`.
pub fn snapshot(model: &LockModel, s: &State) -> Snapshot {
    Snapshot {
        clock: s.now as i64,
        client_clocks: (0..s.clients.len())
            .map(|i| model.client_clock(s, i))
            .collect(),
        node_clocks: (0..s.nodes.len()).map(|n| model.node_clock(s, n)).collect(),
        keys: (0..s.nodes.len()).map(|n| key_state(model, s, n)).collect(),
        down: (0..s.nodes.len())
            .filter(|&n| !s.nodes[n].alive)
            .map(NodeId::at)
            .collect(),
        stock: s.stock.value,
        rejected: s.stock.rejected,
        clients: (0..s.clients.len())
            .map(|i| client_status(model, s, i))
            .collect(),
    }
}

/// Who takes `action` in state `before`.
fn actor(action: Action, before: &State) -> Actor {
    use Action::*;
    match action {
        Tick => Actor::Clock,
        Replicate(n) => Actor::Node(n.into()),
        Deliver(c, m) => match &before.clients[c as usize].core.flights[m as usize] {
            Some(f) => Actor::Node(f.node.into()),
            None => Actor::Client(c.into()),
        },
        DeliverLate(c, k) => match before.clients[c as usize].core.strays.get(k as usize) {
            Some(st) => Actor::Node(st.flight.node.into()),
            None => Actor::Client(c.into()),
        },
        Acquire(c)
        | Receive(c, _)
        | Timeout(c, _)
        | Renew(c)
        | Read(c)
        | Write(c)
        | Release(c)
        | Reenter(c) => Actor::Client(c.into()),
        Pause(_) | Resume(_) | Crash(_) | Failover(..) | Restart(_) | Partition(..) | Heal(..)
        | NodeClockJump(_) | ClientClockJump(_) | LoseReply(..) | SplitBrain(..) | NodeDrift(_) => {
            Actor::Nemesis
        }
        Redirect(c, _) => Actor::Client(c.into()),
    }
}

/// The commands that are in flight after the step and were not before it.
fn new_flights(action: Action, before: &State, after: &State) -> Vec<Sent> {
    let Some(c) = action.client() else {
        return Vec::new();
    };
    let c = c as usize;
    use Action::*;
    // The request slot the step answered: a reply or timeout frees it, a follow-up
    // refills it.
    let consumed = match action {
        Deliver(_, m) | Receive(_, m) | Timeout(_, m) | LoseReply(_, m) => Some(m as usize),
        Tick | Acquire(_) | DeliverLate(..) | Renew(_) | Read(_) | Write(_) | Release(_)
        | Reenter(_) | Replicate(_) | Pause(_) | Resume(_) | Crash(_) | Failover(..)
        | Restart(_) | Partition(..) | Heal(..) | NodeClockJump(_) | ClientClockJump(_)
        | SplitBrain(..) | Redirect(..) | NodeDrift(_) => None,
    };
    let (Some(b), Some(a)) = (before.clients.get(c), after.clients.get(c)) else {
        return Vec::new();
    };
    a.core
        .flights
        .iter()
        .enumerate()
        .filter_map(|(m, f)| {
            let f = f.as_ref()?;
            let is_new = if consumed == Some(m) {
                f.undelivered()
            } else {
                b.core.flights.get(m).and_then(Option::as_ref) != Some(f)
            };
            is_new.then(|| Sent {
                master: MasterId::at(m),
                node: f.node.into(),
                command: f.command.to_string(),
            })
        })
        .collect()
}

/// The reply the node gives to a delivered request, and the commands its script ran,
/// found by running the very step on a copy of the state in which the client is paused:
/// the model then keeps the reply in the flight instead of handing it to the client.
fn delivered_reply(
    model: &LockModel,
    before: &State,
    c: u8,
    m: u8,
) -> (Option<String>, Vec<String>) {
    let mut paused = before.clone();
    let Some(client) = paused.clients.get_mut(c as usize) else {
        return (None, Vec::new());
    };
    client.paused = true;
    let (next, calls) = crate::lua::recording(|| model.next_state(&paused, Action::Deliver(c, m)));
    let calls = calls
        .into_iter()
        .map(|(words, reply)| format!("{} -> {reply}", words.join(" ")))
        .collect();
    let reply = next.as_ref().and_then(|next| {
        let flight = next
            .clients
            .get(c as usize)?
            .core
            .flights
            .get(m as usize)?
            .as_ref()?;
        flight.held.as_ref().map(|r| r.to_string())
    });
    (reply, calls)
}

/// The reply a request given up on gets when it lands late (read by nobody), and the
/// commands its script ran.
fn late_reply(model: &LockModel, before: &State, c: u8, k: u8) -> (Option<String>, Vec<String>) {
    let mut copy = before.clone();
    let (reply, calls) = crate::lua::recording(|| model.deliver_late(&mut copy, c, k));
    let calls = calls
        .into_iter()
        .map(|(words, reply)| format!("{} -> {reply}", words.join(" ")))
        .collect();
    (reply.map(|r| r.to_string()), calls)
}

fn join_commands(sent: &[Sent]) -> Option<String> {
    let first = sent.first()?;
    if sent.iter().all(|s| s.command == first.command) {
        Some(first.command.clone())
    } else {
        Some(
            sent.iter()
                .map(|s| format!("{}: {}", s.master, s.command))
                .collect::<Vec<_>>()
                .join("; "),
        )
    }
}

fn broken(model: &LockModel, before: &State, after: &State) -> Vec<Property> {
    Property::ALL
        .into_iter()
        .filter(|&p| model.holds(p, before) && !model.holds(p, after))
        .collect()
}

/// The trace of `actions` (a path from the initial state) as a counterexample to
/// `property`. Steps that do not apply (a path from another model) end the trace early.
pub fn build(model: &LockModel, property: Property, actions: &[Action]) -> Trace {
    let mut state = model
        .init_states()
        .into_iter()
        .next()
        .expect("the model has an initial state");
    let initial = snapshot(model, &state);
    let mut steps = Vec::with_capacity(actions.len());
    let mut applied = Vec::with_capacity(actions.len());
    for (k, &action) in actions.iter().enumerate() {
        let Some(next) = model.next_state(&state, action) else {
            break;
        };
        let sent = new_flights(action, &state, &next);
        let flight = |c: u8, m: u8| state.clients[c as usize].core.flights[m as usize].clone();
        use Action::*;
        let mut script_calls = Vec::new();
        let mut blocks = false;
        let (command, reply, held) = match action {
            Deliver(c, m) => {
                let (reply, calls) = delivered_reply(model, &state, c, m);
                script_calls = calls;
                blocks = next.clients[c as usize].core.flights[m as usize]
                    .as_ref()
                    .is_some_and(|f| f.blocked());
                let held = !state.clients[c as usize].running() && !blocks;
                (flight(c, m).map(|f| f.command.to_string()), reply, held)
            }
            Receive(c, m) => {
                let f = flight(c, m);
                (
                    f.as_ref().map(|f| f.command.to_string()),
                    f.and_then(|f| f.held).map(|r| r.to_string()),
                    false,
                )
            }
            Timeout(c, m) | LoseReply(c, m) => {
                (flight(c, m).map(|f| f.command.to_string()), None, false)
            }
            DeliverLate(c, k) => {
                let (reply, calls) = late_reply(model, &state, c, k);
                script_calls = calls;
                let command = state.clients[c as usize]
                    .core
                    .strays
                    .get(k as usize)
                    .map(|st| st.flight.command.to_string());
                (command, reply, false)
            }
            Tick | Acquire(_) | Renew(_) | Read(_) | Write(_) | Release(_) | Reenter(_)
            | Replicate(_) | Pause(_) | Resume(_) | Crash(_) | Failover(..) | Restart(_)
            | Partition(..) | Heal(..) | NodeClockJump(_) | ClientClockJump(_) | SplitBrain(..)
            | Redirect(..) | NodeDrift(_) => (join_commands(&sent), None, false),
        };
        steps.push(TraceStep {
            step: k + 1,
            action: action.to_string(),
            actor: actor(action, &state),
            command,
            reply,
            held,
            blocks,
            waits_answered: waits_answered(action, &state, &next),
            script_calls,
            sent,
            after: snapshot(model, &next),
            broken: broken(model, &state, &next),
        });
        applied.push(action);
        state = next;
    }
    Trace {
        scenario: model.scenario.clone(),
        property,
        initial,
        steps,
        actions: applied,
        cause: None,
    }
}

/// Reads a trace written by [`Trace::to_json_pretty`]: every field decodes (the
/// embedded scenario passes the scenario file's checks) and `actions` has one entry per
/// step.
pub fn load(path: impl AsRef<Path>) -> Result<Trace, TraceError> {
    let path = path.as_ref();
    let text = fs::read_to_string(path).map_err(|source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let trace: Trace = serde_json::from_str(&text).map_err(|source| TraceError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    if trace.actions.len() != trace.steps.len() {
        return Err(TraceError::Length {
            path: path.to_path_buf(),
            actions: trace.actions.len(),
            steps: trace.steps.len(),
        });
    }
    Ok(trace)
}

impl Trace {
    /// Pretty-printed JSON.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a trace serializes")
    }

    /// The trace as text for a terminal or a test report: one block per step with the
    /// clock, the command and reply, and the lock key on each node when it changed.
    pub fn narrate(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} violates {} in {} steps (design {})",
            self.scenario.name,
            self.property,
            self.steps.len(),
            self.scenario.design.as_str()
        );
        if !self.scenario.summary.is_empty() {
            let _ = writeln!(out, "  {}", self.scenario.summary);
        }
        let _ = writeln!(
            out,
            "  start     t={:<3}{}stock {}",
            self.initial.clock,
            skew(&self.initial),
            self.initial.stock
        );
        let _ = writeln!(out, "            {}", keys_line(&self.initial));
        let mut last = &self.initial;
        for (step, &action) in self.steps.iter().zip(&self.actions) {
            let told = Told::of(action);
            let _ = writeln!(
                out,
                "  step {:<4} t={:<3}{}{}",
                step.step,
                step.after.clock,
                skew(&step.after),
                step.action
            );
            if let Some(command) = &step.command {
                let reply = match &step.reply {
                    Some(r) if step.held => format!(" -> {r} (held: client paused)"),
                    Some(r) => format!(" -> {r}"),
                    None if told == Told::Timeout => " -> no answer".to_string(),
                    None if step.blocks => {
                        " -> blocks: fewer replicas in sync than it waits for".to_string()
                    }
                    None => String::new(),
                };
                let _ = writeln!(out, "            {command}{reply}");
            }
            for w in &step.waits_answered {
                let _ = writeln!(
                    out,
                    "            {}'s {} on {} answers -> {}",
                    w.client, w.command, w.node, w.reply
                );
            }
            for call in &step.script_calls {
                let _ = writeln!(out, "              runs {call}");
            }
            let follow_ups: Vec<&Sent> = match told {
                Told::Answer | Told::Timeout => step.sent.iter().collect(),
                Told::Read | Told::Write | Told::Other => Vec::new(),
            };
            for s in follow_ups {
                let _ = writeln!(out, "            then sends {} to {}", s.command, s.master);
            }
            if step.after.keys != last.keys || step.after.down != last.down {
                let _ = writeln!(out, "            {}", keys_line(&step.after));
            }
            let rejected = step.after.rejected > last.rejected;
            match told {
                _ if rejected => {
                    let _ = writeln!(
                        out,
                        "            REJECTED by the store: stale fencing token (stock stays {})",
                        step.after.stock
                    );
                }
                Told::Read => {
                    let _ = writeln!(out, "            stock = {}", step.after.stock);
                }
                Told::Write => {
                    let lost = if step.after.stock == last.stock {
                        " (unchanged: an update is lost or rejected)"
                    } else {
                        ""
                    };
                    let _ = writeln!(
                        out,
                        "            stock {} -> {}{lost}",
                        last.stock, step.after.stock
                    );
                }
                _ if step.after.stock != last.stock => {
                    let _ = writeln!(
                        out,
                        "            stock {} -> {}",
                        last.stock, step.after.stock
                    );
                }
                _ => {}
            }
            if !step.broken.is_empty() {
                let broken: Vec<&str> = step.broken.iter().map(|p| p.as_str()).collect();
                let _ = writeln!(out, "            BROKEN: {}", broken.join(", "));
                let _ = writeln!(
                    out,
                    "            clients: {}",
                    step.after.clients.join("; ")
                );
            }
            last = &step.after;
        }
        out
    }
}

/// What the narration tells about a step besides its command and the lock keys.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Told {
    /// A request answered: its reply, and the requests the reply made the client send.
    Answer,
    /// A request that got no answer, and what the client sent next.
    Timeout,
    /// The stock as read.
    Read,
    /// The stock before and after the write.
    Write,
    /// Only the command sent, if any.
    Other,
}

impl Told {
    fn of(action: Action) -> Told {
        use Action::*;
        match action {
            Deliver(..) | Receive(..) | DeliverLate(..) => Told::Answer,
            Timeout(..) | LoseReply(..) => Told::Timeout,
            Read(_) => Told::Read,
            Write(_) => Told::Write,
            Tick | Acquire(_) | Renew(_) | Release(_) | Reenter(_) | Replicate(_) | Pause(_)
            | Resume(_) | Crash(_) | Failover(..) | Restart(_) | Partition(..) | Heal(..)
            | NodeClockJump(_) | ClientClockJump(_) | SplitBrain(..) | Redirect(..)
            | NodeDrift(_) => Told::Other,
        }
    }
}

/// Client and node clocks, when some differ from the global clock.
fn skew(s: &Snapshot) -> String {
    let off = s
        .client_clocks
        .iter()
        .chain(&s.node_clocks)
        .any(|&c| c != s.clock);
    if !off {
        return String::new();
    }
    let list = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    format!(
        "(clients {} nodes {}) ",
        list(&s.client_clocks),
        list(&s.node_clocks)
    )
}

/// `node1: lock = "t1" (client1, ttl 3)   node2: -` with a trailing `down` list.
pub fn keys_line(s: &Snapshot) -> String {
    let mut parts = Vec::new();
    for (n, key) in s.keys.iter().enumerate() {
        let name = NodeId::at(n);
        if s.down.contains(&name) {
            parts.push(format!("{name}: down"));
            continue;
        }
        parts.push(match key {
            None => format!("{name}: -"),
            Some(k) => {
                let ttl = match k.ttl {
                    Some(t) => format!("ttl {t}"),
                    None => "no expiry".to_string(),
                };
                let owner = k.owner.map_or_else(|| "?".to_string(), |o| o.to_string());
                format!("{name}: lock = {} ({owner}, {ttl})", k.value)
            }
        });
    }
    parts.join("   ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAUSE: &str = r#"name = "pause"
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

    /// A client paused with its request on the wire: the reply is held until it resumes.
    const HELD_REPLY: [Action; 6] = [
        Action::Acquire(0),
        Action::Pause(0),
        Action::Deliver(0, 0),
        Action::Tick,
        Action::Resume(0),
        Action::Receive(0, 0),
    ];

    #[test]
    fn a_held_reply_is_recorded_at_delivery_and_at_receipt() {
        use Action::*;
        let scenario = Scenario::parse(PAUSE, "pause.toml").unwrap();
        let model = LockModel::new(&scenario);
        let path = HELD_REPLY;
        let t = build(&model, Property::MutualExclusion, &path);
        assert_eq!(t.steps.len(), path.len());
        assert_eq!(t.actions, path);
        let actors: Vec<String> = t.steps.iter().map(|s| s.actor.to_string()).collect();
        assert_eq!(
            actors,
            ["client1", "nemesis", "node1", "clock", "nemesis", "client1"]
        );
        let (deliver, receive) = (&t.steps[2], &t.steps[5]);
        assert_eq!(deliver.command.as_deref(), Some("SET lock t1 NX PX 4"));
        assert_eq!(deliver.reply.as_deref(), Some("OK"));
        assert!(deliver.held && deliver.sent.is_empty());
        assert_eq!(deliver.after.clients[0], "acquiring, paused");
        assert_eq!(receive.command, deliver.command);
        assert_eq!(receive.reply.as_deref(), Some("OK"));
        assert!(!receive.held);
        assert!(receive.after.clients[0].starts_with("critical section"));
        let key = t.steps[3].after.keys[0].as_ref().unwrap();
        assert_eq!((key.owner, key.ttl), (Some(ClientId::at(0)), Some(3)));
        assert_eq!(key.value, Json::String("t1".into()));
        let text = t.narrate();
        assert!(
            text.contains("SET lock t1 NX PX 4 -> OK (held: client paused)"),
            "{text}"
        );

        // JSON round trip, and the embedded scenario is the original one.
        let back: Trace = serde_json::from_str(&t.to_json_pretty()).unwrap();
        assert_eq!(back.actions, path);
        assert_eq!(back.steps, t.steps);
        assert_eq!(back.scenario, scenario);
        assert_eq!(back.property, Property::MutualExclusion);

        // A path that stops applying ends the trace there.
        let t = build(
            &model,
            Property::MutualExclusion,
            &[Acquire(0), Receive(0, 0), Tick],
        );
        assert_eq!(t.steps.len(), 1);
    }

    #[test]
    fn every_action_round_trips_in_the_documented_shape() {
        use serde_json::json;
        use Action::*;
        let all = [
            (Tick, json!({ "kind": "Tick" })),
            (Acquire(1), json!({ "kind": "Acquire", "args": 1 })),
            (Deliver(1, 2), json!({ "kind": "Deliver", "args": [1, 2] })),
            (Receive(0, 1), json!({ "kind": "Receive", "args": [0, 1] })),
            (Timeout(2, 0), json!({ "kind": "Timeout", "args": [2, 0] })),
            (Renew(3), json!({ "kind": "Renew", "args": 3 })),
            (Read(0), json!({ "kind": "Read", "args": 0 })),
            (Write(1), json!({ "kind": "Write", "args": 1 })),
            (Release(2), json!({ "kind": "Release", "args": 2 })),
            (Reenter(3), json!({ "kind": "Reenter", "args": 3 })),
            (Replicate(4), json!({ "kind": "Replicate", "args": 4 })),
            (Pause(0), json!({ "kind": "Pause", "args": 0 })),
            (Resume(1), json!({ "kind": "Resume", "args": 1 })),
            (Crash(2), json!({ "kind": "Crash", "args": 2 })),
            (
                Failover(0, 3),
                json!({ "kind": "Failover", "args": [0, 3] }),
            ),
            (Restart(2), json!({ "kind": "Restart", "args": 2 })),
            (
                Partition(1, 4),
                json!({ "kind": "Partition", "args": [1, 4] }),
            ),
            (Heal(1, 4), json!({ "kind": "Heal", "args": [1, 4] })),
            (
                NodeClockJump(2),
                json!({ "kind": "NodeClockJump", "args": 2 }),
            ),
            (
                ClientClockJump(1),
                json!({ "kind": "ClientClockJump", "args": 1 }),
            ),
            (
                SplitBrain(0, 2, 1),
                json!({ "kind": "SplitBrain", "args": [0, 2, 1] }),
            ),
            (
                Redirect(1, 0),
                json!({ "kind": "Redirect", "args": [1, 0] }),
            ),
            (NodeDrift(1), json!({ "kind": "NodeDrift", "args": 1 })),
            (
                LoseReply(1, 0),
                json!({ "kind": "LoseReply", "args": [1, 0] }),
            ),
        ];
        for (a, shape) in all {
            assert_eq!(serde_json::to_value(a).unwrap(), shape, "{a:?}");
            assert_eq!(serde_json::from_value::<Action>(shape).unwrap(), a);
        }
    }

    /// A trace with its `actions` replaced by `actions`.
    fn with_actions(actions: Json) -> Result<Trace, serde_json::Error> {
        let scenario = Scenario::parse(PAUSE, "pause.toml").unwrap();
        let t = build(
            &LockModel::new(&scenario),
            Property::MutualExclusion,
            &[Action::Acquire(0), Action::Deliver(0, 0)],
        );
        let mut value = serde_json::to_value(&t).unwrap();
        value["actions"] = actions;
        serde_json::from_value(value)
    }

    #[test]
    fn a_bad_action_is_refused_naming_its_entry_and_the_reason() {
        use serde_json::json;
        let ok = json!([{ "kind": "Acquire", "args": 0 }, { "kind": "Deliver", "args": [0, 0] }]);
        assert!(with_actions(ok).is_ok());
        let cases = [
            (
                json!([{ "kind": "Acquire", "args": 0 }, { "kind": "Teleport", "args": 0 }]),
                "actions[1]: unknown variant `Teleport`",
            ),
            (
                json!([{ "kind": "Deliver", "args": 0 }]),
                "actions[0]: invalid type: integer `0`",
            ),
            (
                json!([{ "kind": "Deliver", "args": [0] }]),
                "actions[0]: invalid length 1",
            ),
            (
                json!([{ "kind": "Tick" }, { "kind": "Acquire", "args": 256 }]),
                "actions[1]: invalid value: integer `256`, expected u8",
            ),
            (
                json!([{ "kind": "Tick" }, { "kind": "Tick" }, { "args": 1 }]),
                "actions[2]: missing field `kind`",
            ),
        ];
        for (actions, expected) in cases {
            let err = with_actions(actions.clone()).unwrap_err().to_string();
            assert!(err.starts_with(expected), "{actions}: {err}");
        }
    }

    #[test]
    fn load_refuses_a_trace_whose_actions_do_not_match_its_steps() {
        let dir = std::env::temp_dir().join(format!("locklab-trace-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("short.json");
        let mut t = with_actions(serde_json::json!([{ "kind": "Acquire", "args": 0 }, { "kind": "Deliver", "args": [0, 0] }])).unwrap();
        fs::write(&path, t.to_json_pretty()).unwrap();
        assert_eq!(load(&path).unwrap().actions, t.actions);
        t.actions.pop();
        fs::write(&path, t.to_json_pretty()).unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(
            err.ends_with("short.json: actions: 1 entries but steps has 2; one action per step"),
            "{err}"
        );
        fs::write(&path, t.to_json_pretty().replace("Acquire", "Teleport")).unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(
            err.contains("not a locklab trace: actions[0]: unknown variant `Teleport`"),
            "{err}"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_trace_reads_back_to_the_same_json() {
        let scenario = Scenario::parse(PAUSE, "scenarios/pause.toml").unwrap();
        let path = HELD_REPLY;
        let t = build(&LockModel::new(&scenario), Property::MutualExclusion, &path);
        let json = t.to_json_pretty();
        let back: Trace = serde_json::from_str(&json).unwrap();
        assert_eq!(back.to_json_pretty(), json);
        // The typed fields write the names the trace has always had.
        let value: Json = serde_json::from_str(&json).unwrap();
        assert_eq!(value["property"], "mutual_exclusion");
        assert_eq!(value["scenario"]["path"], "scenarios/pause.toml");
        assert_eq!(value["steps"][0]["actor"], "client1");
        assert_eq!(value["steps"][0]["sent"][0]["master"], "master1");
        assert_eq!(value["steps"][0]["sent"][0]["node"], "node1");
        assert_eq!(value["steps"][2]["actor"], "node1");
        assert_eq!(value["steps"][2]["keys"][0]["owner"], "client1");
        let keys: Vec<&String> = value["scenario"].as_object().unwrap().keys().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "the scenario's keys are written sorted");
    }

    /// The committed gallery's traces (`reports/traces/`) read back into the typed trace
    /// and write the very bytes they were read from.
    #[test]
    fn every_committed_trace_reads_back_byte_for_byte() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/traces");
        let mut read = 0;
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let t = load(&path).unwrap_or_else(|e| panic!("{e}"));
            let text = fs::read_to_string(&path).unwrap();
            assert!(
                t.to_json_pretty() + "\n" == text,
                "{}: written back differently",
                path.display()
            );
            read += 1;
        }
        assert!(read > 10, "{read} traces in {}", dir.display());
    }

    #[test]
    fn load_refuses_a_bad_field_naming_the_file_and_the_field() {
        use serde_json::json;
        let dir = std::env::temp_dir().join(format!("locklab-trace-bad-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.json");
        let t = with_actions(
            json!([{ "kind": "Acquire", "args": 0 }, { "kind": "Deliver", "args": [0, 0] }]),
        )
        .unwrap();
        let good = serde_json::to_value(&t).unwrap();
        fs::write(&path, serde_json::to_string_pretty(&good).unwrap()).unwrap();
        assert!(load(&path).is_ok());
        let cases = [
            (
                "/scenario/timing/ttl",
                json!(0),
                "scenario: key `timing.ttl`: must be at least 1 (got 0)",
            ),
            (
                "/scenario/design",
                json!("setnx-pray"),
                "scenario: key `design`: ",
            ),
            ("/property", json!("liveness"), "unknown variant `liveness`"),
            (
                "/steps/0/actor",
                json!("client0"),
                "`client0` is not an actor (client1, node1, ..., clock or nemesis)",
            ),
            (
                "/steps/0/sent/0/master",
                json!("node1"),
                "`node1` is not a master name (master1, master2, ...)",
            ),
            (
                "/steps/1/keys/0/owner",
                json!("client-1"),
                "`client-1` is not a client name (client1, client2, ...)",
            ),
        ];
        for (pointer, value, expected) in cases {
            let mut bad = good.clone();
            *bad.pointer_mut(pointer)
                .unwrap_or_else(|| panic!("{pointer}")) = value;
            fs::write(&path, serde_json::to_string_pretty(&bad).unwrap()).unwrap();
            let err = load(&path).unwrap_err().to_string();
            let prefix = format!("{}: not a locklab trace: ", path.display());
            assert!(
                err.starts_with(&prefix) && err.contains(expected),
                "{pointer}: {err}"
            );
        }
        let _ = fs::remove_dir_all(&dir);
    }
}
