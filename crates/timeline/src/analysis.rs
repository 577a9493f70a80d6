//! Numbers from a waterfall and the stage that limits throughput.
//!
//! Definitions (all times in ms, from TIMELINE `t_ms`):
//! - **window**: from the earliest start of a synthesis or parameter-load bar (SYNTH_START,
//!   or SRS_LOAD_END − duration) to the last PROVE_END. Without synthesis or load bars it
//!   starts at the first PROVE_START; without prove bars it ends at the last bar's end.
//! - **busy fraction** of a lane: the time its bars cover inside the window, less the
//!   device-lock wait logged inside prove bars, / window length. A prove bar is
//!   PROVE_START→PROVE_END; the wait before it is PROVE_START's `lock_wait_ms` (not in the bar),
//!   the wait inside it PROVE_END's `lock_wait_ms` (the unit's total) minus PROVE_START's.
//! - **device busy fraction**: the union of the prove bars of all prover lanes on that device
//!   (`device` field) / window; a **device gap** is the idle time between two stretches of
//!   that union (with several prover workers per device, lane gaps include the turns of the
//!   other workers; device gaps do not). With GPU_PHASE events, **phase busy** is the union
//!   of the device's phases / window.
//! - **gap**: PROVE_START(n+1) − PROVE_END(n) for consecutive bars of one lane; a lane's mean
//!   gap averages its gaps, the overall mean gap pools the gaps of all prover lanes.
//! - **time to first proof**: first JOB_DONE − first JOB_SUBMIT.
//! - **steady-state s/proof**: (last JOB_DONE − first JOB_DONE) / (done − 1), for ≥ 2 done.
//!   Jobs proved side by side end in bunches, so over a short batch this reads the bunches'
//!   spacing, not the rate:
//! - **partition cycle**: the median time between consecutive PROVE_ENDs (all devices), from
//!   the (p + 1)-th on, where p is the most partitions a job had: the first proof's partitions
//!   fill the pipeline. × p it is the s/proof the devices sustain (the figure docs/perf.md
//!   quotes for a 32 GiB PoRep: from the 11th partition end on, × 10). Needs p + 2 ends.
//!
//! Bottleneck, first rule that holds:
//! 1. **parameter load**: parameter-load bars cover ≥ 50% of the window;
//! 2. **prove**: the mean device busy fraction is ≥ 90%;
//! 3. **synthesis**: while devices are idle, synthesis or a parameter load runs for ≥ 50%
//!    of that idle time (the provers wait for witnesses);
//! 4. **submission/client**: otherwise (devices and synthesis idle together: the engine
//!    waits for work, so raise the client's concurrency or look at the submit path).

use crate::waterfall::{Bar, JobEnd, LaneKind, Stage, Waterfall};

/// Device busy fraction at which proving is the bottleneck.
pub const PROVE_BUSY: f64 = 0.9;
/// Share of the window spent loading parameters at which loading is the bottleneck.
pub const PARAM_LOAD_SHARE: f64 = 0.5;
/// Share of device idle time covered by synthesis at which synthesis is the bottleneck.
pub const SYNTH_COVER: f64 = 0.5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bottleneck {
    ParameterLoad,
    Prove,
    Synthesis,
    Submission,
    /// No prove or synthesis bars at all.
    NoWork,
}

impl Bottleneck {
    pub fn label(self) -> &'static str {
        match self {
            Bottleneck::ParameterLoad => "parameter load",
            Bottleneck::Prove => "prove",
            Bottleneck::Synthesis => "synthesis",
            Bottleneck::Submission => "submission/client",
            Bottleneck::NoWork => "none (no synthesis or prove bars)",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LaneStats {
    pub name: String,
    pub kind: LaneKind,
    pub bars: usize,
    pub busy_ms: f64,
    pub busy_fraction: f64,
    pub gaps: usize,
    pub mean_gap_ms: Option<f64>,
    pub lock_wait_ms: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DeviceStats {
    pub device: usize,
    pub busy_ms: f64,
    pub busy_fraction: f64,
    pub gaps: usize,
    pub mean_gap_ms: Option<f64>,
    /// Union of the device's GPU_PHASE intervals / window; None without phases.
    pub phase_busy_fraction: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    pub window_start_ms: f64,
    pub window_end_ms: f64,
    pub lanes: Vec<LaneStats>,
    pub devices: Vec<DeviceStats>,
    /// Pooled over all prover lanes.
    pub mean_prover_gap_ms: Option<f64>,
    pub time_to_first_proof_ms: Option<f64>,
    pub steady_state_ms_per_proof: Option<f64>,
    /// The partition cycle, and the most partitions a job had (p).
    pub partition_cycle_ms: Option<f64>,
    pub partitions_per_proof: usize,
    pub jobs_submitted: usize,
    pub jobs_done: usize,
    pub jobs_failed: usize,
    pub jobs_cancelled: usize,
    pub param_load_ms: f64,
    /// Device idle time (summed over devices) during which synthesis or a load ran / all of it.
    pub synth_cover_of_device_idle: Option<f64>,
    pub bottleneck: Bottleneck,
    /// The numbers behind the verdict, in words.
    pub reason: String,
}

impl Stats {
    pub fn window_ms(&self) -> f64 {
        self.window_end_ms - self.window_start_ms
    }
}

/// Merged, sorted intervals.
fn union(mut v: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    v.retain(|(s, e)| e > s);
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn measure(v: &[(f64, f64)]) -> f64 {
    v.iter().map(|(s, e)| e - s).sum()
}

/// Length of the intersection of two merged interval lists.
fn overlap(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
    let (mut i, mut j, mut total) = (0, 0, 0.0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            total += hi - lo;
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// `[start, end]` minus merged intervals.
fn complement(v: &[(f64, f64)], start: f64, end: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut at = start;
    for &(s, e) in v {
        if s > at {
            out.push((at, s.min(end)));
        }
        at = at.max(e);
    }
    if end > at {
        out.push((at, end));
    }
    union(out)
}

fn clip(b: &Bar, start: f64, end: f64) -> (f64, f64) {
    (b.start_ms.max(start), b.end_ms.min(end))
}

fn window(w: &Waterfall) -> (f64, f64) {
    let starts = |stages: &[Stage]| {
        w.bars
            .iter()
            .filter(|b| stages.contains(&b.stage))
            .map(|b| b.start_ms)
            .reduce(f64::min)
    };
    let start = starts(&[Stage::Synthesis, Stage::ParamLoad])
        .or_else(|| starts(&[Stage::Prove]))
        .unwrap_or(0.0);
    let end = w
        .bars
        .iter()
        .filter(|b| b.stage == Stage::Prove)
        .map(|b| b.end_ms)
        .reduce(f64::max)
        .or_else(|| w.bars.iter().map(|b| b.end_ms).reduce(f64::max))
        .unwrap_or(start);
    (start, end.max(start))
}

fn lane_stats(w: &Waterfall, start: f64, end: f64) -> Vec<LaneStats> {
    let len = end - start;
    w.lanes
        .iter()
        .enumerate()
        .map(|(i, lane)| {
            let bars: Vec<&Bar> = w.bars.iter().filter(|b| b.lane == i).collect();
            let covered = measure(&union(bars.iter().map(|b| clip(b, start, end)).collect()));
            let inner_wait: f64 = bars.iter().map(|b| b.inner_lock_wait_ms).sum();
            let busy_ms = (covered - inner_wait).max(0.0);
            let gaps: Vec<f64> = bars
                .windows(2)
                .map(|p| p[1].start_ms - p[0].end_ms)
                .collect();
            LaneStats {
                name: lane.name.clone(),
                kind: lane.kind,
                bars: bars.len(),
                busy_ms,
                busy_fraction: if len > 0.0 { busy_ms / len } else { 0.0 },
                gaps: gaps.len(),
                mean_gap_ms: mean(&gaps),
                lock_wait_ms: bars.iter().map(|b| b.total_lock_wait_ms()).sum(),
            }
        })
        .collect()
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Prove intervals per device (lanes without a device count as device 0).
fn device_intervals(w: &Waterfall, start: f64, end: f64) -> Vec<(usize, Vec<(f64, f64)>)> {
    let mut devices: Vec<usize> = w
        .lanes
        .iter()
        .filter(|l| l.kind == LaneKind::Prover)
        .map(|l| l.device.unwrap_or(0))
        .collect();
    devices.sort_unstable();
    devices.dedup();
    devices
        .into_iter()
        .map(|d| {
            let spans = w
                .bars
                .iter()
                .filter(|b| b.stage == Stage::Prove && w.lanes[b.lane].device.unwrap_or(0) == d)
                .map(|b| clip(b, start, end))
                .collect();
            (d, union(spans))
        })
        .collect()
}

/// GPU_PHASE intervals of one device's lanes, merged.
fn phase_intervals(w: &Waterfall, device: usize, start: f64, end: f64) -> Vec<(f64, f64)> {
    union(
        w.phases
            .iter()
            .filter(|p| w.lanes[p.lane].device.unwrap_or(0) == device)
            .map(|p| (p.start_ms.max(start), p.end_ms.min(end)))
            .collect(),
    )
}

/// Computes every number of the module doc.
pub fn analyze(w: &Waterfall) -> Stats {
    let (start, end) = window(w);
    let len = end - start;
    let lanes = lane_stats(w, start, end);
    let per_device = device_intervals(w, start, end);
    let devices: Vec<DeviceStats> = per_device
        .iter()
        .map(|(d, spans)| {
            let gaps: Vec<f64> = spans.windows(2).map(|p| p[1].0 - p[0].1).collect();
            let phases = phase_intervals(w, *d, start, end);
            DeviceStats {
                device: *d,
                busy_ms: measure(spans),
                busy_fraction: if len > 0.0 { measure(spans) / len } else { 0.0 },
                gaps: gaps.len(),
                mean_gap_ms: mean(&gaps),
                phase_busy_fraction: (!phases.is_empty() && len > 0.0)
                    .then(|| measure(&phases) / len),
            }
        })
        .collect();

    let feeding = union(
        w.bars
            .iter()
            .filter(|b| b.stage != Stage::Prove)
            .map(|b| clip(b, start, end))
            .collect(),
    );
    let (mut idle, mut covered) = (0.0, 0.0);
    for (_, spans) in &per_device {
        let gaps = complement(spans, start, end);
        idle += measure(&gaps);
        covered += overlap(&gaps, &feeding);
    }
    let synth_cover = (idle > 0.0).then(|| covered / idle);

    let prover_gaps: (f64, usize) = w
        .lanes
        .iter()
        .enumerate()
        .filter(|(_, l)| l.kind == LaneKind::Prover)
        .map(|(i, _)| {
            let bars: Vec<&Bar> = w.bars.iter().filter(|b| b.lane == i).collect();
            bars.windows(2)
                .map(|p| p[1].start_ms - p[0].end_ms)
                .fold((0.0, 0), |(s, n), g| (s + g, n + 1))
        })
        .fold((0.0, 0), |(s, n), (gs, gn)| (s + gs, n + gn));

    let done: Vec<f64> = w
        .job_ends
        .iter()
        .filter(|m| m.end == JobEnd::Done)
        .map(|m| m.t_ms)
        .collect();
    let count = |e: JobEnd| w.job_ends.iter().filter(|m| m.end == e).count();
    let param_load_ms: f64 = w
        .bars
        .iter()
        .filter(|b| b.stage == Stage::ParamLoad)
        .map(|b| {
            let (s, e) = clip(b, start, end);
            (e - s).max(0.0)
        })
        .sum();

    let (partition_cycle_ms, partitions_per_proof) = partition_cycle(w);
    let mut stats = Stats {
        window_start_ms: start,
        window_end_ms: end,
        lanes,
        devices,
        mean_prover_gap_ms: (prover_gaps.1 > 0).then(|| prover_gaps.0 / prover_gaps.1 as f64),
        time_to_first_proof_ms: match (done.first(), w.submits.first()) {
            (Some(d), Some(s)) => Some(d - s),
            _ => None,
        },
        steady_state_ms_per_proof: (done.len() >= 2)
            .then(|| (done[done.len() - 1] - done[0]) / (done.len() - 1) as f64),
        partition_cycle_ms,
        partitions_per_proof,
        jobs_submitted: w.submits.len(),
        jobs_done: done.len(),
        jobs_failed: count(JobEnd::Failed),
        jobs_cancelled: count(JobEnd::Cancelled),
        param_load_ms,
        synth_cover_of_device_idle: synth_cover,
        bottleneck: Bottleneck::NoWork,
        reason: String::new(),
    };
    let has_work = w
        .bars
        .iter()
        .any(|b| matches!(b.stage, Stage::Synthesis | Stage::Prove));
    (stats.bottleneck, stats.reason) = verdict(&stats, has_work);
    stats
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The rules of the module doc, in order.
fn verdict(s: &Stats, has_work: bool) -> (Bottleneck, String) {
    let len = s.window_ms();
    if !has_work || len <= 0.0 {
        return (Bottleneck::NoWork, "the log has no stage bars".into());
    }
    let load_share = s.param_load_ms / len;
    if load_share >= PARAM_LOAD_SHARE {
        return (
            Bottleneck::ParameterLoad,
            format!("parameter loads cover {} of the window", pct(load_share)),
        );
    }
    let device_busy = mean(
        &s.devices
            .iter()
            .map(|d| d.busy_fraction)
            .collect::<Vec<_>>(),
    )
    .unwrap_or(0.0);
    if device_busy >= PROVE_BUSY {
        return (
            Bottleneck::Prove,
            format!("devices are {} busy on average", pct(device_busy)),
        );
    }
    let cover = s.synth_cover_of_device_idle.unwrap_or(0.0);
    let detail = format!(
        "devices {} busy; synthesis runs during {} of their idle time",
        pct(device_busy),
        pct(cover)
    );
    if cover >= SYNTH_COVER {
        (Bottleneck::Synthesis, detail)
    } else {
        (Bottleneck::Submission, detail)
    }
}

/// The median time between partition ends once the first proof's partitions are past, and the
/// most partitions a job had.
fn partition_cycle(w: &Waterfall) -> (Option<f64>, usize) {
    let proved = || w.bars.iter().filter(|b| b.stage == Stage::Prove && !b.open);
    let mut per_job = std::collections::HashMap::<Option<u64>, usize>::new();
    for b in proved() {
        let most = per_job.entry(b.job).or_default();
        *most = (*most).max(b.partition.map_or(1, |k| k + 1));
    }
    let p = per_job.values().copied().max().unwrap_or(0);
    let mut ends: Vec<f64> = proved().map(|b| b.end_ms).collect();
    ends.sort_by(f64::total_cmp);
    if p == 0 || ends.len() < p + 2 {
        return (None, p);
    }
    let mut gaps: Vec<f64> = ends[p..].windows(2).map(|e| e[1] - e[0]).collect();
    gaps.sort_by(f64::total_cmp);
    let n = gaps.len();
    let median = if n % 2 == 1 {
        gaps[n / 2]
    } else {
        (gaps[n / 2 - 1] + gaps[n / 2]) / 2.0
    };
    (Some(median), p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_helpers() {
        let u = union(vec![(3.0, 4.0), (0.0, 1.0), (0.5, 2.0)]);
        assert_eq!(u, [(0.0, 2.0), (3.0, 4.0)]);
        assert_eq!(measure(&u), 3.0);
        assert_eq!(
            complement(&u, -1.0, 5.0),
            [(-1.0, 0.0), (2.0, 3.0), (4.0, 5.0)]
        );
        assert_eq!(overlap(&u, &[(1.0, 3.5)]), 1.5);
    }
}
