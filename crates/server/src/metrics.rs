//! Engine status as the GetStatus message and as Prometheus text.

use std::fmt::Write;

use zkforge_engine::{EngineStatus, KeyTier};
use zkforge_filecoin::ProofKind;

use crate::pb;
use crate::pb::srs_status::Tier;

pub fn status_response(s: &EngineStatus) -> pb::GetStatusResponse {
    pb::GetStatusResponse {
        gpus: s
            .devices
            .iter()
            .map(|d| pb::GpuStatus {
                ordinal: d.ordinal,
                name: d.name.clone(),
                vram_total_bytes: d.memory_total_bytes,
                vram_free_bytes: d.memory_free_bytes,
                current_job_id: d.current_job.map(|j| j.to_string()).unwrap_or_default(),
                current_proof_kind: d.current_kind.map(cuzk_kind).unwrap_or_default().into(),
            })
            .collect(),
        loaded_srs: s
            .loaded_srs
            .iter()
            .map(|l| pb::SrsStatus {
                circuit_id: l.circuit_id.clone(),
                tier: match l.tier {
                    KeyTier::Device => Tier::Hot,
                    KeyTier::Host => Tier::Warm,
                    KeyTier::File => Tier::Cold,
                } as i32,
                size_bytes: l.bytes,
                ref_count: l.ref_count as u32,
            })
            .collect(),
        queues: s
            .queues
            .iter()
            .map(|(k, c)| pb::QueueStatus {
                proof_kind: cuzk_kind(*k).into(),
                pending: c.pending as u32,
                in_progress: c.in_progress as u32,
            })
            .collect(),
        total_proofs_completed: s.completed,
        total_proofs_failed: s.failed,
        uptime_seconds: s.uptime_secs as u64,
        pinned_memory_bytes: s.pinned_memory_bytes,
        pinned_memory_limit_bytes: s.pinned_memory_limit_bytes,
    }
}

/// A proof kind as cuzk names it in its status strings.
fn cuzk_kind(k: ProofKind) -> &'static str {
    match k {
        ProofKind::PoRep => "porep_c2",
        ProofKind::SnapDeals => "snap_update",
        ProofKind::WindowPost => "window_post",
        ProofKind::WinningPost => "winning_post",
    }
}

/// Prometheus text exposition of the engine's counters and gauges.
pub fn prometheus(s: &EngineStatus) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: Vec<(String, f64)>| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    let jobs = vec![
        ("{outcome=\"completed\"}".to_string(), s.completed as f64),
        ("{outcome=\"failed\"}".to_string(), s.failed as f64),
        ("{outcome=\"cancelled\"}".to_string(), s.cancelled as f64),
    ];
    metric(
        "zkforge_jobs_total",
        "counter",
        "Jobs finished, by outcome.",
        jobs,
    );
    let by_kind = |f: fn(&zkforge_engine::KindCounts) -> usize| {
        s.queues
            .iter()
            .map(|(k, c)| (format!("{{kind=\"{k}\"}}"), f(c) as f64))
            .collect()
    };
    metric(
        "zkforge_partitions_pending",
        "gauge",
        "Partitions waiting for synthesis.",
        by_kind(|c| c.pending),
    );
    metric(
        "zkforge_partitions_in_progress",
        "gauge",
        "Partitions being synthesized or proved.",
        by_kind(|c| c.in_progress),
    );
    metric(
        "zkforge_memory_budget_bytes",
        "gauge",
        "Host memory budget.",
        vec![(String::new(), s.memory_budget_bytes as f64)],
    );
    metric(
        "zkforge_memory_used_bytes",
        "gauge",
        "Host memory reserved, idle pooled buffers included.",
        vec![(String::new(), s.memory_used_bytes as f64)],
    );
    metric(
        "zkforge_process_resident_bytes",
        "gauge",
        "Resident memory of the daemon (VmRSS).",
        vec![(String::new(), s.process_rss_bytes as f64)],
    );
    metric(
        "zkforge_process_peak_resident_bytes",
        "gauge",
        "Peak resident memory of the daemon (VmHWM).",
        vec![(String::new(), s.process_peak_rss_bytes as f64)],
    );
    metric(
        "zkforge_srs_loaded",
        "gauge",
        "Parameter sets resident.",
        vec![(String::new(), s.loaded_srs.len() as f64)],
    );
    metric(
        "zkforge_pinned_memory_bytes",
        "gauge",
        "Page-locked host memory held for witness staging.",
        vec![(String::new(), s.pinned_memory_bytes as f64)],
    );
    let per_device = |f: fn(&zkforge_engine::DeviceStatus) -> u64| {
        s.devices
            .iter()
            .map(|d| (format!("{{device=\"{}\"}}", d.ordinal), f(d) as f64))
            .collect()
    };
    metric(
        "zkforge_vram_budget_bytes",
        "gauge",
        "Device memory the backend may reserve, per GPU.",
        per_device(|d| d.vram_budget_bytes),
    );
    metric(
        "zkforge_vram_reserved_bytes",
        "gauge",
        "Device memory reserved by keys and partitions, per GPU.",
        per_device(|d| d.vram_reserved_bytes),
    );
    metric(
        "zkforge_uptime_seconds",
        "gauge",
        "Seconds since start.",
        vec![(String::new(), s.uptime_secs)],
    );
    out
}
