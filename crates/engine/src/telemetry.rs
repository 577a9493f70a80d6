//! What the engine tells about itself: TIMELINE events, the counters and histograms behind
//! status and metrics, and what each worker is on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::job::{Job, JobId, JobOutcome};
use crate::stats::{Measure, Stats, WorkerId};
use crate::timeline::{StageEvent, Timeline, TimelineEvent};

/// Jobs ended so far, by outcome.
#[derive(Default)]
pub(crate) struct Outcomes {
    completed: AtomicU64,
    failed: AtomicU64,
    cancelled: AtomicU64,
}

impl Outcomes {
    /// (completed, failed, cancelled).
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.completed.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
            self.cancelled.load(Ordering::Relaxed),
        )
    }
}

pub(crate) struct Telemetry {
    pub timeline: Timeline,
    stats: Mutex<Stats>,
    pub outcomes: Outcomes,
}

impl Telemetry {
    pub fn new() -> Self {
        Self {
            timeline: Timeline::new(),
            stats: Mutex::default(),
            outcomes: Outcomes::default(),
        }
    }

    pub fn stats(&self) -> MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_worker(&self, worker: WorkerId, unit: Option<(JobId, usize)>) {
        self.stats().workers.insert(worker, unit);
    }

    pub fn record(&self, e: TimelineEvent) {
        self.timeline.record(e);
    }

    /// Counts a job that has just ended after `total_ms`, and logs its end.
    pub fn job_ended(&self, job: &Job, outcome: &JobOutcome, total_ms: f64) {
        let (counter, event, label) = match outcome {
            JobOutcome::Completed(_) => {
                (&self.outcomes.completed, StageEvent::JobDone, "completed")
            }
            JobOutcome::Failed(f) => {
                tracing::warn!(job = job.id, kind = %f.kind, "job failed: {}", f.message);
                (&self.outcomes.failed, StageEvent::JobFailed, "failed")
            }
            JobOutcome::Cancelled => (
                &self.outcomes.cancelled,
                StageEvent::JobCancelled,
                "cancelled",
            ),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let mut st = self.stats();
        *st.outcomes.entry((job.kind(), label)).or_default() += 1;
        st.observe(job.kind(), Measure::Job(label), total_ms / 1e3);
        drop(st);
        self.record(TimelineEvent::new(event, job.id).duration(total_ms));
    }
}
