//! The pipeline the workers run: its queues and the units that flow through them, the
//! memory budget, the parameter store, the backend and what it locks, and the telemetry.

use std::sync::Arc;

use zkforge_groth16::{exec::reaper, PriorityLock, ProverBackend, Witness};

use crate::budget::{MemoryBudget, Reservation};
use crate::config::EngineConfig;
use crate::depth::{Depth, InFlight};
use crate::job::{Job, JobOutcome};
use crate::queue::UnitQueue;
use crate::srs_store::{Resident, SrsStore};
use crate::telemetry::Telemetry;

/// A partition waiting for synthesis.
pub(crate) struct SynthUnit {
    pub job: Arc<Job>,
    pub partition: usize,
}

/// A synthesized partition waiting for a prover, with the memory it holds.
pub(crate) struct ProveUnit {
    pub job: Arc<Job>,
    pub partition: usize,
    pub witness: Witness,
    pub key: Arc<Resident>,
    /// The witness's share of the memory budget, returned when the unit is dropped.
    pub _memory: Reservation,
    /// Its place among the partitions in flight, likewise.
    pub _in_flight: InFlight,
}

impl Drop for ProveUnit {
    fn drop(&mut self) {
        // Freeing gigabytes stalls the caller: let the reaper do it.
        reaper::drop_later(std::mem::take(&mut self.witness));
    }
}

pub(crate) struct Pipeline {
    pub config: EngineConfig,
    pub backend: Arc<dyn ProverBackend>,
    pub budget: Arc<MemoryBudget>,
    /// Partitions in flight, admitted to the depth that keeps the provers busy.
    pub depth: Arc<Depth>,
    pub srs: SrsStore,
    pub synth_queue: UnitQueue<SynthUnit>,
    pub prove_queue: UnitQueue<ProveUnit>,
    /// One lock per device for backends that do not lock their kernel region themselves.
    /// The most urgent waiting partition goes next.
    pub device_locks: Vec<PriorityLock>,
    pub synth_pool: rayon::ThreadPool,
    pub telemetry: Telemetry,
}

impl Pipeline {
    /// Ends a job and counts it; drops its queued units.
    pub fn end_job(&self, job: &Job, outcome: JobOutcome) {
        let ended = job.finish(outcome, |outcome, total_ms| {
            self.telemetry.job_ended(job, outcome, total_ms)
        });
        if ended {
            // Release the memory of synthesized partitions nobody will prove.
            drop(self.prove_queue.take_where(|u| u.job.id == job.id));
            drop(self.synth_queue.take_where(|u| u.job.id == job.id));
        }
    }
}
