//! A minimal, blocking Docker Engine API client for what testcontainers does
//! not offer (networks, kill, files, label sweeps, the preflight checks).
//!
//! It speaks HTTP/1.0 (one request per connection, no chunking to parse in
//! practice) to the engine testcontainers would use: `DOCKER_HOST`
//! (`unix://` or plain `tcp://`/`http://`) or `/var/run/docker.sock`. Paths
//! are unversioned, so the engine answers with its own API version: this works
//! with old engines too. The endpoint is captured once, before the API shim
//! (see [`crate::shim`]) may point `DOCKER_HOST` at itself.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use crate::error::ClusterError;

/// Where the Docker engine listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Unix(PathBuf),
    Tcp(String),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Unix(p) => write!(f, "unix://{}", p.display()),
            Endpoint::Tcp(a) => write!(f, "tcp://{a}"),
        }
    }
}

impl Endpoint {
    pub(crate) const DEFAULT_SOCKET: &'static str = "/var/run/docker.sock";

    /// Parses a `DOCKER_HOST` value.
    pub(crate) fn parse(host: &str) -> Result<Endpoint, ClusterError> {
        let unsupported = |why: &str| {
            ClusterError::NoDocker(format!("DOCKER_HOST={host} is not supported here ({why})"))
        };
        if let Some(path) = host.strip_prefix("unix://") {
            if path.is_empty() {
                return Err(unsupported("empty socket path"));
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        for scheme in ["tcp://", "http://"] {
            if let Some(rest) = host.strip_prefix(scheme) {
                let addr = rest.trim_end_matches('/');
                if addr.is_empty() || addr.contains('/') {
                    return Err(unsupported("expected tcp://HOST:PORT"));
                }
                if std::env::var("DOCKER_TLS_VERIFY").is_ok_and(|v| !v.is_empty() && v != "0") {
                    return Err(unsupported("TLS engines are not supported"));
                }
                return Ok(Endpoint::Tcp(addr.to_string()));
            }
        }
        Err(unsupported("use unix:///path or tcp://host:port"))
    }

    /// The engine testcontainers would talk to: `DOCKER_HOST` or the default socket.
    fn from_env() -> Result<Endpoint, ClusterError> {
        match std::env::var("DOCKER_HOST") {
            Ok(h) if !h.trim().is_empty() => Endpoint::parse(h.trim()),
            _ => Ok(Endpoint::Unix(PathBuf::from(Self::DEFAULT_SOCKET))),
        }
    }
}

/// A full HTTP response.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Response {
    pub(crate) fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    pub(crate) fn json(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_slice(&self.body)
    }

    /// The engine's error message (`{"message": ...}`), or the raw body.
    pub(crate) fn message(&self) -> String {
        match self.json() {
            Ok(v) => match v.get("message").and_then(Value::as_str) {
                Some(m) => m.to_string(),
                None => v.to_string(),
            },
            Err(_) => String::from_utf8_lossy(&self.body).trim().to_string(),
        }
    }
}

/// The real Docker engine (never the shim).
#[derive(Debug, Clone)]
pub(crate) struct Engine {
    pub endpoint: Endpoint,
}

/// The real engine once the API shim has taken over `DOCKER_HOST`.
static PINNED: OnceLock<Engine> = OnceLock::new();

/// The engine: the one pinned by the shim, else `DOCKER_HOST` (read now) or
/// the default socket.
pub(crate) fn engine() -> Result<Engine, ClusterError> {
    if let Some(e) = PINNED.get() {
        return Ok(e.clone());
    }
    Ok(Engine {
        endpoint: Endpoint::from_env()?,
    })
}

/// Pins the real engine before the shim points `DOCKER_HOST` at itself.
pub(crate) fn pin(endpoint: Endpoint) {
    let _ = PINNED.set(Engine { endpoint });
}

/// Runs blocking engine calls off the async executor.
pub(crate) async fn blocking<T, F>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl Engine {
    fn connect(&self, timeout: Duration) -> io::Result<Box<dyn Stream>> {
        Ok(match &self.endpoint {
            Endpoint::Unix(p) => {
                let s = UnixStream::connect(p)?;
                s.set_read_timeout(Some(timeout))?;
                s.set_write_timeout(Some(timeout))?;
                Box::new(s)
            }
            Endpoint::Tcp(a) => {
                let s = TcpStream::connect(a)?;
                s.set_read_timeout(Some(timeout))?;
                s.set_write_timeout(Some(timeout))?;
                Box::new(s)
            }
        })
    }

    /// One HTTP/1.0 request; `body` is `(content type, bytes)`.
    pub(crate) fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, &[u8])>,
        timeout: Option<Duration>,
    ) -> io::Result<Response> {
        let mut s = self.connect(timeout.unwrap_or(DEFAULT_TIMEOUT))?;
        let mut head = format!("{method} {path} HTTP/1.0\r\nHost: docker\r\nUser-Agent: locklab-cluster\r\nConnection: close\r\n");
        match body {
            Some((ctype, bytes)) => {
                head.push_str(&format!(
                    "Content-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
                    bytes.len()
                ));
                s.write_all(head.as_bytes())?;
                s.write_all(bytes)?;
            }
            None => {
                head.push_str("Content-Length: 0\r\n\r\n");
                s.write_all(head.as_bytes())?;
            }
        }
        s.flush()?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw)?;
        parse_response(&raw)
    }

    /// A request whose failure to connect means "no Docker engine".
    pub(crate) fn call(
        &self,
        op: &str,
        method: &str,
        path: &str,
        json: Option<&Value>,
    ) -> Result<Response, ClusterError> {
        let body = json.map(|v| v.to_string());
        self.request(
            method,
            path,
            body.as_deref().map(|b| ("application/json", b.as_bytes())),
            None,
        )
        .map_err(|e| ClusterError::docker(op, format!("{} ({e})", self.endpoint)))
    }

    /// Like [`Engine::call`], but any non-2xx status is an error too.
    pub(crate) fn call_ok(
        &self,
        op: &str,
        method: &str,
        path: &str,
        json: Option<&Value>,
    ) -> Result<Response, ClusterError> {
        let r = self.call(op, method, path, json)?;
        if r.ok() {
            Ok(r)
        } else {
            Err(ClusterError::docker(
                op,
                format!("HTTP {}: {}", r.status, r.message()),
            ))
        }
    }

    // ------------------------------------------------------------ images

    pub(crate) fn image_exists(&self, image: &str) -> Result<bool, ClusterError> {
        let op = format!("inspect image {image}");
        let r = self.call(&op, "GET", &format!("/images/{}/json", encode(image)), None)?;
        match r.status {
            200 => Ok(true),
            404 => Ok(false),
            _ => Err(ClusterError::docker(
                op,
                format!("HTTP {}: {}", r.status, r.message()),
            )),
        }
    }

    // ------------------------------------------------------------ networks

    pub(crate) fn network_create(
        &self,
        name: &str,
        labels: &[(&str, &str)],
    ) -> Result<String, ClusterError> {
        let labels: serde_json::Map<String, Value> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect();
        let body = serde_json::json!({
            "Name": name,
            "Driver": "bridge",
            "CheckDuplicate": true,
            "Labels": labels,
        });
        let r = self.call_ok(
            &format!("create network {name}"),
            "POST",
            "/networks/create",
            Some(&body),
        )?;
        Ok(r.json()
            .ok()
            .and_then(|v| v.get("Id").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default())
    }

    /// Removes a network; a missing network is not an error.
    pub(crate) fn network_remove(&self, name: &str) -> Result<(), ClusterError> {
        let op = format!("remove network {name}");
        let r = self.call(&op, "DELETE", &format!("/networks/{}", encode(name)), None)?;
        match r.status {
            200..=299 | 404 => Ok(()),
            _ => Err(ClusterError::docker(
                op,
                format!("HTTP {}: {}", r.status, r.message()),
            )),
        }
    }

    pub(crate) fn network_connect(
        &self,
        network: &str,
        container: &str,
    ) -> Result<(), ClusterError> {
        let body = serde_json::json!({ "Container": container });
        self.call_ok(
            &format!("connect {container} to network {network}"),
            "POST",
            &format!("/networks/{}/connect", encode(network)),
            Some(&body),
        )?;
        Ok(())
    }

    pub(crate) fn network_disconnect(
        &self,
        network: &str,
        container: &str,
    ) -> Result<(), ClusterError> {
        let body = serde_json::json!({ "Container": container, "Force": true });
        self.call_ok(
            &format!("disconnect {container} from network {network}"),
            "POST",
            &format!("/networks/{}/disconnect", encode(network)),
            Some(&body),
        )?;
        Ok(())
    }

    // ------------------------------------------------------------ containers

    pub(crate) fn container_inspect(&self, id: &str) -> Result<Value, ClusterError> {
        let op = format!("inspect container {id}");
        let r = self.call_ok(
            &op,
            "GET",
            &format!("/containers/{}/json", encode(id)),
            None,
        )?;
        r.json()
            .map_err(|e| ClusterError::docker(op, e.to_string()))
    }

    /// The host port on 127.0.0.1 that `container_port/tcp` is published on.
    pub(crate) fn published_port(
        &self,
        id: &str,
        container_port: u16,
    ) -> Result<Option<u16>, ClusterError> {
        let v = self.container_inspect(id)?;
        let key = format!("{container_port}/tcp");
        let bindings = v
            .pointer("/NetworkSettings/Ports")
            .and_then(|p| p.get(&key))
            .and_then(Value::as_array);
        Ok(bindings.and_then(|bs| {
            bs.iter()
                .filter(|b| b.get("HostIp").and_then(Value::as_str) == Some("127.0.0.1"))
                .find_map(|b| b.get("HostPort")?.as_str()?.parse().ok())
        }))
    }

    pub(crate) fn container_kill(&self, id: &str, signal: &str) -> Result<(), ClusterError> {
        self.call_ok(
            &format!("kill container {id}"),
            "POST",
            &format!("/containers/{}/kill?signal={}", encode(id), encode(signal)),
            None,
        )?;
        Ok(())
    }

    /// Force-removes a container with its anonymous volumes; missing is fine.
    pub(crate) fn container_remove(&self, id: &str) -> Result<(), ClusterError> {
        let op = format!("remove container {id}");
        let r = self.call(
            &op,
            "DELETE",
            &format!("/containers/{}?force=1&v=1", encode(id)),
            None,
        )?;
        match r.status {
            200..=299 | 404 => Ok(()),
            // "removal of container ... is already in progress"
            409 => Ok(()),
            _ => Err(ClusterError::docker(
                op,
                format!("HTTP {}: {}", r.status, r.message()),
            )),
        }
    }

    /// Ids of all containers (running or not) carrying `key=value`.
    pub(crate) fn containers_with_label(
        &self,
        key: &str,
        value: &str,
    ) -> Result<Vec<String>, ClusterError> {
        let filters = serde_json::json!({ "label": [format!("{key}={value}")] }).to_string();
        let op = format!("list containers with label {key}={value}");
        let r = self.call_ok(
            &op,
            "GET",
            &format!("/containers/json?all=1&filters={}", encode(&filters)),
            None,
        )?;
        let v = r
            .json()
            .map_err(|e| ClusterError::docker(&op, e.to_string()))?;
        Ok(v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.get("Id").and_then(Value::as_str).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Names of all networks carrying `key=value`.
    pub(crate) fn networks_with_label(
        &self,
        key: &str,
        value: &str,
    ) -> Result<Vec<String>, ClusterError> {
        let filters = serde_json::json!({ "label": [format!("{key}={value}")] }).to_string();
        let op = format!("list networks with label {key}={value}");
        let r = self.call_ok(
            &op,
            "GET",
            &format!("/networks?filters={}", encode(&filters)),
            None,
        )?;
        let v = r
            .json()
            .map_err(|e| ClusterError::docker(&op, e.to_string()))?;
        Ok(v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.get("Name").and_then(Value::as_str).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Writes one file into a (running or stopped) container.
    pub(crate) fn put_file(
        &self,
        id: &str,
        dir: &str,
        file_name: &str,
        content: &[u8],
    ) -> Result<(), ClusterError> {
        let tar = tar_one_file(file_name, content, 0o644);
        let op = format!("write {dir}/{file_name} in container {id}");
        let r = self
            .request(
                "PUT",
                &format!("/containers/{}/archive?path={}", encode(id), encode(dir)),
                Some(("application/x-tar", &tar)),
                None,
            )
            .map_err(|e| ClusterError::docker(&op, e.to_string()))?;
        if r.ok() {
            Ok(())
        } else {
            Err(ClusterError::docker(
                op,
                format!("HTTP {}: {}", r.status, r.message()),
            ))
        }
    }

    /// Whether a path exists in a container's file system.
    pub(crate) fn path_exists(&self, id: &str, path: &str) -> Result<bool, ClusterError> {
        let op = format!("stat {path} in container {id}");
        let r = self.call(
            &op,
            "HEAD",
            &format!("/containers/{}/archive?path={}", encode(id), encode(path)),
            None,
        )?;
        match r.status {
            200 => Ok(true),
            404 => Ok(false),
            s => Err(ClusterError::docker(op, format!("HTTP {s}"))),
        }
    }
}

fn parse_response(raw: &[u8]) -> io::Result<Response> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no HTTP response from the engine"))?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("malformed HTTP status line"))?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = &raw[end + 4..];
    let body = if chunked {
        dechunk(body).ok_or_else(|| bad("malformed chunked body"))?
    } else {
        body.to_vec()
    };
    Ok(Response { status, body })
}

fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let nl = b.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&b[..nl]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        b = &b[nl + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size + 2..)?;
    }
}

/// Percent-encodes everything but unreserved characters (and `/` and `:`,
/// which image names need in paths).
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' | b':' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A ustar archive holding one regular file.
pub(crate) fn tar_one_file(name: &str, content: &[u8], mode: u32) -> Vec<u8> {
    let mut h = [0u8; 512];
    let put = |h: &mut [u8; 512], off: usize, len: usize, s: &[u8]| {
        let n = s.len().min(len);
        h[off..off + n].copy_from_slice(&s[..n]);
    };
    put(&mut h, 0, 100, name.as_bytes());
    put(&mut h, 100, 8, format!("{mode:07o}\0").as_bytes());
    put(&mut h, 108, 8, b"0000000\0");
    put(&mut h, 116, 8, b"0000000\0");
    put(
        &mut h,
        124,
        12,
        format!("{:011o}\0", content.len()).as_bytes(),
    );
    let mtime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    put(&mut h, 136, 12, format!("{mtime:011o}\0").as_bytes());
    put(&mut h, 148, 8, b"        ");
    h[156] = b'0';
    put(&mut h, 257, 6, b"ustar\0");
    put(&mut h, 263, 2, b"00");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    put(&mut h, 148, 8, format!("{sum:06o}\0 ").as_bytes());
    let mut out = h.to_vec();
    out.extend_from_slice(content);
    let pad = (512 - content.len() % 512) % 512;
    out.extend(std::iter::repeat_n(0u8, pad + 1024));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_docker_hosts() {
        assert_eq!(
            Endpoint::parse("unix:///var/run/docker.sock").unwrap(),
            Endpoint::Unix("/var/run/docker.sock".into())
        );
        assert_eq!(
            Endpoint::parse("tcp://127.0.0.1:2375").unwrap(),
            Endpoint::Tcp("127.0.0.1:2375".into())
        );
        let err = Endpoint::parse("ssh://me@host").unwrap_err();
        assert!(err.to_string().starts_with("no Docker engine: "), "{err}");
    }

    #[test]
    fn parses_responses() {
        let r = parse_response(b"HTTP/1.0 404 Not Found\r\nContent-Type: application/json\r\n\r\n{\"message\":\"No such image: x\"}").unwrap();
        assert_eq!(r.status, 404);
        assert_eq!(r.message(), "No such image: x");
        let r = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.body, b"abcde");
    }

    #[test]
    fn tar_has_valid_checksum_and_size() {
        let t = tar_one_file("f", b"hello", 0o644);
        assert_eq!(t.len(), 512 * 4);
        let mut h = t[..512].to_vec();
        let stored = u32::from_str_radix(std::str::from_utf8(&h[148..154]).unwrap(), 8).unwrap();
        h[148..156].copy_from_slice(b"        ");
        assert_eq!(stored, h.iter().map(|&b| b as u32).sum::<u32>());
        assert_eq!(&t[512..517], b"hello");
    }

    #[test]
    fn encodes_query_values() {
        assert_eq!(encode("{\"a\":[1]}"), "%7B%22a%22:%5B1%5D%7D");
        assert_eq!(encode("locklab/redis:local"), "locklab/redis:local");
    }
}
