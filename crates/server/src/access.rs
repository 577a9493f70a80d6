//! Who may submit work: the daemon listens on loopback or a unix socket unless told otherwise,
//! and an address other machines can reach needs TLS with client certificates or a bearer
//! token, a list of the client networks it serves (`allow_clients`: plain TCP to those alone,
//! as Curio's client has neither TLS nor a token), or an explicit `insecure_remote`. Every
//! choice is logged once at start.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tonic::metadata::MetadataValue;
use tonic::{Request, Status};

use crate::{status, Listen};

/// Mode of the unix socket: the daemon's user and group may connect, nobody else.
pub const SOCKET_MODE: u32 = 0o660;

/// PEM files of the daemon's TLS identity and, optionally, the CA its clients' certificates
/// must chain to (then every client must present one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_ca: Option<PathBuf>,
}

/// How clients prove who they are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    pub tls: Option<TlsFiles>,
    /// Every ProvingEngine call must carry `authorization: Bearer <token>`.
    pub bearer_token: Option<String>,
    /// Serve an address other machines can reach without TLS and client authentication.
    pub insecure_remote: bool,
    /// When not empty, a TCP listener serves these client networks alone (connections from
    /// other addresses are closed at accept); it makes a reachable address servable without
    /// TLS and client authentication.
    pub allow_clients: Vec<ClientNet>,
}

/// True for addresses only this machine can reach.
fn loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

impl Access {
    /// Checks that the settings fit `listen` and says what was chosen, for the start-up log.
    /// A reachable address without TLS and client authentication is an error unless
    /// `insecure_remote`.
    pub fn check(&self, listen: &Listen) -> Result<String> {
        if let Some(t) = &self.bearer_token {
            if t.trim().is_empty() {
                bail!("the bearer token is empty");
            }
        }
        let auth = match (&self.tls, &self.bearer_token) {
            (
                Some(TlsFiles {
                    client_ca: Some(_), ..
                }),
                Some(_),
            ) => "TLS, client certificates and a bearer token",
            (
                Some(TlsFiles {
                    client_ca: Some(_), ..
                }),
                None,
            ) => "TLS with client certificates",
            (Some(_), Some(_)) => "TLS and a bearer token",
            (Some(_), None) => "TLS, no client authentication",
            (None, Some(_)) => "a bearer token without TLS",
            (None, None) => "no TLS, no client authentication",
        };
        let authenticated = matches!(
            (&self.tls, &self.bearer_token),
            (
                Some(TlsFiles {
                    client_ca: Some(_),
                    ..
                }),
                _
            ) | (Some(_), Some(_))
        );
        let nets = self
            .allow_clients
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let only = if nets.is_empty() {
            String::new()
        } else {
            format!("; clients from {nets} only")
        };
        Ok(match listen {
            Listen::Unix(_) if !self.allow_clients.is_empty() => bail!(
                "daemon.allow_clients lists client addresses, and a unix socket has none: it \
                 applies to a TCP listen address (the socket's mode decides who connects)"
            ),
            Listen::Unix(path) => format!(
                "unix socket {} (mode {SOCKET_MODE:o}: the daemon's user and group), {auth}",
                path.display()
            ),
            Listen::Tcp(addr) if loopback(addr) => {
                format!("loopback {addr} (this machine only), {auth}{only}")
            }
            Listen::Tcp(addr) if authenticated => {
                format!("{addr}, reachable from other machines, {auth}{only}")
            }
            Listen::Tcp(addr) if !nets.is_empty() && self.tls.is_none() => format!(
                "plain TCP on {addr} to {nets} only: no encryption, no authentication; anyone \
                 on those addresses can submit work, others are closed at accept"
            ),
            Listen::Tcp(addr) if !nets.is_empty() => format!(
                "{addr} to {nets} only, {auth}: anyone on those addresses can submit work, \
                 others are closed at accept"
            ),
            Listen::Tcp(addr) if self.insecure_remote => format!(
                "INSECURE: {addr} is reachable from other machines with {auth} \
                 (--insecure-remote): anyone who can reach it can submit work"
            ),
            Listen::Tcp(addr) => bail!(
                "{addr} is reachable from other machines: give the daemon TLS (daemon.tls_cert, \
                 daemon.tls_key) with client certificates (daemon.tls_client_ca) or a bearer \
                 token (daemon.auth_token_file), list the client networks it serves \
                 (daemon.allow_clients = [\"10.0.0.5/32\"]), listen on loopback or a unix \
                 socket, or pass --insecure-remote"
            ),
        })
    }

    /// tonic's TLS settings, reading the PEM files.
    pub(crate) fn tls_config(&self) -> Result<Option<tonic::transport::ServerTlsConfig>> {
        let Some(t) = &self.tls else {
            return Ok(None);
        };
        let read =
            |p: &PathBuf| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
        let identity = tonic::transport::Identity::from_pem(read(&t.cert)?, read(&t.key)?);
        let mut config = tonic::transport::ServerTlsConfig::new().identity(identity);
        if let Some(ca) = &t.client_ca {
            config = config.client_ca_root(tonic::transport::Certificate::from_pem(read(ca)?));
        }
        Ok(Some(config))
    }

    /// The check every ProvingEngine call passes through.
    pub(crate) fn interceptor(&self) -> BearerCheck {
        BearerCheck {
            expected: self
                .bearer_token
                .as_ref()
                .map(|t| format!("Bearer {}", t.trim()).into_bytes()),
        }
    }
}

/// Refuses calls without the configured bearer token (passes everything when there is none).
#[derive(Clone)]
pub(crate) struct BearerCheck {
    expected: Option<Vec<u8>>,
}

impl tonic::service::Interceptor for BearerCheck {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        let Some(expected) = &self.expected else {
            return Ok(req);
        };
        let given = req
            .metadata()
            .get("authorization")
            .map(MetadataValue::as_bytes)
            .unwrap_or_default();
        if equal_in_constant_time(given, expected) {
            Ok(req)
        } else {
            Err(status::unauthenticated(
                "missing or wrong bearer token (send `authorization: Bearer <token>`)",
            ))
        }
    }
}

/// Compares without returning early, so the time taken says nothing about the token.
fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, &x) in b.iter().enumerate() {
        diff |= usize::from(x ^ a.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// A client network of `daemon.allow_clients`: `10.0.0.5/32`, `10.0.0.0/24`, `fd00::/8`; a
/// bare address is that address alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientNet {
    addr: IpAddr,
    prefix: u8,
}

/// Why an `allow_clients` entry is not a client network; its message names the entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadClientNet {
    pub entry: String,
    pub why: String,
}

impl std::fmt::Display for BadClientNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} is not a client network: {}", self.entry, self.why)
    }
}

impl std::error::Error for BadClientNet {}

impl std::str::FromStr for ClientNet {
    type Err = BadClientNet;

    fn from_str(entry: &str) -> Result<Self, BadClientNet> {
        let bad = |why: String| BadClientNet {
            entry: entry.to_string(),
            why,
        };
        let (ip, prefix) = match entry.trim().split_once('/') {
            Some((ip, p)) => (ip, Some(p)),
            None => (entry.trim(), None),
        };
        let addr: IpAddr = ip.parse().map_err(|_| {
            bad(format!(
                "{ip:?} is not an IPv4 or IPv6 address (write 10.0.0.5/32 or fd00::/8)"
            ))
        })?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|&p| p <= max)
                .ok_or_else(|| bad(format!("the prefix length {p:?} is not 0 to {max}")))?,
        };
        let net = Self { addr, prefix };
        // 10.0.0.5/24 is almost always a typo for one host or for the network: say which.
        if net.network() != addr {
            return Err(bad(format!(
                "it has bits set past its /{prefix}: write {}/{prefix} for the network or \
                 {addr}/{max} for the host",
                net.network()
            )));
        }
        Ok(net)
    }
}

impl std::fmt::Display for ClientNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl ClientNet {
    /// The address with the bits past the prefix cleared.
    fn network(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(a) => IpAddr::V4((u32::from(a) & mask32(self.prefix)).into()),
            IpAddr::V6(a) => IpAddr::V6((u128::from(a) & mask128(self.prefix)).into()),
        }
    }

    /// True when `ip` is in this network. An IPv4 client of a dual-stack listener (`[::]`)
    /// arrives as `::ffff:a.b.c.d` and is matched as the IPv4 address it is.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let m = mask32(self.prefix);
                u32::from(net) & m == u32::from(ip) & m
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let m = mask128(self.prefix);
                u128::from(net) & m == u128::from(ip) & m
            }
            _ => false,
        }
    }
}

fn mask32(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

fn mask128(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

/// `allow_clients` at the accept loop: which connections are served, and a log of the others
/// at most once per [`REFUSAL_LOG_EVERY`] (a scanner must not flood the journal).
pub struct AllowedClients {
    nets: Vec<ClientNet>,
    refused: AtomicU64,
    last_log: Mutex<Option<Instant>>,
}

/// How often refused connections are logged: the first at once, then a count at most this often.
pub const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

impl AllowedClients {
    pub fn new(nets: Vec<ClientNet>) -> Self {
        Self {
            nets,
            refused: AtomicU64::new(0),
            last_log: Mutex::new(None),
        }
    }

    /// True when a connection from `ip` is served; false (logged, rate-limited) when it is to
    /// be closed.
    pub fn admits(&self, ip: IpAddr) -> bool {
        if self.nets.iter().any(|n| n.contains(ip)) {
            return true;
        }
        let refused = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
        let mut last = self.last_log.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_none_or(|t| t.elapsed() >= REFUSAL_LOG_EVERY) {
            *last = Some(Instant::now());
            tracing::warn!(
                client = %ip,
                refused_so_far = refused,
                "connection closed at accept: {ip} is not in daemon.allow_clients (logged at \
                 most once per {} s)",
                REFUSAL_LOG_EVERY.as_secs()
            );
        }
        false
    }

    /// Connections closed at accept so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// Reads a bearer token from a file (its first line), so it stays out of the config file.
pub fn read_token_file(path: &std::path::Path) -> Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let token = text.lines().next().unwrap_or_default().trim().to_string();
    if token.is_empty() {
        bail!("{} holds no token", path.display());
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(s: &str) -> Listen {
        Listen::Tcp(s.parse().unwrap())
    }

    #[test]
    fn reachable_addresses_need_tls_and_client_authentication_or_an_explicit_opt_out() {
        let open = Access::default();
        assert!(open
            .check(&tcp("127.0.0.1:9820"))
            .unwrap()
            .contains("loopback"));
        assert!(open.check(&tcp("[::1]:9820")).unwrap().contains("loopback"));
        assert!(open
            .check(&Listen::Unix("/run/z.sock".into()))
            .unwrap()
            .contains("mode 660"));
        for addr in ["0.0.0.0:9820", "10.1.2.3:9820", "[::]:9820"] {
            let err = open.check(&tcp(addr)).unwrap_err().to_string();
            assert!(
                err.contains("--insecure-remote") && err.contains("tls_cert"),
                "{err}"
            );
        }
        let insecure = Access {
            insecure_remote: true,
            ..Default::default()
        };
        assert!(insecure
            .check(&tcp("0.0.0.0:1"))
            .unwrap()
            .starts_with("INSECURE"));
        let tls = TlsFiles {
            cert: "c".into(),
            key: "k".into(),
            client_ca: None,
        };
        let tls_only = Access {
            tls: Some(tls.clone()),
            ..Default::default()
        };
        assert!(
            tls_only.check(&tcp("0.0.0.0:1")).is_err(),
            "TLS alone authenticates nobody"
        );
        let token_only = Access {
            bearer_token: Some("s3cret".into()),
            ..Default::default()
        };
        assert!(
            token_only.check(&tcp("0.0.0.0:1")).is_err(),
            "a token in clear text"
        );
        for ok in [
            Access {
                tls: Some(TlsFiles {
                    client_ca: Some("ca".into()),
                    ..tls.clone()
                }),
                ..Default::default()
            },
            Access {
                tls: Some(tls),
                bearer_token: Some("s3cret".into()),
                ..Default::default()
            },
        ] {
            assert!(ok.check(&tcp("0.0.0.0:1")).unwrap().contains("reachable"));
        }
    }

    #[test]
    fn client_networks_parse_v4_and_v6_and_name_a_bad_entry() {
        let net = |s: &str| s.parse::<ClientNet>();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let host = net("10.0.0.5/32").unwrap();
        assert!(host.contains(ip("10.0.0.5")) && !host.contains(ip("10.0.0.6")));
        assert_eq!(net("10.0.0.5").unwrap(), host, "a bare address is one host");
        let lan = net("10.0.0.0/24").unwrap();
        assert!(lan.contains(ip("10.0.0.255")) && !lan.contains(ip("10.0.1.0")));
        // A v4 client of a dual-stack listener, and no v4/v6 crossing otherwise.
        assert!(lan.contains(ip("::ffff:10.0.0.7")));
        assert!(!lan.contains(ip("::1")));
        let v6 = net("fd00::/8").unwrap();
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        assert!(!v6.contains(ip("10.0.0.1")));
        assert!(net("0.0.0.0/0").unwrap().contains(ip("192.0.2.1")));
        assert!(net("::/0").unwrap().contains(ip("2001:db8::1")));
        assert_eq!(net("::1").unwrap().to_string(), "::1/128");
        for (entry, says) in [
            ("10.0.0/8", "not an IPv4 or IPv6 address"),
            ("curio-host", "not an IPv4 or IPv6 address"),
            ("10.0.0.0/33", "not 0 to 32"),
            ("fd00::/129", "not 0 to 128"),
            ("10.0.0.0/x", "not 0 to 32"),
            (
                "10.0.0.5/24",
                "write 10.0.0.0/24 for the network or 10.0.0.5/32 for the host",
            ),
        ] {
            let e = net(entry).unwrap_err().to_string();
            assert!(e.contains(&format!("{entry:?}")) && e.contains(says), "{e}");
        }
    }

    #[test]
    fn an_allow_list_serves_a_reachable_address_in_plain_tcp_and_says_so() {
        let allowed = Access {
            allow_clients: vec!["10.0.0.5/32".parse().unwrap()],
            ..Default::default()
        };
        let said = allowed.check(&tcp("0.0.0.0:9820")).unwrap();
        assert!(
            said.starts_with(
                "plain TCP on 0.0.0.0:9820 to 10.0.0.5/32 only: no encryption, no \
                 authentication; anyone on those addresses can submit work"
            ),
            "{said}"
        );
        assert!(allowed
            .check(&tcp("127.0.0.1:9820"))
            .unwrap()
            .contains("clients from 10.0.0.5/32 only"));
        let err = allowed
            .check(&Listen::Unix("/run/z.sock".into()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("allow_clients") && err.contains("unix socket"),
            "{err}"
        );
        let gate = AllowedClients::new(allowed.allow_clients.clone());
        assert!(gate.admits("10.0.0.5".parse().unwrap()));
        assert!(!gate.admits("10.0.0.6".parse().unwrap()));
        assert!(!gate.admits("10.0.0.7".parse().unwrap()));
        assert_eq!(gate.refused(), 2);
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(equal_in_constant_time(b"Bearer abc", b"Bearer abc"));
        assert!(!equal_in_constant_time(b"Bearer ab", b"Bearer abc"));
        assert!(!equal_in_constant_time(b"Bearer abcd", b"Bearer abc"));
        assert!(!equal_in_constant_time(b"", b"Bearer abc"));
    }
}
