//! locklab's designs, built with the public [`LockBuilder`]: one `Lock` handle per
//! client (a handle is one client with one state machine and one key). The handles of
//! one run share their node connections through one [`Connections`], unless the row
//! shows the default of a connection per handle.

use std::time::Duration;

use locklab::driver::{Connections, Lock, LockBuilder, LockGuard};

use crate::contender::{BoxFuture, Client, Contender, Kind};

/// A locklab design on `masters` nodes.
pub struct Locklab {
    name: String,
    masters: usize,
    floor: String,
    builder: fn() -> LockBuilder,
    fencing: bool,
    ttl: Duration,
    share: bool,
}

impl Locklab {
    /// `builder` gives the design's builder (e.g. [`LockBuilder::lua_release`]); `floor`
    /// names the raw row that sends the same commands.
    pub fn new(
        name: &str,
        masters: usize,
        builder: fn() -> LockBuilder,
        fencing: bool,
        floor: &str,
        ttl: Duration,
    ) -> Locklab {
        Locklab {
            name: name.to_string(),
            masters,
            floor: floor.to_string(),
            builder,
            fencing,
            ttl,
            share: true,
        }
    }

    /// The same with a connection per handle (the builder's default), shown for
    /// information.
    pub fn own_connections(mut self, name: &str) -> Locklab {
        self.name = name.to_string();
        self.share = false;
        self
    }
}

impl Contender for Locklab {
    fn name(&self) -> &str {
        &self.name
    }

    fn masters(&self) -> usize {
        self.masters
    }

    fn kind(&self) -> Kind {
        if !self.share {
            return Kind::Info;
        }
        Kind::Locklab {
            floor: self.floor.clone(),
        }
    }

    fn clients<'a>(
        &'a self,
        urls: &'a [String],
        keys: Vec<String>,
    ) -> BoxFuture<'a, Result<Vec<Box<dyn Client>>, String>> {
        Box::pin(async move {
            let connections = Connections::new();
            let mut clients: Vec<Box<dyn Client>> = Vec::with_capacity(keys.len());
            for key in keys {
                let mut builder = (self.builder)();
                if self.share {
                    builder = builder.connections(&connections);
                }
                let lock = builder
                    .key(key)
                    .nodes(urls[..self.masters].iter().cloned())
                    .ttl(self.ttl)
                    .fencing(self.fencing)
                    .build()
                    .await
                    .map_err(|e| e.to_string())?;
                clients.push(Box::new(LocklabClient { lock, guard: None }));
            }
            Ok(clients)
        })
    }
}

struct LocklabClient {
    lock: Lock,
    guard: Option<LockGuard>,
}

impl Client for LocklabClient {
    fn acquire(&mut self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            self.guard = Some(self.lock.acquire().await.map_err(|e| e.to_string())?);
            Ok(())
        })
    }

    fn release(&mut self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let guard = self.guard.take().ok_or("nothing to release")?;
            self.lock.release(guard).await.map_err(|e| e.to_string())
        })
    }
}
