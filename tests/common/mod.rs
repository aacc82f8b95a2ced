//! Shared helpers of the integration tests: Redis containers and raw Redis access.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use locklab_cluster::{Cluster, Node};
use redis::AsyncCommands;

/// Redis masters (and replicas) in containers, from `locklab-cluster`. Removed when
/// dropped. Without Docker or the image, starting fails with the cluster crate's message
/// (which says how to build the image): these tests never skip.
pub struct Redis {
    cluster: Cluster,
}

impl Redis {
    /// `n` independent masters.
    pub async fn start(n: usize) -> Redis {
        Redis::with_replicas(n, 0).await
    }

    /// `n` masters with `r` asynchronous replicas each.
    pub async fn with_replicas(n: usize, r: usize) -> Redis {
        let cluster = Cluster::builder()
            .masters(n)
            .replicas(r)
            .start()
            .await
            .unwrap_or_else(|e| panic!("cannot start Redis containers: {e}"));
        Redis { cluster }
    }

    /// Master `i`.
    pub fn master(&self, i: usize) -> &Node {
        self.cluster.master(i)
    }

    /// URL of master `i`.
    pub fn url(&self, i: usize) -> String {
        self.master(i).url()
    }

    /// URLs of every master.
    pub fn urls(&self) -> Vec<String> {
        self.cluster.master_urls()
    }

    /// Stop master `i` (`docker stop`).
    pub async fn stop(&self, i: usize) {
        self.master(i).stop().await.unwrap();
    }

    /// Freeze master `i` (`docker pause`).
    pub async fn pause(&self, i: usize) {
        self.master(i).pause().await.unwrap();
    }

    /// Undo [`Redis::pause`].
    pub async fn unpause(&self, i: usize) {
        self.master(i).unpause().await.unwrap();
    }
}

/// A direct connection to one node, to look at (or tamper with) what the lock did.
#[derive(Clone)]
pub struct Raw {
    conn: redis::aio::MultiplexedConnection,
}

impl Raw {
    pub async fn new(url: &str) -> Raw {
        let client = redis::Client::open(url).unwrap();
        Raw {
            conn: client.get_multiplexed_async_connection().await.unwrap(),
        }
    }
    pub async fn exists(&self, key: &str) -> bool {
        self.conn.clone().exists(key).await.unwrap()
    }
    pub async fn pttl(&self, key: &str) -> i64 {
        self.conn.clone().pttl(key).await.unwrap()
    }
    pub async fn get(&self, key: &str) -> Option<String> {
        self.conn.clone().get(key).await.unwrap()
    }
    pub async fn hget(&self, key: &str, field: &str) -> Option<i64> {
        self.conn.clone().hget(key, field).await.unwrap()
    }
    pub async fn set_px(&self, key: &str, value: &str, px: u64) {
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg(value)
            .arg("PX")
            .arg(px)
            .query_async(&mut self.conn.clone())
            .await
            .unwrap();
    }
    /// `CLIENT PAUSE ms ALL`: the node answers no client for `ms`.
    pub async fn client_pause(&self, ms: u64) {
        let _: () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(ms)
            .arg("ALL")
            .query_async(&mut self.conn.clone())
            .await
            .unwrap();
    }
    pub async fn del(&self, key: &str) {
        let _: i64 = self.conn.clone().del(key).await.unwrap();
    }
}

/// Poll `cond` every 20 ms until it holds or `limit` passes; whether it held.
pub async fn eventually<F, Fut>(limit: Duration, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let end = tokio::time::Instant::now() + limit;
    loop {
        if cond().await {
            return true;
        }
        if tokio::time::Instant::now() >= end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

impl Raw {
    /// Wait until `key` is gone (at most `limit`); whether it went.
    pub async fn gone_within(&self, key: &str, limit: Duration) -> bool {
        eventually(limit, || async { !self.exists(key).await }).await
    }
}

/// A key unique to one test.
pub fn key(name: &str) -> String {
    format!("locklab-test:{name}:{:x}", rand::random::<u32>())
}
