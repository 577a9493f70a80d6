//! The `GET /status` body: the HTTP side's JSON contract, owned here and built from the
//! engine's [`EngineStatus`], so that the engine's own status can change without changing what
//! a scraper reads. Field names, order and shapes are pinned by this module's test; a proof
//! kind is written by its display name ("porep", "window-post": `ProofKind`'s own form).

use serde::{Serialize, Serializer};
use zkforge_engine::{EngineStatus, KeyTier, Measure, Stage, WorkerId};
use zkforge_filecoin::ProofKind;

/// The whole body, fields in the order they are written.
#[derive(Serialize)]
pub(crate) struct StatusBody<'a> {
    partitions: Vec<Partition>,
    workers: Vec<Worker>,
    /// `[kind, outcome ("completed", "failed", "cancelled"), jobs]`.
    outcomes: Vec<(ProofKind, &'a str, u64)>,
    latency: Vec<Latency<'a>>,
    device_busy_secs: &'a [f64],
    uptime_secs: f64,
    /// `[kind, counts]`.
    queues: Vec<(ProofKind, Queue)>,
    loaded_srs: Vec<Srs<'a>>,
    completed: u64,
    failed: u64,
    cancelled: u64,
    memory_budget_bytes: u64,
    memory_limit_bytes: u64,
    memory_floor_bytes: u64,
    memory_used_bytes: u64,
    memory_peak_bytes: u64,
    process_rss_bytes: u64,
    process_peak_rss_bytes: u64,
    backend: &'a str,
    devices: Vec<Device<'a>>,
    pinned_memory_bytes: u64,
    pinned_memory_limit_bytes: u64,
    partitions_in_flight: usize,
    urgent_partitions_in_flight: usize,
    pipeline_depth: Vec<Depth<'a>>,
}

/// The depth a proof kind's partitions are admitted to; `kind` null for kinds not measured
/// yet.
#[derive(Serialize)]
struct Depth<'a> {
    kind: Option<ProofKind>,
    depth: usize,
    synthesis_secs: Option<f64>,
    cycle_secs: Option<f64>,
    why: &'a str,
}

/// A worker by its name ("synth-0", "prover-0-1", "synth-urgent").
struct Name(WorkerId);

impl Serialize for Name {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

#[derive(Serialize)]
struct Partition {
    job: u64,
    kind: ProofKind,
    partition: usize,
    stage: &'static str,
    in_stage_ms: f64,
}

#[derive(Serialize)]
struct Worker {
    name: Name,
    job: Option<u64>,
    partition: Option<usize>,
}

#[derive(Serialize)]
struct Latency<'a> {
    kind: ProofKind,
    measure: MeasureName,
    histogram: Histogram<'a>,
}

/// What a histogram times, as serde writes an enum: a name (`"queue_wait"`), or
/// `{"gpu_phase": phase}`, `{"job": outcome}`.
struct MeasureName(Measure);

impl Serialize for MeasureName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        const ENUM: &str = "Measure";
        match self.0 {
            Measure::QueueWait => s.serialize_unit_variant(ENUM, 0, "queue_wait"),
            Measure::ParamsLoad => s.serialize_unit_variant(ENUM, 1, "params_load"),
            Measure::Synthesis => s.serialize_unit_variant(ENUM, 2, "synthesis"),
            Measure::GpuPhase(phase) => s.serialize_newtype_variant(ENUM, 3, "gpu_phase", phase),
            Measure::Prove => s.serialize_unit_variant(ENUM, 4, "prove"),
            Measure::Job(outcome) => s.serialize_newtype_variant(ENUM, 5, "job", outcome),
        }
    }
}

#[derive(Serialize)]
struct Histogram<'a> {
    upper_bounds_secs: &'a [f64],
    cumulative_counts: &'a [u64],
    sum_secs: f64,
    count: u64,
}

#[derive(Serialize)]
struct Queue {
    pending: usize,
    in_progress: usize,
    jobs_queued: usize,
    jobs_running: usize,
}

#[derive(Serialize)]
struct Srs<'a> {
    circuit_id: &'a str,
    bytes: u64,
    ref_count: usize,
    key_form: &'a str,
    tier: &'static str,
    placement: &'a [String],
}

/// A device as its backend reports it (`DeviceInfo`, its peak reservation left out), under
/// the names this body has always used.
#[derive(Serialize)]
struct Device<'a> {
    ordinal: u32,
    name: &'a str,
    memory_total_bytes: u64,
    memory_free_bytes: u64,
    vram_budget_bytes: u64,
    vram_reserved_bytes: u64,
    params_residency: &'a str,
    h2d_pinned_bytes_per_s: u64,
    h2d_pageable_bytes_per_s: u64,
    current_job: Option<u64>,
    current_kind: Option<ProofKind>,
}

fn stage(s: Stage) -> &'static str {
    match s {
        Stage::Queued => "queued",
        Stage::Synthesizing => "synthesizing",
        Stage::AwaitingProver => "awaiting_prover",
        Stage::Proving => "proving",
        Stage::Done => "done",
    }
}

fn tier(t: KeyTier) -> &'static str {
    match t {
        KeyTier::Device => "device",
        KeyTier::Host => "host",
        KeyTier::File => "file",
    }
}

impl<'a> From<&'a EngineStatus> for StatusBody<'a> {
    fn from(s: &'a EngineStatus) -> Self {
        Self {
            partitions: s
                .partitions
                .iter()
                .map(|p| Partition {
                    job: p.job,
                    kind: p.kind,
                    partition: p.partition,
                    stage: stage(p.stage),
                    in_stage_ms: p.in_stage_ms,
                })
                .collect(),
            workers: s
                .workers
                .iter()
                .map(|w| Worker {
                    name: Name(w.worker),
                    job: w.job,
                    partition: w.partition,
                })
                .collect(),
            outcomes: s
                .outcomes
                .iter()
                .map(|&(kind, outcome, jobs)| (kind, outcome, jobs))
                .collect(),
            latency: s
                .latency
                .iter()
                .map(|l| Latency {
                    kind: l.kind,
                    measure: MeasureName(l.measure),
                    histogram: Histogram {
                        upper_bounds_secs: l.histogram.upper_bounds_secs,
                        cumulative_counts: &l.histogram.cumulative_counts,
                        sum_secs: l.histogram.sum_secs,
                        count: l.histogram.count,
                    },
                })
                .collect(),
            device_busy_secs: &s.device_busy_secs,
            uptime_secs: s.uptime_secs,
            queues: s
                .queues
                .iter()
                .map(|(kind, c)| {
                    let queue = Queue {
                        pending: c.pending,
                        in_progress: c.in_progress,
                        jobs_queued: c.jobs_queued,
                        jobs_running: c.jobs_running,
                    };
                    (*kind, queue)
                })
                .collect(),
            loaded_srs: s
                .loaded_srs
                .iter()
                .map(|l| Srs {
                    circuit_id: &l.circuit_id,
                    bytes: l.bytes,
                    ref_count: l.ref_count,
                    key_form: &l.key_form,
                    tier: tier(l.tier),
                    placement: &l.placement,
                })
                .collect(),
            completed: s.completed,
            failed: s.failed,
            cancelled: s.cancelled,
            memory_budget_bytes: s.memory_budget_bytes,
            memory_limit_bytes: s.memory_limit_bytes,
            memory_floor_bytes: s.memory_floor_bytes,
            memory_used_bytes: s.memory_used_bytes,
            memory_peak_bytes: s.memory_peak_bytes,
            process_rss_bytes: s.process_rss_bytes,
            process_peak_rss_bytes: s.process_peak_rss_bytes,
            backend: &s.backend,
            devices: s
                .devices
                .iter()
                .map(|d| Device {
                    ordinal: d.info.ordinal,
                    name: &d.info.name,
                    memory_total_bytes: d.info.memory_total_bytes,
                    memory_free_bytes: d.info.memory_free_bytes,
                    vram_budget_bytes: d.info.budget_bytes,
                    vram_reserved_bytes: d.info.reserved_bytes,
                    params_residency: &d.info.residency,
                    h2d_pinned_bytes_per_s: d.info.h2d_pinned_bytes_per_s,
                    h2d_pageable_bytes_per_s: d.info.h2d_pageable_bytes_per_s,
                    current_job: d.current_job,
                    current_kind: d.current_kind,
                })
                .collect(),
            pinned_memory_bytes: s.pinned_memory_bytes,
            pinned_memory_limit_bytes: s.pinned_memory_limit_bytes,
            partitions_in_flight: s.partitions_in_flight.0,
            urgent_partitions_in_flight: s.partitions_in_flight.1,
            pipeline_depth: s
                .pipeline_depth
                .iter()
                .enumerate()
                .map(|(i, d)| Depth {
                    // The last entry is the depth before any measurement.
                    kind: (i + 1 < s.pipeline_depth.len()).then_some(d.kind),
                    depth: d.depth,
                    synthesis_secs: d.synthesis_secs,
                    cycle_secs: d.cycle_secs,
                    why: &d.why,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests;
