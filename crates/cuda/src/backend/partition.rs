//! One partition on one GPU, step by step as the paper reads: host preparation and uploads
//! outside the kernel lock, then inside it the constraint products (when synthesis left them
//! to the device), the h step, and the five MSMs — each a phase timed with device events.
//! This is the resident order, every scalar on the device at once and each MSM over its whole
//! query, for a key and matrices resident; phased.rs is the order of every other placement.

use std::time::{Duration, Instant};

use zkforge_groth16::poly::Domain;
use zkforge_groth16::{
    exec::reaper, Evaluations, KeyRef, Phase, ProveReport, QuerySums, Urgency, Witness,
};

use super::gpu::{Gpu, KEY_ROOM_WAIT};
use super::items::{DeviceMatricesOf, InputSums, OnDevice};
use super::phased;
use super::timing::{phase, since, timed};
use crate::context::DeviceScalars;
use crate::placement::Order;
use crate::resident::Wait;
use crate::{CFrom, CudaDevice, CudaError, DeviceMatrices};

/// a, b, c on the device: uploaded, or still to be computed there from the resident matrices.
enum DeviceEvaluations<'a> {
    Uploaded([DeviceScalars; 3]),
    Deferred {
        matrices: &'a DeviceMatrices,
        inputs: DeviceScalars,
    },
}

/// The witness on the device.
struct Uploaded<'a> {
    evaluations: DeviceEvaluations<'a>,
    aux: DeviceScalars,
    a_aux: DeviceScalars,
    b_aux: DeviceScalars,
}

pub(crate) fn query_sums(
    gpu: &Gpu,
    urgency: Urgency,
    key: KeyRef<'_>,
    w: Witness,
    report: &mut ProveReport,
) -> Result<QuerySums, CudaError> {
    let t0 = Instant::now();
    let domain = Domain::for_len(w.num_constraints())
        .map_err(CudaError::Groth16)?
        .n;
    let (n_in, b_in) = (w.inputs.len(), w.b_input_density.count());
    let matrices = match &w.evaluations {
        Evaluations::Deferred(m) => Some(m),
        Evaluations::Evaluated { .. } => None,
    };
    let wait = Wait::For(KEY_ROOM_WAIT);
    let on_device = when_room(|| gpu.on_device(key, (n_in, b_in), matrices, urgency, wait))?
        .ok_or_else(|| CudaError::NoRoom("no room on the device for the key".into()))?;
    let inputs = on_device.inputs.sums(&w);
    let dev = gpu.handle()?;
    let acquired = since(t0);
    let _vram = gpu.vram.reserve(on_device.partition_bytes, "a partition")?;

    let start = since(t0);
    let (prepared, duration_ms) = match on_device.order {
        Order::Resident => {
            let matrices = match &on_device.matrices {
                DeviceMatricesOf::Resident(m) => Some(&**m),
                _ => None,
            };
            let (up, ms) = when_room(|| timed(&dev, |d| upload(d, &w, domain, matrices)))?;
            // The copies are complete: the buffers go back to the pool (off this thread).
            reaper::drop_later(w);
            (Prepared::Resident(up), ms)
        }
        Order::Phased => {
            let (up, ms) = when_room(|| timed(&dev, |d| phased::upload(d, &w, domain)))?;
            (Prepared::Phased(up, w), ms)
        }
    };
    report.phases.push(Phase {
        name: "h2d",
        start_ms: start,
        duration_ms,
    });
    // Host times since the call, for reading a device's idle gaps (RUST_LOG=zkforge_cuda=debug).
    tracing::debug!(
        device = gpu.ordinal,
        acquired_ms = acquired,
        reserved_ms = start,
        uploaded_ms = since(t0),
        "partition on the device"
    );
    let waited = Instant::now();
    let _kernels = gpu.kernel_lock.lock(urgency);
    report.lock_wait_ms = since(waited);
    let locked = Instant::now();
    let sums = match prepared {
        Prepared::Resident(up) => kernels(&dev, &on_device, up, inputs, domain, t0, report),
        Prepared::Phased(up, w) => {
            phased::kernels(&dev, key, &on_device, w, up, inputs, domain, t0, report)
        }
    };
    report.locked_ms = since(locked);
    sums
}

/// A partition's scalars on the device, ready for the kernel lock: in the resident order
/// with the witness gone back to the pool, in the phased order with the witness kept (its aux
/// crosses again).
enum Prepared<'a> {
    Resident(Uploaded<'a>),
    Phased(phased::PhasedUpload, Witness),
}

/// How long a partition waits for device memory held outside zkforge before its job fails.
const FOREIGN_VRAM_WAIT: Duration = Duration::from_secs(120);

/// Retries `f` while the device is out of memory. The VRAM budget accounts for zkforge's own
/// use, but another process may take device memory at any time: a key's upload or a witness's
/// then waits for room (up to [`FOREIGN_VRAM_WAIT`]) instead of failing the job. Both hold
/// nothing on the device when they fail, and the witness stays on the host until the upload
/// succeeds. (Scratch allocated later by the kernels is not retried: its job fails, named.)
fn when_room<R>(mut f: impl FnMut() -> Result<R, CudaError>) -> Result<R, CudaError> {
    let since = Instant::now();
    let mut warned = false;
    loop {
        match f() {
            Err(CudaError::OutOfMemory(e)) if since.elapsed() < FOREIGN_VRAM_WAIT => {
                if !warned {
                    tracing::warn!(
                        "device out of memory ({e}), held outside zkforge? waiting for room"
                    );
                    warned = true;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            done => {
                if warned && done.is_ok() {
                    tracing::warn!(
                        waited_ms = since.elapsed().as_millis() as u64,
                        "device memory free again"
                    );
                }
                return done;
            }
        }
    }
}

fn upload<'a>(
    d: &CudaDevice,
    w: &Witness,
    domain: usize,
    matrices: Option<&'a DeviceMatrices>,
) -> Result<Uploaded<'a>, CudaError> {
    let aux = d.upload_padded(&w.aux, w.aux.len())?;
    let a_aux = d.gather_by_density(&aux, &w.a_aux_density)?;
    let b_aux = d.gather_by_density(&aux, &w.b_aux_density)?;
    let evaluations = match (&w.evaluations, matrices) {
        (Evaluations::Evaluated { a, b, c }, _) => DeviceEvaluations::Uploaded([
            d.upload_padded(a, domain)?,
            d.upload_padded(b, domain)?,
            d.upload_padded(c, domain)?,
        ]),
        (Evaluations::Deferred(_), Some(matrices)) => DeviceEvaluations::Deferred {
            matrices,
            inputs: d.upload_padded(&w.inputs, w.inputs.len())?,
        },
        (Evaluations::Deferred(_), None) => {
            return Err(CudaError::Internal(
                "deferred evaluations without their matrices on the device".into(),
            ))
        }
    };
    Ok(Uploaded {
        evaluations,
        aux,
        a_aux,
        b_aux,
    })
}

fn kernels(
    dev: &CudaDevice,
    bases: &OnDevice,
    up: Uploaded<'_>,
    inputs: InputSums,
    domain: usize,
    t0: Instant,
    report: &mut ProveReport,
) -> Result<QuerySums, CudaError> {
    let Uploaded {
        evaluations,
        aux,
        a_aux,
        b_aux,
    } = up;
    let q = bases.queries.all().ok_or_else(|| {
        CudaError::Internal("the resident order needs the whole key on the device".into())
    })?;
    let [a, b, c] = match evaluations {
        DeviceEvaluations::Uploaded(abc) => abc,
        DeviceEvaluations::Deferred { matrices, inputs } => phase(dev, "spmv", t0, report, |d| {
            // The witness comes from synthesis, so it satisfies every constraint: c = a∘b.
            d.constraint_products(matrices, &inputs, &aux, domain, CFrom::AB)
        })?,
    };
    let h = phase(dev, "ntt", t0, report, |d| d.h_from_device(a, b, c))?;
    phase(dev, "msm", t0, report, |d| {
        Ok(QuerySums {
            h: d.msm_g1_resident(q.h, &h)?,
            l: d.msm_g1_resident(q.l, &aux)?,
            a: d.msm_g1_resident(q.a_aux, &a_aux)? + inputs.a,
            b_g1: d.msm_g1_resident(q.b_g1_aux, &b_aux)? + inputs.b_g1,
            b_g2: d.msm_g2_resident(q.b_g2_aux, &b_aux)? + inputs.b_g2,
        })
    })
}
