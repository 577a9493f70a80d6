//! The prover: a backend computes the five query sums of a witness; the final assembly with
//! the randomness r, s is common to every backend.

mod assemble;
mod cpu;

pub use assemble::assemble;
pub use cpu::CpuBackend;

use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use rand_core::RngCore;

use crate::{Proof, ProvingKey, Result, Witness};

/// The blinding scalars of one proof. Fixed values make the proof bytes deterministic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProofRandomness {
    pub r: Scalar,
    pub s: Scalar,
}

impl ProofRandomness {
    pub fn random(rng: &mut (impl RngCore + ?Sized)) -> Self {
        Self {
            r: Scalar::random(&mut *rng),
            s: Scalar::random(&mut *rng),
        }
    }
}

/// The query sums of one witness: Σ h·H, Σ aux·L, Σ A, Σ B in G1 and in G2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuerySums {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

/// An accelerator a backend proves on, as status reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub ordinal: u32,
    pub name: String,
    pub memory_total_bytes: u64,
    pub memory_free_bytes: u64,
}

/// Where the heavy work of a proof runs (CPU or GPU).
pub trait ProverBackend: Send + Sync {
    fn name(&self) -> &'static str;

    /// The accelerators this backend uses (none for the CPU).
    fn devices(&self) -> Vec<DeviceInfo> {
        Vec::new()
    }

    /// Computes the query sums; the key has already been checked to fit the witness.
    fn query_sums(&self, pk: &ProvingKey, witness: Witness) -> Result<QuerySums>;
}

/// Proves one synthesized circuit.
pub fn prove(
    backend: &dyn ProverBackend,
    pk: &ProvingKey,
    witness: Witness,
    randomness: ProofRandomness,
) -> Result<Proof> {
    pk.check_fits(&witness)?;
    let sums = backend.query_sums(pk, witness)?;
    assemble(&pk.vk, &sums, randomness)
}

/// Proves several circuits against one key, in order.
pub fn prove_batch(
    backend: &dyn ProverBackend,
    pk: &ProvingKey,
    witnesses: Vec<Witness>,
    randomness: &[ProofRandomness],
) -> Result<Vec<Proof>> {
    assert_eq!(
        witnesses.len(),
        randomness.len(),
        "one randomness per witness"
    );
    for w in &witnesses {
        pk.check_fits(w)?;
    }
    witnesses
        .into_iter()
        .zip(randomness)
        .map(|(w, r)| prove(backend, pk, w, *r))
        .collect()
}
