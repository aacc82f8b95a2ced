//! The raw floor: the commands a design sends, sent directly with redis-rs on the
//! connection settings locklab's driver uses (its default timeouts), with nothing
//! around them. Multi-node sequences go to every node at once ([`join_all`]).

use locklab::driver::NodeTimeouts;
use locklab::Script;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Value};

use crate::contender::{BoxFuture, Client, Contender, Kind};
use crate::fanout::join_all;

/// The command sequence of one acquire+release cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sequence {
    /// `SET key token NX PX ttl`, then `EVALSHA` compare-and-delete (on every node).
    SetThenCompareDelete,
    /// As above with `INCR key:fence` on node 0 after the `SET`.
    SetIncrThenCompareDelete,
    /// `EVALSHA` of the reentrant lock script, then of the unlock script.
    ReentrantScripts,
}

/// How the clients of one run reach the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// Each client has connections of its own, as a locklab `Lock` by default.
    PerClient,
    /// All clients multiplex one connection per node.
    OneConnection,
}

/// A raw redis-rs contender.
pub struct Raw {
    name: String,
    masters: usize,
    sequence: Sequence,
    sharing: Sharing,
    kind: Kind,
    ttl_ms: u64,
}

impl Raw {
    /// The floor for `sequence` on `masters` nodes: every client on one multiplexed
    /// connection per node, as locklab's locks sharing [`Connections`].
    ///
    /// [`Connections`]: locklab::driver::Connections
    pub fn floor(name: &str, masters: usize, sequence: Sequence, ttl_ms: u64) -> Raw {
        Raw {
            name: name.to_string(),
            masters,
            sequence,
            sharing: Sharing::OneConnection,
            kind: Kind::Floor,
            ttl_ms,
        }
    }

    /// The same with connections of its own per client, shown for information.
    pub fn connection_per_client(name: &str, masters: usize, ttl_ms: u64) -> Raw {
        Raw {
            name: name.to_string(),
            masters,
            sequence: Sequence::SetThenCompareDelete,
            sharing: Sharing::PerClient,
            kind: Kind::Info,
            ttl_ms,
        }
    }
}

/// A connection with the driver's default connect and response timeouts.
pub async fn connect(url: &str) -> Result<MultiplexedConnection, String> {
    let timeouts = NodeTimeouts::default();
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(timeouts.connect))
        .set_response_timeout(Some(timeouts.command));
    let client = redis::Client::open(url).map_err(|e| format!("{url}: {e}"))?;
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| format!("{url}: {e}"))
}

async fn connect_all(urls: &[String]) -> Result<Vec<MultiplexedConnection>, String> {
    let mut conns = Vec::with_capacity(urls.len());
    for url in urls {
        conns.push(connect(url).await?);
    }
    Ok(conns)
}

impl Contender for Raw {
    fn name(&self) -> &str {
        &self.name
    }

    fn masters(&self) -> usize {
        self.masters
    }

    fn kind(&self) -> Kind {
        self.kind.clone()
    }

    fn clients<'a>(
        &'a self,
        urls: &'a [String],
        keys: Vec<String>,
    ) -> BoxFuture<'a, Result<Vec<Box<dyn Client>>, String>> {
        Box::pin(async move {
            let urls = &urls[..self.masters];
            let shared = match self.sharing {
                Sharing::OneConnection => Some(connect_all(urls).await?),
                Sharing::PerClient => None,
            };
            let mut clients: Vec<Box<dyn Client>> = Vec::with_capacity(keys.len());
            for key in keys {
                let conns = match &shared {
                    Some(conns) => conns.clone(),
                    None => connect_all(urls).await?,
                };
                clients.push(Box::new(RawClient {
                    conns,
                    sequence: self.sequence,
                    ttl_ms: self.ttl_ms,
                    fence_key: format!("{key}:fence"),
                    key,
                    id: format!("{:032x}", rand_id()),
                    attempts: 0,
                    token: String::new(),
                    lock: redis::Script::new(Script::ReentrantLock.lua()),
                    unlock: redis::Script::new(Script::ReentrantUnlock.lua()),
                    delete: redis::Script::new(Script::CompareAndDelete.lua()),
                }));
            }
            Ok(clients)
        })
    }
}

/// 128 bits for a client id, from the std hasher's random keys (no RNG dependency).
fn rand_id() -> u128 {
    use std::hash::{BuildHasher, RandomState};
    let a = RandomState::new().hash_one(1u8) as u128;
    let b = RandomState::new().hash_one(2u8) as u128;
    (a << 64) | b
}

struct RawClient {
    conns: Vec<MultiplexedConnection>,
    sequence: Sequence,
    ttl_ms: u64,
    key: String,
    fence_key: String,
    id: String,
    attempts: u64,
    token: String,
    lock: redis::Script,
    unlock: redis::Script,
    delete: redis::Script,
}

fn check(reply: redis::RedisResult<Value>, ok: impl Fn(&Value) -> bool) -> Result<(), String> {
    match reply {
        Ok(v) if ok(&v) => Ok(()),
        Ok(v) => Err(format!("unexpected reply {v:?}")),
        Err(e) => Err(e.to_string()),
    }
}

impl Client for RawClient {
    fn acquire(&mut self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            self.attempts += 1;
            self.token = format!("{}:{}", self.id, self.attempts);
            match self.sequence {
                Sequence::ReentrantScripts => {
                    let mut conn = self.conns[0].clone();
                    let r = self
                        .lock
                        .key(&self.key)
                        .arg(self.ttl_ms)
                        .arg(&self.token)
                        .invoke_async::<Value>(&mut conn)
                        .await;
                    check(r, |v| *v == Value::Nil)
                }
                Sequence::SetThenCompareDelete | Sequence::SetIncrThenCompareDelete => {
                    let sets = self.conns.iter().map(|conn| {
                        let mut conn = conn.clone();
                        let cmd = redis::cmd("SET")
                            .arg(&self.key)
                            .arg(&self.token)
                            .arg("NX")
                            .arg("PX")
                            .arg(self.ttl_ms)
                            .to_owned();
                        async move { cmd.query_async::<Value>(&mut conn).await }
                    });
                    let replies = join_all(sets.collect()).await;
                    for r in replies {
                        check(r, |v| matches!(v, Value::Okay))?;
                    }
                    if self.sequence == Sequence::SetIncrThenCompareDelete {
                        let r = redis::cmd("INCR")
                            .arg(&self.fence_key)
                            .query_async::<Value>(&mut self.conns[0].clone())
                            .await;
                        check(r, |v| matches!(v, Value::Int(_)))?;
                    }
                    Ok(())
                }
            }
        })
    }

    fn release(&mut self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            match self.sequence {
                Sequence::ReentrantScripts => {
                    let mut conn = self.conns[0].clone();
                    let r = self
                        .unlock
                        .key(&self.key)
                        .arg(self.ttl_ms)
                        .arg(&self.token)
                        .invoke_async::<Value>(&mut conn)
                        .await;
                    check(r, |v| *v == Value::Int(1))
                }
                _ => {
                    let dels = self.conns.iter().map(|conn| {
                        let mut conn = conn.clone();
                        let mut invocation = self.delete.key(&self.key);
                        invocation.arg(&self.token);
                        async move { invocation.invoke_async::<Value>(&mut conn).await }
                    });
                    for r in join_all(dels.collect()).await {
                        check(r, |v| *v == Value::Int(1))?;
                    }
                    Ok(())
                }
            }
        })
    }
}
