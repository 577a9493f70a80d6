//! Daemon addresses (`host:port`, `http://host:port`, `unix:/path`, `unix:///path`) and a
//! connection that fails with a clear message within a timeout instead of hanging.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use tonic::transport::{Channel, Endpoint};
use zkforge_server::pb::{self, proving_engine_client::ProvingEngineClient};

/// Largest message either way; the daemon accepts 256 MiB (a 32 GiB C1 output is ~200 MB).
const MAX_MESSAGE_BYTES: usize = 256 << 20;

pub type Client = ProvingEngineClient<Channel>;

/// Where the daemon listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DaemonAddr {
    /// An `http://host:port` URI.
    Tcp(String),
    Unix(PathBuf),
}

impl FromStr for DaemonAddr {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim();
        if let Some(path) = s.strip_prefix("unix:") {
            // unix:///abs, unix:/abs and unix:rel all name a path.
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                bail!("bad daemon address {s:?}: no socket path after unix:");
            }
            return Ok(DaemonAddr::Unix(PathBuf::from(path)));
        }
        if s.starts_with("https://") {
            bail!("bad daemon address {s:?}: the daemon speaks plain HTTP/2, use http://");
        }
        let host_port = s.strip_prefix("http://").unwrap_or(s).trim_end_matches('/');
        let port_ok = host_port
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !port_ok || host_port.contains('/') {
            bail!("bad daemon address {s:?}: expected host:port, http://host:port or unix:/path");
        }
        Ok(DaemonAddr::Tcp(format!("http://{host_port}")))
    }
}

impl DaemonAddr {
    /// A comma-separated list of addresses (`bench batch --addr A,B,...`), each parsed as
    /// one; a daemon listed twice would get twice its share, so that is refused.
    pub fn parse_list(s: &str) -> Result<Vec<Self>> {
        let mut addrs: Vec<Self> = Vec::new();
        for one in s.split(',') {
            let addr: Self = one.parse()?;
            if addrs.contains(&addr) {
                bail!("daemon address {addr} is listed twice in {s:?}");
            }
            addrs.push(addr);
        }
        Ok(addrs)
    }
}

impl fmt::Display for DaemonAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DaemonAddr::Tcp(uri) => f.write_str(uri),
            DaemonAddr::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

async fn channel(addr: &DaemonAddr, timeout: Duration) -> Result<Channel> {
    match addr {
        DaemonAddr::Tcp(uri) => Endpoint::from_shared(uri.clone())
            .with_context(|| format!("bad daemon address {uri:?}"))?
            .connect_timeout(timeout)
            .connect()
            .await
            .map_err(anyhow::Error::new),
        DaemonAddr::Unix(path) => {
            if !path.exists() {
                bail!("no socket at {}", path.display());
            }
            let path = path.clone();
            // The URI is a placeholder: the connector below decides where bytes go.
            Endpoint::from_static("http://localhost")
                .connect_timeout(timeout)
                .connect_with_connector(tower::service_fn(move |_| {
                    let path = path.clone();
                    async move {
                        let stream = tokio::net::UnixStream::connect(path).await?;
                        Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
                    }
                }))
                .await
                .map_err(anyhow::Error::new)
        }
    }
}

/// The gRPC code of a failed call. tonic reports a connection that broke under a call (the
/// daemon died) as UNKNOWN "transport error", and a call sent on it afterwards as CANCELLED
/// "operation was canceled", though this client cancelled nothing; gRPC's code for both, and
/// what clients such as Curio's see and retry on, is UNAVAILABLE.
pub fn status_code(s: &tonic::Status) -> tonic::Code {
    let transport = std::error::Error::source(s)
        .is_some_and(|e| e.downcast_ref::<tonic::transport::Error>().is_some());
    let broken = matches!(s.code(), tonic::Code::Unknown | tonic::Code::Cancelled);
    if broken && transport {
        tonic::Code::Unavailable
    } else {
        s.code()
    }
}

/// Connects and checks that a ProvingEngine answers (GetStatus), all within `timeout`.
pub async fn connect(addr: &DaemonAddr, timeout: Duration) -> Result<Client> {
    let attempt = async {
        let mut client = ProvingEngineClient::new(channel(addr, timeout).await?)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        client
            .get_status(pb::GetStatusRequest {})
            .await
            .map_err(|s| anyhow!("GetStatus failed: {}", s.message()))?;
        Ok::<_, anyhow::Error>(client)
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(e.context(format!("cannot reach the zkforge daemon at {addr}"))),
        Err(_) => bail!(
            "cannot reach the zkforge daemon at {addr}: no answer within {:.1} s",
            timeout.as_secs_f64()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        let tcp = |s: &str| DaemonAddr::Tcp(s.into());
        let unix = |s: &str| DaemonAddr::Unix(s.into());
        for (text, addr) in [
            ("127.0.0.1:9820", tcp("http://127.0.0.1:9820")),
            ("http://localhost:1/", tcp("http://localhost:1")),
            ("[::1]:9820", tcp("http://[::1]:9820")),
            ("unix:/run/z.sock", unix("/run/z.sock")),
            ("unix:///run/z.sock", unix("/run/z.sock")),
        ] {
            assert_eq!(text.parse::<DaemonAddr>().unwrap(), addr, "{text}");
        }
        for bad in [
            "",
            "localhost",
            "host:port",
            ":9820",
            "unix:",
            "https://h:1",
            "h:1/x",
        ] {
            let err = bad.parse::<DaemonAddr>().unwrap_err().to_string();
            assert!(err.contains("bad daemon address"), "{bad}: {err}");
        }
    }

    #[test]
    fn address_lists_parse_each_entry_and_refuse_repeats() {
        let list = DaemonAddr::parse_list("127.0.0.1:9820, unix:/run/z.sock").unwrap();
        assert_eq!(
            list,
            vec![
                DaemonAddr::Tcp("http://127.0.0.1:9820".into()),
                DaemonAddr::Unix("/run/z.sock".into())
            ]
        );
        assert_eq!(DaemonAddr::parse_list("h:1").unwrap().len(), 1);
        let err = |s: &str| DaemonAddr::parse_list(s).unwrap_err().to_string();
        assert!(
            err("h:1,").contains("bad daemon address"),
            "{}",
            err("h:1,")
        );
        assert!(err("h:1,localhost").contains("\"localhost\""));
        // The same daemon spelled two ways is still one daemon.
        assert!(err("h:1,http://h:1/").contains("listed twice"));
    }
}
