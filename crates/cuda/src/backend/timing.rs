//! A partition's phases timed on the device, into its `ProveReport` (the TIMELINE's bars).

use std::time::Instant;

use zkforge_groth16::{Phase, ProveReport};

use crate::{CudaDevice, CudaError};

/// Milliseconds since `t0`.
pub(super) fn since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e3
}

/// Runs `f` on `dev`'s stream; its result and the device time it took, in ms.
pub(super) fn timed<R>(
    dev: &CudaDevice,
    f: impl FnOnce(&CudaDevice) -> Result<R, CudaError>,
) -> Result<(R, f64), CudaError> {
    let (r, ms) = dev.timed(f)?;
    Ok((r?, ms as f64))
}

/// Adds a phase timed on the device around `f`.
pub(super) fn phase<R>(
    dev: &CudaDevice,
    name: &'static str,
    t0: Instant,
    report: &mut ProveReport,
    f: impl FnOnce(&CudaDevice) -> Result<R, CudaError>,
) -> Result<R, CudaError> {
    let start = since(t0);
    let (r, duration_ms) = timed(dev, f)?;
    report.phases.push(Phase {
        name,
        start_ms: start,
        duration_ms,
    });
    Ok(r)
}
