//! Random (test-only) Groth16 keys, in bellperson's construction: a trusted setup with known
//! toxic waste, so never for production proofs.
//!
//! Fast where bellperson is slow: the R1CS is recorded once ([`MatrixRecorder`]), the QAP
//! polynomials are evaluated at τ through one inverse NTT (`scalars`), and the points come
//! from a [`FixedBaseBackend`] — window tables on all CPU cores, or a GPU — streamed to the
//! file as they are made (`stream`).

mod fixed_base;
mod points;
mod scalars;
mod stream;
mod tiled;

pub use points::{CpuFixedBase, FixedBaseBackend, PointSink};
pub use stream::{write_params, write_params_files};
pub use tiled::tiled_key_for;

use std::path::Path;

use bellpepper_core::Circuit;
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::Group;
use rand_core::RngCore;

use crate::r1cs::MatrixRecorder;
use crate::{ProvingKey, ReadOptions, Result};

/// Progress of a key generation, in points computed (a G2 point counts as 3).
pub trait GenProgress: Sync {
    fn start(&self, _total: u64) {}
    fn advance(&self, _done: u64) {}
}

impl GenProgress for () {}

/// Everything random in a setup: the group generators and the toxic waste. Drawn in one
/// fixed order, so a seeded generator fixes the key files byte for byte.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub g1: G1Projective,
    pub g2: G2Projective,
    pub alpha: Scalar,
    pub beta: Scalar,
    pub gamma: Scalar,
    pub delta: Scalar,
    pub tau: Scalar,
}

impl Setup {
    pub fn random(rng: &mut (impl RngCore + ?Sized)) -> Self {
        let g1 = G1Projective::random(&mut *rng);
        let g2 = G2Projective::random(&mut *rng);
        let (delta, gamma) = (nonzero(rng), nonzero(rng));
        Self {
            g1,
            g2,
            alpha: nonzero(rng),
            beta: nonzero(rng),
            gamma,
            delta,
            tau: nonzero(rng),
        }
    }
}

fn nonzero(rng: &mut (impl RngCore + ?Sized)) -> Scalar {
    loop {
        let s = Scalar::random(&mut *rng);
        if !s.is_zero_vartime() {
            return s;
        }
    }
}

/// Generates random keys for `circuit` in memory, on the CPU: for tests and small circuits.
pub fn generate_random_keys<C: Circuit<Scalar>>(
    circuit: C,
    rng: &mut (impl RngCore + ?Sized),
    progress: &dyn GenProgress,
) -> Result<ProvingKey> {
    let m = MatrixRecorder::record(circuit)?;
    let origin = Path::new("<generated key>");
    let mut bytes = Vec::new();
    write_params(
        &m,
        &Setup::random(rng),
        &CpuFixedBase,
        &mut bytes,
        origin,
        progress,
    )?;
    ProvingKey::from_bytes(&bytes, origin, ReadOptions::default())
}

#[cfg(test)]
mod tests;
