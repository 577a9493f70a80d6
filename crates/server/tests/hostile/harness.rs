//! The daemon under test, its parameter gate, and the requests the tests send.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::Code;
use zkforge_engine::{Engine, EngineConfig, ParamsSource};
use zkforge_filecoin::ParamsId;
use zkforge_fixtures::{self as fixtures, read_base64_list, Manifest};
use zkforge_groth16::{CpuBackend, LoadedKey, QueryLengths};
use zkforge_server::pb::{self, proving_engine_client::ProvingEngineClient};
use zkforge_server::{Access, Limits, Running};

/// Parameters that never arrive: a load blocks until the gate opens, then fails.
#[derive(Default)]
pub struct GatedSource {
    open: Mutex<bool>,
    changed: Condvar,
}

impl GatedSource {
    pub fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.changed.notify_all();
    }
}

pub struct Gate(pub Arc<GatedSource>);

impl ParamsSource for Gate {
    fn lengths(&self, _: &ParamsId) -> anyhow::Result<QueryLengths> {
        Ok(QueryLengths {
            ic: 2,
            h: 15,
            l: 16,
            a: 16,
            b_g1: 16,
            b_g2: 16,
        })
    }

    fn load(&self, id: &ParamsId, _: bool) -> anyhow::Result<LoadedKey> {
        let mut open = self.0.open.lock().unwrap();
        while !*open {
            open = self.0.changed.wait(open).unwrap();
        }
        anyhow::bail!("{} withheld by the test", id.circuit_id())
    }
}

/// A daemon on loopback with `limits`, its engine configured by `engine`.
pub struct Daemon {
    running: Option<Running>,
    pub gate: Arc<GatedSource>,
}

impl Daemon {
    pub async fn start(limits: Limits, engine: EngineConfig) -> Self {
        let gate = Arc::new(GatedSource::default());
        let engine = Arc::new(
            Engine::start(
                EngineConfig {
                    synthesis_workers: 2,
                    memory_budget: "1GiB".into(),
                    ..engine
                },
                Arc::new(CpuBackend::new()),
                Box::new(Gate(gate.clone())),
            )
            .unwrap(),
        );
        let running = Running::start_limited(
            engine,
            "127.0.0.1:0".parse().unwrap(),
            Access::default(),
            limits.check().unwrap(),
        )
        .await
        .unwrap();
        Self {
            running: Some(running),
            gate,
        }
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.running.as_ref().unwrap().addr.unwrap()
    }

    pub async fn client(&self) -> ProvingEngineClient<Channel> {
        ProvingEngineClient::connect(format!("http://{}", self.addr()))
            .await
            .unwrap()
            .max_encoding_message_size(usize::MAX)
    }

    /// Alive and answering: a fresh connection's GetStatus within a second.
    pub async fn answers(&self) {
        let t = Instant::now();
        let mut c = self.client().await;
        tokio::time::timeout(
            Duration::from_secs(1),
            c.get_status(pb::GetStatusRequest {}),
        )
        .await
        .expect("GetStatus answered within a second")
        .expect("GetStatus succeeded");
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }

    /// Every test's closing check, [`Self::answers`], then the daemon stopped.
    pub async fn answers_then_stop(mut self) {
        self.answers().await;
        self.gate.release();
        self.running.take().unwrap().stop().await.unwrap();
    }
}

impl Drop for Daemon {
    /// A test that panics with jobs waiting on the gate would otherwise hang: the engine's
    /// workers, blocked in the load, are joined when the runtime drops the service.
    fn drop(&mut self) {
        self.gate.release();
    }
}

/// This process's peak resident memory (VmHWM), in bytes.
pub fn peak_rss() -> u64 {
    zkforge_engine::process_memory().1
}

/// Threads of this process now.
pub fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// A sealed 2 KiB sector's client inputs (made once per test, under a second).
pub fn sector(dir: &Path) -> Manifest {
    fixtures::make(2048, dir, 7).unwrap()
}

pub fn window_post_request(dir: &Path, m: &Manifest) -> pb::SubmitProofRequest {
    let p = m.window_post().unwrap();
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::WindowPostPartition as i32,
        sector_size: 2048,
        vanilla_proofs: read_base64_list(&std::fs::read(dir.join(&p.vanilla)).unwrap()).unwrap(),
        randomness: fixtures::unhex32(&p.randomness).unwrap().to_vec(),
        partition_index: p.partition_index as u32,
        ..Default::default()
    }
}

pub fn assert_refused(
    r: Result<tonic::Response<pb::SubmitProofResponse>, tonic::Status>,
    code: Code,
    text: &str,
) {
    let e = r.expect_err("refused");
    assert_eq!(e.code(), code, "{}", e.message());
    assert!(
        e.message().contains(text),
        "{:?} lacks {text:?}",
        e.message()
    );
}
