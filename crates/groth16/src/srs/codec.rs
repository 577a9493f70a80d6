//! Uncompressed point encoding, in parallel over large vectors.

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

/// A curve point type as the parameter files store it.
pub(crate) trait Encoded: Sized + Send + Sync + Copy {
    const BYTES: usize;
    const NAME: &'static str;
    fn decode(bytes: &[u8], check_subgroup: bool) -> Option<Self>;
    fn encode(&self, out: &mut [u8]);
    fn is_identity(&self) -> bool;
}

macro_rules! encoded {
    ($t:ty, $bytes:literal, $name:expr) => {
        impl Encoded for $t {
            const BYTES: usize = $bytes;
            const NAME: &'static str = $name;

            fn decode(bytes: &[u8], check_subgroup: bool) -> Option<Self> {
                let repr: &[u8; $bytes] = bytes.try_into().ok()?;
                let p = if check_subgroup {
                    <$t>::from_uncompressed(repr)
                } else {
                    <$t>::from_uncompressed_unchecked(repr)
                };
                p.into()
            }

            fn encode(&self, out: &mut [u8]) {
                out.copy_from_slice(self.to_uncompressed().as_ref());
            }

            fn is_identity(&self) -> bool {
                PrimeCurveAffine::is_identity(self).into()
            }
        }
    };
}

encoded!(G1Affine, 96, "G1");
encoded!(G2Affine, 192, "G2");

/// Why a point at some index could not be decoded.
pub(crate) struct BadPoint {
    pub index: usize,
    pub reason: &'static str,
}

/// Decodes the point at `index` from its encoding `bytes`; identity points are refused when
/// `allow_identity` is false (the query vectors never contain one).
pub(crate) fn decode_point<P: Encoded>(
    bytes: &[u8],
    index: usize,
    check_subgroup: bool,
    allow_identity: bool,
) -> Result<P, BadPoint> {
    let p = P::decode(bytes, check_subgroup).ok_or(BadPoint {
        index,
        reason: if check_subgroup {
            "not on the curve or not in the subgroup"
        } else {
            "not on the curve"
        },
    })?;
    if !allow_identity && p.is_identity() {
        return Err(BadPoint {
            index,
            reason: "point at infinity",
        });
    }
    Ok(p)
}

/// Decodes `bytes.len() / P::BYTES` points (see [`decode_point`]).
pub(crate) fn decode_all<P: Encoded>(
    bytes: &[u8],
    check_subgroup: bool,
    allow_identity: bool,
) -> Result<Vec<P>, BadPoint> {
    bytes
        .par_chunks_exact(P::BYTES)
        .enumerate()
        .map(|(index, chunk)| decode_point(chunk, index, check_subgroup, allow_identity))
        .collect()
}

/// Encodes points into one buffer, in parallel.
pub(crate) fn encode_all<P: Encoded>(points: &[P]) -> Vec<u8> {
    let mut out = vec![0u8; points.len() * P::BYTES];
    out.par_chunks_exact_mut(P::BYTES)
        .zip(points.par_iter())
        .for_each(|(o, p)| p.encode(o));
    out
}
