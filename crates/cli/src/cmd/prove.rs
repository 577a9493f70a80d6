//! `zkforge prove`: prove client inputs with the CPU backend and write the proof.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand};
use rand::SeedableRng;
use zkforge_filecoin::prove::ProveReport;
use zkforge_filecoin::{params, porep, prove_all};
use zkforge_groth16::{CpuBackend, ReadOptions};

#[derive(Subcommand)]
pub enum ProveCommand {
    /// PoRep C2 from a C1 output (Curio's wrapper JSON or the raw SealCommitPhase1Output JSON).
    Porep(PorepArgs),
}

#[derive(Args)]
pub struct PorepArgs {
    /// The C1 output file.
    #[arg(long)]
    c1: PathBuf,
    /// Parameter directory [default: $FIL_PROOFS_PARAMETER_CACHE or /var/tmp/filecoin-proof-parameters].
    #[arg(long)]
    params: Option<PathBuf>,
    /// Write the raw proof bytes here; without it the proof is printed in hex.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(cmd: ProveCommand) -> anyhow::Result<()> {
    let ProveCommand::Porep(args) = cmd;
    let bytes =
        std::fs::read(&args.c1).with_context(|| format!("reading {}", args.c1.display()))?;
    let c1 = porep::parse_c1(&bytes).with_context(|| format!("{}", args.c1.display()))?;
    let proof = prove_c1(c1, &params::parameter_dir(args.params.as_deref()))?.proof;
    match args.out {
        Some(path) => {
            std::fs::write(&path, &proof).with_context(|| format!("writing {}", path.display()))?
        }
        None => println!("{}", zkforge_filecoin::fixtures::hex(&proof)),
    }
    Ok(())
}

/// Proves a C1 output with the CPU backend.
pub fn prove_c1(
    c1: filecoin_proofs_api::seal::SealCommitPhase1Output,
    dir: &std::path::Path,
) -> anyhow::Result<ProveReport> {
    let circuits = porep::porep_circuits(c1)?;
    let t = Instant::now();
    let pk = circuits.params_id().load(dir, ReadOptions::default())?;
    tracing::info!(
        ms = t.elapsed().as_millis() as u64,
        circuit = %circuits.params_id().circuit_id(),
        "parameters loaded"
    );
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    prove_all(circuits.as_ref(), &CpuBackend::new(), &pk, &mut rng)
}
