//! Groth16 over BLS12-381, byte-compatible with bellperson: witness synthesis, parameter files,
//! polynomial arithmetic, multi-scalar multiplication and the prover with its backends.
//!
//! The math maps onto modules one to one:
//! - [`synthesis`]: our `ConstraintSystem` that turns a circuit into a [`Witness`]
//!   (constraint evaluations a, b, c, the assignment, and the query densities);
//! - [`poly`]: the evaluation domain, the NTT and the quotient polynomial h;
//! - [`msm`]: multi-scalar multiplication with density filtering and the 0/1 split;
//! - [`srs`]: the proving and verifying keys, read from and written to Filecoin `.params`/`.vk`;
//! - [`prover`]: the backend trait, the CPU backend and the final A/B/C assembly;
//! - [`proof`] and [`verify`]: the 192-byte proof and the pairing check;
//! - [`generator`]: random (test-only) keys for a circuit, fast.

pub mod error;
pub mod fault;
pub mod generator;
pub mod msm;
pub mod poly;
pub mod proof;
pub mod prover;
pub mod reaper;
pub mod srs;
pub mod synthesis;
pub mod verify;

pub use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
pub use error::{Error, Result};
pub use proof::Proof;
pub use prover::{
    CpuBackend, DeviceInfo, Phase, ProofRandomness, ProveReport, ProverBackend, QuerySums,
};
pub use srs::{ProvingKey, ReadOptions, VerifyingKey};
pub use synthesis::{synthesize, Density, HostPinner, ScalarPool, Witness, WitnessBuilder};
