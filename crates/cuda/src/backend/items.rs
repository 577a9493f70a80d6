//! What a partition proves against on one GPU, as one item of the device's resident set: the
//! key's aux-side bases its plan keeps resident, the input-side prefixes summed on the host, the
//! circuit's matrices (resident or streamed), and the order its partitions run in; with the ids
//! that tell one key and recording from another. Shared by the GPU that places items
//! (gpu.rs), the uploads that fill them (key_upload.rs) and the two orders that prove against
//! them (partition.rs, phased.rs).

use std::sync::Weak;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use zkforge_groth16::msm::{msm, msm_with_density, G1, G2};
use zkforge_groth16::r1cs::ConstraintMatrices;
use zkforge_groth16::srs::Query;
use zkforge_groth16::{KeyRef, ProvingKey, Witness};

use super::chunks::StagingPool;
use crate::host::g1_affine_as_u64;
use crate::placement::Order;
use crate::resident::Held;
use crate::spmv::{DeviceMatrices, StreamedMatrices};
use crate::{CudaError, DeviceBasesG1, DeviceBasesG2};

/// Which key a set of bases belongs to, and the input split they were cut at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeyId {
    pub(super) origin: u64,
    n_in: usize,
    b_in: usize,
}

impl KeyId {
    pub fn of(key: KeyRef<'_>, n_in: usize, b_in: usize) -> Self {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        match key {
            // Addresses, lengths and the first and last H and L points: a key loaded later at
            // the same addresses must not reuse another key's bases.
            KeyRef::Memory(pk) => {
                for q in [&pk.h, &pk.l, &pk.a, &pk.b_g1] {
                    (q.as_ptr() as usize, q.len()).hash(&mut hasher);
                    for p in [q.first(), q.last()].into_iter().flatten() {
                        g1_affine_as_u64(std::slice::from_ref(p)).hash(&mut hasher);
                    }
                }
                pk.b_g2.len().hash(&mut hasher);
            }
            // The same file, unchanged since: the same key.
            KeyRef::File(f) => f.identity().hash(&mut hasher),
        }
        Self {
            origin: hasher.finish(),
            n_in,
            b_in,
        }
    }
}

/// The input-side prefixes of the A and B queries, summed on the host (a few hundred terms):
/// kept decoded beside the device bases.
pub(crate) struct InputBases {
    pub a: Vec<G1Affine>,
    pub b_g1: Vec<G1Affine>,
    pub b_g2: Vec<G2Affine>,
}

impl InputBases {
    pub(super) fn of(key: KeyRef<'_>, n_in: usize, b_in: usize) -> Result<Self, CudaError> {
        let bad = CudaError::Groth16;
        Ok(match key {
            KeyRef::Memory(pk) => Self {
                a: pk.a[..n_in].to_vec(),
                b_g1: pk.b_g1[..b_in].to_vec(),
                b_g2: pk.b_g2[..b_in].to_vec(),
            },
            KeyRef::File(f) => Self {
                a: f.g1_points(Query::A, 0, n_in).map_err(bad)?,
                b_g1: f.g1_points(Query::BG1, 0, b_in).map_err(bad)?,
                b_g2: f.g2_points(0, b_in).map_err(bad)?,
            },
        })
    }
}

/// The aux-side bases of one key on the device (the input-side prefixes stay on the CPU):
/// those its plan keeps resident; the others stream from host memory at every MSM.
#[derive(Default)]
pub(crate) struct ResidentQueries {
    pub h: Option<DeviceBasesG1>,
    pub l: Option<DeviceBasesG1>,
    pub a_aux: Option<DeviceBasesG1>,
    pub b_g1_aux: Option<DeviceBasesG1>,
    pub b_g2_aux: Option<DeviceBasesG2>,
}

/// All five queries, for the resident order.
pub(crate) struct AllQueries<'a> {
    pub h: &'a DeviceBasesG1,
    pub l: &'a DeviceBasesG1,
    pub a_aux: &'a DeviceBasesG1,
    pub b_g1_aux: &'a DeviceBasesG1,
    pub b_g2_aux: &'a DeviceBasesG2,
}

impl ResidentQueries {
    pub fn any(&self) -> bool {
        self.h.is_some()
            || self.l.is_some()
            || self.a_aux.is_some()
            || self.b_g1_aux.is_some()
            || self.b_g2_aux.is_some()
    }

    pub fn all(&self) -> Option<AllQueries<'_>> {
        Some(AllQueries {
            h: self.h.as_ref()?,
            l: self.l.as_ref()?,
            a_aux: self.a_aux.as_ref()?,
            b_g1_aux: self.b_g1_aux.as_ref()?,
            b_g2_aux: self.b_g2_aux.as_ref()?,
        })
    }
}

/// The circuit's recorded matrices as a partition's products read them.
pub(crate) enum DeviceMatricesOf {
    /// No recording: a, b, c come with the witness.
    None,
    Resident(Box<DeviceMatrices>),
    /// Copied block by block from the engine's (page-locked) host matrices.
    Streamed(StreamedMatrices),
}

/// What a partition proves against on one GPU: the key's bases its plan keeps resident, the
/// circuit's constraint matrices (resident or streamed), and how its partitions run. Kept
/// together because a partition needs all of it: acquiring them as one item means no
/// partition ever holds one while waiting for room for the other.
pub(crate) struct OnDevice {
    pub inputs: InputBases,
    pub queries: ResidentQueries,
    pub matrices: DeviceMatricesOf,
    /// The order partitions run in against this item, and the device bytes each reserves.
    pub order: Order,
    pub partition_bytes: u64,
    /// Page-locked staging for queries streamed from the key's file, kept between partitions.
    pub file_staging: StagingPool,
    /// Keeps the recorded matrices' address, part of the item's id, from being reused: a weak
    /// reference holds the allocation of the `Arc`, not the 6.84 GiB of host matrices, which
    /// go when the engine's parameter set lets go of them (its memory budget stops counting
    /// them then).
    pub(super) _of: Option<Weak<ConstraintMatrices>>,
}

/// Which key (cut at which inputs) and which matrices an item holds, which of them resident
/// (the plan's, `Item::ALL`'s bits), and in which order its partitions run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ItemId {
    pub(super) key: KeyId,
    pub(super) matrices: Option<usize>,
    pub(super) resident: u8,
    pub(super) order: Order,
}

/// An item on the device, held by the partition using it.
pub(crate) type OnDeviceHeld = Held<ItemId, OnDevice>;

/// The aux-side bases of a key in host memory: what goes to the device (resident) or is read
/// chunk by chunk (streamed). The input-side prefixes stay on the CPU.
pub(crate) struct AuxQueries<'a> {
    pub h: &'a [G1Affine],
    pub l: &'a [G1Affine],
    pub a_aux: &'a [G1Affine],
    pub b_g1_aux: &'a [G1Affine],
    pub b_g2_aux: &'a [G2Affine],
}

impl<'a> AuxQueries<'a> {
    pub fn of(pk: &'a ProvingKey, n_in: usize, b_in: usize) -> Self {
        let (n_in, b_in) = (n_in.min(pk.a.len()), b_in.min(pk.b_g1.len()));
        Self {
            h: &pk.h,
            l: &pk.l,
            a_aux: &pk.a[n_in..],
            b_g1_aux: &pk.b_g1[b_in..],
            b_g2_aux: &pk.b_g2[b_in..],
        }
    }
}

/// Σ over the public inputs of the A and B queries, on the host.
pub(crate) struct InputSums {
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

impl InputBases {
    /// The input-side sums of `w`'s public inputs over these prefixes.
    pub(super) fn sums(&self, w: &Witness) -> InputSums {
        InputSums {
            a: msm::<G1>(&self.a, &w.inputs),
            b_g1: msm_with_density::<G1>(&self.b_g1, &w.inputs, &w.b_input_density),
            b_g2: msm_with_density::<G2>(&self.b_g2, &w.inputs, &w.b_input_density),
        }
    }
}
