//! `zkforge prove`: prove client inputs through the engine and write the proof. Files and
//! flags become a [`ProofRequest`], which builds the circuits as the daemon's requests do.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::backend::{self, BackendArg};
use crate::progress::ProveBar;

use anyhow::Context;
use clap::{Args, Subcommand};
use zkforge_engine::{Engine, EngineConfig, JobOutcome, JobRequest, JobTimings, ParamsDir};
use zkforge_filecoin::post::{prover_id_from_miner, PostRequest};
use zkforge_filecoin::registered_proof::{
    seal_proof_for, update_proof_for, window_post_for, winning_post_for,
};
use zkforge_filecoin::shape::parse_sector_size;
use zkforge_filecoin::snap::SnapRequest;
use zkforge_filecoin::{decode_base64_list, hex, params, porep, unhex32};
use zkforge_filecoin::{PartitionedCircuit, ProofRequest};
use zkforge_groth16::ProverBackend;

#[derive(Subcommand)]
pub enum ProveCommand {
    /// PoRep C2 from a C1 output (Curio's wrapper JSON or the raw SealCommitPhase1Output JSON).
    Porep(PorepArgs),
    /// WinningPoSt from vanilla proofs (a JSON array of base64 bincode sector proofs).
    WinningPost(PostArgs),
    /// One WindowPoSt partition from its sectors' vanilla proofs.
    WindowPost(PostArgs),
    /// SnapDeals from vanilla partition proofs (a JSON array of base64 bincode).
    Snap(SnapArgs),
}

/// Where the proof goes and which parameters prove it.
#[derive(Args)]
pub struct Output {
    /// Parameter directory [default: $FIL_PROOFS_PARAMETER_CACHE or /var/tmp/filecoin-proof-parameters].
    #[arg(long)]
    params: Option<PathBuf>,
    /// Write the raw proof bytes here; without it the proof is printed in hex.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Prover backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
}

#[derive(Args)]
pub struct PostArgs {
    /// JSON array of base64 vanilla proofs, one per sector.
    #[arg(long)]
    vanilla: PathBuf,
    /// The PoSt randomness, 32 bytes in hex.
    #[arg(long)]
    randomness: String,
    /// The miner's actor id (the prover id is derived from it) ...
    #[arg(
        long,
        conflicts_with = "prover_id",
        required_unless_present = "prover_id"
    )]
    miner_id: Option<u64>,
    /// ... or the 32-byte prover id in hex.
    #[arg(long)]
    prover_id: Option<String>,
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// WindowPoSt: the partition these sectors form.
    #[arg(long, default_value_t = 0)]
    partition_index: usize,
    #[command(flatten)]
    output: Output,
}

#[derive(Args)]
pub struct SnapArgs {
    /// JSON array of base64 vanilla partition proofs.
    #[arg(long)]
    vanilla: PathBuf,
    #[arg(long)]
    comm_r_old: String,
    #[arg(long)]
    comm_r_new: String,
    #[arg(long)]
    comm_d_new: String,
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    #[command(flatten)]
    output: Output,
}

#[derive(Args)]
pub struct PorepArgs {
    /// The C1 output file.
    #[arg(long)]
    c1: PathBuf,
    #[command(flatten)]
    output: Output,
}

pub fn run(cmd: ProveCommand) -> anyhow::Result<()> {
    let backend_arg = match &cmd {
        ProveCommand::Porep(a) => a.output.backend,
        ProveCommand::WinningPost(a) | ProveCommand::WindowPost(a) => a.output.backend,
        ProveCommand::Snap(a) => a.output.backend,
    };
    let backend = backend::select(backend_arg, EngineConfig::default().prover_threads)?;
    let (request, output) = match cmd {
        ProveCommand::Porep(args) => {
            let bytes = read(&args.c1)?;
            let c1 = porep::parse_c1(&bytes).with_context(|| format!("{}", args.c1.display()))?;
            (ProofRequest::PoRep(c1), args.output)
        }
        ProveCommand::WinningPost(args) => {
            let req = post_request(&args, winning_post_for)?;
            (ProofRequest::WinningPost(req), args.output)
        }
        ProveCommand::WindowPost(args) => {
            let req = post_request(&args, window_post_for)?;
            (ProofRequest::WindowPost(req), args.output)
        }
        ProveCommand::Snap(args) => {
            let size = parse_sector_size(&args.sector_size)?;
            let req = SnapRequest {
                registered_proof: update_proof_for(seal_proof_for(size)?)?,
                vanilla_proofs: vanilla_list(&args.vanilla)?,
                comm_r_old: unhex32(&args.comm_r_old).context("--comm-r-old")?,
                comm_r_new: unhex32(&args.comm_r_new).context("--comm-r-new")?,
                comm_d_new: unhex32(&args.comm_d_new).context("--comm-d-new")?,
            };
            (ProofRequest::SnapDeals(req), args.output)
        }
    };
    let circuits = request.circuits()?;
    let dir = params::parameter_dir(output.params.as_deref());
    let partitions = circuits.partitions();
    let (proof, t) = prove(circuits, &dir, backend)?;
    eprintln!(
        "proved {partitions} partition(s) in {:.1} s (synthesis {:.1} s, prove {:.1} s), verified",
        t.total_ms / 1e3,
        t.synthesis_sum_ms / 1e3,
        t.prove_ms / 1e3
    );
    match output.out {
        Some(path) => {
            std::fs::write(&path, &proof).with_context(|| format!("writing {}", path.display()))?
        }
        None => println!("{}", hex(&proof)),
    }
    Ok(())
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// A JSON array of base64 vanilla proofs. Not bounded by the kind's count while read, unlike
/// the daemon's: the file is the operator's own, and the circuits check the count.
fn vanilla_list(path: &Path) -> anyhow::Result<Vec<Vec<u8>>> {
    decode_base64_list(&read(path)?, usize::MAX).with_context(|| format!("{}", path.display()))
}

fn post_request(
    args: &PostArgs,
    proof_for: fn(u64) -> anyhow::Result<filecoin_proofs_api::RegisteredPoStProof>,
) -> anyhow::Result<PostRequest> {
    let size = parse_sector_size(&args.sector_size)?;
    let prover_id = match (args.miner_id, &args.prover_id) {
        (Some(miner), _) => prover_id_from_miner(miner),
        (None, Some(hex)) => unhex32(hex).context("--prover-id")?,
        (None, None) => anyhow::bail!("give --miner-id or --prover-id"),
    };
    Ok(PostRequest {
        registered_proof: proof_for(size)?,
        randomness: unhex32(&args.randomness).context("--randomness")?,
        prover_id,
        vanilla_proofs: vanilla_list(&args.vanilla)?,
        partition_index: args.partition_index,
        sector_number: None,
    })
}

/// Proves every partition through the engine; the proof bytes and the job's timings.
pub fn prove(
    circuits: Box<dyn PartitionedCircuit>,
    dir: &Path,
    backend: Arc<dyn ProverBackend>,
) -> anyhow::Result<(Vec<u8>, JobTimings)> {
    let engine = Engine::start(
        EngineConfig::default(),
        backend,
        Box::new(ParamsDir(dir.to_path_buf())),
    )?;
    let partitions = circuits.partitions();
    let bar = ProveBar::new(&circuits.params_id().circuit_id(), partitions);
    let id = engine.submit(JobRequest::new(Arc::from(circuits)))?;
    let result = loop {
        if let Some(r) = engine.wait(id, Some(Duration::from_millis(250)))? {
            break r;
        }
        let unfinished = engine
            .status()
            .partitions
            .iter()
            .filter(|p| p.job == id)
            .count();
        bar.set_done(partitions - unfinished.min(partitions));
    };
    bar.finish();
    match result.outcome {
        JobOutcome::Completed(proof) => Ok((proof, result.timings)),
        JobOutcome::Failed(msg) => anyhow::bail!("{msg}"),
        JobOutcome::Cancelled => anyhow::bail!("the job was cancelled"),
    }
}
