//! A parameter set's host memory page-locked while a GPU streams it: a streamed key's chunks
//! copy from pinned memory at the link's full rate (55 GB/s on the H200 box) instead of
//! through the driver's bounce buffers (6.3 GB/s). The memory is the set's own (already in the
//! host budget): pinning adds nothing to it, and is undone before the set's memory is freed.

use std::sync::Arc;
use std::time::Instant;

use zkforge_groth16::{ConstraintMatrices, HostPinner, LoadedKey};

/// Regions of host memory pinned for as long as this lives.
pub(crate) struct PinnedHostForm {
    pinner: Arc<dyn HostPinner>,
    addrs: Vec<usize>,
}

/// The start and length in bytes of each vector of `v`, skipping the empty ones.
fn region<T>(v: &[T]) -> Option<(usize, usize)> {
    (!v.is_empty()).then(|| (v.as_ptr() as usize, std::mem::size_of_val(v)))
}

/// The key's decoded points: its five queries (the verifying key's few points are not read
/// by a device).
pub(crate) fn key_regions(key: &LoadedKey) -> Vec<(usize, usize)> {
    match key {
        LoadedKey::Memory(pk) => [
            region(&pk.h),
            region(&pk.l),
            region(&pk.a),
            region(&pk.b_g1),
            region(&pk.b_g2),
        ]
        .into_iter()
        .flatten()
        .collect(),
        LoadedKey::File(_) => Vec::new(),
    }
}

/// The matrices' row starts and entries, and their coefficients.
pub(crate) fn matrix_regions(m: &ConstraintMatrices) -> Vec<(usize, usize)> {
    [&m.a, &m.b, &m.c]
        .into_iter()
        .flat_map(|x| [region(&x.row_starts), region(&x.entries)])
        .chain([region(&m.coefficients)])
        .flatten()
        .collect()
}

impl PinnedHostForm {
    /// Pins each region; one the driver refuses stays pageable (slower copies, same proofs),
    /// with a warning naming it.
    pub fn pin(pinner: Arc<dyn HostPinner>, circuit: &str, regions: &[(usize, usize)]) -> Self {
        let t = Instant::now();
        let mut addrs = Vec::with_capacity(regions.len());
        let mut bytes = 0usize;
        for &(addr, len) in regions {
            if pinner.pin(addr, len) {
                addrs.push(addr);
                bytes += len;
            } else {
                tracing::warn!(
                    circuit,
                    len,
                    "could not page-lock part of a streamed parameter set: it is copied from \
                     pageable memory, several times slower"
                );
            }
        }
        tracing::info!(
            circuit,
            gib = format!("{:.2}", bytes as f64 / (1u64 << 30) as f64),
            ms = t.elapsed().as_millis() as u64,
            "parameters page-locked for streaming"
        );
        Self { pinner, addrs }
    }
}

impl Drop for PinnedHostForm {
    fn drop(&mut self) {
        for &addr in &self.addrs {
            self.pinner.unpin(addr);
        }
    }
}
