//! Docker API-version shim, for engines older than testcontainers' client.
//!
//! testcontainers 0.28 talks to Docker through bollard 0.21, which sends every
//! request as `/v1.53/...` and does not negotiate. An engine whose newest API
//! is older (Docker 20.10 speaks 1.41) refuses every such request with
//! "client version 1.53 is too new". When [`crate::preflight`] finds such an
//! engine it starts this shim: a proxy on a private unix socket
//! (`$TMPDIR/locklab-docker-shim-<pid>/docker.sock`, directory mode 0700) that
//! strips the `/vX.Y` prefix from each request line and forwards everything
//! else byte for byte, and it points `DOCKER_HOST` of this process at it
//! (before testcontainers creates its client). Unversioned paths are served
//! at the engine's own API version; testcontainers only uses calls that exist
//! there. Modern engines never see the shim.
//!
//! The proxy runs on its own thread and runtime for the life of the process,
//! so it outlives every test's runtime and serves testcontainers' drop-time
//! removals and its signal watchdog. Child processes inherit `DOCKER_HOST`;
//! the docker CLI negotiates its version, so it works through the shim too.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use crate::engine::Endpoint;

/// Oldest engine API that testcontainers 0.28 (bollard 0.21,
/// `bollard::API_DEFAULT_VERSION`) can talk to without the shim.
pub(crate) const CLIENT_API: (u32, u32) = (1, 53);

static SHIM: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Parses "1.41" into (1, 41).
pub(crate) fn parse_api_version(v: &str) -> Option<(u32, u32)> {
    let (a, b) = v.trim().split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Starts the shim (once per process) in front of `upstream` and points
/// `DOCKER_HOST` at it. Returns the shim's socket path.
pub(crate) fn ensure(upstream: &Endpoint) -> Result<PathBuf, String> {
    SHIM.get_or_init(|| {
        let path = start(upstream.clone())
            .map_err(|e| format!("cannot start the Docker API shim: {e}"))?;
        crate::engine::pin(upstream.clone());
        // Edition 2021: set_var is safe to call. It runs once, before
        // testcontainers creates its client (which reads DOCKER_HOST); Rust's
        // own env accesses are synchronised with it.
        std::env::set_var("DOCKER_HOST", format!("unix://{}", path.display()));
        Ok(path)
    })
    .clone()
}

/// Whether the shim runs in this process.
pub(crate) fn active() -> bool {
    matches!(SHIM.get(), Some(Ok(_)))
}

fn start(upstream: Endpoint) -> io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("locklab-docker-shim-{}", std::process::id()));
    remove_stale_dirs(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    }
    let path = dir.join("docker.sock");
    let std_listener = std::os::unix::net::UnixListener::bind(&path)?;
    std_listener.set_nonblocking(true)?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<()>>();
    std::thread::Builder::new()
        .name("locklab-docker-shim".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            rt.block_on(async move {
                let listener = match UnixListener::from_std(std_listener) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                loop {
                    let Ok((client, _)) = listener.accept().await else {
                        continue;
                    };
                    let upstream = upstream.clone();
                    tokio::spawn(async move {
                        let _ = serve(client, upstream).await;
                    });
                }
            });
        })?;
    ready_rx
        .recv()
        .map_err(|_| io::Error::other("shim thread died"))??;
    Ok(path)
}

/// Removes shim directories of processes that no longer exist.
fn remove_stale_dirs(own: &Path) {
    let Some(parent) = own.parent() else { return };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("locklab-docker-shim-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

async fn connect(upstream: &Endpoint) -> io::Result<Box<dyn Io>> {
    Ok(match upstream {
        Endpoint::Unix(p) => Box::new(UnixStream::connect(p).await?),
        Endpoint::Tcp(a) => Box::new(TcpStream::connect(a).await?),
    })
}

/// One client connection: requests flow through [`forward_requests`],
/// responses are copied back verbatim.
async fn serve(client: UnixStream, upstream: Endpoint) -> io::Result<()> {
    let server = connect(&upstream).await?;
    let (client_r, mut client_w) = client.into_split();
    let (server_r, mut server_w) = tokio::io::split(server);
    let mut server_r = server_r;
    let responses = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut server_r, &mut client_w).await;
        let _ = client_w.shutdown().await;
    });
    let mut reader = BufReader::new(client_r);
    let _ = forward_requests(&mut reader, &mut server_w).await;
    let _ = server_w.shutdown().await;
    let _ = responses.await;
    Ok(())
}

/// Copies HTTP/1.x requests, rewriting each request line, until the client
/// closes or a connection upgrade turns the stream into raw bytes.
async fn forward_requests<R, W>(reader: &mut BufReader<R>, w: &mut W) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).await? == 0 {
            return Ok(());
        }
        if request_line.trim().is_empty() {
            continue;
        }
        let mut head = rewrite_request_line(&request_line);
        let mut content_length: Option<u64> = None;
        let mut chunked = false;
        let mut upgrade = false;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let end = line == "\r\n" || line == "\n";
            if !end {
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    content_length = v.trim().parse().ok();
                } else if let Some(v) = lower.strip_prefix("transfer-encoding:") {
                    chunked = v.contains("chunked");
                } else if lower.starts_with("upgrade:") {
                    upgrade = true;
                }
            }
            head.push_str(&line);
            if end {
                break;
            }
            if head.len() > 1 << 20 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "request head too large",
                ));
            }
        }
        w.write_all(head.as_bytes()).await?;
        if chunked {
            copy_chunked(reader, w).await?;
        } else if let Some(n) = content_length {
            let copied = tokio::io::copy(&mut (&mut *reader).take(n), w).await?;
            if copied < n {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        w.flush().await?;
        if upgrade {
            // hijacked stream (attach/exec): raw bytes from here on
            tokio::io::copy(reader, w).await?;
            return Ok(());
        }
    }
}

async fn copy_chunked<R, W>(reader: &mut BufReader<R>, w: &mut W) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        let mut size_line = String::new();
        if reader.read_line(&mut size_line).await? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        w.write_all(size_line.as_bytes()).await?;
        let size = u64::from_str_radix(size_line.split(';').next().unwrap_or_default().trim(), 16)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
        if size == 0 {
            // trailers, then the empty line
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).await? == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                w.write_all(line.as_bytes()).await?;
                if line == "\r\n" || line == "\n" {
                    return Ok(());
                }
            }
        }
        let n = size + 2; // data and CRLF
        let copied = tokio::io::copy(&mut (&mut *reader).take(n), w).await?;
        if copied < n {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
    }
}

/// `GET /v1.53/containers/json HTTP/1.1` -> `GET /containers/json HTTP/1.1`.
fn rewrite_request_line(line: &str) -> String {
    let mut parts = line.splitn(3, ' ');
    let (Some(method), Some(target), Some(rest)) = (parts.next(), parts.next(), parts.next())
    else {
        return line.to_string();
    };
    let stripped = target.strip_prefix("/v").and_then(|t| {
        let end = t.find('/')?;
        parse_api_version(&t[..end])?;
        Some(&t[end..])
    });
    match stripped {
        Some(path) => format!("{method} {path} {rest}"),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_versioned_paths_only() {
        assert_eq!(
            rewrite_request_line("GET /v1.53/containers/json?all=true HTTP/1.1\r\n"),
            "GET /containers/json?all=true HTTP/1.1\r\n"
        );
        assert_eq!(
            rewrite_request_line("POST /v1.41/networks/create HTTP/1.1\r\n"),
            "POST /networks/create HTTP/1.1\r\n"
        );
        assert_eq!(
            rewrite_request_line("GET /_ping HTTP/1.1\r\n"),
            "GET /_ping HTTP/1.1\r\n"
        );
        assert_eq!(
            rewrite_request_line("GET /volumes HTTP/1.1\r\n"),
            "GET /volumes HTTP/1.1\r\n"
        );
    }

    #[test]
    fn parses_api_versions() {
        assert_eq!(parse_api_version("1.41"), Some((1, 41)));
        assert!(parse_api_version("1.41") < Some(CLIENT_API));
        assert_eq!(parse_api_version("x"), None);
    }

    #[tokio::test]
    async fn forwards_bodies_and_rewrites_each_request() {
        let input = b"POST /v1.53/containers/create HTTP/1.1\r\ncontent-length: 5\r\n\r\nhelloGET /v1.53/x HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /v1.53/y HTTP/1.1\r\n\r\n";
        let mut reader = BufReader::new(&input[..]);
        let mut out = Vec::new();
        forward_requests(&mut reader, &mut out).await.unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "POST /containers/create HTTP/1.1\r\ncontent-length: 5\r\n\r\nhelloGET /x HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /y HTTP/1.1\r\n\r\n"
        );
    }
}
