//! What the engine counts for status and metrics: per-partition stages, worker activity,
//! outcomes by kind, latency histograms by proof kind, and device busy time.

use std::collections::BTreeMap;

use zkforge_circuits::ProofKind;

/// Where one partition is in the pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Queued,
    Synthesizing,
    AwaitingProver,
    Proving,
    Done,
}

/// Upper bounds (seconds) of every latency histogram's buckets: from a 2 KiB proof's phases
/// (milliseconds) to a 32 GiB PoRep job queued behind others (minutes). One set for all, so
/// that quantiles of different stages can be compared and summed across kinds.
pub const LATENCY_BUCKETS_SECONDS: [f64; 17] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0,
    600.0,
];

/// A cumulative histogram in seconds, Prometheus style: `cumulative_counts[i]` observations
/// were ≤ `upper_bounds_secs[i]`; the implied last bucket (+Inf) holds `count`.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    pub upper_bounds_secs: &'static [f64],
    pub cumulative_counts: Vec<u64>,
    pub sum_secs: f64,
    pub count: u64,
}

impl Histogram {
    pub fn new() -> Self {
        Self {
            upper_bounds_secs: &LATENCY_BUCKETS_SECONDS,
            cumulative_counts: vec![0; LATENCY_BUCKETS_SECONDS.len()],
            sum_secs: 0.0,
            count: 0,
        }
    }

    /// Counts one duration. A non-finite one (no clock gives it) is dropped rather than
    /// letting it turn the sum into NaN for good.
    pub fn observe(&mut self, secs: f64) {
        if !secs.is_finite() {
            return;
        }
        let secs = secs.max(0.0);
        for (bound, n) in self
            .upper_bounds_secs
            .iter()
            .zip(&mut self.cumulative_counts)
        {
            if secs <= *bound {
                *n += 1;
            }
        }
        self.sum_secs += secs;
        self.count += 1;
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

/// What a latency histogram times. Per job: `QueueWait`, `ParamsLoad`, `Job`; per partition:
/// `Synthesis`, `GpuPhase`, `Prove`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Measure {
    /// Submit → the job's first partition starts synthesis (its parameter load and any wait
    /// for memory included).
    QueueWait,
    /// Loading the job's parameter set, for the jobs that found it not resident.
    ParamsLoad,
    /// One partition's witness generation.
    Synthesis,
    /// One device phase of one partition, as the backend timed it ("h2d", "spmv", "ntt",
    /// "msm"); none from the CPU backend.
    GpuPhase(&'static str),
    /// One partition's prover call (device lock wait excluded).
    Prove,
    /// Submit → end of the job, by outcome ("completed", "failed", "cancelled").
    Job(&'static str),
}

/// A worker of the pipeline: a synthesis worker (no device) or a prover worker of a device.
/// Its name in logs and TIMELINE events is "synth-{index}" or "prover-{device}-{index}", and
/// "synth-urgent" or "prover-{device}-urgent" for the lanes kept for urgent jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkerId {
    pub device: Option<usize>,
    pub index: usize,
    /// Takes only urgent partitions ([`crate::Priority::is_urgent`]; `engine.urgent_lanes`).
    pub urgent: bool,
}

impl WorkerId {
    pub fn synthesis(index: usize) -> Self {
        Self {
            device: None,
            index,
            urgent: false,
        }
    }

    pub fn prover(device: usize, index: usize) -> Self {
        Self {
            device: Some(device),
            index,
            urgent: false,
        }
    }

    /// The lane of `self`'s kind kept for urgent partitions.
    pub fn urgent(self) -> Self {
        Self {
            urgent: true,
            ..self
        }
    }
}

impl std::fmt::Display for WorkerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.device, self.urgent) {
            (None, false) => write!(f, "synth-{}", self.index),
            (None, true) => write!(f, "synth-urgent"),
            (Some(d), false) => write!(f, "prover-{d}-{}", self.index),
            (Some(d), true) => write!(f, "prover-{d}-urgent"),
        }
    }
}

/// One histogram of the status: what it times, for which proof kind.
#[derive(Clone, Debug, PartialEq)]
pub struct LatencySeries {
    pub kind: ProofKind,
    pub measure: Measure,
    pub histogram: Histogram,
}

/// Counters kept under one lock.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// (kind, outcome) → jobs.
    pub outcomes: BTreeMap<(ProofKind, &'static str), u64>,
    pub latency: BTreeMap<(ProofKind, Measure), Histogram>,
    /// Seconds each prover device was busy, by the engine's device index (the CPU backend's
    /// one lane is index 0).
    pub device_busy_secs: Vec<f64>,
    /// Each worker that has taken a unit → the (job, partition) it is on now.
    pub workers: BTreeMap<WorkerId, Option<(u64, usize)>>,
}

impl Stats {
    pub fn observe(&mut self, kind: ProofKind, measure: Measure, secs: f64) {
        self.latency
            .entry((kind, measure))
            .or_default()
            .observe(secs);
    }

    pub fn add_device_busy(&mut self, device: usize, secs: f64) {
        if self.device_busy_secs.len() <= device {
            self.device_busy_secs.resize(device + 1, 0.0);
        }
        self.device_busy_secs[device] += secs;
    }

    /// Every histogram, ordered by kind then measure.
    pub fn latency_series(&self) -> Vec<LatencySeries> {
        self.latency
            .iter()
            .map(|(&(kind, measure), h)| LatencySeries {
                kind,
                measure,
                histogram: h.clone(),
            })
            .collect()
    }

    /// Busy seconds for `devices` device lanes, zero for the ones not used yet.
    pub fn device_busy(&self, devices: usize) -> Vec<f64> {
        let mut busy = self.device_busy_secs.clone();
        busy.resize(devices.max(busy.len()), 0.0);
        busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_and_bounds_inclusive() {
        let mut h = Histogram::new();
        for secs in [0.001, 0.005, 0.7, 1.0, 700.0] {
            h.observe(secs);
        }
        h.observe(f64::NAN);
        let at = |bound: f64| {
            let i = h
                .upper_bounds_secs
                .iter()
                .position(|b| *b == bound)
                .unwrap();
            h.cumulative_counts[i]
        };
        assert_eq!(at(0.005), 2, "a value equal to a bound falls in its bucket");
        assert_eq!(at(0.5), 2);
        assert_eq!(at(1.0), 4);
        assert_eq!(at(600.0), 4, "700 s lies in +Inf only");
        assert_eq!(h.count, 5, "NaN is not counted");
        assert!((h.sum_secs - 701.706).abs() < 1e-9, "{}", h.sum_secs);
        assert!(h.cumulative_counts.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn series_are_kept_apart_by_kind_and_measure() {
        let mut s = Stats::default();
        s.observe(ProofKind::PoRep, Measure::GpuPhase("msm"), 1.0);
        s.observe(ProofKind::PoRep, Measure::GpuPhase("ntt"), 0.4);
        s.observe(ProofKind::PoRep, Measure::GpuPhase("msm"), 1.1);
        s.observe(ProofKind::WinningPost, Measure::GpuPhase("msm"), 0.01);
        s.add_device_busy(1, 2.5);
        let series = s.latency_series();
        assert_eq!(series.len(), 3);
        let porep_msm = series
            .iter()
            .find(|l| l.kind == ProofKind::PoRep && l.measure == Measure::GpuPhase("msm"))
            .unwrap();
        assert_eq!(porep_msm.histogram.count, 2);
        assert_eq!(s.device_busy(2), vec![0.0, 2.5]);
        assert_eq!(s.device_busy(3), vec![0.0, 2.5, 0.0]);
    }
}
