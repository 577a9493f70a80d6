//! Who may submit work: the daemon listens on loopback or a unix socket unless told otherwise,
//! and an address other machines can reach needs TLS with client certificates or a bearer
//! token, or an explicit `insecure_remote`. Every choice is logged once at start.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use tonic::metadata::MetadataValue;
use tonic::{Request, Status};

use crate::Listen;

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
        Ok(match listen {
            Listen::Unix(path) => format!(
                "unix socket {} (mode {SOCKET_MODE:o}: the daemon's user and group), {auth}",
                path.display()
            ),
            Listen::Tcp(addr) if loopback(addr) => {
                format!("loopback {addr} (this machine only), {auth}")
            }
            Listen::Tcp(addr) if authenticated => {
                format!("{addr}, reachable from other machines, {auth}")
            }
            Listen::Tcp(addr) if self.insecure_remote => format!(
                "INSECURE: {addr} is reachable from other machines with {auth} \
                 (--insecure-remote): anyone who can reach it can submit work"
            ),
            Listen::Tcp(addr) => bail!(
                "{addr} is reachable from other machines: give the daemon TLS (daemon.tls_cert, \
                 daemon.tls_key) with client certificates (daemon.tls_client_ca) or a bearer \
                 token (daemon.auth_token_file), listen on loopback or a unix socket, or pass \
                 --insecure-remote"
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
            Err(Status::unauthenticated(
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
    fn tokens_compare_whole() {
        assert!(equal_in_constant_time(b"Bearer abc", b"Bearer abc"));
        assert!(!equal_in_constant_time(b"Bearer ab", b"Bearer abc"));
        assert!(!equal_in_constant_time(b"Bearer abcd", b"Bearer abc"));
        assert!(!equal_in_constant_time(b"", b"Bearer abc"));
    }
}
