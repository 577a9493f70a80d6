//! `zkforge params generate`: random test parameters under the production file names.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Subcommand, ValueEnum};
use rand::SeedableRng;
use zkforge_filecoin::{params, registry, shape::parse_sector_size, ProofKind};

use crate::progress::WorkBar;

#[derive(Subcommand)]
pub enum ParamsCommand {
    /// Generate random (test-only, insecure) .params/.vk/.meta files for a circuit.
    Generate(GenerateArgs),
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ProofArg {
    Porep,
    WinningPost,
    WindowPost,
    Snap,
}

impl ProofArg {
    pub fn kind(self) -> ProofKind {
        match self {
            ProofArg::Porep => ProofKind::PoRep,
            ProofArg::WinningPost => ProofKind::WinningPost,
            ProofArg::WindowPost => ProofKind::WindowPost,
            ProofArg::Snap => ProofKind::SnapDeals,
        }
    }
}

#[derive(Args)]
pub struct GenerateArgs {
    #[arg(long, value_enum)]
    proof: ProofArg,
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// Output directory [default: $FIL_PROOFS_PARAMETER_CACHE or /var/tmp/filecoin-proof-parameters].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Overwrite existing files.
    #[arg(long)]
    force: bool,
}

pub fn run(cmd: ParamsCommand) -> anyhow::Result<()> {
    let ParamsCommand::Generate(args) = cmd;
    let size = parse_sector_size(&args.sector_size)?;
    let dir = params::parameter_dir(args.out.as_deref());
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    let bar = WorkBar::new("generating parameters");
    let t = Instant::now();
    let kind = args.proof.kind();
    let id = registry::params_id(kind, size)?;
    params::check_writable(&id, &dir, args.force)?;
    let pk = registry::random_keys(kind, size, &mut rng, &bar)?;
    bar.finish();
    params::write(&id, &pk, &dir, args.force)?;
    println!(
        "{}: wrote {} in {:.1} s",
        id.circuit_id(),
        id.params_path(&dir).display(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
