//! Device bytes one partition reserves in each order the backend runs it (`placement::Order`):
//! what the placement plans with (gpu.rs's key shapes) and what a phased partition's MSMs size
//! their room from (phased.rs).

use zkforge_groth16::{EvaluationSite, PartitionPlan, QueryLengths, Scalar};

use super::chunks::{chunk_points, G1_LIMBS, G2_LIMBS};
use crate::host::MsmOptions;
use crate::msm as gpu_msm;

/// Device bytes one partition of a key of these lengths may use at its peak in the resident
/// order: its scalars (the key's [`PartitionPlan`]) plus the largest MSM's scratch.
pub(crate) fn resident(lengths: &QueryLengths, msm: &MsmOptions) -> u64 {
    // What the device holds is the same whether a, b, c are uploaded or computed there.
    let plan = PartitionPlan::new(lengths, EvaluationSite::Device);
    let scalars = (plan.device_scalars() * std::mem::size_of::<Scalar>()) as u64;
    let scratch = gpu_msm::scratch_bytes(plan.domain.max(plan.aux), 24, msm)
        .max(gpu_msm::scratch_bytes(plan.b_aux, 48, msm));
    scalars + scratch + (64 << 20)
}

/// Device bytes one partition of a key of these lengths holds at its peak in the phased
/// order, its MSMs cut into chunks of `chunk_bytes` and its streamed matrices into blocks of
/// at most `block_bytes`.
pub(crate) fn phased(
    lengths: &QueryLengths,
    msm: &MsmOptions,
    chunk_bytes: u64,
    block_bytes: u64,
) -> u64 {
    let plan = PartitionPlan::new(lengths, EvaluationSite::Device);
    let s = std::mem::size_of::<Scalar>() as u64;
    let (d, x, xa, xb, inputs) = (
        plan.domain as u64 * s,
        plan.aux as u64 * s,
        plan.a_aux as u64 * s,
        plan.b_aux as u64 * s,
        plan.inputs as u64 * s,
    );
    let words = (chunk_bytes / 8) as usize;
    let g1 = chunk_points(words, G1_LIMBS);
    let g2 = chunk_points(words, G2_LIMBS);
    // A chunk's MSM scratch, its two buffers beside it.
    let chunked = 2 * chunk_bytes
        + gpu_msm::scratch_bytes(g1, 24, msm).max(gpu_msm::scratch_bytes(g2, 48, msm));
    let phases = [
        x + inputs + 2 * d + block_bytes,
        3 * d,
        d + x + chunked,
        x + xa + xb,
        xa + xb + chunked,
    ];
    phases.into_iter().max().unwrap_or(0) + MARGIN
}

/// Device bytes a phased partition reserves beyond its phases' largest (allocation rounding).
pub(crate) const MARGIN: u64 = 64 << 20;

/// Bytes of one block of streamed matrices: a chunk's, at most 64 MiB, so that the products'
/// phase (the aux, a, b and a block) stays under the h step's three vectors at 32 GiB.
pub(crate) fn block_bytes(chunk_bytes: u64) -> u64 {
    chunk_bytes.min(64 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::placement::tests::porep_32g_lengths as porep_32g;

    const GIB: u64 = 1 << 30;

    #[test]
    fn at_32_gib_the_h_steps_three_vectors_are_the_peak() {
        let msm = MsmOptions::default();
        for chunk in [1u64 << 22, 1 << 23] {
            let bytes = phased(&porep_32g(), &msm, chunk * 96, block_bytes(chunk * 96));
            println!(
                "chunk {chunk}: {bytes} bytes, {:.3} GiB",
                bytes as f64 / GIB as f64
            );
            assert_eq!(bytes, 12 * GIB + (64 << 20), "chunk {chunk}");
        }
        // The resident order reserves 29.94 GiB for the same partition.
        let resident = resident(&porep_32g(), &msm);
        assert!(resident > 29 * GIB, "{resident}");
    }
}
