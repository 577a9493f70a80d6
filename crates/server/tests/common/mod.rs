//! What the daemon tests share (each suite uses part of it).

#![allow(dead_code)]

pub mod raw;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::Channel;
use zkforge_engine::{Engine, EngineConfig, ParamsSource};
use zkforge_fixtures::{self as fixtures, read_base64_list, Manifest};
use zkforge_groth16::CpuBackend;
use zkforge_server::pb::{self, proving_engine_client::ProvingEngineClient};
use zkforge_server::CheckedLimits;

/// AwaitProof for `job`, waiting up to `timeout_ms` (0: until the job ends); the call itself
/// must succeed, the answer's status is the test's to check.
pub async fn await_proof(
    c: &mut ProvingEngineClient<Channel>,
    job: &str,
    timeout_ms: u64,
) -> pb::AwaitProofResponse {
    c.await_proof(pb::AwaitProofRequest {
        job_id: job.into(),
        timeout_ms,
    })
    .await
    .unwrap()
    .into_inner()
}

/// The HTTP side (/status, /metrics) of a CPU engine with a 1 GiB budget and `params`, on a
/// loopback port, once bound: its address, the sender that stops it, and its task (the
/// server's own result).
pub async fn spawn_http(
    params: Box<dyn ParamsSource>,
    limits: CheckedLimits,
) -> (
    SocketAddr,
    oneshot::Sender<()>,
    JoinHandle<anyhow::Result<()>>,
) {
    let config = EngineConfig {
        memory_budget: "1GiB".into(),
        ..Default::default()
    };
    let engine = Arc::new(Engine::start(config, Arc::new(CpuBackend::new()), params).unwrap());
    let (ready, bound) = oneshot::channel();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(zkforge_server::serve_http(
        engine,
        "127.0.0.1:0".parse().unwrap(),
        limits,
        move |a| {
            let _ = ready.send(a);
        },
        async {
            let _ = stopped.await;
        },
    ));
    (bound.await.unwrap(), stop, task)
}

/// A 2 KiB WinningPoSt request of the fixtures in `dir` (the cheapest real proof).
pub fn winning_post_request(dir: &Path, m: &Manifest, id: &str) -> pb::SubmitProofRequest {
    let p = m.winning_post().unwrap();
    pb::SubmitProofRequest {
        request_id: id.into(),
        proof_kind: pb::ProofKind::WinningPost as i32,
        sector_size: 2048,
        vanilla_proofs: read_base64_list(&std::fs::read(dir.join(&p.vanilla)).unwrap()).unwrap(),
        randomness: fixtures::unhex32(&p.randomness).unwrap().to_vec(),
        ..Default::default()
    }
}
