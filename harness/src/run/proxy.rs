//! A small TCP proxy for one client→node link, on 127.0.0.1, that can cut or hold the
//! traffic: the real partition of one link, while every other link works.
//!
//! - open: bytes flow both ways;
//! - hold: connections stay up but nothing is forwarded until the link opens again
//!   (requests and replies sit in buffers, like a congested or stalled network);
//! - cut: every connection through the link is closed at once and new ones are closed
//!   as soon as they are accepted (the client sees a dropped connection);
//! - lose a reply: requests flow on, and the k-th reply that comes back from then on
//!   is thrown away and its connection closed: the command ran on the node, the client
//!   never learns its result (a lost reply). The link is open again afterwards;
//! - keep a request back ([`LinkProxy::keep_next_request`]): the next request the
//!   client sends is taken off its connection, which drops (the client gives up on
//!   it at once), and stays in the proxy while the client goes on over a new
//!   connection; [`LinkProxy::take_kept`] hands it over and [`KeptRequest::deliver`]
//!   later sends its very bytes to the node it was for over a fresh connection, and
//!   nobody reads the reply: a request given up on that still lands, as the run
//!   engine's `DeliverLate` sends it.
//!
//! The upstream can be changed (failover, restart on a new port); connections made
//! before the change are dropped so that the client reconnects to the new node.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the link does with traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    Open,
    Hold,
    Cut,
    /// Open until the k-th reply from now comes back: that one is lost (then open again).
    LoseReply,
}

struct Shared {
    upstream: Mutex<SocketAddr>,
    /// Bumped when the upstream changes or the link is cut: older connections end.
    state: watch::Sender<(LinkState, u64)>,
    /// While [`LinkState::LoseReply`]: replies still to let through before the lost one.
    skip: Mutex<u32>,
    /// The command whose reply was lost last, as the client sent it (its name).
    lost: Mutex<Option<String>>,
    /// A request kept back from its node ([`LinkProxy::keep_next_request`]).
    kept: Mutex<Kept>,
}

/// A request kept back by the link.
#[derive(Clone, Debug, Default)]
enum Kept {
    #[default]
    Nothing,
    /// The next request is to be kept, its connection silent for so long.
    Armed(Duration),
    /// Kept: its bytes, its command's name, and the node it was for.
    Request {
        bytes: Vec<u8>,
        name: String,
        upstream: SocketAddr,
    },
}

/// A request a link kept back ([`LinkProxy::keep_next_request`]).
#[derive(Debug)]
pub struct KeptRequest {
    bytes: Vec<u8>,
    /// Its command's name.
    pub name: String,
    upstream: SocketAddr,
}

impl KeptRequest {
    /// Send its very bytes to the node it was for, over a fresh connection, and wait up
    /// to `timeout` for the node to answer (the answer is read by nobody): it ran
    /// there. An error when the node could not be reached (a node that died or
    /// restarted meanwhile: the request is lost with its connection).
    pub async fn deliver(self, timeout: Duration) -> std::io::Result<()> {
        let send = async {
            let mut node = TcpStream::connect(self.upstream).await?;
            node.write_all(&self.bytes).await?;
            let mut reply = [0u8; 1024];
            match node.read(&mut reply).await? {
                0 => Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)),
                _ => Ok(()),
            }
        };
        match tokio::time::timeout(timeout, send).await {
            Ok(sent) => sent,
            Err(_) => Err(std::io::Error::from(std::io::ErrorKind::TimedOut)),
        }
    }
}

/// One link's proxy. Dropping it stops the proxy and closes its connections.
pub struct LinkProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl std::fmt::Debug for LinkProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkProxy")
            .field("addr", &self.addr)
            .field("state", &self.state())
            .finish()
    }
}

impl LinkProxy {
    /// A proxy on a random port of 127.0.0.1 forwarding to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<LinkProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream: Mutex::new(upstream),
            state: watch::Sender::new((LinkState::Open, 0)),
            skip: Mutex::new(0),
            lost: Mutex::new(None),
            kept: Mutex::new(Kept::Nothing),
        });
        let s = shared.clone();
        let accept = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let (state, generation) = *s.state.borrow();
                if state == LinkState::Cut {
                    drop(client);
                    continue;
                }
                let up = *s.upstream.lock().unwrap_or_else(|e| e.into_inner());
                conns.spawn(forward(client, up, s.clone(), generation));
                while conns.try_join_next().is_some() {}
            }
        });
        Ok(LinkProxy {
            addr,
            shared,
            accept,
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `redis://` URL of the proxy.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// The link's state.
    pub fn state(&self) -> LinkState {
        self.shared.state.borrow().0
    }

    /// Set the link's state; cutting closes every connection through it.
    pub fn set_state(&self, state: LinkState) {
        self.shared.state.send_modify(|(s, generation)| {
            if state == LinkState::Cut {
                *generation += 1;
            }
            *s = state;
        });
    }

    /// Lose the `k`-th reply (1: the next) that comes back through the link from now
    /// ([`LinkState::LoseReply`]). A reply is counted per read from the node, which on
    /// a link of one client's lock, whose commands wait for their replies, is one reply.
    pub fn lose_reply(&self, k: u32) {
        *self.shared.lost.lock().unwrap_or_else(|e| e.into_inner()) = None;
        *self.shared.skip.lock().unwrap_or_else(|e| e.into_inner()) = k.saturating_sub(1);
        self.set_state(LinkState::LoseReply);
    }

    /// The name of the command whose reply the link lost, once it has lost one since
    /// [`LinkProxy::lose_reply`].
    pub fn lost_reply(&self) -> Option<String> {
        self.shared
            .lost
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Keep the next request the client sends back from its node: it is taken off its
    /// connection, which stays silent for `silent` (a client whose timeout is shorter
    /// gives up on the request; what it sends meanwhile on that connection is lost
    /// with it) and is then closed (a client still waiting sees it drop and gives up),
    /// and the request is held by the proxy until it is taken ([`LinkProxy::take_kept`]) and delivered. Everything
    /// else flows on; the client's next connection works as before.
    pub fn keep_next_request(&self, silent: Duration) {
        *self.shared.kept.lock().unwrap_or_else(|e| e.into_inner()) = Kept::Armed(silent);
    }

    /// The name of the command kept back, once one was.
    pub fn kept_request(&self) -> Option<String> {
        match &*self.shared.kept.lock().unwrap_or_else(|e| e.into_inner()) {
            Kept::Request { name, .. } => Some(name.clone()),
            _ => None,
        }
    }

    /// Take the request kept back (`None` when none was; the link then keeps no later
    /// one either), to [`deliver`](KeptRequest::deliver) it.
    pub fn take_kept(&self) -> Option<KeptRequest> {
        let kept = std::mem::take(&mut *self.shared.kept.lock().unwrap_or_else(|e| e.into_inner()));
        match kept {
            Kept::Request {
                bytes,
                name,
                upstream,
            } => Some(KeptRequest {
                bytes,
                name,
                upstream,
            }),
            _ => None,
        }
    }

    /// Forward to a new upstream from now on; existing connections are dropped.
    pub fn set_upstream(&self, upstream: SocketAddr) {
        *self
            .shared
            .upstream
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = upstream;
        self.shared
            .state
            .send_modify(|(_, generation)| *generation += 1);
    }
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        // The accept task owns the connection tasks (JoinSet): aborting it ends them.
        self.accept.abort();
    }
}

/// Copies bytes both ways until either side closes, the link is cut, or the upstream
/// changes. While held, nothing is read, so data waits in the socket buffers. While a
/// reply is to be lost, the connection it comes back on drops it and closes.
async fn forward(
    mut client: TcpStream,
    upstream: SocketAddr,
    shared: Arc<Shared>,
    generation: u64,
) {
    let mut rx = shared.state.subscribe();
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut cr, mut cw) = client.split();
    let (mut sr, mut sw) = server.split();
    let mut up = [0u8; 16 * 1024];
    let mut down = [0u8; 16 * 1024];
    // The name of the latest command sent on this connection.
    let mut last_command = String::new();
    loop {
        let (state, g) = *rx.borrow_and_update();
        if g != generation || state == LinkState::Cut {
            return;
        }
        if state == LinkState::Hold {
            if rx.changed().await.is_err() {
                return;
            }
            continue;
        }
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { return },
            n = cr.read(&mut up) => match n {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if let Some(name) = command_name(&up[..n]) {
                        last_command = name;
                    }
                    if let Some(silent) = keep(&shared, &up[..n], &last_command, upstream) {
                        tokio::time::sleep(silent).await;
                        return;
                    }
                    if sw.write_all(&up[..n]).await.is_err() { return }
                }
            },
            n = sr.read(&mut down) => match n {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    // Only one reply is lost, on whichever connection it comes back.
                    let lose = shared.state.send_if_modified(|(s, _)| {
                        if *s != LinkState::LoseReply {
                            return false;
                        }
                        let mut skip = shared.skip.lock().unwrap_or_else(|e| e.into_inner());
                        if *skip > 0 {
                            *skip -= 1;
                            return false;
                        }
                        *s = LinkState::Open;
                        true
                    });
                    if lose {
                        *shared.lost.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(last_command);
                        return;
                    }
                    if cw.write_all(&down[..n]).await.is_err() { return }
                }
            },
        }
    }
}

/// Keep `bytes` (a request of `name` for `upstream`) back when the link is armed to
/// keep the next request: how long its connection then stays silent.
fn keep(shared: &Shared, bytes: &[u8], name: &str, upstream: SocketAddr) -> Option<Duration> {
    let mut kept = shared.kept.lock().unwrap_or_else(|e| e.into_inner());
    let Kept::Armed(silent) = *kept else {
        return None;
    };
    *kept = Kept::Request {
        bytes: bytes.to_vec(),
        name: name.to_string(),
        upstream,
    };
    Some(silent)
}

/// The name of the first command in `bytes`, when they begin a RESP array of bulk
/// strings (`*N\r\n$L\r\nNAME\r\n...`), in upper case.
fn command_name(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(64)]);
    let mut parts = text.strip_prefix('*')?.split("\r\n");
    parts.next()?;
    parts.next()?.strip_prefix('$')?;
    let name = parts.next()?;
    Some(name.to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::command_name;

    #[test]
    fn names_the_command_of_a_resp_request() {
        assert_eq!(
            command_name(b"*3\r\n$5\r\nsetnx\r\n$4\r\nlock\r\n$2\r\nc1\r\n").as_deref(),
            Some("SETNX")
        );
        assert_eq!(command_name(b"+OK\r\n"), None);
        assert_eq!(command_name(b"*1\r\n"), None);
    }
}
