//! What the engine counts for status and metrics: per-partition stages, worker activity,
//! outcomes by kind, and duration histograms.

use std::collections::BTreeMap;

use serde::Serialize;

/// Where one partition is in the pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Queued,
    Synthesizing,
    AwaitingProver,
    Proving,
    Done,
}

/// A cumulative histogram in milliseconds, Prometheus style.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Histogram {
    /// Upper bounds (ms) of the buckets; a last, infinite bucket is implied by `count`.
    pub bounds: Vec<f64>,
    /// Observations ≤ each bound.
    pub cumulative: Vec<u64>,
    pub sum_ms: f64,
    pub count: u64,
}

impl Histogram {
    pub fn new() -> Self {
        let bounds = vec![
            10.0, 50.0, 100.0, 250.0, 500.0, 1e3, 2.5e3, 5e3, 1e4, 3e4, 6e4, 3e5,
        ];
        Self {
            cumulative: vec![0; bounds.len()],
            bounds,
            sum_ms: 0.0,
            count: 0,
        }
    }

    pub fn observe(&mut self, ms: f64) {
        for (b, c) in self.bounds.iter().zip(&mut self.cumulative) {
            if ms <= *b {
                *c += 1;
            }
        }
        self.sum_ms += ms;
        self.count += 1;
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

/// Counters kept under one lock.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// (kind, outcome) → jobs.
    pub outcomes: BTreeMap<(String, &'static str), u64>,
    pub synthesis: Histogram,
    pub prove: Histogram,
    /// Milliseconds the device lock was held for proving.
    pub device_busy_ms: f64,
    /// Worker name → the (job, partition) it is on.
    pub workers: BTreeMap<String, Option<(u64, usize)>>,
}
