//! `zkforge daemon`: the cuzk.v1 gRPC service until SIGINT/SIGTERM.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use zkforge_engine::{Engine, EngineConfig, ParamsDir};
use zkforge_filecoin::params;
use zkforge_server::{serve, Listen};

use super::backend::{self, BackendArg};

#[derive(Args)]
pub struct DaemonArgs {
    /// `host:port` or `unix:///path/to.sock`.
    #[arg(long, default_value = "127.0.0.1:9820")]
    listen: String,
    /// Parameter directory [default: $FIL_PROOFS_PARAMETER_CACHE or /var/tmp/filecoin-proof-parameters].
    #[arg(long)]
    params: Option<PathBuf>,
    /// Prover backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// CPU workers synthesizing partitions.
    #[arg(long, default_value_t = EngineConfig::default().synthesis_workers)]
    synthesis_workers: usize,
    /// Host memory budget: "auto" or a size such as 64GiB.
    #[arg(long, default_value = "auto")]
    memory_budget: String,
}

pub fn run(args: DaemonArgs) -> Result<()> {
    let listen: Listen = args.listen.parse()?;
    let config = EngineConfig {
        synthesis_workers: args.synthesis_workers,
        memory_budget: args.memory_budget,
        ..Default::default()
    };
    let dir = params::parameter_dir(args.params.as_deref());
    tracing::info!(params = %dir.display(), "parameter directory");
    let backend = backend::select(args.backend, config.prover_threads)?;
    let engine = Arc::new(Engine::start(config, backend, Box::new(ParamsDir(dir)))?);
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(serve(engine, listen, |_| {}, shutdown_signal()))?;
    tracing::info!("daemon stopped; unfinished jobs were failed with a shutdown message");
    Ok(())
}

async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("no SIGTERM handler ({e}); stop with Ctrl-C");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("shutting down: no new requests");
}
