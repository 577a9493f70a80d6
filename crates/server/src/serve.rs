//! Serving on TCP (`host:port`) or a unix socket (`unix:///path`).

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;
use zkforge_engine::Engine;

use crate::access::{Access, AllowedClients, SOCKET_MODE};
use crate::drain::{Drain, DrainLayer};
use crate::guard::RequestGuardLayer;
use crate::limits::Checked;
use crate::listener::{Connections, Incoming, ListenerSlot};
use crate::pb::proving_engine_server::ProvingEngineServer;
use crate::pb::FILE_DESCRIPTOR_SET;
use crate::receive::ReceiveBudget;
use crate::waiters::streams_per_connection;
use crate::ProvingService;

/// tonic answers a request over the size limit with OUT_OF_RANGE before our code sees it;
/// gRPC's code for "message larger than the server accepts" is RESOURCE_EXHAUSTED.
fn oversize_is_resource_exhausted<B>(mut res: http::Response<B>) -> http::Response<B> {
    let h = res.headers_mut();
    let too_large = h.get("grpc-status").is_some_and(|v| v == "11")
        && h.get("grpc-message")
            .and_then(|m| m.to_str().ok())
            .is_some_and(|m| {
                m.contains("message%20length%20too%20large")
                    || m.contains("message length too large")
            });
    if too_large {
        h.insert("grpc-status", http::HeaderValue::from_static("8"));
    }
    res
}

/// Where the daemon listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    Tcp(std::net::SocketAddr),
    Unix(PathBuf),
}

impl std::str::FromStr for Listen {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.strip_prefix("unix://") {
            Some(path) => Ok(Listen::Unix(PathBuf::from(path))),
            None => Ok(Listen::Tcp(s.parse().with_context(|| {
                format!("{s:?} is neither host:port nor unix:///path")
            })?)),
        }
    }
}

/// How the daemon serves: who may connect, what each client may hold, how long a stop waits.
#[derive(Clone)]
pub struct ServeOptions {
    pub access: Access,
    pub limits: Checked,
    /// How long a stop lets running jobs finish (`daemon.shutdown_deadline_secs`); the jobs
    /// still unfinished then are failed and their callers answered at once.
    pub shutdown_deadline: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            access: Access::default(),
            limits: Checked::default(),
            shutdown_deadline: Duration::from_secs(30),
        }
    }
}

/// After the shutdown deadline, how long the callers of failed jobs get to read their answers
/// before serving ends regardless.
pub const AFTER_DEADLINE: Duration = Duration::from_secs(3);

/// Serves the ProvingEngine, health and reflection services until `shutdown` resolves, on
/// loopback or a unix socket ([`serve_with`] for other addresses), with the default
/// [`ServeOptions`]. `ready` gets the bound TCP address (useful with port 0) before the first
/// request.
pub async fn serve(
    engine: Arc<Engine>,
    listen: Listen,
    ready: impl FnOnce(Option<std::net::SocketAddr>),
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()> {
    serve_with(engine, listen, &ServeOptions::default(), ready, shutdown).await
}

/// As [`serve`], with clients authenticated as `options.access` says (checked against
/// `listen`) and held to `options.limits`. When `shutdown` resolves the daemon drains: the
/// listener closes (new connections are refused at once), new calls on open connections are
/// UNAVAILABLE at once, running jobs get `options.shutdown_deadline` to finish; then the
/// unfinished ones are failed and their callers answered. Once no call is in flight the open
/// connections are told to go away, and serving ends within [`AFTER_DEADLINE`] of the
/// deadline at most, whatever a client still holds open.
pub async fn serve_with(
    engine: Arc<Engine>,
    listen: Listen,
    options: &ServeOptions,
    ready: impl FnOnce(Option<std::net::SocketAddr>),
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()> {
    let (access, limits) = (&options.access, &options.limits);
    let chosen = access.check(&listen)?;
    // Both serve a reachable address without encryption or authentication.
    if chosen.starts_with("INSECURE") || chosen.starts_with("plain TCP") {
        tracing::warn!("access: {chosen}");
    } else {
        tracing::info!("access: {chosen}");
    }
    let drain = Drain::default();
    let max_message = limits.max_request_bytes as usize;
    let service =
        ProvingEngineServer::new(ProvingService::new(engine.clone(), limits, drain.clone()))
            .max_decoding_message_size(max_message)
            .max_encoding_message_size(max_message);
    let service = InterceptedService::new(service, access.interceptor());
    let (mut health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<ProvingEngineServer<ProvingService>>()
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()
        .context("building the reflection service")?;
    // Dead peers are found by pings; idle and half-open connections by the listener's idle
    // clock (pings are answered by any client library, so they cannot tell idle from alive).
    let mut builder = Server::builder()
        .initial_stream_window_size(Some(STREAM_WINDOW))
        .initial_connection_window_size(Some(CONNECTION_WINDOW))
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
        .max_concurrent_streams(Some(streams_per_connection(limits)))
        .http2_max_header_list_size(Some(MAX_HEADER_LIST_BYTES));
    if let Some(tls) = access.tls_config()? {
        builder = builder.tls_config(tls).context("the TLS settings")?;
    }
    let budget = ReceiveBudget::new(limits.max_receiving_bytes, limits.urgent_receiving_bytes);
    let router = builder
        .layer(tower::util::MapResponseLayer::new(
            oversize_is_resource_exhausted,
        ))
        .layer(RequestGuardLayer::new(limits, budget))
        .layer(DrainLayer(drain.clone()))
        .add_service(health_service)
        .add_service(reflection)
        .add_service(service);
    let connections = Connections::new(
        limits.max_connections,
        limits.max_connections_per_client,
        limits.idle_timeout,
    );
    // The server's own shutdown (GOAWAY on every connection) comes once the drain has
    // answered the calls in flight: see `drain`.
    let drain_signal = drain.clone();
    let draining = async move { drain_signal.connections_closing().await };
    let allowed = (!access.allow_clients.is_empty())
        .then(|| Arc::new(AllowedClients::new(access.allow_clients.clone())));
    // Either listener, closable from the drain; its serving future, boxed to one type.
    let (close, serving): (ListenerCloser, Serving) = match listen {
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding {addr}"))?;
            let local = listener.local_addr()?;
            tracing::info!(%local, "serving cuzk.v1 over TCP");
            ready(Some(local));
            let slot = ListenerSlot::new(listener);
            let incoming = Incoming::new(slot.clone(), connections).allowing(allowed);
            let serving = router.serve_with_incoming_shutdown(incoming, draining);
            (Box::new(move || slot.close()), Box::pin(serving))
        }
        Listen::Unix(path) => {
            let listener = bind_unix(&path)?;
            tracing::info!(path = %path.display(), "serving cuzk.v1 over a unix socket");
            ready(None);
            let slot = ListenerSlot::new(listener);
            let incoming = Incoming::new(slot.clone(), connections);
            let serving = router.serve_with_incoming_shutdown(incoming, draining);
            (Box::new(move || slot.close()), Box::pin(serving))
        }
    };
    drained(
        serving,
        shutdown,
        &drain,
        close,
        &engine,
        options.shutdown_deadline,
    )
    .await
}

type ListenerCloser = Box<dyn FnOnce() + Send>;
type Serving = std::pin::Pin<Box<dyn Future<Output = Result<(), tonic::transport::Error>> + Send>>;

/// Runs `serving` until `shutdown`, then drains it: the order and the bounds of
/// [`serve_with`].
async fn drained(
    mut serving: Serving,
    shutdown: impl Future<Output = ()>,
    drain: &Drain,
    close_listener: ListenerCloser,
    engine: &Engine,
    deadline: Duration,
) -> Result<()> {
    tokio::select! {
        r = &mut serving => return r.context("serving"),
        () = shutdown => {}
    }
    close_listener();
    drain.start();
    tracing::info!(
        deadline_secs = deadline.as_secs(),
        "draining: new connections and calls refused, running jobs have until the deadline"
    );
    let answered = tokio::select! {
        r = &mut serving => return r.context("serving"),
        r = tokio::time::timeout(deadline, drain.answered()) => r.is_ok(),
    };
    let end = tokio::time::Instant::now() + AFTER_DEADLINE;
    if !answered {
        let failed = engine.fail_unfinished(
            "the daemon stopped before the job finished (daemon.shutdown_deadline_secs \
             passed); submit it again",
        );
        tracing::warn!(
            failed,
            "shutdown deadline passed: failed the unfinished jobs"
        );
        // Their callers are answered before their connections are told to go away.
        tokio::select! {
            r = &mut serving => return r.context("serving"),
            _ = tokio::time::timeout_at(end, drain.answered()) => {}
        }
    }
    drain.close_connections();
    match tokio::time::timeout_at(end, &mut serving).await {
        Ok(r) => r.context("serving"),
        Err(_) => {
            tracing::warn!("connections still open after the deadline: stopping regardless");
            Ok(())
        }
    }
}

/// HTTP/2 flow-control windows. A body waiting for room in the receive budget is not read, and
/// leaves up to a stream window of its client's bytes unread; the connection's window is many
/// stream windows, so that Curio's PoRep uploads waiting on its one connection never stop its
/// WinningPoSt on the same connection (with equal windows, one waiting stream stopped them all).
pub const STREAM_WINDOW: u32 = 1 << 20;
pub const CONNECTION_WINDOW: u32 = 16 << 20;

/// Server pings on idle HTTP/2 connections, and how long an answer may take.
const KEEPALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);
const KEEPALIVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
/// gRPC headers are a few hundred bytes; hyper's default allows 16 MiB.
const MAX_HEADER_LIST_BYTES: u32 = 64 << 10;

/// Binds the socket under a temporary name, sets its mode to [`SOCKET_MODE`], then renames it
/// into place: no client ever sees it with the umask's wider mode.
fn bind_unix(path: &std::path::Path) -> Result<tokio::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    if path.exists() {
        // A socket left by a previous run would make bind fail.
        std::fs::remove_file(path).with_context(|| format!("removing stale {}", path.display()))?;
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.binding", std::process::id()));
    let tmp = path.with_file_name(name);
    let _ = std::fs::remove_file(&tmp);
    let listener = tokio::net::UnixListener::bind(&tmp)
        .with_context(|| format!("binding {}", tmp.display()))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(SOCKET_MODE))
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("placing the socket at {}", path.display()))?;
    Ok(listener)
}

/// A daemon serving on a task of the caller's runtime: what tests (and hosts embedding zkforge)
/// start instead of a process.
pub struct Running {
    /// The bound TCP address; `None` on a unix socket.
    pub addr: Option<std::net::SocketAddr>,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<()>>,
}

impl Running {
    /// Starts [`serve_with`] with the default options and returns once it listens, or with
    /// the error that stopped it.
    pub async fn start(engine: Arc<Engine>, listen: Listen, access: Access) -> Result<Self> {
        let options = ServeOptions {
            access,
            ..ServeOptions::default()
        };
        Self::start_with(engine, listen, options).await
    }

    /// As [`Running::start`], held to `limits`.
    pub async fn start_limited(
        engine: Arc<Engine>,
        listen: Listen,
        access: Access,
        limits: Checked,
    ) -> Result<Self> {
        let options = ServeOptions {
            access,
            limits,
            ..ServeOptions::default()
        };
        Self::start_with(engine, listen, options).await
    }

    /// As [`Running::start`], with every option given.
    pub async fn start_with(
        engine: Arc<Engine>,
        listen: Listen,
        options: ServeOptions,
    ) -> Result<Self> {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, listening) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let ready = move |addr| {
                let _ = ready.send(addr);
            };
            serve_with(engine, listen, &options, ready, async {
                let _ = stopped.await;
            })
            .await
        });
        match listening.await {
            Ok(addr) => Ok(Self { addr, stop, task }),
            // `ready` was dropped unsent: serving ended before it listened.
            Err(_) => match task.await.context("the serving task panicked")? {
                Err(e) => Err(e),
                Ok(()) => anyhow::bail!("the daemon stopped before it listened"),
            },
        }
    }

    /// Stops taking requests, as SIGTERM does, and returns how serving ended.
    pub async fn stop(self) -> Result<()> {
        let (signal, done) = self.signal_stop();
        signal();
        done.await
    }

    /// Splits the daemon into the stop signal (what SIGTERM does) and the end of serving, so
    /// that a caller can act during the drain.
    pub fn signal_stop(self) -> (impl FnOnce(), impl Future<Output = Result<()>>) {
        let stop = self.stop;
        let task = self.task;
        (
            move || {
                let _ = stop.send(());
            },
            async move { task.await.context("the serving task panicked")? },
        )
    }
}
