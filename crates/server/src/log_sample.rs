//! Refusals a client can cause by the thousand are logged by sample, not each.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counts events; [`LogSample::take`] says whether this one is logged: the first, and one in
/// each thousand after.
#[derive(Debug, Default)]
pub(crate) struct LogSample(AtomicU64);

impl LogSample {
    pub fn take(&self) -> bool {
        self.0.fetch_add(1, Ordering::Relaxed).is_multiple_of(1000)
    }
}
