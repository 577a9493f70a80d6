//! What the bench client prints: a line per proof, a batch summary, a single proof's
//! details, the sweep table, and the JSON file.

use std::fmt::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use super::batch::{BatchReport, ProofRecord, Spread};

fn s(ms: u64) -> String {
    format!("{:.2}", ms as f64 / 1e3)
}

/// `[i/N] STATUS total T s (queue, synth, gpu)`, or the error of a failed proof; with
/// `show_daemon` (a fleet), which daemon it went to.
pub fn proof_line(done: usize, count: usize, r: &ProofRecord, show_daemon: bool) -> String {
    let head = format!("[{done}/{count}] {:<9}", r.status);
    let head = if show_daemon {
        format!("{head} {}", r.daemon)
    } else {
        head
    };
    if !r.completed() {
        return format!(
            "{head} after {:.2} s (request {}, job {}): {}",
            r.client_ms / 1e3,
            r.index,
            if r.job_id.is_empty() { "-" } else { &r.job_id },
            r.error
        );
    }
    let load = if r.srs_load_ms > 0 {
        format!(", load {}", s(r.srs_load_ms))
    } else {
        String::new()
    };
    format!(
        "{head} total {} s (queue {}{load}, synth {}, gpu {}) job {}",
        s(r.total_ms),
        s(r.queue_ms),
        s(r.synthesis_ms),
        s(r.gpu_ms),
        r.job_id
    )
}

fn spread(v: Option<Spread>) -> String {
    v.map_or("-".into(), |v| {
        format!("min {:.2}  avg {:.2}  max {:.2}", v.min, v.avg, v.max)
    })
}

/// The summary block after a batch.
pub fn summary(r: &BatchReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "wall time    {:.2} s", r.wall_s);
    let _ = writeln!(
        out,
        "completed    {}/{} (failed {})",
        r.completed, r.count, r.failed
    );
    let _ = writeln!(out, "total (s)    {}", spread(r.total_s));
    let _ = writeln!(out, "gpu (s)      {}", spread(r.gpu_s));
    let _ = writeln!(
        out,
        "throughput   {:.2} proofs/min, {} s/proof",
        r.proofs_per_min,
        r.s_per_proof.map_or("-".into(), |v| format!("{v:.2}"))
    );
    if let Some(ok) = r.verified_ok {
        let unchecked = r.unchecked().count();
        let _ = writeln!(
            out,
            "verified     {ok}/{} accepted by filecoin-proofs{}",
            r.completed,
            match unchecked {
                0 => String::new(),
                n => format!(", {n} not checked (verifier error)"),
            }
        );
    }
    out
}

/// One proof in detail (`bench single`).
pub fn single(r: &ProofRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "status       {}", r.status);
    if !r.error.is_empty() {
        let _ = writeln!(out, "error        {}", r.error);
    }
    let _ = writeln!(out, "job          {}", r.job_id);
    for (name, ms) in [
        ("queue", r.queue_ms),
        ("srs load", r.srs_load_ms),
        ("synthesis", r.synthesis_ms),
        ("gpu", r.gpu_ms),
    ] {
        let _ = writeln!(out, "{name:<12} {} s", s(ms));
    }
    let _ = writeln!(
        out,
        "total        {} s (daemon), {:.2} s (client, submit to result)",
        s(r.total_ms),
        r.client_ms / 1e3
    );
    if r.completed() {
        let _ = writeln!(out, "proof        {} bytes", r.proof_bytes);
    }
    if let Some(path) = &r.saved_to {
        let _ = writeln!(out, "saved        {}", path.display());
    }
    if let Some(ok) = r.verified {
        let word = if ok {
            "ok (filecoin-proofs)"
        } else {
            "REJECTED"
        };
        let _ = writeln!(out, "verified     {word}");
    }
    out
}

/// One row of the sweep table.
#[derive(Clone, Debug, Serialize)]
pub struct SweepRow {
    /// The daemon config file, or the address when no daemon was started.
    pub config: String,
    pub count: usize,
    pub concurrency: usize,
    pub report: BatchReport,
}

/// config × point → wall, completed, throughput, s/proof, avg GPU time.
pub fn sweep_table(rows: &[SweepRow]) -> String {
    let config_w = first_column_width(rows.iter().map(|r| r.config.as_str()));
    let mut out = format!(
        "{:<config_w$}  {:>7}  {:>9}  {:>9}  {:>10}  {:>8}  {:>14}\n",
        "config", "point", "wall (s)", "done", "proofs/min", "s/proof", "avg gpu (s)"
    );
    for r in rows {
        let b = &r.report;
        let _ = writeln!(
            out,
            "{:<config_w$}  {:>7}  {:>9.2}  {:>9}  {:>10.2}  {:>8}  {:>14}",
            r.config,
            format!("{}x{}", r.count, r.concurrency),
            b.wall_s,
            format!("{}/{}", b.completed, b.count),
            b.proofs_per_min,
            b.s_per_proof.map_or("-".into(), |v| format!("{v:.2}")),
            b.gpu_s.map_or("-".into(), |p| format!("{:.2}", p.avg)),
        );
    }
    out
}

/// The width of a table's first column: its longest name, and at least its 6-character
/// header ("config", "daemon").
pub(super) fn first_column_width<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    names
        .map(|n| n.chars().count())
        .chain([6])
        .max()
        .unwrap_or(6)
}

/// Writes any report as pretty JSON.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("serializing the report")?;
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}
