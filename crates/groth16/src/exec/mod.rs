//! Execution: what lives here is how work is run (threads, memory, files, waiting), not what
//! is computed. The math modules (`synthesis`, `r1cs`, `poly`, `msm`, `srs`, `prover`,
//! `proof`, `verify`, `generator`) never own such state: they call in here for it.
//!
//! - [`pool`]: [`ScalarPool`], reusable witness buffers page-locked by a [`HostPinner`], and
//!   the pool installed on a synthesis thread ([`pool::with_pool`]);
//! - [`eviction`]: which resident item makes room first (least recently used, idle), for the
//!   host's parameter sets and the device's keys alike;
//! - [`reaper`]: large buffers freed on one background thread, counted until they are gone;
//! - [`urgency`]: [`Urgency`] and [`urgency::RankedWaiters`], the one place waiters are ranked;
//! - `priority_lock.rs`: [`PriorityLock`], a device's exclusive region, most urgent first;
//! - `tmpfile.rs`: temporary names for write-then-rename;
//! - `bulk_read.rs`: gigabytes read from a file by the threads of the current rayon pool.
//!
//! Nothing here depends on the math modules (the pool holds `Scalar`s, nothing more).

pub(crate) mod bulk_read;
pub mod eviction;
pub mod pool;
mod priority_lock;
pub mod reaper;
pub(crate) mod tmpfile;
pub mod urgency;

pub use pool::{HostPinner, ScalarPool};
pub use priority_lock::{PriorityGuard, PriorityLock};
pub use urgency::Urgency;
