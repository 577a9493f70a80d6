//! Fixed-base multiplication in bulk — where key generation spends its time — behind a trait,
//! so a GPU can do it; the CPU implementation uses window tables on all cores.

use blstrs::{G1Projective, G2Projective, Scalar};
use rayon::prelude::*;

use super::fixed_base::{FixedBase, TableCurve};
use crate::srs::codec::Encoded;
use crate::Result;

/// Receives a run of consecutive points in the `.params` encoding (uncompressed, big-endian).
pub type PointSink<'a> = dyn FnMut(&[u8]) -> Result<()> + 'a;

/// Computes `s·base` for every scalar s, in order, handing the encodings to `sink` in runs.
/// Any correct implementation produces the same bytes.
pub trait FixedBaseBackend: Sync {
    fn name(&self) -> &'static str;
    fn g1(&self, base: G1Projective, scalars: &[Scalar], sink: &mut PointSink) -> Result<()>;
    fn g2(&self, base: G2Projective, scalars: &[Scalar], sink: &mut PointSink) -> Result<()>;
}

/// Fixed-base products on the CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuFixedBase;

/// Points per run handed to the sink: bounds the memory a run holds.
const RUN: usize = 1 << 20;

fn encoded_runs<C>(base: C, scalars: &[Scalar], sink: &mut PointSink) -> Result<()>
where
    C: TableCurve,
    C::Affine: Encoded,
{
    let table = FixedBase::new(base);
    for run in scalars.chunks(RUN) {
        let points = table.mul_all(run, &|_| ());
        let mut bytes = vec![0u8; points.len() * C::Affine::BYTES];
        bytes
            .par_chunks_exact_mut(C::Affine::BYTES)
            .zip(points.par_iter())
            .for_each(|(out, p)| p.encode(out));
        sink(&bytes)?;
    }
    Ok(())
}

impl FixedBaseBackend for CpuFixedBase {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn g1(&self, base: G1Projective, scalars: &[Scalar], sink: &mut PointSink) -> Result<()> {
        encoded_runs::<G1Projective>(base, scalars, sink)
    }

    fn g2(&self, base: G2Projective, scalars: &[Scalar], sink: &mut PointSink) -> Result<()> {
        encoded_runs::<G2Projective>(base, scalars, sink)
    }
}
