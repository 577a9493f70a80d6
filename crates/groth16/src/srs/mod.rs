//! The structured reference string: Groth16 proving and verifying keys, in the byte layout of
//! bellperson and the Filecoin `.params` / `.vk` files.
//!
//! Layout (big-endian lengths, uncompressed points): alpha_g1, beta_g1, beta_g2, gamma_g2,
//! delta_g1, delta_g2, u32 |ic| + ic — that is the `.vk`; a `.params` continues with
//! u32 + points for h, l, a, b_g1 (G1) and b_g2 (G2).

pub(crate) mod codec;
mod params_file;
mod read;
mod shape;
mod write;

pub use params_file::{ParamsFile, Query, Section};
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

/// The number of points in every part of a key: what a witness's shape must match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueryLengths {
    pub ic: usize,
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b_g1: usize,
    pub b_g2: usize,
}

impl QueryLengths {
    /// Bytes of host memory the points take when decoded.
    pub fn decoded_bytes(&self) -> usize {
        let g1 = self.ic + self.h + self.l + self.a + self.b_g1;
        g1 * std::mem::size_of::<G1Affine>() + self.b_g2 * std::mem::size_of::<G2Affine>()
    }
}

/// A proving key as a prover receives it: decoded in host memory, or left in its file for a
/// backend that uploads it to a device itself.
#[derive(Clone, Copy, Debug)]
pub enum KeyRef<'a> {
    Memory(&'a ProvingKey),
    File(&'a ParamsFile),
}

impl<'a> From<&'a ProvingKey> for KeyRef<'a> {
    fn from(pk: &'a ProvingKey) -> Self {
        KeyRef::Memory(pk)
    }
}

impl<'a> KeyRef<'a> {
    pub fn vk(&self) -> &'a VerifyingKey {
        match self {
            KeyRef::Memory(pk) => &pk.vk,
            KeyRef::File(f) => &f.vk,
        }
    }

    pub fn lengths(&self) -> QueryLengths {
        match self {
            KeyRef::Memory(pk) => pk.lengths(),
            KeyRef::File(f) => f.lengths(),
        }
    }
}

/// A proving key loaded for proving: see [`KeyRef`]. A decoded key is shared, so a caller
/// that already holds one (a benchmark) hands it over without a second copy.
#[derive(Debug)]
pub enum LoadedKey {
    Memory(std::sync::Arc<ProvingKey>),
    File(Box<ParamsFile>),
}

impl LoadedKey {
    pub fn as_ref(&self) -> KeyRef<'_> {
        match self {
            LoadedKey::Memory(pk) => KeyRef::Memory(pk),
            LoadedKey::File(f) => KeyRef::File(f),
        }
    }

    /// Bytes of host memory held (the points only for a decoded key).
    pub fn host_bytes(&self) -> usize {
        match self {
            LoadedKey::Memory(pk) => pk.heap_bytes(),
            LoadedKey::File(f) => f.vk.ic.len() * std::mem::size_of::<G1Affine>(),
        }
    }
}

impl ProvingKey {
    pub fn lengths(&self) -> QueryLengths {
        QueryLengths {
            ic: self.vk.ic.len(),
            h: self.h.len(),
            l: self.l.len(),
            a: self.a.len(),
            b_g1: self.b_g1.len(),
            b_g2: self.b_g2.len(),
        }
    }

    /// Bytes of memory the decoded key occupies.
    pub fn heap_bytes(&self) -> usize {
        self.lengths().decoded_bytes()
    }
}
