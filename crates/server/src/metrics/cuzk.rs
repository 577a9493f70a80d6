//! cuzk's metric names (extern/cuzk's GetMetrics), answered beside zkforge's on GetMetrics, so
//! that a dashboard built on cuzk keeps its series. Counts are jobs, as cuzk's are; the
//! `zkforge_*` families say more (partitions, latency histograms, memory).

use zkforge_engine::{EngineStatus, Measure};
use zkforge_filecoin::ProofKind;

use super::{Exposition, KINDS};

/// cuzk's Prometheus label value of a proof kind (`metric_label`).
fn cuzk_label(k: ProofKind) -> &'static str {
    match k {
        ProofKind::PoRep => "porep_c2",
        ProofKind::SnapDeals => "snap_update",
        ProofKind::WindowPost => "window_post",
        ProofKind::WinningPost => "winning_post",
    }
}

/// The families cuzk's GetMetrics exposes, under its names, labels and types.
pub fn exposition(s: &EngineStatus) -> String {
    let mut out = Exposition::default();
    let queued: usize = s.queues.iter().map(|(_, c)| c.jobs_queued).sum();
    let running: usize = s.queues.iter().map(|(_, c)| c.jobs_running).sum();
    // cuzk counts the workers of its GPUs: none on the CPU backend.
    let gpu_workers = match s.devices.is_empty() {
        true => 0,
        false => s
            .workers
            .iter()
            .filter(|w| w.worker.device.is_some())
            .count(),
    };
    let globals = [
        (
            "cuzk_proofs_completed_total",
            "counter",
            "Total proofs completed",
            s.completed as f64,
        ),
        (
            "cuzk_proofs_failed_total",
            "counter",
            "Total proofs failed",
            s.failed as f64,
        ),
        (
            "cuzk_uptime_seconds",
            "gauge",
            "Daemon uptime",
            s.uptime_secs.floor(),
        ),
        (
            "cuzk_queue_depth",
            "gauge",
            "Current queue depth (jobs not started)",
            queued as f64,
        ),
    ];
    for (name, kind, help, value) in globals {
        out.metric(name, kind, help, [(vec![], value)]);
    }
    let by_kind = |outcome: &str| -> Vec<(Vec<(&str, &str)>, f64)> {
        KINDS
            .iter()
            .map(|&k| {
                let n: u64 = s
                    .outcomes
                    .iter()
                    .filter(|(kind, o, _)| *kind == k && *o == outcome)
                    .map(|(_, _, n)| n)
                    .sum();
                (vec![("proof_kind", cuzk_label(k))], n as f64)
            })
            .collect()
    };
    out.metric(
        "cuzk_proofs_completed",
        "counter",
        "Per proof-kind completions",
        by_kind("completed"),
    );
    out.metric(
        "cuzk_proofs_failed",
        "counter",
        "Per proof-kind failures",
        by_kind("failed"),
    );
    // cuzk's summary of proof durations: a count and a sum per kind (of completed jobs).
    out.family("cuzk_proof_duration_seconds", "summary", "Proof duration");
    for series in &s.latency {
        if series.measure == Measure::Job("completed") {
            let labels = [("proof_kind", cuzk_label(series.kind))];
            let h = &series.histogram;
            out.sample("cuzk_proof_duration_seconds_count", &labels, h.count as f64);
            out.sample("cuzk_proof_duration_seconds_sum", &labels, h.sum_secs);
        }
    }
    out.metric(
        "cuzk_running_jobs",
        "gauge",
        "Currently running proofs (jobs with a partition started)",
        [(vec![], running as f64)],
    );
    out.metric(
        "cuzk_gpu_workers",
        "gauge",
        "Number of GPU workers",
        [(vec![], gpu_workers as f64)],
    );
    out.text
}
