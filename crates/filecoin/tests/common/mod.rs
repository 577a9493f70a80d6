//! Shared test setup: 2 KiB test parameters, generated once and cached across runs under
//! `$ZKFORGE_CACHE/params` (default `~/.cache/zkforge/params`), and a fresh sealed sector.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use zkforge_filecoin::post::PostRequest;
use zkforge_filecoin::{params, ParamsId, ProofKind};
use zkforge_fixtures::{self as fixtures, read_base64_list, unhex32, Manifest, PostFixture};

pub const SIZE_2K: u64 = 2048;

pub fn cache_dir() -> PathBuf {
    params::zkforge_cache_dir()
}

/// The parameter directory, with FIL_PROOFS_PARAMETER_CACHE pointing at it before any
/// filecoin-proofs code reads its settings.
pub fn param_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = cache_dir().join("params");
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
        dir
    })
    .clone()
}

/// Makes sure the 2 KiB parameters of `kind` exist (minutes on 2 cores for PoRep and SnapDeals,
/// the first time only) and loads their proving key.
pub fn params(kind: ProofKind) -> (PathBuf, ParamsId) {
    static LOCK: Mutex<()> = Mutex::new(());
    let dir = param_dir();
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let id = params::ensure_test_params(kind, SIZE_2K, &dir, &()).unwrap();
    (dir, id)
}

pub fn porep_params() -> (PathBuf, ParamsId) {
    params(ProofKind::PoRep)
}

/// The circuit's recorded matrices, cached beside its parameters (recorded on first use).
pub fn matrices(
    circuits: &dyn zkforge_filecoin::PartitionedCircuit,
) -> std::sync::Arc<zkforge_groth16::ConstraintMatrices> {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let path = circuits.params_id().matrices_path(&param_dir());
    let m = zkforge_circuits::cached_matrices(circuits, Some(&path)).unwrap();
    std::sync::Arc::new(m.expect("Filecoin circuits have recordings"))
}

/// Proves every partition on the CPU through the engine, the one proving pipeline (the
/// native assignment, a, b, c from the circuit's recorded matrices, each partition's proof
/// self-checked), with the cached 2 KiB parameters of its kind; partition k's r and s are the
/// k-th pair drawn, r then s, from ChaCha20 seeded with `seed` (as a reference prover drawing
/// from one such generator partition after partition). The proof bytes.
pub fn prove(circuits: Box<dyn zkforge_filecoin::PartitionedCircuit>, seed: u64) -> Vec<u8> {
    use std::sync::Arc;
    use zkforge_engine::{Engine, EngineConfig, JobOutcome, JobRequest, ParamsDir};
    let (dir, id) = params(circuits.kind());
    assert_eq!(&id, circuits.params_id());
    // Recorded once under the lock; the engine reads the recording beside the parameters.
    matrices(circuits.as_ref());
    let engine = Engine::start(
        EngineConfig::default(),
        Arc::new(zkforge_groth16::CpuBackend::new()),
        Box::new(ParamsDir(dir)),
    )
    .unwrap();
    let job = engine
        .submit(JobRequest::new(Arc::from(circuits)).seeded(seed))
        .unwrap();
    let done = engine.wait(job, Some(std::time::Duration::from_secs(3600)));
    match done.unwrap().expect("proved within the hour").outcome {
        JobOutcome::Completed(proof) => proof,
        other => panic!("the engine did not prove it: {other:?}"),
    }
}

/// A freshly sealed 2 KiB sector and its inputs, in a temporary directory.
pub fn sector(seed: u64) -> (tempfile::TempDir, Manifest) {
    param_dir();
    let dir = tempfile::tempdir().unwrap();
    let m = fixtures::make(SIZE_2K, dir.path(), seed).unwrap();
    (dir, m)
}

/// The PoSt request of fixture `p` as Curio sends it, the vanilla proofs read from `dir`.
pub fn post_request(dir: &std::path::Path, m: &Manifest, p: &PostFixture) -> PostRequest {
    PostRequest {
        registered_proof: p.registered_proof,
        randomness: unhex32(&p.randomness).unwrap(),
        prover_id: unhex32(&m.prover_id).unwrap(),
        vanilla_proofs: read_base64_list(&std::fs::read(dir.join(&p.vanilla)).unwrap()).unwrap(),
        partition_index: p.partition_index,
        sector_number: None,
    }
}
