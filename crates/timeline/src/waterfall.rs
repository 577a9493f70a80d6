//! Events become a waterfall: one lane per worker (plus one for parameter loads), a bar per
//! stage of a partition (START→END), GPU phases inside prover bars, and job end marks.

use std::collections::HashMap;

use crate::event::{Event, EventKind};
use crate::schema::StageEvent;

/// What a lane's worker does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LaneKind {
    /// Parameter (SRS) loads; the engine does not say which worker loaded, so they share one lane.
    Params,
    Synthesis,
    Prover,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    /// The worker's name ("synth-0", "prover-0-1") or "params".
    pub name: String,
    pub kind: LaneKind,
    pub device: Option<usize>,
}

/// The stage a bar shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    ParamLoad,
    Synthesis,
    Prove,
}

impl Stage {
    pub fn label(self) -> &'static str {
        match self {
            Stage::ParamLoad => "parameter load",
            Stage::Synthesis => "synthesis",
            Stage::Prove => "prove",
        }
    }
}

/// One stage of one partition on one lane.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub lane: usize,
    pub stage: Stage,
    pub job: Option<u64>,
    pub partition: Option<usize>,
    pub start_ms: f64,
    pub end_ms: f64,
    /// Prove bars: device-lock wait just before `start_ms` (PROVE_START's `lock_wait_ms`:
    /// the engine records PROVE_START once it holds the lock).
    pub lock_wait_ms: f64,
    /// Prove bars: device-lock wait inside the bar, i.e. inside the backend call (PROVE_END's
    /// `lock_wait_ms`, the unit's total wait, minus PROVE_START's). Where in the bar is not logged.
    pub inner_lock_wait_ms: f64,
    /// Started but never ended in the log: drawn up to the last event.
    pub open: bool,
}

impl Bar {
    pub fn duration_ms(&self) -> f64 {
        self.end_ms - self.start_ms
    }

    /// All the unit's device-lock wait, before and inside the bar.
    pub fn total_lock_wait_ms(&self) -> f64 {
        self.lock_wait_ms + self.inner_lock_wait_ms
    }
}

/// A GPU phase (GPU_PHASE event) inside a prover lane.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    pub lane: usize,
    pub job: Option<u64>,
    pub partition: Option<usize>,
    pub name: String,
    pub start_ms: f64,
    pub end_ms: f64,
}

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobEnd {
    Done,
    Failed,
    Cancelled,
}

#[derive(Clone, Debug, PartialEq)]
pub struct JobMark {
    pub job: Option<u64>,
    pub t_ms: f64,
    pub end: JobEnd,
}

/// Lanes, bars and marks of a whole log, plus the job events the analysis needs.
#[derive(Clone, Debug, Default)]
pub struct Waterfall {
    pub lanes: Vec<Lane>,
    pub bars: Vec<Bar>,
    pub phases: Vec<Phase>,
    /// JOB_SUBMIT times, ascending.
    pub submits: Vec<f64>,
    /// JOB_DONE/FAILED/CANCELLED, ascending in time.
    pub job_ends: Vec<JobMark>,
    /// The last event's time.
    pub last_event_ms: f64,
    /// END events with no START and no duration: nothing to draw.
    pub unmatched_ends: usize,
}

/// Which START an END closes: same stage, lane, job and partition.
type OpenKey = (Stage, usize, Option<u64>, Option<usize>);

struct Builder {
    w: Waterfall,
    lane_index: HashMap<String, usize>,
    open: HashMap<OpenKey, Vec<(f64, f64)>>,
}

/// Builds the waterfall. Events are taken in time order (threads may log slightly out of
/// order); an END without its START starts at `t_ms − duration_ms`.
pub fn build(events: &[Event]) -> Waterfall {
    let mut sorted: Vec<&Event> = events.iter().collect();
    sorted.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
    let mut b = Builder {
        w: Waterfall::default(),
        lane_index: HashMap::new(),
        open: HashMap::new(),
    };
    for e in sorted {
        b.w.last_event_ms = b.w.last_event_ms.max(e.t_ms);
        b.add(e);
    }
    b.finish()
}

fn stage_of(kind: &EventKind) -> Option<(Stage, bool)> {
    match kind {
        EventKind::Stage(StageEvent::SrsLoadStart) => Some((Stage::ParamLoad, true)),
        EventKind::Stage(StageEvent::SrsLoadEnd) => Some((Stage::ParamLoad, false)),
        EventKind::Stage(StageEvent::SynthStart) => Some((Stage::Synthesis, true)),
        EventKind::Stage(StageEvent::SynthEnd) => Some((Stage::Synthesis, false)),
        EventKind::Stage(StageEvent::ProveStart) => Some((Stage::Prove, true)),
        EventKind::Stage(StageEvent::ProveEnd) => Some((Stage::Prove, false)),
        _ => None,
    }
}

impl Builder {
    fn add(&mut self, e: &Event) {
        if let Some((stage, is_start)) = stage_of(&e.kind) {
            let lane = self.lane_for(stage, e);
            let key = (stage, lane, e.job, e.partition);
            let lock_wait = e.lock_wait_ms.map(|w| w.max(0.0));
            if is_start {
                let before = lock_wait.unwrap_or(0.0);
                self.open.entry(key).or_default().push((e.t_ms, before));
            } else {
                self.close(key, e, lock_wait);
            }
            return;
        }
        match e.kind {
            EventKind::Stage(StageEvent::JobSubmit) => self.w.submits.push(e.t_ms),
            EventKind::Stage(StageEvent::JobDone) => self.mark(e, JobEnd::Done),
            EventKind::Stage(StageEvent::JobFailed) => self.mark(e, JobEnd::Failed),
            EventKind::Stage(StageEvent::JobCancelled) => self.mark(e, JobEnd::Cancelled),
            EventKind::Stage(StageEvent::GpuPhase) => self.phase(e),
            _ => {}
        }
    }

    fn mark(&mut self, e: &Event, end: JobEnd) {
        self.w.job_ends.push(JobMark {
            job: e.job,
            t_ms: e.t_ms,
            end,
        });
    }

    fn phase(&mut self, e: &Event) {
        let lane = self.lane_named(e.worker.as_deref().unwrap_or("prover"), LaneKind::Prover, e);
        self.w.phases.push(Phase {
            lane,
            job: e.job,
            partition: e.partition,
            name: e.phase.clone().unwrap_or_else(|| "phase".into()),
            start_ms: e.t_ms,
            end_ms: e.t_ms + e.duration_ms.unwrap_or(0.0).max(0.0),
        });
    }

    /// `total_wait`: the END's `lock_wait_ms`, the unit's whole wait when present.
    fn close(&mut self, key: OpenKey, e: &Event, total_wait: Option<f64>) {
        let opened = self.open.get_mut(&key).and_then(|starts| starts.pop());
        let (start, before) = match (opened, e.duration_ms) {
            (Some(opened), _) => opened,
            (None, Some(d)) => (e.t_ms - d, 0.0),
            (None, None) => {
                self.w.unmatched_ends += 1;
                return;
            }
        };
        let inner = total_wait.map_or(0.0, |total| (total - before).max(0.0));
        self.w.bars.push(Bar {
            lane: key.1,
            stage: key.0,
            job: e.job,
            partition: e.partition,
            start_ms: start,
            end_ms: e.t_ms,
            lock_wait_ms: before,
            inner_lock_wait_ms: inner,
            open: false,
        });
    }

    fn lane_for(&mut self, stage: Stage, e: &Event) -> usize {
        match stage {
            Stage::ParamLoad => self.lane_named("params", LaneKind::Params, e),
            Stage::Synthesis => {
                let name = e.worker.as_deref().unwrap_or("synth");
                self.lane_named(name, LaneKind::Synthesis, e)
            }
            Stage::Prove => {
                let name = e.worker.as_deref().unwrap_or("prover");
                self.lane_named(name, LaneKind::Prover, e)
            }
        }
    }

    fn lane_named(&mut self, name: &str, kind: LaneKind, e: &Event) -> usize {
        if let Some(&i) = self.lane_index.get(name) {
            if self.w.lanes[i].device.is_none() {
                self.w.lanes[i].device = e.device;
            }
            return i;
        }
        self.w.lanes.push(Lane {
            name: name.to_string(),
            kind,
            device: e.device,
        });
        self.lane_index
            .insert(name.to_string(), self.w.lanes.len() - 1);
        self.w.lanes.len() - 1
    }

    /// Starts left open become bars up to the last event; lanes are put in display order.
    fn finish(mut self) -> Waterfall {
        let last = self.w.last_event_ms;
        for ((stage, lane, job, partition), starts) in std::mem::take(&mut self.open) {
            for (start, lock_wait) in starts {
                self.w.bars.push(Bar {
                    lane,
                    stage,
                    job,
                    partition,
                    start_ms: start,
                    end_ms: last,
                    lock_wait_ms: lock_wait,
                    inner_lock_wait_ms: 0.0,
                    open: true,
                });
            }
        }
        sort_lanes(&mut self.w);
        self.w
            .bars
            .sort_by(|a, b| a.lane.cmp(&b.lane).then(a.start_ms.total_cmp(&b.start_ms)));
        self.w.job_ends.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
        self.w.submits.sort_by(f64::total_cmp);
        self.w
    }
}

/// Params first, then synthesis and prover lanes, each in natural order ("synth-2" before
/// "synth-10"); bar and phase lane indices follow.
fn sort_lanes(w: &mut Waterfall) {
    let mut order: Vec<usize> = (0..w.lanes.len()).collect();
    order.sort_by_key(|&i| (w.lanes[i].kind, natural_key(&w.lanes[i].name)));
    let mut new_index = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    w.lanes = order.iter().map(|&i| w.lanes[i].clone()).collect();
    for b in &mut w.bars {
        b.lane = new_index[b.lane];
    }
    for p in &mut w.phases {
        p.lane = new_index[p.lane];
    }
}

/// A sort key that compares digit runs as numbers.
fn natural_key(name: &str) -> Vec<(String, u64)> {
    let mut key = Vec::new();
    let mut text = String::new();
    let mut digits = String::new();
    for c in name.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                key.push((
                    std::mem::take(&mut text),
                    digits.parse().unwrap_or(u64::MAX),
                ));
                digits.clear();
            }
            text.push(c);
        }
    }
    key.push((text, digits.parse().unwrap_or(0)));
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::parse_log;

    fn waterfall(log: &str) -> Waterfall {
        let parsed = parse_log(log);
        assert!(parsed.skipped.is_empty(), "{:?}", parsed.skipped);
        build(&parsed.events)
    }

    #[test]
    fn lanes_are_in_natural_order() {
        let w = waterfall(
            r#"TIMELINE {"t_ms":1,"event":"SYNTH_END","job":1,"worker":"synth-10","duration_ms":1}
TIMELINE {"t_ms":2,"event":"PROVE_END","job":1,"worker":"prover-0-0","device":0,"duration_ms":1}
TIMELINE {"t_ms":3,"event":"SYNTH_END","job":1,"worker":"synth-2","duration_ms":1}
TIMELINE {"t_ms":4,"event":"SRS_LOAD_END","job":1,"duration_ms":1}"#,
        );
        let names: Vec<&str> = w.lanes.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["params", "synth-2", "synth-10", "prover-0-0"]);
        assert_eq!(w.bars.len(), 4);
        assert!(w.bars.iter().all(|b| b.duration_ms() == 1.0));
    }

    #[test]
    fn starts_pair_with_ends_and_open_bars_reach_the_last_event() {
        let w = waterfall(
            r#"TIMELINE {"t_ms":1,"event":"PROVE_START","job":1,"partition":0,"worker":"prover-0-0","lock_wait_ms":0.5}
TIMELINE {"t_ms":5,"event":"PROVE_END","job":1,"partition":0,"worker":"prover-0-0","duration_ms":3.9,"lock_wait_ms":1.75}
TIMELINE {"t_ms":6,"event":"PROVE_START","job":2,"partition":0,"worker":"prover-0-0"}
TIMELINE {"t_ms":9,"event":"JOB_DONE","job":1}"#,
        );
        assert_eq!(w.bars.len(), 2);
        let (a, b) = (&w.bars[0], &w.bars[1]);
        assert_eq!((a.start_ms, a.end_ms, a.open), (1.0, 5.0, false));
        // 0.5 ms before PROVE_START; of the unit's 1.75 ms, 1.25 ms inside the call.
        assert_eq!((a.lock_wait_ms, a.inner_lock_wait_ms), (0.5, 1.25));
        assert_eq!((b.start_ms, b.end_ms, b.open), (6.0, 9.0, true));
        assert_eq!(w.job_ends.len(), 1);
    }

    #[test]
    fn gpu_phases_land_in_their_prover_lane() {
        let w = waterfall(
            r#"TIMELINE {"t_ms":1,"event":"PROVE_START","job":1,"partition":0,"worker":"prover-0-1","device":0}
TIMELINE {"t_ms":1.5,"event":"GPU_PHASE","job":1,"partition":0,"worker":"prover-0-1","device":0,"phase":"ntt","duration_ms":2}
TIMELINE {"t_ms":5,"event":"PROVE_END","job":1,"partition":0,"worker":"prover-0-1","device":0,"duration_ms":4}"#,
        );
        assert_eq!(w.lanes.len(), 1);
        assert_eq!(w.phases.len(), 1);
        assert_eq!((w.phases[0].start_ms, w.phases[0].end_ms), (1.5, 3.5));
        assert_eq!(w.phases[0].name, "ntt");
    }
}
