//! What the engine's fault and memory tests share: keys of a small synthetic circuit, served
//! from memory, and a check that a completed job's proofs verify.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Result;
use rand_core::SeedableRng;
use zkforge_circuits::{ParamsId, PartitionedCircuit, ProofKind, SyntheticCircuit, SyntheticJob};
use zkforge_engine::{Engine, EngineConfig, JobRequest, ParamsSource};
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
