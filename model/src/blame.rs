//! Which step of a custom lock broke a property, read from a counterexample: the fix for
//! a lock a team brings names its own step and command, not a built-in design's advice.
//!
//! The counterexample is replayed through the model and the request that did the harm is
//! found in the states themselves (the flight or stray it delivered, the lock key before
//! and after on its node), never parsed back from the narration:
//!
//! - `owner_only_release`: the delivery that deleted or rewrote another client's entry;
//! - `mutual_exclusion`: the acquire (or re-entry) step that let the second holder in, and
//!   whether it found the first holder's key still there (the step does not check),
//!   deleted by a step while that holder was still inside (an inner release of a
//!   reentrant lock that forgot the count), or gone (it expired or was lost with a node:
//!   a question of leases, not of a step);
//! - `no_orphaned_lock`: the step that wrote the entry left without an expiry.

use std::sync::Arc;

use locklab::design::custom::StepName;
use locklab::Command;

use crate::ids::{ClientId, NodeId};
use crate::model::{Action, LockModel};
use crate::run_fault::step_of;
use crate::scenario::Property;
use crate::search::replay;
use crate::state::State;

/// The request a violation comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blame {
    /// The trace step (from 1) at which the request ran.
    pub step: usize,
    /// The client that sent it.
    pub client: ClientId,
    /// The physical node that ran it.
    pub node: NodeId,
    /// The lock's step that sent it.
    pub name: StepName,
    /// The command, as redis-cli would type it (a script as `EVAL <name> ...`).
    pub command: String,
    /// What it did.
    pub harm: Harm,
}

/// What the blamed request did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Harm {
    /// It deleted (`deleted`) or rewrote the entry of another client.
    Displaced {
        victim: Option<ClientId>,
        deleted: bool,
    },
    /// It granted the lock while another client's entry was on the node.
    GrantedOverLive { holder: Option<ClientId> },
    /// It granted the lock on a node from which a step had deleted the first holder's
    /// entry while that holder was still inside: `by` is that step's request (its
    /// `harm` is this same kind, with `by` empty).
    GrantedAfterDelete { by: Option<Box<Blame>> },
    /// It granted the lock on a node without the first holder's entry: that entry had
    /// expired or was lost with a node; `paused` when that holder's process was
    /// stopped (stop-the-world) at the time.
    GrantedAfterLoss { paused: bool },
    /// It wrote the entry that is left without an expiry.
    LeftWithoutExpiry,
}

/// The request `actions` (a counterexample of `property`) blames, for a custom lock;
/// `None` for a built-in design, for a property no single request breaks
/// (`resource_safety`), or when the path does not replay.
pub fn blame(model: &LockModel, actions: &[Action], property: Property) -> Option<Blame> {
    let lock = model.cfg.custom.as_ref()?;
    let states = replay(model, actions)?;
    let key = model.cfg.key.as_str();
    let entry_owner = |s: &State, node: usize| s.nodes[node].data.entry(key).map(|e| e.owner);
    // Each delivery: its index, client, command and node.
    let delivered = |i: usize| -> Option<(usize, Arc<Command>, usize)> {
        let s = &states[i];
        let (c, flight) = match actions[i] {
            Action::Deliver(c, m) => (
                c,
                s.clients[usize::from(c)].core.flights[usize::from(m)].as_ref()?,
            ),
            Action::DeliverLate(c, k) => (
                c,
                &s.clients[usize::from(c)]
                    .core
                    .strays
                    .get(usize::from(k))?
                    .flight,
            ),
            _ => return None,
        };
        Some((
            usize::from(c),
            flight.command.clone(),
            usize::from(flight.node),
        ))
    };
    let named = |i: usize, harm: Harm| -> Option<Blame> {
        let (client, command, node) = delivered(i)?;
        let (name, _) = step_of(lock, &model.cfg, &command)?;
        Some(Blame {
            step: i + 1,
            client: ClientId::at(client),
            node: NodeId::at(node),
            name,
            command: command.to_string(),
            harm,
        })
    };
    match property {
        Property::OwnerOnlyRelease => (0..actions.len()).find_map(|i| {
            if states[i].displaced_other || !states[i + 1].displaced_other {
                return None;
            }
            let (_, _, node) = delivered(i)?;
            let victim = entry_owner(&states[i], node).flatten().map(ClientId::from);
            let deleted = entry_owner(&states[i + 1], node).is_none();
            named(i, Harm::Displaced { victim, deleted })
        }),
        Property::MutualExclusion => {
            // The client whose entry into the critical section made two holders.
            let end = states.len() - 1;
            let entered = (0..end).rev().find_map(|j| {
                let c = (0..states[j].clients.len()).find(|&c| {
                    !model.in_critical_section(&states[j].clients[c])
                        && model.in_critical_section(&states[j + 1].clients[c])
                })?;
                Some((j, c))
            })?;
            let (j, c) = entered;
            // Its last acquire or re-entry request that ran before it entered.
            (0..=j).rev().find_map(|i| {
                let (client, command, node) = delivered(i)?;
                let (name, _) = step_of(lock, &model.cfg, &command)?;
                if client != c || !matches!(name, StepName::Acquire(_) | StepName::Reenter) {
                    return None;
                }
                // The first holder: another client inside when the second got in.
                let paused = states[j + 1]
                    .clients
                    .iter()
                    .enumerate()
                    .any(|(o, cl)| o != c && model.in_critical_section(cl) && cl.paused);
                let lost = Harm::GrantedAfterLoss { paused };
                let harm = match entry_owner(&states[i], node) {
                    Some(owner) if owner != u8::try_from(c).ok() => Harm::GrantedOverLive {
                        holder: owner.map(ClientId::from),
                    },
                    Some(_) => lost,
                    None => {
                        // The last time a request took the entry off this node, if the
                        // entry's client was still inside then.
                        let deleted = (0..i).rev().find(|&d| {
                            entry_owner(&states[d], node).is_some()
                                && entry_owner(&states[d + 1], node).is_none()
                        });
                        let by = deleted.and_then(|d| {
                            let owner = entry_owner(&states[d], node).flatten()?;
                            let inside = model
                                .in_critical_section(&states[d + 1].clients[usize::from(owner)]);
                            inside.then(|| named(d, Harm::GrantedAfterDelete { by: None }))?
                        });
                        match by {
                            Some(by) => Harm::GrantedAfterDelete {
                                by: Some(Box::new(by)),
                            },
                            None => lost,
                        }
                    }
                };
                named(i, harm)
            })
        }
        Property::NoOrphanedLock => (0..actions.len()).rev().find_map(|i| {
            let (_, _, node) = delivered(i)?;
            let before = states[i].nodes[node].data.entry(key);
            let after = states[i + 1].nodes[node].data.entry(key)?;
            if before == Some(after) || after.expires_at.is_some() {
                return None;
            }
            named(i, Harm::LeftWithoutExpiry)
        }),
        Property::ResourceSafety => None,
    }
}
