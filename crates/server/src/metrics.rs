//! Engine status as the GetStatus message and as Prometheus text.

use std::fmt::Write;

use zkforge_engine::{DeviceStatus, EngineStatus, Histogram, KeyTier, KindCounts, Measure};
use zkforge_filecoin::ProofKind;

use crate::pb;
use crate::pb::srs_status::Tier;

pub fn status_response(s: &EngineStatus) -> pb::GetStatusResponse {
    pb::GetStatusResponse {
        gpus: s
            .devices
            .iter()
            .map(|d| pb::GpuStatus {
                ordinal: d.info.ordinal,
                name: d.info.name.clone(),
                vram_total_bytes: d.info.memory_total_bytes,
                vram_free_bytes: d.info.memory_free_bytes,
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
        // Jobs, as cuzk counts them (Curio's backpressure adds pending and in_progress against
        // its MaxPending, a count of tasks); partitions are on /status and /metrics.
        queues: s
            .queues
            .iter()
            .map(|(k, c)| pb::QueueStatus {
                proof_kind: cuzk_kind(*k).into(),
                pending: c.jobs_queued as u32,
                in_progress: c.jobs_running as u32,
            })
            .collect(),
        total_proofs_completed: s.completed,
        total_proofs_failed: s.failed,
        uptime_seconds: s.uptime_secs as u64,
        pinned_memory_bytes: s.pinned_memory_bytes,
        pinned_memory_limit_bytes: s.pinned_memory_limit_bytes,
    }
}

/// A proof kind as cuzk names it in GetStatus (`proof_kind`, `current_proof_kind`): its
/// kinds' display names. Prometheus labels keep cuzk's underscored ones (`metric_label`).
fn cuzk_kind(k: ProofKind) -> &'static str {
    match k {
        ProofKind::PoRep => "porep-c2",
        ProofKind::SnapDeals => "snap-update",
        ProofKind::WindowPost => "window-post",
        ProofKind::WinningPost => "winning-post",
    }
}

/// The latency histograms' families, in exposition order: name, help, and the label a
/// measure adds beside `kind`.
const LATENCY_FAMILIES: [(&str, &str); 6] = [
    (
        "zkforge_job_queue_wait_seconds",
        "Time from a job's submission to its first partition's synthesis start (its parameter \
         load and any wait for memory included), by proof kind.",
    ),
    (
        "zkforge_params_load_seconds",
        "Time to load a parameter set (key and recorded matrices) for a job that found it not \
         resident, by proof kind.",
    ),
    (
        "zkforge_partition_synthesis_seconds",
        "Witness generation of one partition, by proof kind.",
    ),
    (
        "zkforge_partition_gpu_phase_seconds",
        "One device phase of one partition (h2d, spmv, ntt, msm), timed with device events, by \
         proof kind and phase.",
    ),
    (
        "zkforge_partition_prove_seconds",
        "One partition's prover call, wall time (the engine's device lock wait excluded, a CUDA \
         kernel lock wait included), by proof kind.",
    ),
    (
        "zkforge_job_duration_seconds",
        "Time from a job's submission to its end, by proof kind and outcome.",
    ),
];

/// The family a measure is exported as, and the label it adds beside `kind`.
fn latency_family(m: Measure) -> (&'static str, Option<(&'static str, &'static str)>) {
    match m {
        Measure::QueueWait => ("zkforge_job_queue_wait_seconds", None),
        Measure::ParamsLoad => ("zkforge_params_load_seconds", None),
        Measure::Synthesis => ("zkforge_partition_synthesis_seconds", None),
        Measure::GpuPhase(phase) => (
            "zkforge_partition_gpu_phase_seconds",
            Some(("phase", phase)),
        ),
        Measure::Prove => ("zkforge_partition_prove_seconds", None),
        Measure::Job(outcome) => ("zkforge_job_duration_seconds", Some(("outcome", outcome))),
    }
}

const KINDS: [ProofKind; 4] = ProofKind::ALL;
const OUTCOMES: [&str; 3] = ["completed", "failed", "cancelled"];

/// Text exposition format 0.0.4 being written: a family's HELP and TYPE, then its samples.
#[derive(Default)]
struct Exposition {
    text: String,
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (label, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{label}=\"{}\"", escape_label_value(v));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }

    /// A gauge or counter with one sample per label set.
    fn metric<'a>(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        samples: impl IntoIterator<Item = (Vec<(&'a str, &'a str)>, f64)>,
    ) {
        self.family(name, kind, help);
        for (labels, value) in samples {
            self.sample(name, &labels, value);
        }
    }

    /// A gauge with one sample per value of its one `label`.
    fn gauge_by<'a>(
        &mut self,
        name: &str,
        help: &str,
        label: &'a str,
        values: impl Iterator<Item = (&'a str, f64)>,
    ) {
        let samples = values.map(|(v, x)| (vec![(label, v)], x));
        self.metric(name, "gauge", help, samples.collect::<Vec<_>>());
    }

    /// One histogram series: `_bucket` per bound and +Inf, `_sum`, `_count`.
    fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &Histogram) {
        let bucket = format!("{name}_bucket");
        for (bound, n) in h.upper_bounds_secs.iter().zip(&h.cumulative_counts) {
            let le = bound.to_string();
            self.sample(&bucket, &[labels, &[("le", &le)]].concat(), *n as f64);
        }
        let inf = [labels, &[("le", "+Inf")]].concat();
        self.sample(&bucket, &inf, h.count as f64);
        self.sample(&format!("{name}_sum"), labels, h.sum_secs);
        self.sample(&format!("{name}_count"), labels, h.count as f64);
    }
}

/// Label values are ours (kinds, outcomes, phases), but a backend's phase name must not be
/// able to break the exposition.
fn escape_label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Prometheus text exposition of the engine's status: job counters, queue gauges, latency
/// histograms (seconds) by proof kind, device busy time, memory.
pub fn prometheus(s: &EngineStatus) -> String {
    let mut out = Exposition::default();
    jobs(&mut out, s);
    queues(&mut out, s);
    latency(&mut out, s);
    devices(&mut out, s);
    memory(&mut out, s);
    out.metric(
        "zkforge_build_info",
        "gauge",
        "Always 1; the daemon's version as a label.",
        [(vec![("version", env!("CARGO_PKG_VERSION"))], 1.0)],
    );
    out.metric(
        "zkforge_uptime_seconds",
        "gauge",
        "Seconds since start.",
        [(vec![], s.uptime_secs)],
    );
    out.text
}

fn jobs(out: &mut Exposition, s: &EngineStatus) {
    out.metric(
        "zkforge_jobs_total",
        "counter",
        "Jobs finished, by outcome (zkforge_proofs_total split by proof kind).",
        [
            (vec![("outcome", "completed")], s.completed as f64),
            (vec![("outcome", "failed")], s.failed as f64),
            (vec![("outcome", "cancelled")], s.cancelled as f64),
        ],
    );
    // Every (kind, outcome) from the start, at 0 until it happens: a series appearing at its
    // first failure would hide that failure from increase() and rate().
    let kinds: Vec<(ProofKind, String)> = KINDS.iter().map(|&k| (k, k.to_string())).collect();
    let finished = |kind: ProofKind, outcome: &str| {
        s.outcomes
            .iter()
            .filter(|(k, o, _)| *k == kind && *o == outcome)
            .map(|(_, _, n)| *n)
            .sum::<u64>() as f64
    };
    let samples = kinds.iter().flat_map(|(kind, label)| {
        OUTCOMES.iter().map(move |outcome| {
            let n = finished(*kind, outcome);
            (vec![("kind", label.as_str()), ("outcome", *outcome)], n)
        })
    });
    out.metric(
        "zkforge_proofs_total",
        "counter",
        "Proof requests (jobs) finished, by proof kind and outcome.",
        samples.collect::<Vec<_>>(),
    );
}

fn queues(out: &mut Exposition, s: &EngineStatus) {
    let kinds: Vec<(String, &KindCounts)> =
        s.queues.iter().map(|(k, c)| (k.to_string(), c)).collect();
    let mut by_kind = |name: &str, help: &str, f: fn(&KindCounts) -> usize| {
        let values = kinds.iter().map(|(k, c)| (k.as_str(), f(c) as f64));
        out.gauge_by(name, help, "kind", values);
    };
    by_kind(
        "zkforge_partitions_pending",
        "Partitions in the synthesis queue.",
        |c| c.pending,
    );
    by_kind(
        "zkforge_partitions_in_progress",
        "Partitions past the synthesis queue and not yet proved (waiting for their key or memory, synthesizing, or at a prover).",
        |c| c.in_progress,
    );
    by_kind(
        "zkforge_jobs_queued",
        "Unfinished jobs none of whose partitions has started synthesis.",
        |c| c.jobs_queued,
    );
    by_kind(
        "zkforge_jobs_running",
        "Unfinished jobs with a partition started.",
        |c| c.jobs_running,
    );
}

fn latency(out: &mut Exposition, s: &EngineStatus) {
    for (family, help) in LATENCY_FAMILIES {
        out.family(family, "histogram", help);
        for series in &s.latency {
            let (name, extra) = latency_family(series.measure);
            if name != family {
                continue;
            }
            let kind = series.kind.to_string();
            let mut labels = vec![("kind", kind.as_str())];
            labels.extend(extra);
            out.histogram(name, &labels, &series.histogram);
        }
    }
}

fn devices(out: &mut Exposition, s: &EngineStatus) {
    // The CPU backend has no devices but one prover lane: labelled "cpu".
    let label = |i: usize| match s.devices.get(i) {
        Some(d) => d.info.ordinal.to_string(),
        None if s.devices.is_empty() => "cpu".to_string(),
        None => i.to_string(),
    };
    let labels: Vec<String> = (0..s.device_busy_secs.len()).map(label).collect();
    out.metric(
        "zkforge_device_busy_seconds_total",
        "counter",
        "Seconds a prover device was busy: the CUDA kernel lock held, or the whole prover call \
         on the CPU backend.",
        labels
            .iter()
            .zip(&s.device_busy_secs)
            .map(|(d, secs)| (vec![("device", d.as_str())], *secs))
            .collect::<Vec<_>>(),
    );
    let ordinals: Vec<String> = s
        .devices
        .iter()
        .map(|d| d.info.ordinal.to_string())
        .collect();
    let mut per_device = |name: &str, help: &str, f: fn(&DeviceStatus) -> u64| {
        let values = s
            .devices
            .iter()
            .zip(&ordinals)
            .map(|(d, o)| (o.as_str(), f(d) as f64));
        out.gauge_by(name, help, "device", values);
    };
    per_device(
        "zkforge_vram_budget_bytes",
        "Device memory the backend may reserve, per GPU.",
        |d| d.info.budget_bytes,
    );
    per_device(
        "zkforge_vram_reserved_bytes",
        "Device memory reserved by keys and partitions, per GPU.",
        |d| d.info.reserved_bytes,
    );
}

fn memory(out: &mut Exposition, s: &EngineStatus) {
    let mut gauge = |name: &str, help: &str, value: f64| {
        out.metric(name, "gauge", help, [(vec![], value)]);
    };
    gauge(
        "zkforge_memory_budget_bytes",
        "Host memory budget.",
        s.memory_budget_bytes as f64,
    );
    gauge(
        "zkforge_memory_limit_bytes",
        "Host memory the engine may hold now: the budget, or less while the host needs memory.",
        s.memory_limit_bytes as f64,
    );
    gauge(
        "zkforge_memory_floor_bytes",
        "Host memory urgent work may always hold (engine.memory_floor).",
        s.memory_floor_bytes as f64,
    );
    gauge(
        "zkforge_partitions_in_flight",
        "Partitions between synthesis start and proof end (bulk and urgent).",
        (s.partitions_in_flight.0 + s.partitions_in_flight.1) as f64,
    );
    gauge(
        "zkforge_memory_used_bytes",
        "Host memory reserved, idle pooled buffers included.",
        s.memory_used_bytes as f64,
    );
    gauge(
        "zkforge_memory_peak_bytes",
        "Highest host memory reserved since start.",
        s.memory_peak_bytes as f64,
    );
    gauge(
        "zkforge_process_resident_bytes",
        "Resident memory of the daemon (VmRSS).",
        s.process_rss_bytes as f64,
    );
    gauge(
        "zkforge_process_peak_resident_bytes",
        "Peak resident memory of the daemon (VmHWM).",
        s.process_peak_rss_bytes as f64,
    );
    gauge(
        "zkforge_srs_loaded",
        "Parameter sets resident.",
        s.loaded_srs.len() as f64,
    );
    gauge(
        "zkforge_pinned_memory_bytes",
        "Page-locked host memory held for witness staging.",
        s.pinned_memory_bytes as f64,
    );
    gauge(
        "zkforge_pinned_memory_limit_bytes",
        "Most page-locked host memory kept idle for reuse (gpu.staging_pool).",
        s.pinned_memory_limit_bytes as f64,
    );
}

mod cuzk;
pub use cuzk::exposition as cuzk_exposition;

#[cfg(test)]
mod tests;
