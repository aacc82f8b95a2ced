//! The adapter protocol (docs/ADAPTERS.md): how `locklab soak --client CMD` talks to a
//! lock library through a small program of its own, one JSON object per line.
//!
//! The harness writes one request per line on the adapter's stdin and reads one answer
//! per line on its stdout, in order; the adapter's stderr is its log. The first request
//! is `start` (where Redis is, the key, the ttl, the timeouts); the others are
//! `acquire`, `extend` and `release`, each answered `granted` true or false, or with the
//! library's own error text. This module is the protocol alone, without I/O: the
//! requests as lines, and each answer line parsed into an [`Answer`] or refused with a
//! [`ProtocolError`] that says what was wrong with which line.

use serde_json::{json, Map, Value};

/// What the harness tells an adapter before anything else.
#[derive(Clone, Debug, PartialEq)]
pub struct Start {
    /// The client id (`c{index}.{generation}`), for the adapter's log.
    pub client: String,
    /// The URL of each master, as the library must connect to it (through the soak's
    /// link proxies, so that partitions and lost replies strike the library's own
    /// connections).
    pub urls: Vec<String>,
    /// The lock key (the library may add its own prefix: it says so in its answer).
    pub key: String,
    /// The lease, ttl × tick_ms.
    pub ttl_ms: u64,
    /// The per-command timeout the soak's own clients use, for the library's socket
    /// timeouts where it has them.
    pub timeout_ms: u64,
    /// `WAIT n` after an acquire (0: none), sent by the adapter on the library's
    /// connection, as an application would.
    pub wait_replicas: u32,
    /// The `WAIT` timeout (ms), as the soak's own clients use it.
    pub wait_timeout_ms: u64,
    /// How often the scenario's lock renews while held (`None`: it does not).
    pub renew_every_ms: Option<u64>,
}

/// One request to an adapter.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    Start(Start),
    /// Take the lock; `token` is a value the library may store as the lock's value if
    /// it lets the caller choose one (the harness then knows whose key it sees).
    Acquire {
        token: String,
    },
    /// Extend the lease of the lock held (only to an adapter that asked for it).
    Extend,
    /// Release the lock held.
    Release,
}

impl Request {
    /// The request's name (`start`, `acquire`, `extend`, `release`).
    pub fn op(&self) -> &'static str {
        match self {
            Request::Start(_) => "start",
            Request::Acquire { .. } => "acquire",
            Request::Extend => "extend",
            Request::Release => "release",
        }
    }

    /// The request as one line of JSON (without the newline).
    pub fn line(&self) -> String {
        let value = match self {
            Request::Start(s) => json!({
                "op": "start",
                "client": s.client,
                "urls": s.urls,
                "key": s.key,
                "ttl_ms": s.ttl_ms,
                "timeout_ms": s.timeout_ms,
                "wait_replicas": s.wait_replicas,
                "wait_timeout_ms": s.wait_timeout_ms,
                "renew_every_ms": s.renew_every_ms,
            }),
            Request::Acquire { token } => json!({"op": "acquire", "token": token}),
            Request::Extend => json!({"op": "extend"}),
            Request::Release => json!({"op": "release"}),
        };
        value.to_string()
    }
}

/// The adapter's answer to `start`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ready {
    /// The library and its version, as the adapter names it (`redis-py 8.1.0`).
    pub library: String,
    /// The Redis key the library writes (the given key, or with the library's prefix).
    pub key: String,
    /// Whether the application must call `extend` while it holds the lock (the
    /// library has an explicit extend and no renewal of its own).
    pub extends: bool,
}

/// An answer to `acquire`, `extend` or `release`.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// The library did it.
    Granted {
        /// The value the library stored as the lock's value, if it says.
        token: Option<String>,
        /// A fencing token, if the library gives one.
        fence: Option<u64>,
        /// The validity the library computed, if it says (ms).
        validity_ms: Option<u64>,
    },
    /// The library said no (the lock is held, or no longer ours), without an error.
    Denied,
    /// The library raised an error; its own text.
    Error(String),
}

/// A line from an adapter that breaks the protocol.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("is not JSON ({0})")]
    NotJson(String),
    #[error("is not a JSON object")]
    NotObject,
    #[error("{0}")]
    Shape(String),
}

fn object(line: &str) -> Result<Map<String, Value>, ProtocolError> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ProtocolError::NotObject),
        Err(e) => Err(ProtocolError::NotJson(e.to_string())),
    }
}

fn string(map: &Map<String, Value>, key: &str) -> Result<Option<String>, ProtocolError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ProtocolError::Shape(format!(
            "`{key}` must be a string, got {other}"
        ))),
    }
}

/// A whole number honoured exactly, or refused (never narrowed).
fn number(map: &Map<String, Value>, key: &str) -> Result<Option<u64>, ProtocolError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| {
            ProtocolError::Shape(format!(
                "`{key}` must be a whole number from 0 to {}, got {n}",
                u64::MAX
            ))
        }),
        Some(other) => Err(ProtocolError::Shape(format!(
            "`{key}` must be a number, got {other}"
        ))),
    }
}

/// Parse the answer to `start`: `{"ready": true, "library": "...", "key": "...",
/// "extends": false}` (`key` defaults to the key given, `extends` to false), or
/// `{"error": "..."}` when the library could not be set up.
pub fn ready(line: &str, given_key: &str) -> Result<Result<Ready, String>, ProtocolError> {
    let map = object(line)?;
    if let Some(error) = string(&map, "error")? {
        return Ok(Err(error));
    }
    match map.get("ready") {
        Some(Value::Bool(true)) => {}
        _ => {
            return Err(ProtocolError::Shape(
                "the answer to `start` must have `\"ready\": true` (or an `error`)".into(),
            ))
        }
    }
    let library = string(&map, "library")?.ok_or_else(|| {
        ProtocolError::Shape("the answer to `start` must name the `library` and its version".into())
    })?;
    let key = string(&map, "key")?.unwrap_or_else(|| given_key.to_string());
    if key.is_empty() {
        return Err(ProtocolError::Shape("`key` must not be empty".into()));
    }
    let extends = match map.get("extends") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(ProtocolError::Shape(format!(
                "`extends` must be true or false, got {other}"
            )))
        }
    };
    Ok(Ok(Ready {
        library,
        key,
        extends,
    }))
}

/// Parse the answer to `acquire`, `extend` or `release`: `{"granted": true, "token":
/// "...", "fence": 7, "validity_ms": 480}` (all but `granted` optional), `{"granted":
/// false}`, or `{"error": "the library's text"}`.
pub fn answer(line: &str) -> Result<Answer, ProtocolError> {
    let map = object(line)?;
    if let Some(error) = string(&map, "error")? {
        return Ok(Answer::Error(error));
    }
    match map.get("granted") {
        Some(Value::Bool(true)) => Ok(Answer::Granted {
            token: string(&map, "token")?,
            fence: number(&map, "fence")?,
            validity_ms: number(&map, "validity_ms")?,
        }),
        Some(Value::Bool(false)) => Ok(Answer::Denied),
        Some(other) => Err(ProtocolError::Shape(format!(
            "`granted` must be true or false, got {other}"
        ))),
        None => Err(ProtocolError::Shape(
            "an answer must have `granted` (true or false) or `error`".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_one_json_line_each() {
        let start = Request::Start(Start {
            client: "c0.1".into(),
            urls: vec!["redis://127.0.0.1:7000".into()],
            key: "soak:lock".into(),
            ttl_ms: 500,
            timeout_ms: 250,
            wait_replicas: 1,
            wait_timeout_ms: 20,
            renew_every_ms: None,
        });
        let v: Value = serde_json::from_str(&start.line()).unwrap();
        assert_eq!(v["op"], "start");
        assert_eq!(v["urls"][0], "redis://127.0.0.1:7000");
        assert_eq!(v["ttl_ms"], 500);
        assert_eq!(v["renew_every_ms"], Value::Null);
        let acquire = Request::Acquire {
            token: "c0.1:3".into(),
        };
        assert_eq!(acquire.line(), r#"{"op":"acquire","token":"c0.1:3"}"#);
        assert!(!Request::Release.line().contains('\n'));
    }

    #[test]
    fn answers_are_granted_denied_or_the_library_s_error() {
        assert_eq!(
            answer(r#"{"granted": true}"#).unwrap(),
            Answer::Granted {
                token: None,
                fence: None,
                validity_ms: None
            }
        );
        assert_eq!(
            answer(r#"{"granted": true, "token": "abc", "fence": 7, "validity_ms": 480}"#).unwrap(),
            Answer::Granted {
                token: Some("abc".into()),
                fence: Some(7),
                validity_ms: Some(480)
            }
        );
        assert_eq!(answer(r#"{"granted": false}"#).unwrap(), Answer::Denied);
        assert_eq!(
            answer(r#"{"error": "LockNotOwnedError: Cannot release"}"#).unwrap(),
            Answer::Error("LockNotOwnedError: Cannot release".into())
        );
    }

    #[test]
    fn a_line_that_breaks_the_protocol_says_why() {
        assert!(matches!(answer("garbage"), Err(ProtocolError::NotJson(_))));
        assert_eq!(answer("[1]"), Err(ProtocolError::NotObject));
        let e = answer(r#"{"granted": "yes"}"#).unwrap_err().to_string();
        assert!(e.contains("`granted` must be true or false"), "{e}");
        let e = answer(r#"{"ok": true}"#).unwrap_err().to_string();
        assert!(e.contains("`granted`"), "{e}");
        // A fencing token is honoured exactly or refused, never narrowed.
        let e = answer(r#"{"granted": true, "fence": -1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`fence`"), "{e}");
        let e = answer(r#"{"granted": true, "fence": 1.5}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`fence`"), "{e}");
    }

    #[test]
    fn ready_names_the_library_and_the_key_it_writes() {
        let r = ready(
            r#"{"ready": true, "library": "pottery 3.0.1", "key": "redlock:k"}"#,
            "k",
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.key, "redlock:k");
        assert!(!r.extends);
        let r = ready(r#"{"ready": true, "library": "x 1", "extends": true}"#, "k")
            .unwrap()
            .unwrap();
        assert_eq!((r.key.as_str(), r.extends), ("k", true));
        assert_eq!(
            ready(
                r#"{"error": "ModuleNotFoundError: No module named 'redis'"}"#,
                "k"
            )
            .unwrap(),
            Err("ModuleNotFoundError: No module named 'redis'".into())
        );
        assert!(ready(r#"{"ready": true}"#, "k").is_err());
        assert!(ready(r#"{"granted": true}"#, "k").is_err());
    }
}
