//! The `rslock` crate (Redlock) through locklab's soak protocol (docs/ADAPTERS.md):
//! one JSON request per line on stdin, one answer per line on stdout.
//!
//! rslock as its README uses it: `LockManager::new(urls)`, `lock(key, ttl)` (its own
//! retries: 3 tries a random 0-200 ms apart, each a parallel `SET NX PX` on every
//! master, granted when a majority said yes and `ttl - elapsed - (ttl * 0.01 + 2 ms)`
//! is positive, released on every master otherwise) and `unlock(&lock)` (a Lua
//! compare-and-delete on every master, best effort). The lock's value is 20 random
//! bytes, reported (lossily as UTF-8, as the harness reads the key) so that the harness
//! knows whose key it sees. rslock sets no command timeout of its own.

use std::io::{BufRead, Write};
use std::time::Duration;

use rslock::{Lock, LockError, LockManager};
use serde_json::{json, Value};

struct Adapter {
    manager: LockManager,
    key: String,
    ttl: Duration,
    held: Option<Lock>,
}

impl Adapter {
    async fn acquire(&mut self) -> Value {
        match self.manager.lock(self.key.as_str(), self.ttl).await {
            Ok(lock) => {
                let answer = json!({
                    "granted": true,
                    "token": String::from_utf8_lossy(&lock.val),
                    "validity_ms": lock.validity_time,
                });
                self.held = Some(lock);
                answer
            }
            // The resource is held (no majority within its retries): a plain no.
            Err(LockError::Unavailable) => json!({"granted": false}),
            Err(e) => json!({"error": format!("LockError: {e}")}),
        }
    }

    async fn release(&mut self) -> Value {
        match self.held.take() {
            // Best effort, as the library's: it says nothing of what each master did.
            Some(lock) => {
                self.manager.unlock(&lock).await;
                json!({"granted": true})
            }
            None => json!({"error": "release without a lock held"}),
        }
    }
}

fn start(request: &Value) -> Result<(Adapter, Value), String> {
    let urls: Vec<String> = request["urls"]
        .as_array()
        .ok_or("`urls` missing")?
        .iter()
        .filter_map(|u| u.as_str().map(str::to_string))
        .collect();
    let key = request["key"].as_str().ok_or("`key` missing")?.to_string();
    let ttl = request["ttl_ms"].as_u64().ok_or("`ttl_ms` missing")?;
    let adapter = Adapter {
        manager: LockManager::new(urls),
        key: key.clone(),
        ttl: Duration::from_millis(ttl),
        held: None,
    };
    let ready = json!({"ready": true, "library": "rslock 0.10.0", "key": key});
    Ok((adapter, ready))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut adapter: Option<Adapter> = None;
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let request: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        let answer = match (request["op"].as_str(), adapter.as_mut()) {
            (Some("start"), _) => match start(&request) {
                Ok((a, ready)) => {
                    adapter = Some(a);
                    ready
                }
                Err(e) => json!({"error": e}),
            },
            (Some("acquire"), Some(a)) => a.acquire().await,
            (Some("release"), Some(a)) => a.release().await,
            (op, _) => json!({"error": format!("unexpected request {op:?} (start first)")}),
        };
        if writeln!(stdout, "{answer}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}
