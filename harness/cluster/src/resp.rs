//! A tiny RESP2 client (one connection per call) for the cluster's own
//! housekeeping: PING, INFO, REPLICAOF. Tests and the harness use redis-rs.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RespValue {
    /// `+OK`
    Simple(String),
    /// `-ERR ...`
    Error(String),
    /// `:1`
    Int(i64),
    /// `$n`; `None` for the null bulk string.
    Bulk(Option<Vec<u8>>),
    /// `*n`; `None` for the null array.
    Array(Option<Vec<RespValue>>),
}

impl RespValue {
    /// The reply as text, for simple and bulk strings.
    pub fn as_text(&self) -> Option<String> {
        match self {
            RespValue::Simple(s) => Some(s.clone()),
            RespValue::Bulk(Some(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }
}

/// Why a call failed: the caller turns it into a [`crate::ClusterError`].
#[derive(Debug)]
pub(crate) enum CallError {
    Io(std::io::Error),
    Timeout,
    Protocol(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Io(e) => write!(f, "{e}"),
            CallError::Timeout => write!(f, "no reply in time"),
            CallError::Protocol(m) => write!(f, "protocol error: {m}"),
        }
    }
}

fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Connects, sends one command, reads one reply, all within `timeout`.
pub(crate) async fn call(
    addr: SocketAddr,
    args: &[&str],
    timeout: Duration,
) -> Result<RespValue, CallError> {
    let work = async {
        let stream = TcpStream::connect(addr).await.map_err(CallError::Io)?;
        stream.set_nodelay(true).map_err(CallError::Io)?;
        let mut stream = BufReader::new(stream);
        stream
            .get_mut()
            .write_all(&encode(args))
            .await
            .map_err(CallError::Io)?;
        read_value(&mut stream).await
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(CallError::Timeout),
    }
}

async fn read_line(r: &mut BufReader<TcpStream>) -> Result<String, CallError> {
    let mut line = String::new();
    let n = r.read_line(&mut line).await.map_err(CallError::Io)?;
    if n == 0 {
        return Err(CallError::Io(std::io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

fn read_value(
    r: &mut BufReader<TcpStream>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<RespValue, CallError>> + Send + '_>>
{
    Box::pin(async move {
        let line = read_line(r).await?;
        let (kind, rest) = line.split_at(1.min(line.len()));
        let int = |s: &str| {
            s.parse::<i64>()
                .map_err(|_| CallError::Protocol(format!("bad integer {s:?}")))
        };
        match kind {
            "+" => Ok(RespValue::Simple(rest.to_string())),
            "-" => Ok(RespValue::Error(rest.to_string())),
            ":" => Ok(RespValue::Int(int(rest)?)),
            "$" => {
                let n = int(rest)?;
                if n < 0 {
                    return Ok(RespValue::Bulk(None));
                }
                let mut buf = vec![0u8; n as usize + 2];
                r.read_exact(&mut buf).await.map_err(CallError::Io)?;
                buf.truncate(n as usize);
                Ok(RespValue::Bulk(Some(buf)))
            }
            "*" => {
                let n = int(rest)?;
                if n < 0 {
                    return Ok(RespValue::Array(None));
                }
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(read_value(r).await?);
                }
                Ok(RespValue::Array(Some(items)))
            }
            _ => Err(CallError::Protocol(format!("unexpected reply {line:?}"))),
        }
    })
}

/// `field:value` lines of an INFO reply.
pub(crate) fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines().find_map(|l| {
        l.strip_prefix(field)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(|v| v.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_commands() {
        assert_eq!(
            encode(&["REPLICAOF", "NO", "ONE"]),
            b"*3\r\n$9\r\nREPLICAOF\r\n$2\r\nNO\r\n$3\r\nONE\r\n".to_vec()
        );
    }

    #[test]
    fn finds_info_fields() {
        let info = "# Replication\r\nrole:slave\r\nmaster_link_status:up\r\n";
        assert_eq!(info_field(info, "role"), Some("slave"));
        assert_eq!(info_field(info, "master_link_status"), Some("up"));
        assert_eq!(info_field(info, "master_link"), None);
    }
}
