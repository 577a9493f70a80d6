//! `zkforge params verify`: every `.params`/`.vk` file of a directory (or one proof's set) held
//! to the published table of the Filecoin parameter release (`zkforge_filecoin::param_digest`:
//! the digest, the table, test-key records).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use zkforge_filecoin::param_digest::{self, FileCheck, Manifest, Verdict};
use zkforge_filecoin::shape::{format_sector_size, parse_sector_size};
use zkforge_filecoin::{params, registry, ProofKind};

use super::proof_arg::ProofArg;

#[derive(Args)]
pub struct VerifyArgs {
    /// Parameter directory [default: $FIL_PROOFS_PARAMETER_CACHE or /var/tmp/filecoin-proof-parameters].
    #[arg(long)]
    params: Option<PathBuf>,
    /// Check only this proof's set (.params and .vk), with --sector-size.
    #[arg(long, value_enum, requires = "sector_size")]
    proof: Option<ProofArg>,
    #[arg(long, requires = "proof")]
    sector_size: Option<String>,
    /// Also write the report as JSON to FILE ("-" for standard output).
    #[arg(long)]
    json: Option<PathBuf>,
}

/// What became of one file.
enum Outcome {
    Checked(FileCheck),
    Unreadable(String),
    /// Absent; `fails` when the command was asked for it by name.
    Missing {
        why: String,
        fails: bool,
    },
}

struct Row {
    name: String,
    path: PathBuf,
    outcome: Outcome,
}

impl Row {
    fn status(&self) -> &'static str {
        match &self.outcome {
            Outcome::Checked(c) => match c.verdict {
                Verdict::Ok => "OK",
                Verdict::TestKey => "TEST KEY",
                Verdict::NotInTable => "NOT IN THE TABLE",
                Verdict::Mismatch { .. } => "MISMATCH",
            },
            Outcome::Unreadable(_) => "UNREADABLE",
            Outcome::Missing { .. } => "MISSING",
        }
    }

    fn fails(&self) -> bool {
        match &self.outcome {
            Outcome::Checked(c) => c.failed(),
            Outcome::Unreadable(_) => true,
            Outcome::Missing { fails, .. } => *fails,
        }
    }

    /// The line under the status: what the status means for this file.
    fn detail(&self, table: &Manifest, circuits: &HashMap<String, String>) -> String {
        match &self.outcome {
            Outcome::Checked(c) => {
                let what = circuit_label(c, circuits);
                let size = format!("{:.2} GB", c.bytes as f64 / 1e9);
                match &c.verdict {
                    Verdict::Ok => format!("{what}{size}, digest {} as published", c.digest),
                    Verdict::TestKey => format!(
                        "{what}{size}: not the published file but a test key from `zkforge params \
                         generate`, equal to its record ({})",
                        c.digest
                    ),
                    Verdict::NotInTable => format!(
                        "{size}, digest {}: a name {} does not list (a test key or another \
                         release's file)",
                        c.digest,
                        table.source()
                    ),
                    Verdict::Mismatch { expected, against } => format!(
                        "{what}{size}: expected {expected} ({}), got {}{}",
                        against.describe(),
                        c.digest,
                        c.damage
                            .as_ref()
                            .map(|d| format!("; {d}"))
                            .unwrap_or_default()
                    ),
                }
            }
            Outcome::Unreadable(e) => e.clone(),
            Outcome::Missing { why, .. } => why.clone(),
        }
    }
}

fn circuit_label(c: &FileCheck, circuits: &HashMap<String, String>) -> String {
    let stem = c
        .name
        .trim_end_matches(".params")
        .trim_end_matches(".vk")
        .to_string();
    match (circuits.get(&stem), &c.published) {
        (Some(id), _) => format!("{id}, "),
        (None, Some(p)) => format!("{} sector, ", format_sector_size(p.sector_size)),
        (None, None) => String::new(),
    }
}

/// File stem → circuit id ("window-post-32GiB") for every current proof at the table's sector
/// sizes: names the set each line is about (PoSt's two kinds share a prefix).
fn known_circuits() -> HashMap<String, String> {
    let sizes = [2048u64, 8 << 20, 512 << 20, 32 << 30, 64 << 30];
    let kinds = [
        ProofKind::PoRep,
        ProofKind::WinningPost,
        ProofKind::WindowPost,
        ProofKind::SnapDeals,
    ];
    let mut out = HashMap::new();
    for kind in kinds {
        for size in sizes {
            if let Ok(id) = registry::params_id(kind, size) {
                out.insert(id.stem.clone(), id.circuit_id());
            }
        }
    }
    out
}

/// The files to check: one set's two, or every `.params`/`.vk` in `dir` (a `.params` without
/// its `.vk` reported as missing; a `.vk` alone is a verifier's directory and fine).
fn targets(args: &VerifyArgs, dir: &Path) -> Result<Vec<Row>> {
    let row = |path: PathBuf, outcome| Row {
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path,
        outcome,
    };
    let pending = || Outcome::Unreadable(String::new());
    if let (Some(proof), Some(size)) = (args.proof, &args.sector_size) {
        let id = registry::params_id(proof.kind(), parse_sector_size(size)?)?;
        return Ok([id.params_path(dir), id.vk_path(dir)]
            .into_iter()
            .map(|p| {
                if p.exists() {
                    row(p, pending())
                } else {
                    let why = format!(
                        "{} of {} is not in {}",
                        p.display(),
                        id.circuit_id(),
                        dir.display()
                    );
                    row(p, Outcome::Missing { why, fails: true })
                }
            })
            .collect());
    }
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let name = entry
            .with_context(|| format!("listing {}", dir.display()))?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.ends_with(".params") || name.ends_with(".vk") {
            names.push(name);
        }
    }
    names.sort();
    let mut rows = Vec::new();
    for name in &names {
        rows.push(row(dir.join(name), pending()));
        if let Some(stem) = name.strip_suffix(".params") {
            let vk = format!("{stem}.vk");
            if !names.contains(&vk) {
                let why = format!("{name} is here, its verifying key {vk} is not");
                rows.push(row(dir.join(vk), Outcome::Missing { why, fails: false }));
            }
        }
    }
    Ok(rows)
}

pub fn run(args: VerifyArgs) -> Result<()> {
    let dir = params::parameter_dir(args.params.as_deref());
    let table = Manifest::published();
    let mut rows = targets(&args, &dir)?;
    let sizes: Vec<Option<u64>> = rows
        .iter()
        .map(|r| match r.outcome {
            Outcome::Missing { .. } => None,
            _ => std::fs::metadata(&r.path).ok().map(|m| m.len()),
        })
        .collect();
    let bar = ProgressBar::with_draw_target(
        Some(sizes.iter().flatten().sum()),
        ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} (eta {eta})",
        )
        .expect("valid template"),
    );
    let t = Instant::now();
    let mut hashed = 0u64;
    for (row, size) in rows.iter_mut().zip(&sizes) {
        if matches!(row.outcome, Outcome::Missing { .. }) {
            continue;
        }
        bar.set_message(short(&row.name));
        let before = bar.position();
        row.outcome = match param_digest::check_file(&row.path, table, &mut |n| bar.inc(n)) {
            Ok(c) => {
                hashed += c.bytes;
                Outcome::Checked(c)
            }
            Err(e) => Outcome::Unreadable(format!("{e:#}")),
        };
        // Keep the bar's total honest when a file was shorter than listed or unreadable.
        bar.set_position(before + size.unwrap_or(0));
    }
    bar.finish_and_clear();
    let secs = t.elapsed().as_secs_f64();

    // A set whose .vk also differs from the release is another key, not a damaged download
    // (a download's small .vk is almost never the damaged part): most likely a test key made
    // before `params generate` recorded digests.
    let other_keys: Vec<String> = rows
        .iter()
        .filter_map(|r| match &r.outcome {
            Outcome::Checked(c) if c.failed() => r.name.strip_suffix(".vk").map(String::from),
            _ => None,
        })
        .collect();
    for row in &mut rows {
        if let (Some(stem), Outcome::Checked(c)) =
            (row.name.strip_suffix(".params"), &mut row.outcome)
        {
            if c.failed() && c.damage.is_none() && other_keys.iter().any(|s| s == stem) {
                c.damage = Some(
                    "its .vk differs too: another key under this name rather than a damaged \
                     download (a test key generated before `zkforge params generate` recorded \
                     digests? `--force` re-creates it with a record)"
                        .into(),
                );
            }
        }
    }
    let circuits = if rows.is_empty() {
        HashMap::new()
    } else {
        known_circuits()
    };
    // With the JSON report on standard output, the human one goes to standard error.
    let json_on_stdout = args.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    let say = |line: String| {
        if json_on_stdout {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for row in &rows {
        *counts.entry(row.status()).or_default() += 1;
        say(format!("{:<17} {}", row.status(), row.name));
        say(format!("{:<17} {}", "", row.detail(table, &circuits)));
    }
    let failed = rows.iter().filter(|r| r.fails()).count();
    let rate = hashed as f64 / 1e6 / secs.max(1e-9);
    let tally: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    if rows.is_empty() {
        say(format!("no .params or .vk files in {}", dir.display()));
    } else {
        say(format!(
            "{} file(s) in {}: {}; {:.2} GB read in {secs:.1} s ({rate:.0} MB/s); table: {} \
             ({} files)",
            rows.len(),
            dir.display(),
            tally.join(", "),
            hashed as f64 / 1e9,
            table.source(),
            table.len()
        ));
    }
    if let Some(out) = &args.json {
        write_json(out, &dir, table, &rows, &circuits, hashed, secs, failed)?;
    }
    anyhow::ensure!(
        failed == 0,
        "{failed} of {} file(s) failed verification (see above)",
        rows.len()
    );
    Ok(())
}

/// `v28-stacked-proof-of-replication-…-032d3138….params` → a label that fits the bar.
fn short(name: &str) -> String {
    if name.len() <= 48 {
        return name.to_string();
    }
    let cut = |s: &str, n: usize| s.chars().take(n).collect::<String>();
    let tail: String = name
        .chars()
        .rev()
        .take(18)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{}…{tail}", cut(name, 28))
}

#[allow(clippy::too_many_arguments)]
fn write_json(
    out: &Path,
    dir: &Path,
    table: &Manifest,
    rows: &[Row],
    circuits: &HashMap<String, String>,
    hashed: u64,
    secs: f64,
    failed: usize,
) -> Result<()> {
    let files: Vec<_> = rows
        .iter()
        .map(|r| {
            let mut v = json!({
                "name": r.name,
                "path": r.path.display().to_string(),
                "status": r.status(),
                "fails": r.fails(),
            });
            match &r.outcome {
                Outcome::Checked(c) => {
                    v["bytes"] = json!(c.bytes);
                    v["digest"] = json!(c.digest);
                    v["secs"] = json!(c.secs);
                    if let Some(p) = &c.published {
                        v["published_digest"] = json!(p.digest);
                        v["cid"] = json!(p.cid);
                        v["sector_size"] = json!(p.sector_size);
                    }
                    let stem = r.name.trim_end_matches(".params").trim_end_matches(".vk");
                    if let Some(id) = circuits.get(stem) {
                        v["circuit"] = json!(id);
                    }
                    if let Verdict::Mismatch { expected, against } = &c.verdict {
                        v["expected"] = json!(expected);
                        v["expected_from"] = json!(against.describe());
                    }
                    if let Some(d) = &c.damage {
                        v["damage"] = json!(d);
                    }
                }
                Outcome::Unreadable(e) => v["error"] = json!(e),
                Outcome::Missing { why, .. } => v["error"] = json!(why),
            }
            v
        })
        .collect();
    let report = json!({
        "dir": dir.display().to_string(),
        "table": table.source(),
        "table_files": table.len(),
        "digest": "BLAKE2b-512 of the file, hex, first 32 characters (storage-proofs-core)",
        "files": files,
        "failed": failed,
        "bytes_read": hashed,
        "secs": secs,
        "mb_per_s": hashed as f64 / 1e6 / secs.max(1e-9),
    });
    let text = serde_json::to_string_pretty(&report).expect("a report serializes") + "\n";
    if out.as_os_str() == "-" {
        print!("{text}");
        Ok(())
    } else {
        std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))
    }
}
