//! The structured reference string: Groth16 proving and verifying keys, in the byte layout of
//! bellperson and the Filecoin `.params` / `.vk` files.
//!
//! Layout (big-endian lengths, uncompressed points): alpha_g1, beta_g1, beta_g2, gamma_g2,
//! delta_g1, delta_g2, u32 |ic| + ic — that is the `.vk`; a `.params` continues with
//! u32 + points for h, l, a, b_g1 (G1) and b_g2 (G2).

pub(crate) mod codec;
mod read;
mod shape;
mod write;

pub use read::ReadOptions;

use blstrs::{G1Affine, G2Affine};

/// The verifying key; `ic[i]` weighs public input i (ic[0] for the constant ONE).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    pub alpha_g1: G1Affine,
    pub beta_g1: G1Affine,
    pub beta_g2: G2Affine,
    pub gamma_g2: G2Affine,
    pub delta_g1: G1Affine,
    pub delta_g2: G2Affine,
    pub ic: Vec<G1Affine>,
}

/// The proving key: the verifying key plus the five query vectors the prover sums over.
///
/// `a`, `b_g1` and `b_g2` hold one point per variable marked in the matching density (inputs
/// first, then aux); `h` has n − 1 points for the domain size n; `l` one per aux variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvingKey {
    pub vk: VerifyingKey,
    pub h: Vec<G1Affine>,
    pub l: Vec<G1Affine>,
    pub a: Vec<G1Affine>,
    pub b_g1: Vec<G1Affine>,
    pub b_g2: Vec<G2Affine>,
}

impl ProvingKey {
    /// Bytes of memory the decoded key occupies.
    pub fn heap_bytes(&self) -> usize {
        let g1 = self.h.len() + self.l.len() + self.a.len() + self.b_g1.len() + self.vk.ic.len();
        g1 * std::mem::size_of::<G1Affine>() + self.b_g2.len() * std::mem::size_of::<G2Affine>()
    }
}
