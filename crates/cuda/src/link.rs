//! The host-to-device link of one GPU, measured once when it is opened: placement plans are
//! made with what this card's link moves (a PCIe 4 card ~25 GB/s, a PCIe 5 one ~55, pageable
//! memory a fraction of either), not with a constant.

use crate::context::Core;
use crate::pinned::PinnedBuffer;
use crate::placement::CopyRates;
use crate::CudaError;

/// Bytes one probe copies: enough to reach the link's steady rate, little beside any card.
/// (64 MiB copies read 41.4 GB/s once on an H100 box whose link moves 53–55.)
const PROBE_BYTES: usize = 256 << 20;
/// Timed copies from each kind of memory, after one that warms the path up.
const PROBE_COPIES: usize = 5;

/// The median of [`PROBE_COPIES`] copies of [`PROBE_BYTES`] from page-locked and from
/// pageable host memory, each timed with device events on `core`'s stream.
pub(crate) fn copy_rates(core: &Core) -> Result<CopyRates, CudaError> {
    core.ctx.bind_to_thread()?;
    // SAFETY: every copy below overwrites it; nothing reads it.
    let mut device = unsafe { core.stream.alloc::<u8>(PROBE_BYTES) }?;
    let mut pinned = PinnedBuffer::new(PROBE_BYTES)?;
    // SAFETY: no copy is in flight yet. Written so that the pages are mapped.
    unsafe { pinned.slice_mut::<u8>(PROBE_BYTES) }.fill(1);
    let pageable = vec![1u8; PROBE_BYTES];
    let mut rate = |host: &[u8]| -> Result<f64, CudaError> {
        let mut ms = Vec::with_capacity(PROBE_COPIES + 1);
        for _ in 0..=PROBE_COPIES {
            let a = core.mark()?;
            let copied = core.stream.memcpy_htod(host, &mut device);
            let b = core.mark()?;
            let t = a.elapsed_ms(&b)?;
            copied?;
            ms.push(t as f64);
        }
        let mut timed = ms.split_off(1);
        timed.sort_by(f64::total_cmp);
        let median_s = timed[timed.len() / 2].max(1e-3) / 1e3;
        Ok(PROBE_BYTES as f64 / median_s)
    };
    // SAFETY: the pinned buffer is only read by the copies, each waited for through its end
    // event (`elapsed_ms`).
    let from_pinned = rate(unsafe { pinned.slice::<u8>(PROBE_BYTES) })?;
    let from_pageable = rate(&pageable)?;
    core.stream.synchronize()?;
    Ok(CopyRates {
        pinned: from_pinned,
        pageable: from_pageable,
    })
}
