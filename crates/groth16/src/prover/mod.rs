//! The prover: a backend computes the five query sums of a witness; the final assembly with
//! the randomness r, s is common to every backend.

mod assemble;
mod cpu;
pub mod placement;
mod plan;

pub use assemble::assemble;
pub use cpu::CpuBackend;
pub use plan::{EvaluationSite, PartitionPlan};

use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use rand_core::RngCore;

use crate::{Evaluations, KeyRef, Proof, ProvingKey, QueryLengths, Result, Urgency, Witness};

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
    /// Device memory the backend may reserve, and how much it holds now.
    pub budget_bytes: u64,
    pub reserved_bytes: u64,
    pub reserved_peak_bytes: u64,
    /// Where parameters live on this device, e.g. "vram: 1 key (6.10 GiB)".
    pub residency: String,
    /// Host-to-device copy rates measured at start, bytes a second: from page-locked and
    /// from pageable host memory (what placement plans are made with).
    pub h2d_pinned_bytes_per_s: u64,
    pub h2d_pageable_bytes_per_s: u64,
}

/// One timed phase of a proof on a device (e.g. "h2d", "ntt", "msm"), for the TIMELINE.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    pub name: &'static str,
    /// Start, in milliseconds after the backend call began (host clock).
    pub start_ms: f64,
    /// Length measured with device events.
    pub duration_ms: f64,
}

/// Where one proof runs, and how urgent it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dispatch {
    /// An index into the backend's `devices()`.
    pub device: usize,
    /// How urgent the job is (`Background`: none given). A backend whose devices hold
    /// several keys in turn lets the more urgent partition's key in first.
    pub urgency: Urgency,
}

impl Dispatch {
    /// Device `device`, no particular urgency.
    pub fn on(device: usize) -> Self {
        Self {
            device,
            urgency: Urgency::Background,
        }
    }
}

/// What one proof's device work looked like: lock wait and timed phases.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProveReport {
    /// Time spent waiting for the device's kernel lock (backends that lock themselves).
    pub lock_wait_ms: f64,
    /// Time the lock was held.
    pub locked_ms: f64,
    pub phases: Vec<Phase>,
}

/// Where the heavy work of a proof runs (CPU or GPU).
pub trait ProverBackend: Send + Sync {
    fn name(&self) -> &'static str;

    /// The accelerators this backend uses (none for the CPU).
    fn devices(&self) -> Vec<DeviceInfo> {
        Vec::new()
    }

    /// True when the backend serializes its device-exclusive region itself (a kernel lock), so
    /// several workers may call it at once; otherwise the caller holds a lock per device.
    fn locks_devices(&self) -> bool {
        false
    }

    /// The pool synthesis should draw witness buffers from (pinned for GPU backends).
    fn scalar_pool(&self) -> Option<std::sync::Arc<crate::ScalarPool>> {
        None
    }

    /// What page-locks host memory for this backend's devices: the engine pins a key's
    /// decoded points (and the matrices) with it when a placement streams them
    /// ([`placement::KeyPlacement::pin_key`]). None: nothing is ever pinned.
    fn host_pinner(&self) -> Option<std::sync::Arc<dyn crate::HostPinner>> {
        None
    }

    /// Page-locked host bytes held for staging, and the most it keeps idle.
    fn pinned_memory(&self) -> (u64, u64) {
        (0, 0)
    }

    /// True when the backend computes a witness's deferred evaluations (a = A·z, ...) itself,
    /// on its device; otherwise they are computed on the CPU before it is called.
    fn evaluates_constraints(&self) -> bool {
        false
    }

    /// Where a key of these `lengths` goes on this backend's devices, with the shape of its
    /// circuit's recorded `matrices` where it has them (from a recording's header: the same
    /// answer before and after the matrices are read): the one question the engine asks,
    /// before the key is read. It says whether the key stays in its file ([`KeyRef::File`]), what host bytes the
    /// backend holds for it, and each device's plan ([`placement`]); a key whose partitions
    /// could never run here is refused with what it needs and what there is. The default (the
    /// CPU): decoded in host memory, no devices; host memory is the engine's budget's to check.
    fn place(
        &self,
        lengths: &QueryLengths,
        matrices: Option<&crate::MatricesShape>,
    ) -> Result<placement::KeyPlacement> {
        let _ = (lengths, matrices);
        Ok(placement::KeyPlacement::default())
    }

    /// True when `key`'s points sit in device memory now (the status's HOT tier); false when
    /// a proof reads them from host memory or the key's file.
    fn key_on_device(&self, key: KeyRef<'_>) -> bool {
        let _ = key;
        false
    }

    /// Puts `key`, and the recorded `matrices` of its circuit where it has them, where this
    /// backend's proofs read them, now: a GPU backend uploads both to each device while the
    /// first partitions synthesize, so that the first proof does not wait for the upload. A
    /// backend that does nothing here (the default) loads them at first use.
    fn stage(
        &self,
        key: KeyRef<'_>,
        matrices: Option<&std::sync::Arc<crate::ConstraintMatrices>>,
    ) -> Result<()> {
        let _ = (key, matrices);
        Ok(())
    }

    /// Computes the query sums where `on` says, filling `report`; the key has already been
    /// checked to fit the witness.
    fn query_sums_on(
        &self,
        on: Dispatch,
        key: KeyRef<'_>,
        witness: Witness,
        report: &mut ProveReport,
    ) -> Result<QuerySums>;
}

/// Proves one synthesized circuit (on the backend's first device).
pub fn prove<'a>(
    backend: &dyn ProverBackend,
    key: impl Into<KeyRef<'a>>,
    witness: Witness,
    randomness: ProofRandomness,
) -> Result<Proof> {
    prove_on(
        backend,
        Dispatch::on(0),
        key,
        witness,
        randomness,
        &mut ProveReport::default(),
    )
}

/// Proves one synthesized circuit where `on` says, reporting its phases.
pub fn prove_on<'a>(
    backend: &dyn ProverBackend,
    on: Dispatch,
    key: impl Into<KeyRef<'a>>,
    mut witness: Witness,
    randomness: ProofRandomness,
    report: &mut ProveReport,
) -> Result<Proof> {
    let key = key.into();
    key.lengths().check_fits(&witness)?;
    let deferred = matches!(witness.evaluations, Evaluations::Deferred(_));
    if EvaluationSite::choose(deferred, backend) == EvaluationSite::Host {
        witness.evaluate()?;
    }
    let sums = backend.query_sums_on(on, key, witness, report)?;
    assemble(key.vk(), &sums, randomness)
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
