//! The names of the model's participants: `client1`, `node2`, `master1`.
//!
//! The model counts clients, physical nodes and master slots from 0
//! (`Action::Acquire(0)`); people, narrations and traces count from 1. Each id keeps the
//! model's index and displays the name. A name is read back in one place only, the
//! ids' `Deserialize` (a trace file): code that needs the index takes it from the id
//! ([`ClientId::index`]), never from text.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! id {
    ($(#[$doc:meta])* $id:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $id(u8);

        impl $id {
            /// The one at `index` (from 0) of the model's state. The scenario bounds
            /// keep every count far below 256.
            pub fn at(index: usize) -> $id {
                $id(u8::try_from(index).expect(concat!($prefix, " indexes fit a u8")))
            }

            /// The model's index, from 0.
            pub fn index(self) -> usize {
                usize::from(self.0)
            }
        }

        impl From<u8> for $id {
            fn from(index: u8) -> $id {
                $id(index)
            }
        }

        impl fmt::Display for $id {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), u16::from(self.0) + 1)
            }
        }

        impl Serialize for $id {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $id {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$id, D::Error> {
                let name = String::deserialize(deserializer)?;
                number(&name, $prefix).map($id).ok_or_else(|| {
                    D::Error::custom(format_args!(
                        concat!("`{}` is not a ", $prefix, " name (", $prefix, "1, ", $prefix, "2, ...)"),
                        name
                    ))
                })
            }
        }
    };
}

id!(
    /// A client (a lock user), `client1` for index 0.
    ClientId,
    "client"
);

id!(
    /// A physical Redis node (masters first, then each master's replicas), `node1` for
    /// index 0.
    NodeId,
    "node"
);

id!(
    /// A master slot of the design (Redlock's independent masters; the slot a failover
    /// moves to another node), `master1` for index 0.
    MasterId,
    "master"
);

/// The index a name written as `{prefix}{n}` stands for: only the form `Display`
/// writes (no sign, no leading zero, from 1), so a name reads back to the id that
/// writes it.
fn number(name: &str, prefix: &str) -> Option<u8> {
    let digits = name.strip_prefix(prefix)?;
    if digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u16 = digits.parse().ok()?;
    u8::try_from(n.checked_sub(1)?).ok()
}

/// Who takes a step of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Actor {
    /// A client's own step: an acquire, a reply read, a timeout, a write.
    Client(ClientId),
    /// A node executing a request, or a replica catching up.
    Node(NodeId),
    /// The global clock (a tick).
    Clock,
    /// The fault injector: a fault, a resume, a heal.
    Nemesis,
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Client(c) => c.fmt(f),
            Actor::Node(n) => n.fmt(f),
            Actor::Clock => f.write_str("clock"),
            Actor::Nemesis => f.write_str("nemesis"),
        }
    }
}

impl Serialize for Actor {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Actor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Actor, D::Error> {
        let name = String::deserialize(deserializer)?;
        match name.as_str() {
            "clock" => Ok(Actor::Clock),
            "nemesis" => Ok(Actor::Nemesis),
            _ => number(&name, "client")
                .map(|c| Actor::Client(ClientId(c)))
                .or_else(|| number(&name, "node").map(|n| Actor::Node(NodeId(n))))
                .ok_or_else(|| {
                    D::Error::custom(format_args!(
                        "`{name}` is not an actor (client1, node1, ..., clock or nemesis)"
                    ))
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn back<T: for<'de> Deserialize<'de>>(name: &str) -> Result<T, String> {
        serde_json::from_value(serde_json::Value::from(name)).map_err(|e| e.to_string())
    }

    #[test]
    fn ids_display_from_1_and_read_back_to_the_same_index() {
        for i in [0usize, 1, 6, 254, 255] {
            let (c, n, m) = (ClientId::at(i), NodeId::at(i), MasterId::at(i));
            assert_eq!(c.to_string(), format!("client{}", i + 1));
            assert_eq!(n.to_string(), format!("node{}", i + 1));
            assert_eq!(m.to_string(), format!("master{}", i + 1));
            assert_eq!(serde_json::to_value(c).unwrap(), c.to_string().as_str());
            assert_eq!(back::<ClientId>(&c.to_string()), Ok(c));
            assert_eq!(back::<NodeId>(&n.to_string()), Ok(n));
            assert_eq!(back::<MasterId>(&m.to_string()), Ok(m));
            assert_eq!(back::<ClientId>(&c.to_string()).unwrap().index(), i);
        }
        assert_eq!(ClientId::from(2), ClientId::at(2));
    }

    #[test]
    fn only_the_written_form_reads_back() {
        for bad in [
            "client0",
            "client01",
            "client+1",
            "client",
            "client257",
            "Client1",
            "node1",
            " client1",
            "client1 ",
        ] {
            let err = back::<ClientId>(bad).unwrap_err();
            assert_eq!(
                err,
                format!("`{bad}` is not a client name (client1, client2, ...)")
            );
        }
        assert!(back::<NodeId>("client1").is_err());
        assert!(back::<MasterId>("node1").is_err());
        assert_eq!(back::<ClientId>("client256"), Ok(ClientId::at(255)));
    }

    #[test]
    fn actors_read_back_as_written() {
        let all = [
            Actor::Client(ClientId::at(1)),
            Actor::Node(NodeId::at(3)),
            Actor::Clock,
            Actor::Nemesis,
        ];
        let names: Vec<String> = all.iter().map(Actor::to_string).collect();
        assert_eq!(names, ["client2", "node4", "clock", "nemesis"]);
        for (a, name) in all.iter().zip(&names) {
            assert_eq!(serde_json::to_value(a).unwrap(), name.as_str());
            assert_eq!(back::<Actor>(name), Ok(*a));
        }
        assert_eq!(
            back::<Actor>("master1").unwrap_err(),
            "`master1` is not an actor (client1, node1, ..., clock or nemesis)"
        );
    }
}
