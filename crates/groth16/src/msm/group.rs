//! The two groups the prover sums in, G1 and G2, bound to blst's Pippenger.

use blst::{
    blst_p1, blst_p1_affine, blst_p1s_mult_pippenger, blst_p1s_mult_pippenger_scratch_sizeof,
    blst_p2, blst_p2_affine, blst_p2s_mult_pippenger, blst_p2s_mult_pippenger_scratch_sizeof,
};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::Group;

/// A group with affine bases and projective sums, as the MSM needs it.
pub trait MsmGroup {
    type Affine: Sync;
    type Projective: Send + Copy;

    fn identity() -> Self::Projective;
    fn add(acc: &mut Self::Projective, p: &Self::Projective);
    fn add_affine(acc: &mut Self::Projective, p: &Self::Affine);
    /// Σ digits[i]·points[i], digits being 255-bit little-endian scalars.
    fn pippenger(points: &[*const Self::Affine], digits: &[[u8; 32]]) -> Self::Projective;
}

/// Scalar bits blst processes: BLS12-381's r has 255.
const SCALAR_BITS: usize = 255;

macro_rules! msm_group {
    ($name:ident, $aff:ty, $proj:ty, $raw_aff:ty, $raw:ty, $mult:ident, $sizeof:ident) => {
        pub enum $name {}

        impl MsmGroup for $name {
            type Affine = $aff;
            type Projective = $proj;

            fn identity() -> $proj {
                <$proj>::identity()
            }

            fn add(acc: &mut $proj, p: &$proj) {
                *acc += p;
            }

            fn add_affine(acc: &mut $proj, p: &$aff) {
                *acc += p;
            }

            fn pippenger(points: &[*const $aff], digits: &[[u8; 32]]) -> $proj {
                assert_eq!(points.len(), digits.len());
                if points.is_empty() {
                    return <$proj>::identity();
                }
                let scalar_ptrs: Vec<*const u8> = digits.iter().map(|d| d.as_ptr()).collect();
                let mut out = <$raw>::default();
                // SAFETY: blstrs' affine and projective types are repr(transparent) over blst's;
                // blst reads `points.len()` entries of both pointer arrays (a non-null entry
                // after the first makes it follow the array rather than step through memory),
                // and the scratch is sized by blst for that many points.
                unsafe {
                    let bytes = $sizeof(points.len());
                    let mut scratch = vec![0u64; bytes.div_ceil(8)];
                    $mult(
                        &mut out,
                        points.as_ptr() as *const *const $raw_aff,
                        points.len(),
                        scalar_ptrs.as_ptr(),
                        SCALAR_BITS,
                        scratch.as_mut_ptr() as _,
                    );
                    std::mem::transmute::<$raw, $proj>(out)
                }
            }
        }
    };
}

msm_group!(
    G1,
    G1Affine,
    G1Projective,
    blst_p1_affine,
    blst_p1,
    blst_p1s_mult_pippenger,
    blst_p1s_mult_pippenger_scratch_sizeof
);
msm_group!(
    G2,
    G2Affine,
    G2Projective,
    blst_p2_affine,
    blst_p2,
    blst_p2s_mult_pippenger,
    blst_p2s_mult_pippenger_scratch_sizeof
);
