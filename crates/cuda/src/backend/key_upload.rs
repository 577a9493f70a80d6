//! A key's aux-side bases uploaded straight from its `.params` file: read in chunks into
//! page-locked staging, copied, and decoded (canonical big-endian → Montgomery, flags and
//! curve checked) by a kernel into the resident buffers — so a key resident in VRAM never
//! also sits decoded in host memory. The next chunk is read from disk while the device copies
//! and decodes the last one.

use std::time::{Duration, Instant};

use cudarc::driver::{result, CudaSlice, DevicePtrMut, PushKernelArg};
use zkforge_groth16::prover::placement::Item;
use zkforge_groth16::srs::Query;
use zkforge_groth16::ParamsFile;

use super::chunks::READ_THREADS;
use super::items::ResidentQueries;
use crate::context::{grid, Core, DeviceBasesG1, DeviceBasesG2};
use crate::decode::damaged_key;
use crate::pinned::PinnedBuffer;
use crate::{CudaDevice, CudaError};

/// Bytes per staged chunk (two are in flight): 192 MiB, 2M G1 or 1M G2 points.
const CHUNK_BYTES: usize = 192 << 20;
/// Page-locked host memory one upload holds (the engine's budget reserves it with the key).
pub(crate) const STAGING_HOST_BYTES: u64 = 2 * CHUNK_BYTES as u64;

/// Two staging slots: one being filled from disk while the other is on the device.
struct Staging {
    host: [PinnedBuffer; 2],
    dev: [CudaSlice<u32>; 2],
    done: [Option<cudarc::driver::CudaEvent>; 2],
    readers: rayon::ThreadPool,
    /// Where the upload's time went: reading the file, and waiting for a slot's copy and
    /// decode to finish (the device side being the slower one).
    reading: Duration,
    waiting: Duration,
}

impl Staging {
    fn new(core: &Core) -> Result<Self, CudaError> {
        core.ctx.bind_to_thread()?;
        // SAFETY: device staging is written by a copy before the kernel reads it.
        let dev = || unsafe { core.stream.alloc::<u32>(CHUNK_BYTES / 4) };
        Ok(Staging {
            host: [
                PinnedBuffer::new(CHUNK_BYTES)?,
                PinnedBuffer::new(CHUNK_BYTES)?,
            ],
            dev: [dev()?, dev()?],
            done: [None, None],
            readers: rayon::ThreadPoolBuilder::new()
                .num_threads(READ_THREADS)
                .thread_name(|i| format!("key-read-{i}"))
                .build()
                .map_err(|e| CudaError::Internal(format!("key reader threads: {e}")))?,
            reading: Duration::ZERO,
            waiting: Duration::ZERO,
        })
    }

    /// Decodes points `first .. first + len` of query `q` of `file` into `out` (blst affine
    /// layout: 12 u64 limbs per G1 point, 24 per G2 point).
    fn upload_query(
        &mut self,
        d: &CudaDevice,
        file: &ParamsFile,
        q: Query,
        (first, len): (usize, usize),
        out: &mut CudaSlice<u64>,
    ) -> Result<(), CudaError> {
        let core = &d.core;
        let size = q.point_bytes();
        let limbs = size / 8;
        let per_chunk = CHUNK_BYTES / size;
        let kernel = if q == Query::BG2 {
            &d.decode.g2
        } else {
            &d.decode.g1
        };
        let mut bad = core.stream.clone_htod(&[u64::MAX])?;
        let mut at = 0;
        let mut k = 0;
        while at < len {
            let n = per_chunk.min(len - at);
            let slot = k % 2;
            if let Some(e) = self.done[slot].take() {
                let t = Instant::now();
                e.synchronize()?;
                self.waiting += t.elapsed();
            }
            // SAFETY: the slot's previous copy completed (event above).
            let host = unsafe { self.host[slot].slice_mut::<u8>(n * size) };
            let t = Instant::now();
            self.readers
                .install(|| file.read_encoded(q, first + at, host))
                .map_err(CudaError::Groth16)?;
            self.reading += t.elapsed();
            {
                let (dst, _record) = self.dev[slot].device_ptr_mut(&core.stream);
                // SAFETY: host holds n·size initialised bytes; dst has room for CHUNK_BYTES.
                unsafe { result::memcpy_htod_async(dst, &*host, core.stream.cu_stream()) }?;
            }
            let count = n as u64;
            let mut dst = out.slice_mut(at * limbs..(at + n) * limbs);
            let mut b = core.stream.launch_builder(kernel);
            b.arg(&mut dst)
                .arg(&self.dev[slot])
                .arg(&count)
                .arg(&mut bad);
            unsafe { b.launch(grid(count, 128)) }?;
            self.done[slot] = Some(core.mark()?);
            at += n;
            k += 1;
        }
        let bad = core.read_back(&bad, 1)?[0];
        if bad != u64::MAX {
            return Err(damaged_key(file, q, first, bad));
        }
        Ok(())
    }
}

/// The aux-side bases of the key in `file` (h, l, a past the `n_in` inputs, b past the `b_in`
/// B-dense inputs) that `keeps` names resident, decoded on `d`.
pub(crate) fn upload_from_file(
    d: &CudaDevice,
    file: &ParamsFile,
    n_in: usize,
    b_in: usize,
    keeps: impl Fn(Item) -> bool,
) -> Result<ResidentQueries, CudaError> {
    let mut st = Staging::new(&d.core)?;
    let parts = [
        (Item::H, Query::H, 0),
        (Item::L, Query::L, 0),
        (Item::A, Query::A, n_in),
        (Item::BG1, Query::BG1, b_in),
        (Item::BG2, Query::BG2, b_in),
    ];
    let mut bufs = Vec::new();
    for &(item, q, first) in &parts {
        if !keeps(item) {
            bufs.push(None);
            continue;
        }
        let len = file.section(q).len.saturating_sub(first);
        let limbs = q.point_bytes() / 8;
        // SAFETY: every point is written by the decode kernel.
        let mut buf = unsafe { d.core.stream.alloc::<u64>(len.max(1) * limbs) }?;
        st.upload_query(d, file, q, (first, len), &mut buf)?;
        bufs.push(Some((buf, len)));
    }
    d.synchronize()?;
    // Which side sets the upload's pace, and the key's make-up by query.
    let bytes_of =
        |q: Query, first: usize| file.section(q).len.saturating_sub(first) * q.point_bytes();
    let by_query: Vec<String> = parts
        .iter()
        .filter(|&&(item, _, _)| keeps(item))
        .map(|&(item, q, first)| format!("{} {:.2}", item.name(), bytes_of(q, first) as f64 / 1e9))
        .collect();
    let gb = parts
        .iter()
        .filter(|&&(item, _, _)| keeps(item))
        .map(|&(_, q, first)| bytes_of(q, first) as f64 / 1e9)
        .sum::<f64>();
    let read_s = st.reading.as_secs_f64();
    tracing::info!(
        file = %file.path().display(),
        gb = format!("{gb:.2}"),
        by_query = by_query.join(", "),
        read_s = format!("{read_s:.2}"),
        read_gb_per_s = format!("{:.1}", gb / read_s.max(1e-9)),
        device_wait_s = format!("{:.2}", st.waiting.as_secs_f64()),
        "proving key read from its file and decoded on the device"
    );
    let mut bufs = bufs.into_iter();
    let mut g1 = || {
        bufs.next()
            .flatten()
            .map(|(buf, len)| DeviceBasesG1 { buf, len })
    };
    let (h, l, a_aux, b_g1_aux) = (g1(), g1(), g1(), g1());
    let b_g2_aux = bufs
        .next()
        .flatten()
        .map(|(buf, len)| DeviceBasesG2 { buf, len });
    Ok(ResidentQueries {
        h,
        l,
        a_aux,
        b_g1_aux,
        b_g2_aux,
    })
}
