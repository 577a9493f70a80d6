//! TIMELINE events as the engine logs them (`TIMELINE {json}` inside a tracing line) and the
//! parser that finds them in a log.
//!
//! Forward compatible: unknown event names and unknown fields are kept or ignored, never an
//! error. A line whose JSON after `TIMELINE ` does not parse is skipped with a [`Skipped`]
//! entry naming the line and the reason; the caller decides how loudly to warn.

use serde::Deserialize;

use crate::schema::StageEvent;
pub use crate::schema::MARKER;

/// What an event is: a stage the schema names, or a name this version does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    Stage(StageEvent),
    Other(String),
}

impl EventKind {
    pub fn from_name(name: &str) -> Self {
        StageEvent::from_name(name).map_or_else(|| Self::Other(name.to_string()), Self::Stage)
    }
}

/// One TIMELINE event. `t_ms` is milliseconds since the engine started.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub t_ms: f64,
    pub kind: EventKind,
    pub job: Option<u64>,
    pub partition: Option<usize>,
    /// "synth-0", "prover-0-1" (device 0, worker 1)...
    pub worker: Option<String>,
    pub device: Option<usize>,
    pub duration_ms: Option<f64>,
    pub lock_wait_ms: Option<f64>,
    /// GPU_PHASE only: "h2d", "ntt", "msm", "kernels"...
    pub phase: Option<String>,
    /// The 1-based line of the log the event came from.
    pub line: usize,
}

/// The JSON as written; serde ignores fields not named here.
#[derive(Deserialize)]
struct RawEvent {
    t_ms: f64,
    event: String,
    job: Option<u64>,
    partition: Option<usize>,
    worker: Option<String>,
    device: Option<usize>,
    duration_ms: Option<f64>,
    lock_wait_ms: Option<f64>,
    phase: Option<String>,
}

/// A line that carried the marker but no event we could read.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    pub line: usize,
    pub reason: String,
}

/// Everything found in a log.
#[derive(Clone, Debug, Default)]
pub struct ParsedLog {
    /// Events in log order.
    pub events: Vec<Event>,
    pub skipped: Vec<Skipped>,
}

/// Removes ANSI escape sequences (CSI `ESC [ ... final`, and lone `ESC x`), which tracing
/// writes around levels and targets when colours are on.
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        // A CSI sequence: parameters and intermediates, then one final byte in @..~; any
        // other escape is two characters, both dropped.
        if let Some('[') = chars.next() {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

/// The JSON text after the marker, if the line has one: the marker followed by `{`. Lines
/// that merely mention the word (no `{` after it) are not events.
fn json_after_marker(line: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(at) = line[from..].find(MARKER) {
        let rest = line[from + at + MARKER.len()..].trim_start();
        if rest.starts_with('{') {
            return Some(rest);
        }
        from += at + MARKER.len();
    }
    None
}

/// Parses one log line: `None` without an event, `Some(Err)` for a malformed one.
pub fn parse_line(line: &str, line_no: usize) -> Option<Result<Event, Skipped>> {
    if !line.contains(MARKER) {
        return None;
    }
    let clean = strip_ansi(line);
    let json = json_after_marker(&clean)?;
    // A stream deserializer reads one JSON value and leaves whatever follows it (tracing
    // fields, trailing spaces) alone.
    let mut values = serde_json::Deserializer::from_str(json).into_iter::<RawEvent>();
    let raw = match values.next() {
        Some(Ok(raw)) => raw,
        Some(Err(e)) => {
            return Some(Err(Skipped {
                line: line_no,
                reason: format!("TIMELINE JSON does not parse: {e}"),
            }))
        }
        None => {
            return Some(Err(Skipped {
                line: line_no,
                reason: "nothing after TIMELINE".into(),
            }))
        }
    };
    if !raw.t_ms.is_finite() {
        return Some(Err(Skipped {
            line: line_no,
            reason: format!("t_ms {} is not a finite number", raw.t_ms),
        }));
    }
    Some(Ok(Event {
        t_ms: raw.t_ms,
        kind: EventKind::from_name(&raw.event),
        job: raw.job,
        partition: raw.partition,
        worker: raw.worker,
        device: raw.device,
        duration_ms: raw.duration_ms,
        lock_wait_ms: raw.lock_wait_ms,
        phase: raw.phase,
        line: line_no,
    }))
}

/// Every event of a log; lines without the marker are ignored, malformed ones listed.
pub fn parse_log(text: &str) -> ParsedLog {
    let mut out = ParsedLog::default();
    for (i, line) in text.lines().enumerate() {
        match parse_line(line, i + 1) {
            None => {}
            Some(Ok(event)) => out.events.push(event),
            Some(Err(skipped)) => out.skipped.push(skipped),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_codes_and_prefixes_are_ignored() {
        let line = "\u{1b}[2m2026-11-29T15:49:55Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m \
                    \u{1b}[2mtimeline\u{1b}[0m\u{1b}[2m:\u{1b}[0m TIMELINE \
                    {\"t_ms\":1.5,\"event\":\"SYNTH_START\",\"job\":1,\"partition\":0,\"worker\":\"synth-0\"}";
        let e = parse_line(line, 7).unwrap().unwrap();
        assert_eq!(e.kind, EventKind::Stage(StageEvent::SynthStart));
        assert_eq!((e.t_ms, e.job, e.partition), (1.5, Some(1), Some(0)));
        assert_eq!(e.worker.as_deref(), Some("synth-0"));
        assert_eq!(e.line, 7);
    }

    #[test]
    fn unknown_events_and_fields_are_kept_or_ignored() {
        let e = parse_line(
            r#"TIMELINE {"t_ms":2,"event":"PINNED_ALLOC","job":3,"bytes":12,"nested":{"a":[1]}} extra=1"#,
            1,
        )
        .unwrap()
        .unwrap();
        assert_eq!(e.kind, EventKind::Other("PINNED_ALLOC".into()));
    }

    #[test]
    fn lines_without_an_event_are_not_events() {
        assert!(parse_line("INFO zkforge: starting", 1).is_none());
        assert!(parse_line("prover busy 95% (TIMELINE)", 1).is_none());
        assert!(parse_line("TIMELINE events follow", 1).is_none());
    }

    #[test]
    fn malformed_json_is_skipped_with_the_line_and_reason() {
        let s = parse_line(r#"x TIMELINE {"t_ms":1.0,"event":"#, 12)
            .unwrap()
            .unwrap_err();
        assert_eq!(s.line, 12);
        assert!(s.reason.contains("does not parse"), "{}", s.reason);
        let s = parse_line(r#"TIMELINE {"event":"JOB_DONE","job":1}"#, 3)
            .unwrap()
            .unwrap_err();
        assert!(s.reason.contains("t_ms"), "{}", s.reason);
    }
}
