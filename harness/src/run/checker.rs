//! Judges a real [`History`] for the model's four properties (model/src/model.rs,
//! `LockModel::holds`), on real observations:
//!
//! - `mutual_exclusion`: never two clients inside their critical section at once. A
//!   client is inside from its grant ([`Event::Acquired`]) until its stock write is done
//!   ([`Event::Leave`]) or it crashes, as `LockModel::in_critical_section`.
//! - `owner_only_release`: no command of one client deleted or overwrote a lock entry
//!   written last by another client that still held it or was acquiring it
//!   ([`Event::Displaced`]; "holds" as in the model: from the start of an acquire
//!   attempt until the attempt fails, the client finishes, or crashes).
//! - `no_orphaned_lock`: no live node that serves the lock (a master slot's, or the old
//!   master of a split brain; a replica's copy is judged once it is promoted) ever
//!   showed the lock key without an expiry while
//!   no live client believed it held it (the client that wrote it crashed, or its
//!   attempt failed or it finished, e.g. after a timeout on a command that ran), as
//!   `LockModel::orphaned` (not judged for getset-timestamp, whose expiry is in the
//!   value, which every client honours).
//! - `resource_safety`: after every accepted stock write, stock = initial − accepted
//!   writes (no lost update); a rejected stale write never changes the stock.

use std::collections::BTreeMap;

use locklab::DesignId;
use locklab_model::ids::{ClientId, NodeId};
use locklab_model::scenario::Property;

use super::history::{Event, History};

/// Where a property first broke in a history.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// The property.
    pub property: Property,
    /// When (ms since the run started).
    pub ms: f64,
    /// What was seen, in words.
    pub detail: String,
}

/// The checker's verdicts: the first violation of each broken property, in the order
/// of [`Property::ALL`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdicts {
    pub violations: Vec<Violation>,
}

impl Verdicts {
    /// Whether `property` was violated.
    pub fn violated(&self, property: Property) -> bool {
        self.violations.iter().any(|v| v.property == property)
    }

    /// The violated properties, by name, in report order.
    pub fn names(&self) -> Vec<String> {
        self.violations
            .iter()
            .map(|v| v.property.as_str().to_string())
            .collect()
    }
}

/// Judge `history`.
pub fn check(history: &History) -> Verdicts {
    let mut first: BTreeMap<usize, Violation> = BTreeMap::new();
    let mut report = |property: Property, ms: f64, detail: String| {
        let i = Property::ALL
            .iter()
            .position(|p| *p == property)
            .unwrap_or(0);
        first.entry(i).or_insert(Violation {
            property,
            ms,
            detail,
        });
    };
    let mut inside: Vec<usize> = Vec::new();
    let mut holding: Vec<usize> = Vec::new();
    let mut crashed: Vec<usize> = Vec::new();
    let mut accepted: i64 = 0;
    let mut stock = history.initial_stock;
    for e in &history.entries {
        let ms = e.ms;
        match &e.event {
            Event::AcquireStart { client, .. } if !holding.contains(client) => {
                holding.push(*client);
            }
            Event::AcquireFailed { client, .. } | Event::Done { client } => {
                holding.retain(|c| c != client);
                inside.retain(|c| c != client);
            }
            Event::Crash { client } => {
                holding.retain(|c| c != client);
                inside.retain(|c| c != client);
                crashed.push(*client);
            }
            Event::Acquired { client, .. } => {
                if let Some(other) = inside.iter().find(|c| *c != client) {
                    report(
                        Property::MutualExclusion,
                        ms,
                        format!(
                            "{} entered its critical section while {} was still in its own",
                            ClientId::at(*client),
                            ClientId::at(*other)
                        ),
                    );
                }
                if !inside.contains(client) {
                    inside.push(*client);
                }
            }
            Event::Leave { client } => inside.retain(|c| c != client),
            Event::Displaced { node, by, owner } if by != owner && holding.contains(owner) => {
                report(
                    Property::OwnerOnlyRelease,
                    ms,
                    format!(
                        "{} deleted or overwrote the lock entry of {} on {} while {} held it",
                        ClientId::at(*by),
                        ClientId::at(*owner),
                        NodeId::at(*node),
                        ClientId::at(*owner)
                    ),
                );
            }
            Event::KeyObserved {
                node,
                owner,
                pttl_ms: -1,
            } if !owner.is_some_and(|o| holding.contains(&o))
                && history.design != DesignId::GetsetTimestamp =>
            {
                let whose = match owner {
                    Some(o) if crashed.contains(o) => {
                        format!("the lock of crashed {}", ClientId::at(*o))
                    }
                    Some(o) => format!(
                        "the lock of {}, which no longer believes it holds it,",
                        ClientId::at(*o)
                    ),
                    None => "a lock nobody wrote".to_string(),
                };
                report(
                    Property::NoOrphanedLock,
                    ms,
                    format!("{} holds {whose} with no expiry", NodeId::at(*node)),
                );
            }
            Event::StockWrite {
                client,
                value,
                accepted: ok,
                stock: after,
                ..
            } => {
                if *ok {
                    accepted += 1;
                    stock = *value;
                } else if *after != stock {
                    report(
                        Property::ResourceSafety,
                        ms,
                        format!(
                            "a rejected write of {} changed the stock to {after}",
                            ClientId::at(*client)
                        ),
                    );
                }
                let expected = history.initial_stock - accepted;
                if stock != expected {
                    report(
                        Property::ResourceSafety,
                        ms,
                        format!(
                            "lost update: stock is {stock} after {accepted} purchases from {} \
                             (expected {expected}); {} wrote it",
                            history.initial_stock,
                            ClientId::at(*client)
                        ),
                    );
                }
            }
            _ => {}
        }
    }
    Verdicts {
        violations: first.into_values().collect(),
    }
}
