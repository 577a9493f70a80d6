//! What the engine's fault, memory and placement tests share: keys of a small synthetic
//! circuit, served from memory, a check that a completed job's proofs verify, a job that
//! must be refused at once, and the run of an RSS-measuring child test.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use rand_core::SeedableRng;
use zkforge_circuits::{ParamsId, PartitionedCircuit, ProofKind, SyntheticCircuit, SyntheticJob};
use zkforge_engine::{Engine, EngineConfig, Failure, JobOutcome, JobRequest, ParamsSource};
use zkforge_groth16::generator::generate_random_keys;
use zkforge_groth16::{
    EvaluationSite, LoadedKey, PartitionPlan, Proof, ProverBackend, ProvingKey, QueryLengths,
};

/// Host bytes the engine reserves for one partition of `pk` proved on the CPU.
pub fn partition_bytes(pk: &ProvingKey) -> u64 {
    PartitionPlan::new(&pk.lengths(), EvaluationSite::Host).host_bytes()
}

/// Keys kept in memory, found by file stem (whatever the proof kind).
pub struct MemorySource(pub HashMap<String, ProvingKey>);

impl MemorySource {
    fn key(&self, id: &ParamsId) -> Result<&ProvingKey> {
        self.0
            .get(&id.stem)
            .ok_or_else(|| anyhow::anyhow!("no keys for {}", id.stem))
    }
}

impl ParamsSource for MemorySource {
    fn lengths(&self, id: &ParamsId) -> Result<QueryLengths> {
        Ok(self.key(id)?.lengths())
    }

    fn load(&self, id: &ParamsId, _in_file: bool) -> Result<LoadedKey> {
        Ok(LoadedKey::Memory(Arc::new(self.key(id)?.clone())))
    }
}

/// A job of `partitions` partitions of a synthetic circuit with 2^`log_size` constraints.
pub fn job(log_size: u32, partitions: usize) -> SyntheticJob {
    let circuit = SyntheticCircuit::new((1 << log_size) - 8, 2, 0.8, 1);
    SyntheticJob::new(circuit, partitions, ProofKind::PoRep)
}

pub fn keys(log_size: u32) -> (ParamsId, ProvingKey) {
    let j = job(log_size, 1);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let pk = generate_random_keys(j.circuit.clone(), &mut rng, &()).unwrap();
    (j.params_id().clone(), pk)
}

/// An engine proving `log_size` synthetic jobs on `backend`; also returns the key.
pub fn engine(
    config: EngineConfig,
    backend: Arc<dyn ProverBackend>,
    log_size: u32,
) -> (Engine, ProvingKey) {
    let (id, pk) = keys(log_size);
    let source = MemorySource([(id.stem, pk.clone())].into_iter().collect());
    (
        Engine::start(config, backend, Box::new(source)).unwrap(),
        pk,
    )
}

pub fn submit(e: &Engine, j: SyntheticJob) -> u64 {
    e.submit(JobRequest::new(Arc::new(j))).unwrap()
}

/// Every partition's 192-byte proof verifies against the job's public inputs.
pub fn proofs_verify(pk: &ProvingKey, j: &SyntheticJob, bytes: &[u8]) -> bool {
    let inputs = j.circuit.public_values();
    bytes.len() == Proof::BYTES * j.partitions
        && bytes.chunks(Proof::BYTES).all(|c| {
            let p = Proof::from_bytes(c).unwrap();
            zkforge_groth16::verify::verify(&pk.vk, &p, &inputs).unwrap()
        })
}

/// A source that counts the keys it loads.
pub struct CountingSource {
    pub keys: MemorySource,
    pub loads: Arc<AtomicUsize>,
}

impl ParamsSource for CountingSource {
    fn lengths(&self, id: &ParamsId) -> Result<QueryLengths> {
        self.keys.lengths(id)
    }
    fn load(&self, id: &ParamsId, in_file: bool) -> Result<LoadedKey> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        self.keys.load(id, in_file)
    }
}

/// Starts an engine on `backend` with `budget` over a counting source of the 2^10 key, submits
/// one job and returns how it ended, how long that took and how many keys were loaded.
pub fn refused(budget: u64, backend: Arc<dyn ProverBackend>) -> (Failure, Duration, usize) {
    let (id, pk) = keys(10);
    let loads = Arc::new(AtomicUsize::new(0));
    let source = CountingSource {
        keys: MemorySource([(id.stem, pk)].into_iter().collect()),
        loads: loads.clone(),
    };
    let e = Engine::start(
        EngineConfig {
            memory_budget: budget.to_string(),
            ..Default::default()
        },
        backend,
        Box::new(source),
    )
    .unwrap();
    let t = std::time::Instant::now();
    let id = submit(&e, job(10, 1));
    let outcome = e.wait(id, Some(Duration::from_secs(30))).unwrap();
    let took = t.elapsed();
    match outcome.map(|r| r.outcome) {
        Some(JobOutcome::Failed(f)) => (f, took, loads.load(Ordering::SeqCst)),
        other => panic!("the job should fail at once: {other:?}"),
    }
}

/// Runs this test binary's ignored test `child` alone in a process of its own (its peak RSS is
/// then its own) with `env` set, asserts that it passed and reported "rss within budget", and
/// prints its "RSS baseline" line.
pub fn run_rss_child(child: &str, env: &[(&str, &std::ffi::OsStr)]) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", child, "--nocapture"])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("rss within budget"), "{stdout}");
    let report = stdout.lines().find(|l| l.contains("RSS baseline"));
    println!("{}", report.unwrap_or_default());
}
