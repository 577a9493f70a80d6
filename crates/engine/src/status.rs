//! The engine's status: queues, partitions and workers, outcomes and latencies by proof kind,
//! memory, devices.

use std::sync::Arc;

use zkforge_circuits::ProofKind;
use zkforge_groth16::DeviceInfo;

use crate::depth::KindDepth;
use crate::job::{Job, JobId};
use crate::jobs::JobTable;
use crate::pipeline::Pipeline;
use crate::srs_store::LoadedSrs;
use crate::stats::{LatencySeries, Stage, WorkerId};

/// Queued and running units (partitions) and jobs of one proof kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KindCounts {
    /// Partitions in the synthesis queue.
    pub pending: usize,
    /// Partitions past the queue and not yet proved (a worker's, waiting for their key or
    /// memory, synthesizing, awaiting a prover or proving).
    pub in_progress: usize,
    /// Unfinished jobs none of whose partitions has started synthesis yet.
    pub jobs_queued: usize,
    /// Unfinished jobs with a partition started.
    pub jobs_running: usize,
}

/// One unfinished partition.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionStatus {
    pub job: JobId,
    pub kind: ProofKind,
    pub partition: usize,
    pub stage: Stage,
    /// Milliseconds spent in the current stage so far.
    pub in_stage_ms: f64,
}

/// What a worker is doing.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerStatus {
    pub worker: WorkerId,
    pub job: Option<JobId>,
    pub partition: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct EngineStatus {
    pub partitions: Vec<PartitionStatus>,
    pub workers: Vec<WorkerStatus>,
    /// (kind, outcome: "completed", "failed" or "cancelled", jobs).
    pub outcomes: Vec<(ProofKind, &'static str, u64)>,
    /// Latency histograms by proof kind and what they time.
    pub latency: Vec<LatencySeries>,
    /// Seconds each prover device was busy, in the order of `devices` (one entry, the CPU,
    /// for a backend without devices).
    pub device_busy_secs: Vec<f64>,
    pub uptime_secs: f64,
    pub queues: Vec<(ProofKind, KindCounts)>,
    pub loaded_srs: Vec<LoadedSrs>,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub memory_budget_bytes: u64,
    /// What the host leaves the engine now (at most the budget), and what urgent work may
    /// hold however low that falls (`engine.memory_floor`).
    pub memory_limit_bytes: u64,
    pub memory_floor_bytes: u64,
    pub memory_used_bytes: u64,
    /// Highest budget use so far.
    pub memory_peak_bytes: u64,
    /// This process's resident memory now and at its peak (VmRSS, VmHWM): what the budget
    /// is meant to bound.
    pub process_rss_bytes: u64,
    pub process_peak_rss_bytes: u64,
    pub backend: String,
    pub devices: Vec<DeviceStatus>,
    /// Page-locked host memory held for witness staging, and the most kept idle.
    pub pinned_memory_bytes: u64,
    pub pinned_memory_limit_bytes: u64,
    /// Bulk and urgent partitions between synthesis start and proof end now.
    pub partitions_in_flight: (usize, usize),
    /// The depth each measured proof kind is admitted to, and why; then the depth before any
    /// measurement.
    pub pipeline_depth: Vec<KindDepth>,
}

/// A prover device, as its backend reports it, and the unit its first worker is on.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceStatus {
    pub info: DeviceInfo,
    pub current_job: Option<JobId>,
    pub current_kind: Option<ProofKind>,
}

/// The status of `s` and its jobs now.
pub(crate) fn status(s: &Pipeline, job_table: &JobTable) -> EngineStatus {
    let kinds = ProofKind::ALL;
    let jobs = job_table.all();
    let (pinned_memory_bytes, pinned_memory_limit_bytes) = s.backend.pinned_memory();
    let (rss, peak_rss) = crate::config::process_memory();
    let queues = kinds
        .iter()
        .map(|&k| {
            let pending = s.synth_queue.count_where(|u| u.job.kind() == k);
            let unfinished = || jobs.iter().filter(|j| j.kind() == k && !j.stopped());
            // Every partition not yet proved and not in the synthesis queue: waiting for its
            // key or for memory in a worker's hands, synthesizing, awaiting or in a prover.
            // Curio's backpressure adds these to `pending`; a job whose key is loading once
            // counted for nothing and Curio sent more.
            let in_progress = unfinished()
                .map(|j| j.lock().remaining)
                .sum::<usize>()
                .saturating_sub(pending);
            let jobs_queued = unfinished()
                .filter(|j| j.lock().first_synth.is_none())
                .count();
            (
                k,
                KindCounts {
                    pending,
                    in_progress,
                    jobs_queued,
                    jobs_running: unfinished().count() - jobs_queued,
                },
            )
        })
        .collect();
    let mut partitions = Vec::new();
    for j in jobs.iter().filter(|j| !j.stopped()) {
        let p = j.lock();
        for (k, stage) in p
            .stages
            .iter()
            .enumerate()
            .filter(|(_, st)| **st != Stage::Done)
        {
            partitions.push(PartitionStatus {
                job: j.id,
                kind: j.kind(),
                partition: k,
                stage: *stage,
                in_stage_ms: p.stage_since[k].elapsed().as_secs_f64() * 1e3,
            });
        }
    }
    partitions.sort_by_key(|p| (p.job, p.partition));
    let st = s.telemetry.stats();
    let mut workers: Vec<WorkerStatus> = st
        .workers
        .iter()
        .map(|(&worker, unit)| WorkerStatus {
            worker,
            job: unit.map(|u| u.0),
            partition: unit.map(|u| u.1),
        })
        .collect();
    // By name, the order they are shown in ("synth-10" before "synth-2").
    workers.sort_by_cached_key(|w| w.worker.to_string());
    let outcomes = st
        .outcomes
        .iter()
        .map(|(&(kind, outcome), n)| (kind, outcome, *n))
        .collect();
    let latency = st.latency_series();
    let device_busy_secs = st.device_busy(s.device_locks.len());
    drop(st);
    let (completed, failed, cancelled) = s.telemetry.outcomes.counts();
    EngineStatus {
        partitions,
        workers,
        outcomes,
        latency,
        device_busy_secs,
        uptime_secs: s.telemetry.timeline.uptime().as_secs_f64(),
        queues,
        loaded_srs: s.srs.list(),
        completed,
        failed,
        cancelled,
        memory_budget_bytes: s.budget.total(),
        memory_limit_bytes: s.budget.limit(),
        memory_floor_bytes: s.budget.floor(),
        memory_used_bytes: s.budget.used(),
        memory_peak_bytes: s.budget.peaks().0,
        process_rss_bytes: rss,
        process_peak_rss_bytes: peak_rss,
        backend: s.backend.name().to_string(),
        devices: devices(s, &jobs),
        pinned_memory_bytes,
        pinned_memory_limit_bytes,
        partitions_in_flight: s.depth.in_flight(),
        pipeline_depth: {
            let (mut kinds, first) = s.depth.report();
            kinds.push(first);
            kinds
        },
    }
}

/// Each device of the backend, with the unit its first busy worker is on.
fn devices(s: &Pipeline, jobs: &[Arc<Job>]) -> Vec<DeviceStatus> {
    let st = s.telemetry.stats();
    s.backend
        .devices()
        .into_iter()
        .enumerate()
        .map(|(index, d)| {
            let current = st.workers.iter().find_map(|(worker, unit)| {
                unit.filter(|_| worker.device == Some(index)).map(|u| u.0)
            });
            let kind = current
                .and_then(|id| jobs.iter().find(|j| j.id == id))
                .map(|j| j.kind());
            DeviceStatus {
                info: d,
                current_job: current,
                current_kind: kind,
            }
        })
        .collect()
}
