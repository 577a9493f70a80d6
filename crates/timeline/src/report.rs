//! The numbers of an analysis as rows, for the terminal (`text`) and the HTML page.

use std::fmt::Write;

use crate::analysis::Stats;
use crate::svg::format_ms;
use crate::waterfall::LaneKind;

fn opt_ms(v: Option<f64>) -> String {
    v.map_or("-".into(), format_ms)
}

fn kind_name(k: LaneKind) -> &'static str {
    match k {
        LaneKind::Params => "params",
        LaneKind::Synthesis => "synthesis",
        LaneKind::Prover => "prover",
    }
}

/// One row per lane: name, kind, bars, busy, busy %, mean gap, lock wait.
pub fn lane_rows(s: &Stats) -> Vec<[String; 7]> {
    s.lanes
        .iter()
        .map(|l| {
            [
                l.name.clone(),
                kind_name(l.kind).into(),
                l.bars.to_string(),
                format_ms(l.busy_ms),
                format!("{:.1}%", l.busy_fraction * 100.0),
                opt_ms(l.mean_gap_ms),
                format_ms(l.lock_wait_ms),
            ]
        })
        .collect()
}

pub const LANE_HEADER: [&str; 7] = [
    "lane",
    "kind",
    "bars",
    "busy",
    "busy %",
    "mean gap",
    "lock wait",
];

/// Name/value pairs of the whole run.
pub fn summary_rows(s: &Stats) -> Vec<(String, String)> {
    let mut rows = vec![(
        "window".to_string(),
        format!(
            "{} ({:.3} → {:.3} ms)",
            format_ms(s.window_ms()),
            s.window_start_ms,
            s.window_end_ms
        ),
    )];
    for d in &s.devices {
        let phases = d
            .phase_busy_fraction
            .map_or(String::new(), |f| format!(", GPU phases {:.1}%", f * 100.0));
        rows.push((
            format!("device {} busy", d.device),
            format!(
                "{:.1}% ({}), mean gap {}{phases}",
                d.busy_fraction * 100.0,
                format_ms(d.busy_ms),
                opt_ms(d.mean_gap_ms)
            ),
        ));
    }
    rows.extend([
        ("mean prover gap".into(), opt_ms(s.mean_prover_gap_ms)),
        (
            "jobs".into(),
            format!(
                "{} submitted, {} done, {} failed, {} cancelled",
                s.jobs_submitted, s.jobs_done, s.jobs_failed, s.jobs_cancelled
            ),
        ),
        (
            "time to first proof".into(),
            opt_ms(s.time_to_first_proof_ms),
        ),
        (
            "steady state".into(),
            s.steady_state_ms_per_proof
                .map_or("-".into(), |ms| format!("{:.3} s/proof", ms / 1000.0)),
        ),
        (
            "partition cycle".into(),
            s.partition_cycle_ms.map_or("-".into(), |ms| {
                format!(
                    "{} ({:.3} s/proof at {} partitions a proof)",
                    format_ms(ms),
                    ms * s.partitions_per_proof as f64 / 1000.0,
                    s.partitions_per_proof
                )
            }),
        ),
        ("parameter load".into(), format_ms(s.param_load_ms)),
        (
            "bottleneck".into(),
            format!("{} ({})", s.bottleneck.label(), s.reason),
        ),
    ]);
    rows
}

/// Aligned plain-text tables.
pub fn text(s: &Stats) -> String {
    let rows = lane_rows(s);
    let mut widths = LANE_HEADER.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &[&str], out: &mut String| {
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            if i < 2 {
                let _ = write!(out, "{c:<w$}  ");
            } else {
                let _ = write!(out, "{c:>w$}  ");
            }
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
    };
    line(&LANE_HEADER, &mut out);
    for r in &rows {
        line(&r.iter().map(String::as_str).collect::<Vec<_>>(), &mut out);
    }
    out.push('\n');
    let key_w = summary_rows(s)
        .iter()
        .map(|(k, _)| k.len())
        .max()
        .unwrap_or(0);
    for (k, v) in summary_rows(s) {
        let _ = writeln!(out, "{k:<key_w$}  {v}");
    }
    out
}
