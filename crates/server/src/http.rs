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

use crate::metrics;

async fn status(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    let s = tokio::task::spawn_blocking(move || engine.status())
        .await
        .ok();
    let body =
        serde_json::to_string_pretty(&s).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
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
/// address.
pub async fn serve_http(
    engine: Arc<Engine>,
    addr: SocketAddr,
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
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}
