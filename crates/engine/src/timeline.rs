//! TIMELINE: one machine-readable event per stage transition, logged and kept in memory for
//! the bench and timeline tools.

use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StageEvent {
    JobSubmit,
    SrsLoadStart,
    SrsLoadEnd,
    SynthStart,
    SynthEnd,
    ProveQueue,
    ProveStart,
    ProveEnd,
    JobDone,
    JobFailed,
    JobCancelled,
    /// A timed phase of a proof on a device ("h2d", "ntt", "msm", ...); `t_ms` is its start.
    GpuPhase,
}

/// One event; `t_ms` is monotonic milliseconds since the engine started.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimelineEvent {
    pub t_ms: f64,
    pub event: StageEvent,
    pub job: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<usize>,
    /// "synth-0", "prover-0-1" (device 0, worker 1)...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_wait_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<&'static str>,
}

impl TimelineEvent {
    pub fn new(event: StageEvent, job: u64) -> Self {
        Self {
            t_ms: 0.0,
            event,
            job,
            partition: None,
            worker: None,
            device: None,
            duration_ms: None,
            lock_wait_ms: None,
            phase: None,
        }
    }

    pub fn partition(mut self, k: usize) -> Self {
        self.partition = Some(k);
        self
    }

    pub fn worker(mut self, w: &str) -> Self {
        self.worker = Some(w.to_string());
        self
    }

    pub fn device(mut self, d: usize) -> Self {
        self.device = Some(d);
        self
    }

    pub fn duration(mut self, ms: f64) -> Self {
        self.duration_ms = Some(ms);
        self
    }

    pub fn lock_wait(mut self, ms: f64) -> Self {
        self.lock_wait_ms = Some(ms);
        self
    }

    pub fn phase(mut self, name: &'static str) -> Self {
        self.phase = Some(name);
        self
    }
}

/// Most events kept in memory; older ones are still in the log.
const KEEP: usize = 200_000;

pub(crate) struct Timeline {
    start: Instant,
    events: Mutex<Vec<TimelineEvent>>,
}

impl Timeline {
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            events: Mutex::new(Vec::new()),
        }
    }

    pub fn record(&self, e: TimelineEvent) {
        self.record_at(Instant::now(), e);
    }

    /// Records an event that happened at `at` (e.g. a device phase measured afterwards).
    pub fn record_at(&self, at: Instant, mut e: TimelineEvent) {
        e.t_ms = at.saturating_duration_since(self.start).as_secs_f64() * 1e3;
        tracing::info!(target: "timeline", "TIMELINE {}", serde_json::to_string(&e).unwrap_or_default());
        let mut ev = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if ev.len() == KEEP {
            ev.drain(..KEEP / 2);
        }
        ev.push(e);
    }

    pub fn snapshot(&self) -> Vec<TimelineEvent> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn uptime(&self) -> std::time::Duration {
        self.start.elapsed()
    }
}
