//! `zkforge fixtures`: client inputs for tests and benchmarks — a small sector sealed offline
//! (`--seal full`), or a PoRep C1 output of any sector size made without sealing (`--seal
//! sparse`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::bail;
use clap::{Args, ValueEnum};
use zkforge_filecoin::registered_proof::{
    non_interactive_seal_proof_for, synthetic_seal_proof_for,
};
use zkforge_filecoin::shape::{format_sector_size, parse_sector_size};
use zkforge_filecoin::ProofKind;
use zkforge_fixtures::{self as fixtures, Manifest};

use super::proof_arg::ProofArg;
use crate::progress::WorkBar;

/// Sectors above this size cannot be sealed here: a 32 GiB seal takes hours and ~450 GiB.
const LARGEST_FULL_SEAL: u64 = 512 << 20;

#[derive(Args)]
pub struct FixturesArgs {
    /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB.
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Seed of the sector data, ids and randomness (same seed, same fixtures).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// full: seal the sector for real and write C1, PoSt and SnapDeals inputs (sizes up to
    /// 512MiB). sparse: only the PoRep C1 output, in seconds at any size, without sealing.
    /// Default: full at 2KiB, sparse above.
    #[arg(long, value_enum)]
    seal: Option<SealMode>,
    /// Sparse only: the kinds to write (default: all). The PoRep C1 is always written; a full
    /// WindowPoSt partition takes most of the time at 32GiB (2,349 sectors).
    #[arg(long, value_enum, value_delimiter = ',')]
    kinds: Option<Vec<ProofArg>>,
    /// The PoRep the sector is sealed for. synthetic: filecoin-proofs' synthetic path (the
    /// synthetic proofs generated after pre-commit, as Curio's UseSyntheticPoRep does);
    /// non-interactive: NI-PoRep (the daemon refuses it: it needs SnarkPack aggregation).
    /// Other than interactive: --seal full only, and only the PoRep C1 is written.
    #[arg(long, value_enum, default_value_t = PorepType::Interactive)]
    porep_type: PorepType,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PorepType {
    Interactive,
    Synthetic,
    NonInteractive,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SealMode {
    Full,
    Sparse,
}

pub fn run(args: FixturesArgs) -> anyhow::Result<()> {
    let size = parse_sector_size(&args.sector_size)?;
    let name = format_sector_size(size);
    let mode = args.seal.unwrap_or(if size <= 2048 {
        SealMode::Full
    } else {
        SealMode::Sparse
    });
    if mode == SealMode::Full && size > LARGEST_FULL_SEAL {
        bail!(
            "cannot seal a {name} sector for real here (hours of CPU and hundreds of GiB of disk); \
             use --seal sparse for inputs made without sealing"
        );
    }
    if mode == SealMode::Full && args.kinds.is_some() {
        bail!("--kinds applies to sparse fixtures; --seal full writes every kind");
    }
    let other_porep = match args.porep_type {
        PorepType::Interactive => None,
        PorepType::Synthetic => Some(synthetic_seal_proof_for(size)?),
        PorepType::NonInteractive => Some(non_interactive_seal_proof_for(size)?),
    };
    if let (Some(proof), SealMode::Sparse) = (other_porep, mode) {
        // Its challenges come from comm_r, which the sparse trees only have once the
        // challenged labels are in them: every node would have to be labelled (a full seal).
        bail!(
            "--seal sparse makes interactive PoRep only: {proof:?} draws its challenges from \
             comm_r, so the challenged nodes are known only after every label is computed; \
             use --seal full (sizes up to 512MiB)"
        );
    }
    let t = Instant::now();
    let m = match (mode, other_porep) {
        (SealMode::Full, Some(proof)) => fixtures::make_porep(proof, &args.out, args.seed)?,
        (SealMode::Full, None) => fixtures::make(size, &args.out, args.seed)?,
        (SealMode::Sparse, _) => {
            let bar = WorkBar::new(&format!("sparse {name}"));
            let asked = args.kinds.as_deref().unwrap_or(&ProofArg::ALL);
            let kinds: Vec<ProofKind> = asked.iter().map(|k| k.kind()).collect();
            let m = fixtures::make_sparse(size, &args.out, args.seed, &kinds, &bar);
            bar.finish();
            m?
        }
    };
    let what = match mode {
        SealMode::Full => format!("sealed a {name} sector ({:?})", m.registered_seal_proof),
        SealMode::Sparse => format!("made sparse {name} fixtures"),
    };
    println!("{what} in {:.2} s", t.elapsed().as_secs_f64());
    for file in written(&m) {
        let path = args.out.join(file);
        let bytes = std::fs::metadata(&path).map(|md| md.len()).unwrap_or(0);
        println!("  {:>12} bytes  {}", bytes, path.display());
    }
    Ok(())
}

/// The files the manifest names, and the manifest itself.
fn written(m: &Manifest) -> Vec<&Path> {
    let mut files = vec![m.c1_wrapper.as_path(), m.c1_raw.as_path()];
    files.extend(m.winning_post.iter().map(|p| p.vanilla.as_path()));
    files.extend(m.window_post.iter().map(|p| p.vanilla.as_path()));
    files.extend(m.snap.iter().map(|s| s.vanilla.as_path()));
    files.push(Path::new(fixtures::MANIFEST));
    files
}
