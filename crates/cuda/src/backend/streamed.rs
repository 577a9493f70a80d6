//! MSMs over bases that stay in host memory: a loader thread uploads the next chunk on its own
//! stream while the current chunk's MSM runs, so the copy hides behind the kernels.

use std::sync::mpsc::sync_channel;

use group::Group;

use crate::device::{CudaDevice, DeviceScalars};
use crate::msm::Curve;
use crate::CudaError;

/// Σ scalars[i]·bases[i] with `bases` on the host as u64 limbs (`limbs` per point), in chunks
/// of `dev`'s `stream_chunk` bases (`[gpu] stream_chunk`).
pub(crate) fn msm_streamed<C: Curve>(
    dev: &CudaDevice,
    bases: &[u64],
    limbs: usize,
    scalars: &DeviceScalars,
) -> Result<C::Proj, CudaError> {
    let n = scalars.len;
    if n * limbs > bases.len() {
        return Err(CudaError::Invalid(format!(
            "{n} scalars but only {} bases",
            bases.len() / limbs
        )));
    }
    let chunk_len = dev.stream_chunk.max(1);
    let loader = dev.fork()?;
    let (tx, rx) = sync_channel(1);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for start in (0..n).step_by(chunk_len) {
                let len = chunk_len.min(n - start);
                let chunk = &bases[start * limbs..(start + len) * limbs];
                let uploaded = loader.stream.clone_htod(chunk).map_err(CudaError::from);
                let failed = uploaded.is_err();
                if tx.send(uploaded.map(|b| (start, len, b))).is_err() || failed {
                    return;
                }
            }
        });
        let mut acc = C::Proj::identity();
        for received in rx {
            let (start, len, chunk) = received?;
            // SAFETY: fully overwritten by the copy below.
            let mut part = unsafe { dev.stream.alloc::<u64>(len * 4) }?;
            dev.stream
                .memcpy_dtod(&scalars.buf.slice(start * 4..(start + len) * 4), &mut part)?;
            acc += dev.msm_core::<C>(&chunk, len, &part, len)?;
        }
        Ok(acc)
    })
}
