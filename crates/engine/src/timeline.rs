//! TIMELINE: one machine-readable event per stage transition (the schema is
//! `zkforge-timeline`'s), logged and kept in memory for the bench and timeline tools.

use std::sync::Mutex;
use std::time::Instant;

pub use zkforge_timeline::{StageEvent, TimelineEvent};

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
        tracing::info!(target: "timeline", "{}", e.log_line());
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
