//! Proving every partition of a request and checking the result before returning it.

use std::time::{Duration, Instant};

use std::sync::Arc;

use anyhow::{ensure, Result};
use rand_core::RngCore;
use zkforge_groth16::{
    prover, verify::verify, ConstraintMatrices, ProofRandomness, ProverBackend, ProvingKey,
};

use crate::PartitionedCircuit;

/// The proof bytes (192 per partition, in order) and where the time went.
pub struct ProveReport {
    pub proof: Vec<u8>,
    pub synthesis: Duration,
    pub proving: Duration,
    pub self_check: Duration,
}

/// Synthesizes and proves the partitions in order, verifying each proof: one that fails its
/// self-check is an error, never a returned proof. With the circuit's recorded `matrices`
/// each partition is only assigned and the prover computes a, b, c; without, it is
/// synthesized in full.
pub fn prove_all(
    circuits: &dyn PartitionedCircuit,
    matrices: Option<&Arc<ConstraintMatrices>>,
    backend: &dyn ProverBackend,
    pk: &ProvingKey,
    rng: &mut dyn RngCore,
) -> Result<ProveReport> {
    let mut report = ProveReport {
        proof: Vec::with_capacity(circuits.partitions() * zkforge_groth16::Proof::BYTES),
        synthesis: Duration::ZERO,
        proving: Duration::ZERO,
        self_check: Duration::ZERO,
    };
    for k in 0..circuits.partitions() {
        let t = Instant::now();
        let witness = match matrices {
            Some(m) => circuits.assign(k, m.clone())?,
            None => circuits.synthesize(k)?,
        };
        report.synthesis += t.elapsed();

        let t = Instant::now();
        let proof = prover::prove(backend, pk, witness, ProofRandomness::random(rng))?;
        report.proving += t.elapsed();

        let t = Instant::now();
        let inputs = circuits.public_inputs(k)?;
        ensure!(
            verify(&pk.vk, &proof, &inputs)?,
            "partition {k} of {}: the proof failed its self-check (parameters not matching the \
             circuit, or a prover fault); nothing is returned",
            circuits.params_id().circuit_id()
        );
        report.self_check += t.elapsed();
        report.proof.extend_from_slice(&proof.to_bytes());
    }
    Ok(report)
}
