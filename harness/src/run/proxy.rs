//! A small TCP proxy for one client→node link, on 127.0.0.1, that can cut or hold the
//! traffic: the real partition of one link, while every other link works.
//!
//! - open: bytes flow both ways;
//! - hold: connections stay up but nothing is forwarded until the link opens again
//!   (requests and replies sit in buffers, like a congested or stalled network);
//! - cut: every connection through the link is closed at once and new ones are closed
//!   as soon as they are accepted (the client sees a dropped connection).
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
}

struct Shared {
    upstream: Mutex<SocketAddr>,
    /// Bumped when the upstream changes or the link is cut: older connections end.
    state: watch::Sender<(LinkState, u64)>,
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
                let rx = s.state.subscribe();
                conns.spawn(forward(client, up, rx, generation));
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
/// changes. While held, nothing is read, so data waits in the socket buffers.
async fn forward(
    mut client: TcpStream,
    upstream: SocketAddr,
    mut rx: watch::Receiver<(LinkState, u64)>,
    generation: u64,
) {
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut cr, mut cw) = client.split();
    let (mut sr, mut sw) = server.split();
    let mut up = [0u8; 16 * 1024];
    let mut down = [0u8; 16 * 1024];
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
                Ok(n) => if sw.write_all(&up[..n]).await.is_err() { return },
            },
            n = sr.read(&mut down) => match n {
                Ok(0) | Err(_) => return,
                Ok(n) => if cw.write_all(&down[..n]).await.is_err() { return },
            },
        }
    }
}
