//! Groth16 over BLS12-381, byte-compatible with bellperson: witness synthesis, parameter files,
//! polynomial arithmetic, multi-scalar multiplication and the prover with its backends.
//!
//! The math maps onto modules one to one:
//! - [`synthesis`]: our `ConstraintSystem` that turns a circuit into a [`Witness`]
//!   (constraint evaluations a, b, c, the assignment, and the query densities);
//! - [`r1cs`]: the circuit's constraints recorded once as sparse matrices, and their products
//!   with an assignment (the evaluations a, b, c);
//! - [`poly`]: the evaluation domain, the NTT and the quotient polynomial h;
//! - [`msm`]: multi-scalar multiplication with density filtering and the 0/1 split;
//! - [`srs`]: the proving and verifying keys, read from and written to Filecoin `.params`/`.vk`;
//! - [`prover`]: the backend trait, the CPU backend and the final A/B/C assembly;
//! - [`proof`] and [`verify`]: the 192-byte proof and the pairing check;
//! - [`generator`]: random (test-only) keys for a circuit, fast.
//!
//! Beside the math, one module says how the work is run; the math modules hold no threads,
//! locks or files:
//! - [`exec`]: the witness buffer pool and its pinning, the reaper thread, waiters ranked by
//!   [`Urgency`] and the [`PriorityLock`], temporary files, bulk file reads.

/// The part of `ConstraintSystem` our three systems (`MatrixRecorder`, `WitnessBuilder`,
/// `AssignmentWriter`) answer alike: each is its own root and keeps no namespaces, since
/// names only serve bellpepper's debugging systems. Defined before the modules that use it.
macro_rules! nameless_root {
    () => {
        type Root = Self;

        fn push_namespace<NR, N>(&mut self, _: N)
        where
            NR: Into<String>,
            N: FnOnce() -> NR,
        {
        }

        fn pop_namespace(&mut self) {}

        fn get_root(&mut self) -> &mut Self::Root {
            self
        }
    };
}

pub mod error;
pub mod exec;
#[cfg(feature = "fault-injection")]
pub mod fault;
pub mod generator;
pub mod msm;
pub mod poly;
pub mod proof;
pub mod prover;
pub mod r1cs;
pub mod srs;
pub mod synthesis;
pub mod verify;

pub use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
pub use error::{Error, FailureKind, Result};
pub use exec::{HostPinner, PriorityGuard, PriorityLock, ScalarPool, Urgency};
pub use proof::Proof;
pub use prover::{
    CpuBackend, DeviceInfo, Dispatch, EvaluationSite, PartitionPlan, Phase, ProofRandomness,
    ProveReport, ProverBackend, QuerySums,
};
pub use r1cs::{ConstraintMatrices, MatricesShape, MatrixRecorder};
pub use srs::{KeyRef, LoadedKey, ParamsFile, ProvingKey, QueryLengths, ReadOptions, VerifyingKey};
pub use synthesis::{
    assign, synthesize, Assignment, AssignmentWriter, Density, Evaluations, Region, Witness,
    WitnessBuilder,
};
