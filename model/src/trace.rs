//! JSON traces of counterexamples.
//!
//! A trace is the scenario, the broken property, a snapshot of the initial state and one
//! entry per step: the action (as narrated), who took it, the Redis command the step sent
//! or executed and the reply, the clocks after the step, the lock key on every node, the
//! stock, and which properties broke at that step. The `actions` array repeats the path
//! in a machine-readable form that [`Trace::actions`] decodes back to [`Action`]s, so a
//! trace can be replayed (by the model with [`crate::search::replay`], or against real
//! Redis by the harness).
//!
//! ```json
//! {
//!   "scenario": { "name": "lua-release-slow-holder", "design": "lua-release", ... },
//!   "property": "mutual_exclusion",
//!   "initial": { "clock": 0, "client_clocks": [0, 0], "node_clocks": [0], "keys": [null], ... },
//!   "steps": [
//!     { "step": 1, "action": "client1 acquire", "actor": "client1", "kind": "Acquire",
//!       "command": "SET lock t1 NX PX 3", "reply": null, "clock": 0, ... ,
//!       "keys": [null], "stock": 10, "broken": [] },
//!     ...
//!   ],
//!   "actions": [ { "kind": "Acquire", "client": 0 }, { "kind": "Deliver", "client": 0, "master": 0 }, ... ]
//! }
//! ```
//!
//! Indexes in `actions` are the model's, counted from 0 (`"client": 0` is `client1` in
//! the narration); `master` is a master slot of the design, `node` a physical node.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use stateright::Model;

use crate::model::{Action, LockModel, Op};
use crate::redis::Value;
use crate::scenario::{Property, Scenario, ScenarioError};
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
    /// The file is not a trace (bad JSON or missing fields).
    #[error("{path}: not a locklab trace: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// An entry of `actions` does not decode to an action.
    #[error("actions[{index}]: {message}")]
    Action { index: usize, message: String },
    /// The `property` field names no property.
    #[error("property: {0}")]
    Property(String),
    /// The embedded scenario is not a valid scenario.
    #[error("embedded scenario: {0}")]
    Scenario(String),
}

impl From<ScenarioError> for TraceError {
    fn from(e: ScenarioError) -> Self {
        TraceError::Scenario(e.to_string())
    }
}

/// The lock key as stored on one node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyState {
    /// The value: a string (the token or timestamp), or for a hash an object of fields
    /// to counts (reentrant design).
    pub value: Json,
    /// Ghost state: the client whose command last wrote the entry (`"client1"`).
    pub owner: Option<String>,
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
    pub down: Vec<String>,
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
    pub master: String,
    /// The physical node serving it (`"node1"`).
    pub node: String,
    /// The command, as redis-cli would type it.
    pub command: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
    pub actor: String,
    /// The action's variant name (`"Tick"`, `"Acquire"`, `"Deliver"`, ...).
    pub kind: String,
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
    /// Every command the step put in flight, follow-ups to a reply included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sent: Vec<Sent>,
    /// The state after the step.
    #[serde(flatten)]
    pub after: Snapshot,
    /// Properties that held before the step and not after it.
    pub broken: Vec<String>,
}

/// An [`Action`] in a serde-friendly form: the variant name and its arguments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncodedAction {
    /// The variant name.
    pub kind: String,
    /// Client index (from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<u8>,
    /// Master slot (from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master: Option<u8>,
    /// Physical node (from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u8>,
}

impl EncodedAction {
    fn new(kind: &str, client: Option<u8>, master: Option<u8>, node: Option<u8>) -> Self {
        EncodedAction {
            kind: kind.to_string(),
            client,
            master,
            node,
        }
    }

    /// The encoding of `action`.
    pub fn encode(action: Action) -> Self {
        use Action::*;
        let c = |kind: &str, c: u8| Self::new(kind, Some(c), None, None);
        let cm = |kind: &str, c: u8, m: u8| Self::new(kind, Some(c), Some(m), None);
        let n = |kind: &str, n: u8| Self::new(kind, None, None, Some(n));
        match action {
            Tick => Self::new("Tick", None, None, None),
            Acquire(x) => c("Acquire", x),
            Deliver(x, m) => cm("Deliver", x, m),
            Receive(x, m) => cm("Receive", x, m),
            Timeout(x, m) => cm("Timeout", x, m),
            Renew(x) => c("Renew", x),
            Read(x) => c("Read", x),
            Write(x) => c("Write", x),
            Release(x) => c("Release", x),
            Reenter(x) => c("Reenter", x),
            Replicate(x) => n("Replicate", x),
            Pause(x) => c("Pause", x),
            Resume(x) => c("Resume", x),
            Crash(x) => c("Crash", x),
            Failover(m, r) => Self::new("Failover", None, Some(m), Some(r)),
            Restart(x) => n("Restart", x),
            Partition(x, m) => cm("Partition", x, m),
            Heal(x, m) => cm("Heal", x, m),
            NodeClockJump(x) => n("NodeClockJump", x),
            ClientClockJump(x) => c("ClientClockJump", x),
        }
    }

    /// The action this encodes.
    pub fn decode(&self) -> Result<Action, String> {
        use Action::*;
        let need = |field: Option<u8>, name: &str| {
            field.ok_or_else(|| format!("`{}` needs the field `{name}`", self.kind))
        };
        let client = || need(self.client, "client");
        let master = || need(self.master, "master");
        let node = || need(self.node, "node");
        Ok(match self.kind.as_str() {
            "Tick" => Tick,
            "Acquire" => Acquire(client()?),
            "Deliver" => Deliver(client()?, master()?),
            "Receive" => Receive(client()?, master()?),
            "Timeout" => Timeout(client()?, master()?),
            "Renew" => Renew(client()?),
            "Read" => Read(client()?),
            "Write" => Write(client()?),
            "Release" => Release(client()?),
            "Reenter" => Reenter(client()?),
            "Replicate" => Replicate(node()?),
            "Pause" => Pause(client()?),
            "Resume" => Resume(client()?),
            "Crash" => Crash(client()?),
            "Failover" => Failover(master()?, node()?),
            "Restart" => Restart(node()?),
            "Partition" => Partition(client()?, master()?),
            "Heal" => Heal(client()?, master()?),
            "NodeClockJump" => NodeClockJump(node()?),
            "ClientClockJump" => ClientClockJump(client()?),
            other => return Err(format!("unknown action kind `{other}`")),
        })
    }
}

/// The variant name of an action (`"Deliver"`).
pub fn kind(action: Action) -> String {
    EncodedAction::encode(action).kind
}

/// A counterexample, ready to be written as JSON.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Trace {
    /// The scenario, with the keys of its file (plus `path`).
    pub scenario: Json,
    /// The property the trace breaks (`"mutual_exclusion"`).
    pub property: String,
    /// The state before the first step.
    pub initial: Snapshot,
    /// One entry per step.
    pub steps: Vec<TraceStep>,
    /// The steps, machine-readable (see [`EncodedAction`]).
    pub actions: Vec<EncodedAction>,
}

fn client_name(c: usize) -> String {
    format!("client{}", c + 1)
}

fn node_name(n: usize) -> String {
    format!("node{}", n + 1)
}

fn key_state(model: &LockModel, s: &State, n: usize) -> Option<KeyState> {
    let node = &s.nodes[n];
    if !node.alive {
        return None;
    }
    let e = node.data.entry(&model.cfg.key)?;
    let value = match &e.value {
        Value::Str(v) => Json::String(v.clone()),
        Value::Hash(fields) => Json::Object(
            fields
                .iter()
                .map(|(f, count)| (f.clone(), Json::from(*count)))
                .collect(),
        ),
    };
    Some(KeyState {
        value,
        owner: e.owner.map(|o| client_name(o as usize)),
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
    let mut out = match &c.phase {
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
            .map(node_name)
            .collect(),
        stock: s.stock.value,
        rejected: s.stock.rejected,
        clients: (0..s.clients.len())
            .map(|i| client_status(model, s, i))
            .collect(),
    }
}

/// Who takes `action` in state `before`.
fn actor(action: Action, before: &State) -> String {
    use Action::*;
    match action {
        Tick => "clock".to_string(),
        Replicate(n) => node_name(n as usize),
        Deliver(c, m) => match &before.clients[c as usize].flights[m as usize] {
            Some(f) => node_name(f.node as usize),
            None => client_name(c as usize),
        },
        Resume(_) | Heal(..) => "nemesis".to_string(),
        a if a.is_fault() => "nemesis".to_string(),
        a => a
            .client()
            .map(|c| client_name(c as usize))
            .unwrap_or_else(|| "nemesis".to_string()),
    }
}

/// The commands that are in flight after the step and were not before it.
fn new_flights(action: Action, before: &State, after: &State) -> Vec<Sent> {
    let Some(c) = action.client() else {
        return Vec::new();
    };
    let c = c as usize;
    let consumed = match action {
        Action::Deliver(_, m) | Action::Receive(_, m) | Action::Timeout(_, m) => Some(m as usize),
        _ => None,
    };
    let (Some(b), Some(a)) = (before.clients.get(c), after.clients.get(c)) else {
        return Vec::new();
    };
    a.flights
        .iter()
        .enumerate()
        .filter_map(|(m, f)| {
            let f = f.as_ref()?;
            let is_new = if consumed == Some(m) {
                f.held.is_none()
            } else {
                b.flights.get(m).and_then(Option::as_ref) != Some(f)
            };
            is_new.then(|| Sent {
                master: format!("master{}", m + 1),
                node: node_name(f.node as usize),
                command: f.command.to_string(),
            })
        })
        .collect()
}

/// The reply the node gives to a delivered request, found by running the very step on
/// a copy of the state in which the client is paused: the model then keeps the reply in
/// the flight instead of handing it to the client.
fn delivered_reply(model: &LockModel, before: &State, c: u8, m: u8) -> Option<String> {
    let mut paused = before.clone();
    paused.clients.get_mut(c as usize)?.paused = true;
    let next = model.next_state(&paused, Action::Deliver(c, m))?;
    let flight = next
        .clients
        .get(c as usize)?
        .flights
        .get(m as usize)?
        .as_ref()?;
    flight.held.as_ref().map(|r| r.to_string())
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

fn broken(model: &LockModel, before: &State, after: &State) -> Vec<String> {
    Property::ALL
        .into_iter()
        .filter(|&p| model.holds(p, before) && !model.holds(p, after))
        .map(|p| p.as_str().to_string())
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
        let flight = |c: u8, m: u8| state.clients[c as usize].flights[m as usize].clone();
        let (command, reply, held) = match action {
            Action::Deliver(c, m) => {
                let reply = delivered_reply(model, &state, c, m);
                let held = !state.clients[c as usize].running();
                (flight(c, m).map(|f| f.command.to_string()), reply, held)
            }
            Action::Receive(c, m) => {
                let f = flight(c, m);
                (
                    f.as_ref().map(|f| f.command.to_string()),
                    f.and_then(|f| f.held).map(|r| r.to_string()),
                    false,
                )
            }
            Action::Timeout(c, m) => (flight(c, m).map(|f| f.command.to_string()), None, false),
            _ => (join_commands(&sent), None, false),
        };
        steps.push(TraceStep {
            step: k + 1,
            action: action.to_string(),
            actor: actor(action, &state),
            kind: kind(action),
            command,
            reply,
            held,
            sent,
            after: snapshot(model, &next),
            broken: broken(model, &state, &next),
        });
        applied.push(EncodedAction::encode(action));
        state = next;
    }
    Trace {
        scenario: serde_json::to_value(&model.scenario).expect("a scenario serializes"),
        property: property.as_str().to_string(),
        initial,
        steps,
        actions: applied,
    }
}

/// Reads a trace written by [`Trace::to_json_pretty`]; its `property` and `actions` are
/// checked to decode.
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
    trace.property()?;
    trace.actions()?;
    Ok(trace)
}

impl Trace {
    /// Pretty-printed JSON.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a trace serializes")
    }

    /// The broken property.
    pub fn property(&self) -> Result<Property, TraceError> {
        self.property.parse().map_err(TraceError::Property)
    }

    /// The steps as model actions.
    pub fn actions(&self) -> Result<Vec<Action>, TraceError> {
        self.actions
            .iter()
            .enumerate()
            .map(|(index, a)| {
                a.decode()
                    .map_err(|message| TraceError::Action { index, message })
            })
            .collect()
    }

    /// The scenario name (empty when the embedded scenario has none).
    pub fn scenario_name(&self) -> &str {
        self.scenario
            .get("name")
            .and_then(Json::as_str)
            .unwrap_or_default()
    }

    /// The embedded scenario, validated again as if read from its file (so a trace is
    /// self-contained: replaying it needs no scenario file).
    pub fn scenario(&self) -> Result<Scenario, TraceError> {
        let mut value = self.scenario.clone();
        let path = value
            .as_object_mut()
            .and_then(|o| o.remove("path"))
            .and_then(|p| p.as_str().map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(format!("{}.toml", self.scenario_name())));
        let text = toml::to_string(&value).map_err(|e| TraceError::Scenario(e.to_string()))?;
        Ok(Scenario::parse(&text, path)?)
    }

    /// The trace as text for a terminal or a test report: one block per step with the
    /// clock, the command and reply, and the lock key on each node when it changed.
    pub fn narrate(&self) -> String {
        let mut out = String::new();
        let design = self
            .scenario
            .get("design")
            .and_then(Json::as_str)
            .unwrap_or("?");
        let _ = writeln!(
            out,
            "{} violates {} in {} steps (design {design})",
            self.scenario_name(),
            self.property,
            self.steps.len()
        );
        if let Some(summary) = self.scenario.get("summary").and_then(Json::as_str) {
            if !summary.is_empty() {
                let _ = writeln!(out, "  {summary}");
            }
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
        for step in &self.steps {
            let _ = writeln!(
                out,
                "  step {:<4} t={:<3}{}{}",
                step.step,
                step.after.clock,
                skew(&step.after),
                step.action
            );
            if let Some(command) = &step.command {
                let reply = match (&step.reply, step.kind.as_str()) {
                    (Some(r), _) if step.held => format!(" -> {r} (held: client paused)"),
                    (Some(r), _) => format!(" -> {r}"),
                    (None, "Timeout") => " -> no answer".to_string(),
                    _ => String::new(),
                };
                let _ = writeln!(out, "            {command}{reply}");
            }
            let follow_ups: Vec<&Sent> = match step.kind.as_str() {
                "Deliver" | "Receive" | "Timeout" => step.sent.iter().collect(),
                _ => Vec::new(),
            };
            for s in follow_ups {
                let _ = writeln!(out, "            then sends {} to {}", s.command, s.master);
            }
            if step.after.keys != last.keys || step.after.down != last.down {
                let _ = writeln!(out, "            {}", keys_line(&step.after));
            }
            let rejected = step.after.rejected > last.rejected;
            match step.kind.as_str() {
                _ if rejected => {
                    let _ = writeln!(
                        out,
                        "            REJECTED by the store: stale fencing token (stock stays {})",
                        step.after.stock
                    );
                }
                "Read" => {
                    let _ = writeln!(out, "            stock = {}", step.after.stock);
                }
                "Write" => {
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
                let _ = writeln!(out, "            BROKEN: {}", step.broken.join(", "));
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
        let name = node_name(n);
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
                let owner = k.owner.as_deref().unwrap_or("?");
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

    #[test]
    fn a_held_reply_is_recorded_at_delivery_and_at_receipt() {
        use Action::*;
        let scenario = Scenario::parse(PAUSE, "pause.toml").unwrap();
        let model = LockModel::new(&scenario);
        let path = [
            Acquire(0),
            Pause(0),
            Deliver(0, 0),
            Tick,
            Resume(0),
            Receive(0, 0),
        ];
        let t = build(&model, Property::MutualExclusion, &path);
        assert_eq!(t.steps.len(), path.len());
        let kinds: Vec<&str> = t.steps.iter().map(|s| s.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["Acquire", "Pause", "Deliver", "Tick", "Resume", "Receive"]
        );
        let actors: Vec<&str> = t.steps.iter().map(|s| s.actor.as_str()).collect();
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
        assert_eq!((key.owner.as_deref(), key.ttl), (Some("client1"), Some(3)));
        assert_eq!(key.value, Json::String("t1".into()));
        let text = t.narrate();
        assert!(
            text.contains("SET lock t1 NX PX 4 -> OK (held: client paused)"),
            "{text}"
        );

        // JSON round trip, and the embedded scenario is the original one.
        let back: Trace = serde_json::from_str(&t.to_json_pretty()).unwrap();
        assert_eq!(back.actions().unwrap(), path);
        assert_eq!(back.steps, t.steps);
        assert_eq!(back.scenario().unwrap(), scenario);

        // A path that stops applying ends the trace there.
        let t = build(
            &model,
            Property::MutualExclusion,
            &[Acquire(0), Receive(0, 0), Tick],
        );
        assert_eq!(t.steps.len(), 1);
    }

    #[test]
    fn every_action_round_trips() {
        use Action::*;
        let all = [
            Tick,
            Acquire(1),
            Deliver(1, 2),
            Receive(0, 1),
            Timeout(2, 0),
            Renew(3),
            Read(0),
            Write(1),
            Release(2),
            Reenter(3),
            Replicate(4),
            Pause(0),
            Resume(1),
            Crash(2),
            Failover(0, 3),
            Restart(2),
            Partition(1, 4),
            Heal(1, 4),
            NodeClockJump(2),
            ClientClockJump(1),
        ];
        for a in all {
            let e = EncodedAction::encode(a);
            assert_eq!(e.kind, format!("{a:?}").split('(').next().unwrap());
            let json = serde_json::to_string(&e).unwrap();
            let back: EncodedAction = serde_json::from_str(&json).unwrap();
            assert_eq!(back.decode(), Ok(a), "{json}");
        }
        let bad = EncodedAction::new("Deliver", Some(0), None, None);
        assert!(bad.decode().unwrap_err().contains("master"));
        let bad = EncodedAction::new("Teleport", None, None, None);
        assert!(bad.decode().unwrap_err().contains("Teleport"));
    }
}
