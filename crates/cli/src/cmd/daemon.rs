//! `zkforge daemon`: the cuzk.v1 gRPC service until SIGINT/SIGTERM.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use clap::ValueEnum;
use zkforge_engine::{params_dir_source, probe_writable, Engine, ParamsSource};
use zkforge_filecoin::shape::format_sector_size;
use zkforge_filecoin::{params, ParamsId, ProofKind};
use zkforge_server::{serve_http, serve_with, Listen, ServeOptions};

use super::backend::{self, BackendArg};
use super::config::{Config, DaemonSection};
use super::params_guard::{GuardedParams, ParamsGuard};

#[derive(Args)]
pub struct DaemonArgs {
    /// TOML configuration (see zkforge.example.toml); flags below override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// `host:port` or `unix:///path/to.sock` [config: daemon.listen].
    #[arg(long)]
    listen: Option<String>,
    /// HTTP `host:port` for /status and /metrics [config: daemon.http_listen].
    #[arg(long)]
    http_listen: Option<String>,
    /// Parameter directory [config: daemon.params].
    #[arg(long)]
    params: Option<PathBuf>,
    /// Prover backend [config: daemon.backend].
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Serve an address other machines can reach without TLS and client authentication
    /// [config: daemon.insecure_remote].
    #[arg(long)]
    insecure_remote: bool,
}

/// The `preload` sets, each checked to have its parameter file before anything starts.
fn checked_preload(d: &DaemonSection, dir: &Path) -> Result<Vec<ParamsId>> {
    let ids = d.preload_ids()?;
    for id in &ids {
        let path = id.params_path(dir);
        anyhow::ensure!(
            path.exists(),
            "daemon.preload: {} has no parameter file {} (zkforge params generate --proof {} \
             --sector-size {})",
            id.circuit_id(),
            path.display(),
            id.kind,
            format_sector_size(id.sector_size)
        );
    }
    Ok(ids)
}

/// Loads the `preload` sets one after another on a thread of their own: the daemon serves
/// meanwhile, and a job needing a set still loading waits for that load instead of its own.
/// With `guard` (daemon.verify_params) each set's files are checked first and a refused set
/// is not loaded (a job needing it fails with the same message).
fn spawn_preload(
    engine: Arc<Engine>,
    ids: Vec<ParamsId>,
    guard: Option<Arc<ParamsGuard>>,
) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("preload".into())
        .spawn(move || {
            for id in ids {
                if let Some(Err(e)) = guard.as_ref().map(|g| g.check(&id)) {
                    tracing::error!(circuit = %id.circuit_id(), "preload refused: {e:#}");
                    continue;
                }
                match engine.preload(&id) {
                    Ok((_, ms)) => {
                        tracing::info!(circuit = %id.circuit_id(), ms = ms as u64, "parameters preloaded")
                    }
                    Err(e) => {
                        tracing::warn!(circuit = %id.circuit_id(), "preload failed: {e:#}")
                    }
                }
            }
        })
        .context("starting the preload thread")?;
    Ok(())
}

/// Sector sizes whose parameter sets the start-up log looks for.
pub(super) const SECTOR_SIZES: [u64; 5] = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];

/// Logs, for every parameter set in `dir`, where the backend will put it (each device's
/// plan from the key's lengths, the key read from its file where the host budget says a load
/// would; the first load decides again with the matrices and logs that), and warns of a set no device here can prove: a provider sees at start what the
/// card will do, not at the first job. On a thread of its own: reading a key's header from a
/// stuck disk must not keep the daemon from serving.
fn spawn_placement_log(engine: Arc<Engine>, dir: PathBuf) -> Result<()> {
    std::thread::Builder::new()
        .name("placement-log".into())
        .spawn(move || log_placements(&engine, &dir))
        .context("starting the placement log thread")?;
    Ok(())
}

fn log_placements(engine: &Engine, dir: &Path) {
    for kind in ProofKind::ALL {
        for size in SECTOR_SIZES {
            let Ok(id) = zkforge_filecoin::registry::params_id(kind, size) else {
                continue;
            };
            if !id.params_path(dir).exists() {
                continue;
            }
            match engine.placement(&id) {
                Ok(p) => {
                    for (device, plan) in p.devices.iter().enumerate() {
                        tracing::info!(circuit = %id.circuit_id(), device, "placement at start: {plan}");
                    }
                }
                Err(e) => tracing::warn!(
                    circuit = %id.circuit_id(),
                    "cannot be proved on this machine: {e:#}"
                ),
            }
        }
    }
}

/// How long a stopping daemon waits for its workers, and for its async tasks, once serving
/// has ended.
const ENGINE_STOP_GRACE: Duration = Duration::from_secs(2);

impl DaemonArgs {
    /// The log level a cuzk file's `logging.level` asks for; None for a native file, or one
    /// that cannot be read (`run` says why).
    pub fn cuzk_log_level(&self) -> Option<String> {
        let (_, cuzk) = Config::read(self.config.as_deref()).ok()?;
        cuzk?.log_level
    }
}

pub fn run(args: DaemonArgs) -> Result<()> {
    let (mut config, cuzk) = Config::read(args.config.as_deref())?;
    if let Some(t) = &cuzk {
        tracing::info!(
            keys = t.notes.len(),
            "reading a cuzk configuration file: each key and what it became"
        );
        for note in &t.notes {
            tracing::info!("{note}");
        }
    }
    let d = &mut config.daemon;
    if let Some(v) = args.listen {
        d.listen = v;
    }
    if let Some(v) = args.http_listen {
        d.http_listen = v;
    }
    if let Some(v) = args.params {
        d.params = v.display().to_string();
    }
    d.insecure_remote |= args.insecure_remote;
    let backend_arg = match args.backend {
        Some(b) => b,
        None => BackendArg::from_str(&d.backend, true)
            .map_err(|e| anyhow::anyhow!("daemon.backend = {:?}: {e}", d.backend))?,
    };
    for line in config.to_toml().lines().filter(|l| !l.is_empty()) {
        tracing::info!("config: {line}");
    }
    let listen: Listen = config.daemon.listen.parse()?;
    let limits = config.limits.check()?;
    // Checked before anything heavy starts: a refused address fails at once.
    let access = config.daemon.access()?;
    access.check(&listen).context("daemon.listen")?;
    let http: Option<std::net::SocketAddr> = match config.daemon.http_listen.as_str() {
        "" => None,
        s => Some(
            s.parse()
                .with_context(|| format!("daemon.http_listen {s:?} is not host:port"))?,
        ),
    };
    if let Some(addr) = http.filter(|a| !a.ip().is_loopback()) {
        tracing::warn!(%addr, "/status and /metrics are served without TLS to other machines (read-only)");
    }
    let explicit = (!config.daemon.params.is_empty()).then(|| PathBuf::from(&config.daemon.params));
    let dir = params::parameter_dir(explicit.as_deref());
    tracing::info!(params = %dir.display(), "parameter directory");
    let gpu = config.gpu.options()?;
    for line in config.gpu.describe() {
        tracing::info!("gpu config: {line}");
    }
    let preload = checked_preload(&config.daemon, &dir)?;
    let backend = backend::select_with(backend_arg, config.engine.prover_threads, &gpu)?;
    // daemon.verify_params: every set checked against the published digests before first use.
    let guard = config
        .daemon
        .verify_params
        .then(|| ParamsGuard::new(dir.clone()));
    // Recordings go beside the keys, or, where the daemon cannot write there (cuzk's
    // root-owned /data/zk/params), into its own cache directory: said once, never a failure.
    let recordings = params::zkforge_cache_dir().join("r1cs");
    let (source, apart) = params_dir_source(dir.clone(), recordings, probe_writable);
    if let Some(said) = apart {
        tracing::info!("{said}");
    }
    let source: Box<dyn ParamsSource> = match &guard {
        Some(g) => Box::new(GuardedParams {
            guard: g.clone(),
            inner: source,
        }),
        None => source,
    };
    let engine = Arc::new(Engine::start(config.engine, backend, source)?);
    spawn_placement_log(engine.clone(), dir.clone())?;
    spawn_preload(engine.clone(), preload, guard)?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let served = runtime.block_on(async {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let http_task = http.map(|addr| {
            let mut rx = stop_rx.clone();
            tokio::spawn(serve_http(
                engine.clone(),
                addr,
                limits.clone(),
                |_| {},
                async move {
                    let _ = rx.changed().await;
                },
            ))
        });
        let options = ServeOptions {
            access,
            limits: limits.clone(),
            shutdown_deadline: Duration::from_secs(config.daemon.shutdown_deadline_secs),
        };
        let result = serve_with(engine.clone(), listen, &options, |_| {}, shutdown_signal()).await;
        let _ = stop_tx.send(true);
        if let Some(t) = http_task {
            t.await.context("the HTTP task")??;
        }
        result
    });
    // Serving has ended (past the deadline if need be): what is still running is work nobody
    // will collect, and systemd's stop timeout is not ours to spend on it.
    let left = engine.stop_within(Some(ENGINE_STOP_GRACE));
    runtime.shutdown_timeout(ENGINE_STOP_GRACE);
    served?;
    if left > 0 {
        tracing::warn!(
            left,
            "workers still running a unit are ended with the process"
        );
    }
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
