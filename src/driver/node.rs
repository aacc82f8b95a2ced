//! One Redis node: a redis-rs connection with timeouts set on purpose, and the
//! translation between locklab's [`Command`]/[`Reply`] and real Redis commands.
//!
//! The harness replays model traces command by command through [`Node::execute`], so
//! this is the one place where locklab's commands meet the wire.
//!
//! A node is either a fixed URL or the master of a service that Redis Sentinel names
//! ([`Node::sentinel`]). The latter asks the sentinels for the master whenever it has
//! to (re)connect, and forgets its connection after a connection error, a timeout or a
//! `READONLY` reply, so that the next command goes to whichever node Sentinel has
//! promoted meanwhile.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::sentinel::Sentinel;
use redis::{AsyncConnectionConfig, Client, ErrorKind, RedisError, ServerErrorKind, Value};

use super::error::{LockError, Redacted};
use crate::command::{Arg, Command, Reply};
use crate::script::Script;

/// How long a node may take. redis-rs would otherwise wait 500 ms for a response
/// (and its own default for connecting); both are set here on purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeTimeouts {
    /// Establishing a connection.
    pub connect: Duration,
    /// One command, from sending it to its reply (an `EVALSHA` that needs a
    /// `SCRIPT LOAD` and a second `EVALSHA` counts as one command). `WAIT` gets its
    /// own timeout on top, since Redis holds its reply for up to that long.
    pub command: Duration,
}

impl Default for NodeTimeouts {
    fn default() -> Self {
        NodeTimeouts {
            connect: Duration::from_millis(1000),
            command: Duration::from_millis(250),
        }
    }
}

/// Where a node's multiplexed connection lives: one node's own, or shared by the
/// nodes of several locks (see [`Connections`](super::Connections)).
#[derive(Default)]
pub(crate) struct ConnectionSlot {
    /// The connection, once made: a plain mutex, held only to clone it out.
    current: Mutex<Option<MultiplexedConnection>>,
    /// Held while connecting, so that concurrent commands make one connection.
    connecting: tokio::sync::Mutex<()>,
    /// The master Sentinel named last (`redis://ip:port`), for errors; `None` for a
    /// node with a fixed URL.
    master: Mutex<Option<String>>,
}

impl ConnectionSlot {
    fn get(&self) -> Option<MultiplexedConnection> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set(&self, conn: Option<MultiplexedConnection>) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = conn;
    }

    fn master(&self) -> Option<String> {
        self.master
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_master(&self, master: Option<String>) {
        *self.master.lock().unwrap_or_else(|e| e.into_inner()) = master;
    }
}

/// What a node connects to.
enum Target {
    /// A fixed URL.
    Url(Client),
    /// The master of `service`, as the sentinels name it.
    Sentinel {
        service: String,
        /// Each sentinel (its URL as shown in errors) with redis-rs' client of it
        /// alone, so that a failure can be pinned on the sentinel that had it.
        sentinels: Vec<(String, tokio::sync::Mutex<Sentinel>)>,
    },
}

/// One Redis node, connected lazily and reconnected after a connection error.
///
/// Cheap to share behind an `Arc`; commands on one node are multiplexed on one
/// connection (shared with other locks' nodes when built with the same
/// [`Connections`](super::Connections)).
pub struct Node {
    index: usize,
    url: String,
    shown: String,
    target: Target,
    timeouts: NodeTimeouts,
    slot: Arc<ConnectionSlot>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("index", &self.index)
            .field("url", &self.shown)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

/// The redis-rs script object (text and SHA1) of a locklab script: the built-ins made
/// once, a custom one per call. [`Node::execute`] sends its EVALSHA and, on NOSCRIPT,
/// its SCRIPT LOAD.
fn redis_script(script: &Script) -> Cow<'static, redis::Script> {
    if let Script::Custom(custom) = script {
        // redis-rs hashes the text once per object; a custom lock's scripts are few and
        // short, so making the object per call costs a SHA-1 of a few hundred bytes.
        return Cow::Owned(redis::Script::new(&custom.text));
    }
    static SCRIPTS: OnceLock<Vec<redis::Script>> = OnceLock::new();
    let all = SCRIPTS.get_or_init(|| {
        Script::ALL
            .iter()
            .map(|s| redis::Script::new(s.lua()))
            .collect()
    });
    let i = Script::ALL
        .iter()
        .position(|s| s == script)
        .expect("every built-in script is in Script::ALL");
    Cow::Borrowed(&all[i])
}

impl Node {
    /// A node at `url` (e.g. `redis://127.0.0.1:6379`), known as node `index` in errors.
    /// Does not connect: the first command does (see [`Node::connect`]).
    pub fn new(index: usize, url: &str, timeouts: NodeTimeouts) -> Result<Node, LockError> {
        Node::with_slot(index, url, timeouts, Arc::default())
    }

    /// A node whose connection lives in `slot` (possibly shared).
    pub(crate) fn with_slot(
        index: usize,
        url: &str,
        timeouts: NodeTimeouts,
        slot: Arc<ConnectionSlot>,
    ) -> Result<Node, LockError> {
        let shown = Redacted(url).to_string();
        let client = Client::open(url).map_err(|source| LockError::InvalidUrl {
            node: index,
            url: shown.clone(),
            source,
        })?;
        Ok(Node {
            index,
            url: url.to_string(),
            shown,
            target: Target::Url(client),
            timeouts,
            slot,
        })
    }

    /// The master of `service` as Redis Sentinel names it, asked of the sentinels at
    /// `sentinel_urls` (e.g. `redis://127.0.0.1:26379`) in order, the first usable
    /// answer winning. Does not connect: the first command does. Its [`url`](Self::url)
    /// is `sentinel://<service>` followed by the sentinels' URLs.
    pub fn sentinel(
        index: usize,
        sentinel_urls: &[String],
        service: &str,
        timeouts: NodeTimeouts,
    ) -> Result<Node, LockError> {
        Node::sentinel_with_slot(index, sentinel_urls, service, timeouts, Arc::default())
    }

    /// [`Node::sentinel`] with its connection in `slot` (possibly shared).
    pub(crate) fn sentinel_with_slot(
        index: usize,
        sentinel_urls: &[String],
        service: &str,
        timeouts: NodeTimeouts,
        slot: Arc<ConnectionSlot>,
    ) -> Result<Node, LockError> {
        if sentinel_urls.is_empty() || service.is_empty() {
            return Err(LockError::Config(
                "Sentinel needs at least one sentinel URL and a service name".into(),
            ));
        }
        let sentinels = sentinel_urls
            .iter()
            .enumerate()
            .map(|(i, url)| {
                let shown = Redacted(url).to_string();
                match Sentinel::build(vec![url.as_str()]) {
                    Ok(s) => Ok((shown, tokio::sync::Mutex::new(s))),
                    Err(e) => Err(LockError::Config(format!(
                        "sentinel {i} ({shown}): invalid Redis URL: {e}"
                    ))),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let url = sentinel_key(sentinel_urls, service);
        let shown = format!(
            "sentinel://{service} ({})",
            sentinels
                .iter()
                .map(|(s, _)| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(Node {
            index,
            url,
            shown,
            target: Target::Sentinel {
                service: service.to_string(),
                sentinels,
            },
            timeouts,
            slot,
        })
    }

    /// Whether the node follows Sentinel.
    pub fn follows_sentinel(&self) -> bool {
        matches!(self.target, Target::Sentinel { .. })
    }

    /// The master Sentinel named last (`redis://ip:port`), if the node follows
    /// Sentinel and has resolved it.
    pub fn current_master(&self) -> Option<String> {
        self.slot.master()
    }

    /// The node as errors show it: its URL (password hidden), or for a node following
    /// Sentinel the master it last used.
    pub(crate) fn shown_now(&self) -> String {
        match (&self.target, self.slot.master()) {
            (Target::Sentinel { service, .. }, Some(master)) => {
                format!("{master}, master of `{service}` per Sentinel")
            }
            _ => self.shown.clone(),
        }
    }

    /// Ask the sentinels, in order, for the master of the service; the first one that
    /// names a master which answers `ROLE` as a master wins (redis-rs checks it).
    /// Every sentinel's failure is kept, naming it.
    async fn resolve_master(&self) -> Result<Client, LockError> {
        let Target::Sentinel { service, sentinels } = &self.target else {
            return Err(LockError::Internal("resolve_master on a fixed node".into()));
        };
        // SENTINEL MASTERS, then a connection to the master it names and ROLE there.
        let limit = self.timeouts.connect + self.timeouts.command;
        let mut failures = Vec::new();
        for (i, (shown, sentinel)) in sentinels.iter().enumerate() {
            let mut sentinel = sentinel.lock().await;
            let asked = sentinel.async_master_for(service, None);
            let why = match tokio::time::timeout(limit, asked).await {
                Ok(Ok(client)) => {
                    let addr = client.get_connection_info().addr().to_string();
                    self.slot.set_master(Some(format!("redis://{addr}")));
                    return Ok(client);
                }
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no usable answer within {limit:?}"),
            };
            failures.push(format!("sentinel {i} ({shown}): {why}"));
        }
        Err(LockError::NoMaster {
            node: self.index,
            service: service.clone(),
            failures,
        })
    }

    /// Connect now (if not connected yet), so that an unreachable node shows at once.
    pub async fn connect(&self) -> Result<(), LockError> {
        self.connection().await.map(drop)
    }

    /// The node's index (its position in the builder's node list).
    pub fn index(&self) -> usize {
        self.index
    }

    /// The node's URL as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The timeouts in force.
    pub fn timeouts(&self) -> NodeTimeouts {
        self.timeouts
    }

    async fn connection(&self) -> Result<MultiplexedConnection, LockError> {
        // The common case: connected; no await, no async mutex.
        if let Some(conn) = self.slot.get() {
            return Ok(conn);
        }
        let _connecting = self.slot.connecting.lock().await;
        if let Some(conn) = self.slot.get() {
            return Ok(conn);
        }
        let client = match &self.target {
            Target::Url(client) => client.clone(),
            Target::Sentinel { .. } => self.resolve_master().await?,
        };
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeouts.connect))
            .set_response_timeout(Some(self.timeouts.command));
        let connecting = client.get_multiplexed_async_connection_with_config(&config);
        let conn = match tokio::time::timeout(self.timeouts.connect, connecting).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) if e.is_timeout() => {
                return Err(self.timeout(self.timeouts.connect, "connect"))
            }
            Ok(Err(source)) => return Err(self.unreachable(source)),
            Err(_) => return Err(self.timeout(self.timeouts.connect, "connect")),
        };
        self.slot.set(Some(conn.clone()));
        Ok(conn)
    }

    /// Forget the connection after a connection error; the next command reconnects.
    fn disconnect(&self) {
        self.slot.set(None);
    }

    fn timeout(&self, after: Duration, during: &str) -> LockError {
        LockError::Timeout {
            node: self.index,
            url: self.shown_now(),
            after,
            during: during.to_string(),
        }
    }

    fn unreachable(&self, source: RedisError) -> LockError {
        LockError::Unreachable {
            node: self.index,
            url: self.shown_now(),
            source,
        }
    }

    /// A node following Sentinel gave up on its master: the next command asks the
    /// sentinels again. (A killed master's connection may hang rather than break, so a
    /// timeout counts too; re-asking costs one `SENTINEL MASTERS` and one `ROLE`.)
    fn forget_master(&self) {
        if self.follows_sentinel() {
            self.disconnect();
        }
    }

    /// Send one of locklab's commands and translate the reply.
    ///
    /// A Redis error reply (`WRONGTYPE ...`) is an answer: `Ok(Reply::Error(..))`.
    /// No answer in time is [`LockError::Timeout`], a refused or dropped connection is
    /// [`LockError::Unreachable`]; both name this node. `Eval` runs the script by
    /// `EVALSHA`, loading it on `NOSCRIPT`.
    pub async fn execute(&self, command: &Command) -> Result<Reply, LockError> {
        let mut conn = self.connection().await?;
        let name = command_name(command);
        // The connection's response timeout is the one timer of a command. WAIT is
        // answered only when enough replicas acknowledged or its own timeout ran out:
        // give it that long on top of the command timeout.
        let limit = match command {
            Command::Wait { timeout_ms, .. } => {
                let limit = self.timeouts.command + Duration::from_millis(*timeout_ms);
                conn.set_response_timeout(limit);
                limit
            }
            _ => self.timeouts.command,
        };
        let result = match command {
            Command::Eval { script, keys, args } => {
                let script = redis_script(script);
                let started = tokio::time::Instant::now();
                let (count, bytes) = keys
                    .iter()
                    .chain(args)
                    .fold((3, 64), |(n, b), a| (n + 1, b + a.len()));
                let mut cmd = redis::Cmd::with_capacity(count, bytes);
                cmd.arg("EVALSHA")
                    .arg(script.get_hash())
                    .arg(keys.len())
                    .arg(keys.as_slice())
                    .arg(args.as_slice());
                match cmd.query_async::<Value>(&mut conn).await {
                    // Not in the server's script cache (a new or restarted server):
                    // load it and run it again, the two within what is left of the
                    // command's time, so that they count as one command.
                    Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                        let left = limit.saturating_sub(started.elapsed());
                        let again = async {
                            script.load_async(&mut conn).await?;
                            cmd.query_async::<Value>(&mut conn).await
                        };
                        match tokio::time::timeout(left, again).await {
                            Ok(result) => result,
                            Err(_) => {
                                let e = self.timeout(limit, name);
                                self.forget_master();
                                return Err(e);
                            }
                        }
                    }
                    other => other,
                }
            }
            other => {
                // Sized once, as redis-rs would grow it argument by argument.
                let (mut count, mut bytes) = (0, 0);
                other.each_arg(|arg| {
                    count += 1;
                    bytes += match arg {
                        Arg::Text(s) => s.len(),
                        Arg::Number(_) => 20,
                    };
                });
                let mut cmd = redis::Cmd::with_capacity(count, bytes);
                other.each_arg(|arg| match arg {
                    Arg::Text(s) => {
                        cmd.arg(s);
                    }
                    Arg::Number(n) => {
                        cmd.arg(n);
                    }
                });
                cmd.query_async::<Value>(&mut conn).await
            }
        };
        let reply = match result {
            Ok(value) => self.reply(value),
            Err(e) => {
                if let Some(reply) = server_error(&e) {
                    Ok(reply)
                } else if e.is_timeout() {
                    let err = self.timeout(limit, name);
                    self.forget_master();
                    Err(err)
                } else {
                    let err = self.unreachable(e);
                    if self.follows_sentinel() {
                        self.disconnect();
                    } else if let LockError::Unreachable { source: e, .. } = &err {
                        if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal()
                        {
                            self.disconnect();
                        }
                    }
                    Err(err)
                }
            }
        };
        match reply {
            // The node Sentinel named was demoted (a failover while it stayed up): the
            // command did not run. Ask Sentinel again before the next one.
            Ok(Reply::Error(e)) if self.follows_sentinel() && is_readonly(&e) => {
                let err = LockError::ReadOnly {
                    node: self.index,
                    url: self.shown_now(),
                    reply: e,
                };
                self.disconnect();
                Err(err)
            }
            other => other,
        }
    }

    fn reply(&self, value: Value) -> Result<Reply, LockError> {
        value_to_reply(value).map_err(|reply| LockError::UnexpectedReply {
            node: self.index,
            url: self.shown_now(),
            reply,
        })
    }
}

/// The command's name, for timeout errors.
fn command_name(command: &Command) -> &str {
    match command {
        Command::SetNx { .. } => "SETNX",
        Command::SetNxPx { .. } => "SET",
        Command::Get { .. } => "GET",
        Command::Exists { .. } => "EXISTS",
        Command::SetPx { .. } => "SET",
        Command::GetSet { .. } => "GETSET",
        Command::Del { .. } => "DEL",
        Command::PExpire { .. } => "PEXPIRE",
        Command::Incr { .. } => "INCR",
        Command::Eval { .. } => "EVALSHA",
        Command::Wait { .. } => "WAIT",
        Command::Call { args } => args.first().map_or("", String::as_str),
    }
}

/// Whether an error reply is Redis refusing a write on a replica (`READONLY You can't
/// write against a read only replica.`, also when a script's write is refused).
fn is_readonly(error: &str) -> bool {
    error.starts_with("READONLY") || error.contains("-READONLY")
}

/// The key of a Sentinel-followed node in shared [`Connections`](super::Connections).
pub(crate) fn sentinel_key(sentinel_urls: &[String], service: &str) -> String {
    format!("sentinel://{service}/{}", sentinel_urls.join(","))
}

/// A Redis error reply, as locklab's `Reply::Error("CODE detail")`.
fn server_error(e: &RedisError) -> Option<Reply> {
    let code = e.code()?;
    Some(Reply::Error(match e.detail() {
        Some(detail) if !detail.is_empty() => format!("{code} {detail}"),
        _ => code.to_string(),
    }))
}

/// redis-rs' value as locklab's reply; `Err` with the value printed when no lock command
/// returns such a thing.
pub(crate) fn value_to_reply(value: Value) -> Result<Reply, String> {
    Ok(match value {
        Value::Nil => Reply::Nil,
        Value::Okay => Reply::Ok,
        Value::SimpleString(s) if s == "OK" => Reply::Ok,
        Value::SimpleString(s) => Reply::Bulk(s),
        Value::Int(i) => Reply::Int(i),
        Value::BulkString(bytes) => Reply::Bulk(String::from_utf8_lossy(&bytes).into_owned()),
        Value::VerbatimString { text, .. } => Reply::Bulk(text),
        Value::Boolean(b) => Reply::Int(b as i64),
        Value::ServerError(e) => Reply::Error(match e.details() {
            Some(detail) if !detail.is_empty() => format!("{} {detail}", e.code()),
            _ => e.code().to_string(),
        }),
        Value::Array(items) => Reply::Array(
            items
                .into_iter()
                .map(value_to_reply)
                .collect::<Result<_, _>>()?,
        ),
        other => return Err(format!("{other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_map_to_replies() {
        assert_eq!(value_to_reply(Value::Nil), Ok(Reply::Nil));
        assert_eq!(value_to_reply(Value::Okay), Ok(Reply::Ok));
        assert_eq!(
            value_to_reply(Value::SimpleString("OK".into())),
            Ok(Reply::Ok)
        );
        assert_eq!(
            value_to_reply(Value::SimpleString("PONG".into())),
            Ok(Reply::Bulk("PONG".into()))
        );
        assert_eq!(value_to_reply(Value::Int(-2)), Ok(Reply::Int(-2)));
        assert_eq!(
            value_to_reply(Value::BulkString(b"tok".to_vec())),
            Ok(Reply::Bulk("tok".into()))
        );
        assert_eq!(
            value_to_reply(Value::Array(vec![Value::Int(1), Value::Nil])),
            Ok(Reply::Array(vec![Reply::Int(1), Reply::Nil]))
        );
        assert!(value_to_reply(Value::Map(vec![])).is_err());
    }

    #[test]
    fn every_script_has_a_redis_script() {
        for s in Script::ALL {
            assert_eq!(redis_script(&s).get_hash().len(), 40);
        }
    }

    #[test]
    fn readonly_replies_are_recognised() {
        assert!(is_readonly(
            "READONLY You can't write against a read only replica."
        ));
        assert!(!is_readonly("WRONGTYPE Operation against a key"));
    }

    #[test]
    fn a_sentinel_node_needs_sentinels_and_a_service() {
        let t = NodeTimeouts::default();
        assert!(Node::sentinel(0, &[], "svc", t).is_err());
        assert!(Node::sentinel(0, &["redis://127.0.0.1:26379".into()], "", t).is_err());
        let e = Node::sentinel(0, &["redis://127.0.0.1:1".into(), "nope".into()], "svc", t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("sentinel 1 (nope)"), "{e}");
        let n = Node::sentinel(0, &["redis://127.0.0.1:26379".into()], "svc", t).unwrap();
        assert!(n.follows_sentinel() && n.current_master().is_none());
    }

    #[test]
    fn a_bad_url_names_the_node() {
        let e = Node::new(3, "not a url", NodeTimeouts::default()).unwrap_err();
        assert_eq!(e.node(), Some(3));
    }
}
