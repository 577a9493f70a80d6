//! The TIMELINE event schema: the events the engine writes, their names and fields, and the
//! log line that carries them. [`crate::event`] parses what this writes, so writer and reader
//! cannot drift apart.

use serde::{Serialize, Serializer};

/// The marker before each event's JSON in a log line.
pub const MARKER: &str = "TIMELINE ";

/// A stage transition of the engine's pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    /// The host memory the engine may hold moved (job 0; `bytes`: the new limit).
    MemoryLimit,
}

impl StageEvent {
    pub const ALL: [StageEvent; 13] = [
        Self::JobSubmit,
        Self::SrsLoadStart,
        Self::SrsLoadEnd,
        Self::SynthStart,
        Self::SynthEnd,
        Self::ProveQueue,
        Self::ProveStart,
        Self::ProveEnd,
        Self::JobDone,
        Self::JobFailed,
        Self::JobCancelled,
        Self::GpuPhase,
        Self::MemoryLimit,
    ];

    /// The event's name in the log.
    pub fn name(self) -> &'static str {
        match self {
            Self::JobSubmit => "JOB_SUBMIT",
            Self::SrsLoadStart => "SRS_LOAD_START",
            Self::SrsLoadEnd => "SRS_LOAD_END",
            Self::SynthStart => "SYNTH_START",
            Self::SynthEnd => "SYNTH_END",
            Self::ProveQueue => "PROVE_QUEUE",
            Self::ProveStart => "PROVE_START",
            Self::ProveEnd => "PROVE_END",
            Self::JobDone => "JOB_DONE",
            Self::JobFailed => "JOB_FAILED",
            Self::JobCancelled => "JOB_CANCELLED",
            Self::GpuPhase => "GPU_PHASE",
            Self::MemoryLimit => "MEMORY_LIMIT",
        }
    }

    /// The event a log name stands for; `None` for a name this version does not know.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }
}

impl Serialize for StageEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One event as the engine writes it; `t_ms` is monotonic milliseconds since the engine
/// started. The JSON keeps the fields in this order and leaves out the unset ones.
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
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
            bytes: None,
        }
    }

    pub fn partition(mut self, k: usize) -> Self {
        self.partition = Some(k);
        self
    }

    pub fn worker(mut self, w: impl ToString) -> Self {
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

    pub fn bytes(mut self, bytes: u64) -> Self {
        self.bytes = Some(bytes);
        self
    }

    /// The event as a log line's message: the marker, then the JSON.
    pub fn log_line(&self) -> String {
        format!(
            "{MARKER}{}",
            serde_json::to_string(self).unwrap_or_default()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{parse_line, EventKind};

    #[test]
    fn names_round_trip() {
        for e in StageEvent::ALL {
            assert_eq!(StageEvent::from_name(e.name()), Some(e));
            assert_eq!(
                serde_json::to_string(&e).unwrap(),
                format!("\"{}\"", e.name())
            );
        }
        assert_eq!(StageEvent::from_name("PINNED_ALLOC"), None);
    }

    #[test]
    fn the_parser_reads_what_is_written() {
        let e = TimelineEvent::new(StageEvent::GpuPhase, 4)
            .partition(2)
            .worker("prover-0-1")
            .device(0)
            .phase("msm")
            .duration(1.25);
        let line = e.log_line();
        assert_eq!(
            line,
            "TIMELINE {\"t_ms\":0.0,\"event\":\"GPU_PHASE\",\"job\":4,\"partition\":2,\
             \"worker\":\"prover-0-1\",\"device\":0,\"duration_ms\":1.25,\"phase\":\"msm\"}"
        );
        let parsed = parse_line(&format!("INFO timeline: {line}"), 1)
            .unwrap()
            .unwrap();
        assert_eq!(parsed.kind, EventKind::Stage(StageEvent::GpuPhase));
        assert_eq!(
            (parsed.job, parsed.partition, parsed.device),
            (Some(4), Some(2), Some(0))
        );
        assert_eq!(parsed.worker.as_deref(), Some("prover-0-1"));
        assert_eq!(parsed.phase.as_deref(), Some("msm"));
        assert_eq!(parsed.duration_ms, Some(1.25));
    }
}
