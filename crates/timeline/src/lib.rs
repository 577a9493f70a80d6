//! TIMELINE logs of the zkforge engine: the events as the engine writes them (`schema`), find
//! them in a log (`event`), lay them out as lanes and bars (`waterfall`), measure lanes and
//! name the bottleneck (`analysis`), and draw the waterfall as SVG (`svg`) or an HTML page with
//! the numbers (`html`, `report`).

pub mod analysis;
pub mod event;
pub mod html;
pub mod report;
pub mod schema;
pub mod svg;
pub mod waterfall;

pub use analysis::{analyze, Bottleneck, Stats};
pub use event::{parse_log, Event, EventKind, ParsedLog, Skipped};
pub use schema::{StageEvent, TimelineEvent};
pub use svg::SvgOptions;
pub use waterfall::{build, Waterfall};

/// The definitions behind the numbers, in one paragraph (the HTML page shows it).
pub const DEFINITIONS: &str = "Window: earliest synthesis or parameter-load start to the last \
PROVE_END. Busy: time covered by a lane's bars in the window, less device-lock wait logged \
inside prove bars (PROVE_END − PROVE_START lock_wait_ms), / window. Device busy: union of the device's prove bars / window; device gap: idle \
time between stretches of that union; GPU phases: union of the device's GPU_PHASE events / \
window. Gap: PROVE_START(n+1) − PROVE_END(n) in one lane. Time \
to first proof: first JOB_DONE − first JOB_SUBMIT. Steady state: (last JOB_DONE − first \
JOB_DONE) / (done − 1). Bottleneck, first rule that holds: parameter loads ≥ 50% of the window \
→ parameter load; mean device busy ≥ 90% → prove; synthesis running during ≥ 50% of device \
idle time → synthesis; else submission/client.";

/// Everything `zkforge timeline` needs from one log's text.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub parsed: ParsedLog,
    pub waterfall: Waterfall,
    pub stats: Stats,
}

/// Why a log cannot be analysed.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    #[error("no TIMELINE events found ({skipped} malformed TIMELINE lines skipped)")]
    NoEvents { skipped: usize },
}

/// Parses, lays out and measures a log; a log without a single event is an error.
pub fn analyze_log(text: &str) -> Result<Analysis, TimelineError> {
    let parsed = parse_log(text);
    if parsed.events.is_empty() {
        return Err(TimelineError::NoEvents {
            skipped: parsed.skipped.len(),
        });
    }
    let waterfall = build(&parsed.events);
    let stats = analyze(&waterfall);
    Ok(Analysis {
        parsed,
        waterfall,
        stats,
    })
}
