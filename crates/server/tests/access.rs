//! Safe defaults over real sockets: an address other machines can reach is refused without
//! TLS and client authentication; with TLS and client certificates only clients whose
//! certificate chains to the configured CA get in; with a bearer token, calls without it (or
//! with a wrong one) are UNAUTHENTICATED; with `allow_clients`, clients outside the listed
//! networks are closed at accept (tested over loopback only); the unix socket is created with
//! mode 0660.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::Code;
use zkforge_engine::{Engine, EngineConfig, ParamsDir};
use zkforge_groth16::CpuBackend;
use zkforge_server::pb::{self, proving_engine_client::ProvingEngineClient};
use zkforge_server::{serve_with, Access, Listen, Running, ServeOptions, TlsFiles};

/// PEM certificate and key.
struct Pem {
    cert: String,
    key: String,
}

/// A CA, a server certificate for localhost signed by it, a client certificate signed by it,
/// and a client certificate nobody vouches for.
struct Pki {
    ca: String,
    server: Pem,
    client: Pem,
    stranger: Pem,
}

fn pki() -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let signed = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &ca, &ca_key)
            .unwrap();
        Pem {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    };
    let stranger_key = KeyPair::generate().unwrap();
    let stranger = CertificateParams::new(vec!["stranger".into()])
        .unwrap()
        .self_signed(&stranger_key)
        .unwrap();
    Pki {
        server: signed(vec!["localhost".into(), "127.0.0.1".into()]),
        client: signed(vec!["curio".into()]),
        stranger: Pem {
            cert: stranger.pem(),
            key: stranger_key.serialize_pem(),
        },
        ca: ca.pem(),
    }
}

fn engine() -> Arc<Engine> {
    let empty = std::env::temp_dir().join("zkforge-access-test-no-params");
    Arc::new(
        Engine::start(
            EngineConfig {
                synthesis_workers: 1,
                ..Default::default()
            },
            Arc::new(CpuBackend::new()),
            Box::new(ParamsDir(empty)),
        )
        .unwrap(),
    )
}

async fn start(listen: Listen, access: Access) -> Running {
    Running::start(engine(), listen, access)
        .await
        .expect("the daemon starts")
}

/// The server's certificate and key written to `dir`, and the CA when clients must show
/// certificates.
fn server_tls(dir: &Path, pki: &Pki, client_certificates: bool) -> TlsFiles {
    TlsFiles {
        cert: write(dir, "server.pem", &pki.server.cert),
        key: write(dir, "server.key", &pki.server.key),
        client_ca: client_certificates.then(|| write(dir, "ca.pem", &pki.ca)),
    }
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A TLS client of `port` trusting `ca`, presenting `identity` if any.
async fn tls_client(
    port: u16,
    ca: &str,
    identity: Option<&Pem>,
) -> Result<ProvingEngineClient<Channel>, tonic::transport::Error> {
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(ca))
        .domain_name("localhost");
    if let Some(id) = identity {
        tls = tls.identity(Identity::from_pem(&id.cert, &id.key));
    }
    let channel = Endpoint::from_shared(format!("https://127.0.0.1:{port}"))
        .unwrap()
        .tls_config(tls)?
        .connect()
        .await?;
    Ok(ProvingEngineClient::new(channel))
}

async fn status(c: &mut ProvingEngineClient<Channel>) -> Result<(), tonic::Status> {
    c.get_status(pb::GetStatusRequest {}).await.map(|_| ())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reachable_address_is_refused_without_tls_and_client_authentication() {
    let any: Listen = "0.0.0.0:0".parse().unwrap();
    let err = serve_with(
        engine(),
        any.clone(),
        &ServeOptions::default(),
        |_| {},
        async {},
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("reachable from other machines") && err.contains("--insecure-remote"),
        "{err}"
    );

    // Told explicitly, it serves (and says so in its log).
    let d = start(
        any,
        Access {
            insecure_remote: true,
            ..Default::default()
        },
    )
    .await;
    let port = d.addr.unwrap().port();
    let mut c = ProvingEngineClient::connect(format!("http://127.0.0.1:{port}"))
        .await
        .unwrap();
    status(&mut c).await.unwrap();
    d.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_client_certificates_lets_in_only_clients_the_ca_vouches_for() {
    let pki = pki();
    let dir = tempfile::tempdir().unwrap();
    let access = Access {
        tls: Some(server_tls(dir.path(), &pki, true)),
        ..Default::default()
    };
    let d = start("0.0.0.0:0".parse().unwrap(), access).await;
    let port = d.addr.unwrap().port();

    let mut good = tls_client(port, &pki.ca, Some(&pki.client)).await.unwrap();
    status(&mut good).await.unwrap();
    for (who, identity) in [
        ("no certificate", None),
        ("a stranger", Some(&pki.stranger)),
    ] {
        // The handshake or the first call fails; either way nothing is served.
        let refused = match tls_client(port, &pki.ca, identity).await {
            Err(_) => true,
            Ok(mut c) => status(&mut c).await.is_err(),
        };
        assert!(refused, "{who} got in");
    }
    // Plain HTTP/2 on the TLS port gets nothing either.
    let refused = match ProvingEngineClient::connect(format!("http://127.0.0.1:{port}")).await {
        Err(_) => true,
        Ok(mut c) => status(&mut c).await.is_err(),
    };
    assert!(refused, "plain HTTP/2 got an answer on the TLS port");
    d.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_is_required_on_every_call() {
    let pki = pki();
    let dir = tempfile::tempdir().unwrap();
    let access = Access {
        tls: Some(server_tls(dir.path(), &pki, false)),
        bearer_token: Some("correct horse battery staple".into()),
        ..Default::default()
    };
    let d = start("0.0.0.0:0".parse().unwrap(), access).await;
    let port = d.addr.unwrap().port();
    let c = tls_client(port, &pki.ca, None).await.unwrap();

    let call = |token: Option<&'static str>| {
        let mut c = c.clone();
        async move {
            let mut req = tonic::Request::new(pb::GetStatusRequest {});
            if let Some(t) = token {
                req.metadata_mut()
                    .insert("authorization", t.parse().unwrap());
            }
            c.get_status(req).await.map(|_| ())
        }
    };
    call(Some("Bearer correct horse battery staple"))
        .await
        .unwrap();
    for token in [
        None,
        Some("Bearer wrong"),
        Some("correct horse battery staple"),
    ] {
        let err = call(token).await.unwrap_err();
        assert_eq!(
            err.code(),
            Code::Unauthenticated,
            "{token:?}: {}",
            err.message()
        );
        assert!(err.message().contains("bearer token"));
    }
    d.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unix_socket_is_created_0660() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("zkforge.sock");
    let d = start(Listen::Unix(sock.clone()), Access::default()).await;
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660, "{mode:o}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "zkforge.sock")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    d.stop().await.unwrap();
}

/// A GetStatus over plain TCP to `addr` through a fresh connection, within 10 s.
async fn plain_status(addr: std::net::SocketAddr) -> Result<(), String> {
    let call = async {
        let mut c = ProvingEngineClient::connect(format!("http://{addr}"))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        status(&mut c).await.map_err(|e| format!("call: {e}"))
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), call)
        .await
        .unwrap_or_else(|_| Err("no answer in 10 s".into()))
}

/// `allow_clients` over loopback only: a client outside the list is closed at accept, one
/// inside is served; the IPv6 loopback too where this machine has one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_clients_serves_the_listed_networks_alone() {
    let allowing = |nets: &[&str]| Access {
        allow_clients: nets.iter().map(|n| n.parse().unwrap()).collect(),
        ..Default::default()
    };
    let at = |s: &str| -> Listen { s.parse().unwrap() };
    // This client connects from 127.0.0.1, not the one host listed.
    let d = start(at("127.0.0.1:0"), allowing(&["127.0.0.2/32"])).await;
    let refused = plain_status(d.addr.unwrap()).await;
    assert!(refused.is_err(), "served a client outside the list");
    d.stop().await.unwrap();

    let d = start(at("127.0.0.1:0"), allowing(&["127.0.0.0/8"])).await;
    plain_status(d.addr.unwrap()).await.unwrap();
    d.stop().await.unwrap();

    // ::1 is not in an IPv4 list, and is in its own.
    if std::net::TcpListener::bind("[::1]:0").is_ok() {
        let d = start(at("[::1]:0"), allowing(&["127.0.0.0/8"])).await;
        assert!(plain_status(d.addr.unwrap()).await.is_err());
        d.stop().await.unwrap();
        let d = start(at("[::1]:0"), allowing(&["::1/128"])).await;
        plain_status(d.addr.unwrap()).await.unwrap();
        d.stop().await.unwrap();
    }
}
