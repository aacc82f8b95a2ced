//! What the runner measures: a contender makes clients, a client runs cycles.

use std::future::Future;
use std::pin::Pin;

/// A boxed future, so that contenders of different crates fit one list.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One client of one lock key: acquire, then release, over and over.
pub trait Client: Send + 'static {
    /// Take the lock (uncontended: each client has a key of its own).
    fn acquire(&mut self) -> BoxFuture<'_, Result<(), String>>;
    /// Give it back.
    fn release(&mut self) -> BoxFuture<'_, Result<(), String>>;
}

/// How a contender's row is compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The raw redis-rs floor for a command sequence.
    Floor,
    /// A locklab design; `floor` names the raw row sending the same commands.
    Locklab { floor: String },
    /// The published rslock crate: the outside reference.
    Reference,
    /// Shown for information only (e.g. the raw loop sharing one connection).
    Info,
}

/// Something to benchmark on `masters()` nodes.
pub trait Contender: Send + Sync {
    /// The row's name.
    fn name(&self) -> &str;
    /// How many of the containers it uses (the first ones).
    fn masters(&self) -> usize;
    /// How its figures are compared.
    fn kind(&self) -> Kind;
    /// One client per key, connected and ready; `urls` are the nodes to use. The
    /// contender decides how clients share connections, as its users would.
    fn clients<'a>(
        &'a self,
        urls: &'a [String],
        keys: Vec<String>,
    ) -> BoxFuture<'a, Result<Vec<Box<dyn Client>>, String>>;
}
