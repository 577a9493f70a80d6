//! The optional HTTP side: `GET /status` (JSON) and `GET /metrics` (Prometheus text).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use zkforge_engine::Engine;

use hyper::body::Incoming as Incoming_;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio_stream::StreamExt;
use tower::ServiceExt;

use crate::limits::Checked;
use crate::listener::{Connections, Incoming, ListenerSlot};
use crate::metrics;
use crate::status_json::StatusBody;

async fn status(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    let s = tokio::task::spawn_blocking(move || engine.status())
        .await
        .ok();
    let body = serde_json::to_string_pretty(&s.as_ref().map(StatusBody::from))
        .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    ([(header::CONTENT_TYPE, "application/json")], body)
}

async fn prometheus(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    let text = match tokio::task::spawn_blocking(move || engine.status()).await {
        Ok(s) => metrics::prometheus(&s),
        Err(e) => format!("# status unavailable: {e}\n"),
    };
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

/// Serves `/status` and `/metrics` on `addr` until `shutdown` resolves; `ready` gets the bound
/// address. Connections are held to `limits` as the gRPC side's are (caps, idle clock), and
/// a request's header must arrive within [`HEADER_TIMEOUT`].
pub async fn serve_http(
    engine: Arc<Engine>,
    addr: SocketAddr,
    limits: Checked,
    ready: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let app = Router::new()
        .route("/status", get(status))
        .route("/metrics", get(prometheus))
        .with_state(engine);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let local = listener.local_addr()?;
    tracing::info!(%local, "serving HTTP /status and /metrics");
    ready(local);
    let connections = Connections::new(
        limits.max_connections,
        limits.max_connections_per_client,
        limits.idle_timeout,
    );
    let mut incoming = Incoming::new(ListenerSlot::new(listener), connections);
    let mut open = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let io = tokio::select! {
            _ = &mut shutdown => break,
            Some(io) = incoming.next() => io,
            // Reap finished connections so the set does not grow.
            Some(_) = open.join_next(), if !open.is_empty() => continue,
        };
        let Ok(io) = io else { continue };
        let state = io.state().clone();
        let app = app.clone();
        // Each request marks its connection busy, so the idle clock runs between requests.
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming_>| {
            let active = state.request_started();
            let app = app.clone();
            async move {
                let response = app.oneshot(req.map(axum::body::Body::new)).await;
                drop(active);
                response
            }
        });
        open.spawn(async move {
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT);
            let _ = builder.serve_connection(TokioIo::new(io), service).await;
        });
    }
    open.abort_all();
    Ok(())
}

/// Time a client has to send a whole HTTP request header.
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
