//! The published rslock crate as a contender: one `LockManager` per run, cloned into
//! every task (a manager holds one multiplexed connection per node, shared by its
//! clones), as rslock's users share it.

use std::time::Duration;

use locklab_bench::{BoxFuture, Client, Contender, Kind};
use rslock::{Lock, LockManager};

pub struct Rslock {
    name: String,
    masters: usize,
    ttl: Duration,
}

impl Rslock {
    pub fn new(masters: usize, ttl: Duration) -> Rslock {
        Rslock {
            name: "rslock".to_string(),
            masters,
            ttl,
        }
    }
}

impl Contender for Rslock {
    fn name(&self) -> &str {
        &self.name
    }

    fn masters(&self) -> usize {
        self.masters
    }

    fn kind(&self) -> Kind {
        Kind::Reference
    }

    fn clients<'a>(
        &'a self,
        urls: &'a [String],
        keys: Vec<String>,
    ) -> BoxFuture<'a, Result<Vec<Box<dyn Client>>, String>> {
        Box::pin(async move {
            let mut manager = LockManager::new(urls[..self.masters].to_vec());
            // Uncontended keys: the first attempt succeeds unless a node fails.
            manager.set_retry(1, Duration::from_millis(200));
            Ok(keys
                .into_iter()
                .map(|key| {
                    Box::new(RslockClient {
                        manager: manager.clone(),
                        key,
                        ttl: self.ttl,
                        held: None,
                    }) as Box<dyn Client>
                })
                .collect())
        })
    }
}

struct RslockClient {
    manager: LockManager,
    key: String,
    ttl: Duration,
    held: Option<Lock>,
}

impl Client for RslockClient {
    fn acquire(&mut self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let lock = self
                .manager
                .lock(self.key.as_bytes(), self.ttl)
                .await
                .map_err(|e| format!("{e:?}"))?;
            self.held = Some(lock);
            Ok(())
        })
    }

    fn release(&mut self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let lock = self.held.take().ok_or("nothing to release")?;
            self.manager.unlock(&lock).await;
            Ok(())
        })
    }
}
