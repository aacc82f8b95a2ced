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
//!   never learns its result (a lost reply). The link is open again afterwards.
//!
//! The upstream can be changed (failover, restart on a new port); connections made
//! before the change are dropped so that the client reconnects to the new node.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

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
