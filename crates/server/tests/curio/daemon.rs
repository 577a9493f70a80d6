//! The daemon Curio talks to in these tests: the CPU backend over the shared 2 KiB test
//! parameters, on loopback TCP or a unix socket, with the parameter loads of chosen kinds held
//! back until the test lets them go (for real, or failing), so that jobs stay unfinished for
//! as long as a test needs.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use zkforge_engine::{Engine, EngineConfig, ParamsDir, ParamsSource};
use zkforge_filecoin::{params, ParamsId, ProofKind};
use zkforge_groth16::{CpuBackend, LoadedKey, QueryLengths};
use zkforge_server::{Access, Limits, Listen, Running, ServeOptions};

use crate::client::{Address, Curio};

/// The shared test-parameter directory, every kind's 2 KiB set made on first use.
pub fn param_dir() -> PathBuf {
    let dir = params::zkforge_cache_dir().join("params");
    // filecoin-proofs' verifiers read the .vk files from here (once, at their first use).
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    for kind in ProofKind::ALL {
        params::ensure_test_params(kind, 2048, &dir, &()).unwrap();
    }
    dir
}

/// Links a parameter set's files from the shared directory into `dir`: the operator copying
/// in the file a job was missing.
pub fn add_params(kind: ProofKind, dir: &Path) {
    let shared = param_dir();
    let stem = zkforge_filecoin::registry::params_id(kind, 2048)
        .unwrap()
        .stem;
    for entry in std::fs::read_dir(&shared).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with(&stem) && !name.ends_with(".lock") {
            let _ = std::fs::remove_file(dir.join(&name));
            std::os::unix::fs::symlink(&path, dir.join(&name)).unwrap();
        }
    }
}

/// Loads of the held kinds wait here; released, they load for real or fail.
#[derive(Default)]
pub struct Hold {
    /// `None` while held; then whether the loads go ahead.
    outcome: Mutex<Option<bool>>,
    changed: Condvar,
}

impl Hold {
    /// Lets the held loads go: for real (`load`), or failing as a missing file would.
    pub fn release(&self, load: bool) {
        let mut o = self.outcome.lock().unwrap();
        o.get_or_insert(load);
        self.changed.notify_all();
    }

    fn wait(&self) -> bool {
        let mut o = self.outcome.lock().unwrap();
        loop {
            if let Some(load) = *o {
                return load;
            }
            o = self.changed.wait(o).unwrap();
        }
    }
}

/// The parameter directory, with the loads of `held` kinds waiting on `hold`.
struct HeldParams {
    dir: ParamsDir,
    held: Vec<ProofKind>,
    hold: Arc<Hold>,
}

impl ParamsSource for HeldParams {
    fn lengths(&self, id: &ParamsId) -> anyhow::Result<QueryLengths> {
        self.dir.lengths(id)
    }

    fn load(&self, id: &ParamsId, in_file: bool) -> anyhow::Result<LoadedKey> {
        if self.held.contains(&id.kind) && !self.hold.wait() {
            anyhow::bail!("{} withheld by the test", id.circuit_id());
        }
        self.dir.load(id, in_file)
    }

    fn matrices_cache(&self, id: &ParamsId) -> Option<PathBuf> {
        self.dir.matrices_cache(id)
    }
}

/// How a test's daemon is set up.
pub struct Setup {
    pub engine: EngineConfig,
    pub limits: Limits,
    pub shutdown_deadline: Duration,
    /// Serve on this unix socket instead of loopback TCP.
    pub unix: Option<PathBuf>,
    /// Kinds whose parameter loads wait for [`TestDaemon::release`].
    pub held: Vec<ProofKind>,
    /// Another parameter directory than the shared one.
    pub params: Option<PathBuf>,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            engine: EngineConfig {
                synthesis_workers: 2,
                ..Default::default()
            },
            limits: Limits::default(),
            shutdown_deadline: Duration::from_secs(30),
            unix: None,
            held: Vec::new(),
            params: None,
        }
    }
}

/// A running daemon and the engine behind it.
pub struct TestDaemon {
    pub engine: Arc<Engine>,
    pub address: Address,
    pub hold: Arc<Hold>,
    running: Option<Running>,
    release_on_drop: bool,
}

impl TestDaemon {
    pub async fn start(setup: Setup) -> Self {
        let dir = setup.params.unwrap_or_else(param_dir);
        let hold = Arc::new(Hold::default());
        let source = HeldParams {
            dir: ParamsDir(dir),
            held: setup.held,
            hold: hold.clone(),
        };
        let engine = Arc::new(
            Engine::start(setup.engine, Arc::new(CpuBackend::new()), Box::new(source)).unwrap(),
        );
        let listen = match &setup.unix {
            Some(path) => Listen::Unix(path.clone()),
            None => "127.0.0.1:0".parse().unwrap(),
        };
        let options = ServeOptions {
            access: Access::default(),
            limits: setup.limits.check().unwrap(),
            shutdown_deadline: setup.shutdown_deadline,
        };
        let running = Running::start_with(engine.clone(), listen, options)
            .await
            .unwrap();
        let address = match setup.unix {
            Some(path) => Address::Unix(path),
            None => Address::Tcp(running.addr.unwrap()),
        };
        Self {
            engine,
            address,
            hold,
            running: Some(running),
            release_on_drop: true,
        }
    }

    /// A new Curio client of this daemon.
    pub fn curio(&self) -> Curio {
        Curio::new(self.address.clone())
    }

    pub fn tcp(&self) -> std::net::SocketAddr {
        match self.address {
            Address::Tcp(a) => a,
            Address::Unix(_) => panic!("a unix-socket daemon"),
        }
    }

    /// Unfinished jobs of `kind` the engine holds.
    pub fn unfinished(&self, kind: ProofKind) -> usize {
        let s = self.engine.status();
        s.queues
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, c)| c.jobs_queued + c.jobs_running)
            .sum()
    }

    /// Waits until the engine holds `n` unfinished jobs of `kind`: a minute, as CI runs the
    /// suite's tests side by side on two cores; past it, the panic shows the engine's last
    /// events (a job that failed, or none that arrived).
    pub async fn until_unfinished(&self, kind: ProofKind, n: usize) {
        for _ in 0..3000 {
            if self.unfinished(kind) == n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let events = self.engine.timeline();
        panic!(
            "{n} unfinished {kind} jobs: {} after 60 s; the engine's last events: {:#?}",
            self.unfinished(kind),
            &events[events.len().saturating_sub(12)..]
        );
    }

    /// Stops serving as SIGTERM does; the held loads fail.
    pub async fn stop(mut self) {
        self.hold.release(false);
        self.running.take().unwrap().stop().await.unwrap();
    }

    /// The stop signal and the end of serving, apart; the held loads stay held.
    pub fn signal_stop(mut self) -> Stopping {
        let (signal, served) = self.running.take().unwrap().signal_stop();
        self.release_on_drop = false;
        Stopping {
            signal: Box::new(signal),
            served: Box::pin(served),
            engine: self.engine.clone(),
            hold: self.hold.clone(),
        }
    }
}

/// A daemon being stopped, in the pieces a test acts on.
pub struct Stopping {
    pub signal: Box<dyn FnOnce() + Send>,
    pub served: std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<()>> + Send>>,
    pub engine: Arc<Engine>,
    pub hold: Arc<Hold>,
}

/// Lets the held loads go (failing) when dropped: a test that panics while stopping would
/// otherwise hang in the engine's drop.
pub struct ReleaseOnDrop(pub Arc<Hold>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release(false);
    }
}

impl Drop for TestDaemon {
    /// A test that panics with loads held would otherwise hang in the engine's drop.
    fn drop(&mut self) {
        if self.release_on_drop {
            self.hold.release(false);
        }
    }
}
