//! The body's shape, pinned: a status with one of everything, written as scrapers read it.

use zkforge_engine::{
    DeviceStatus, EngineStatus, Histogram, KindCounts, KindDepth, LatencySeries, LoadedSrs,
    PartitionStatus, WorkerStatus,
};
use zkforge_groth16::DeviceInfo;

use super::*;

/// A status with every list non-empty and every kind of measure.
fn status() -> EngineStatus {
    let series = |kind, measure, count| LatencySeries {
        kind,
        measure,
        histogram: Histogram {
            upper_bounds_secs: &[0.5, 60.0],
            cumulative_counts: vec![count / 2, count],
            sum_secs: 42.3,
            count,
        },
    };
    EngineStatus {
        partitions: vec![PartitionStatus {
            job: 7,
            kind: ProofKind::PoRep,
            partition: 3,
            stage: Stage::AwaitingProver,
            in_stage_ms: 12.5,
        }],
        workers: vec![
            WorkerStatus {
                worker: WorkerId::prover(0, 1),
                job: Some(7),
                partition: Some(2),
            },
            WorkerStatus {
                worker: WorkerId::synthesis(0).urgent(),
                job: None,
                partition: None,
            },
        ],
        outcomes: vec![(ProofKind::WindowPost, "failed", 2)],
        latency: vec![
            series(ProofKind::SnapDeals, Measure::QueueWait, 2),
            series(ProofKind::PoRep, Measure::GpuPhase("msm"), 3),
            series(ProofKind::WinningPost, Measure::Job("completed"), 1),
        ],
        device_busy_secs: vec![1.5],
        uptime_secs: 60.25,
        queues: vec![(
            ProofKind::WinningPost,
            KindCounts {
                pending: 1,
                in_progress: 2,
                jobs_queued: 3,
                jobs_running: 4,
            },
        )],
        loaded_srs: vec![LoadedSrs {
            circuit_id: "porep-2KiB".into(),
            bytes: 1 << 20,
            ref_count: 1,
            key_form: "file".into(),
            tier: KeyTier::Device,
            placement: vec!["resident".into()],
        }],
        completed: 5,
        failed: 2,
        cancelled: 1,
        memory_budget_bytes: 1 << 30,
        memory_limit_bytes: 3 << 29,
        memory_floor_bytes: 1 << 28,
        memory_used_bytes: 1 << 29,
        memory_peak_bytes: 3 << 28,
        process_rss_bytes: 1 << 28,
        process_peak_rss_bytes: 1 << 29,
        backend: "cuda".into(),
        devices: vec![DeviceStatus {
            info: DeviceInfo {
                ordinal: 0,
                name: "NVIDIA H100".into(),
                memory_total_bytes: 80 << 30,
                memory_free_bytes: 70 << 30,
                budget_bytes: 60 << 30,
                reserved_bytes: 10 << 30,
                reserved_peak_bytes: 12 << 30,
                residency: "vram: 1 key".into(),
                h2d_pinned_bytes_per_s: 50 << 30,
                h2d_pageable_bytes_per_s: 10 << 30,
            },
            current_job: Some(7),
            current_kind: Some(ProofKind::PoRep),
        }],
        pinned_memory_bytes: 1 << 26,
        pinned_memory_limit_bytes: 1 << 27,
        partitions_in_flight: (5, 1),
        pipeline_depth: vec![
            KindDepth {
                kind: ProofKind::PoRep,
                depth: 6,
                synthesis_secs: Some(3.0),
                cycle_secs: Some(2.25),
                why: "synthesis 3.00 s / cycle 2.25 s -> 2 synthesizing + 2 provers + 2 queued"
                    .into(),
            },
            KindDepth {
                kind: ProofKind::PoRep,
                depth: 5,
                synthesis_secs: None,
                cycle_secs: None,
                why: "not measured yet: 2 provers + 2 queued + 1 synthesizing".into(),
            },
        ],
    }
}

/// The body as the engine's status was served before the body was the server's own
/// (`served.json`, pretty-printed): a change there is a change of the HTTP contract.
const SERVED: &str = include_str!("served.json");

#[test]
fn the_body_keeps_its_names_order_and_shapes() {
    let body = serde_json::to_string_pretty(&StatusBody::from(&status())).unwrap();
    assert_eq!(body, SERVED.trim_end());
}
