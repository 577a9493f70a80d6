//! `zkforge params generate`: random test parameters under the production file names.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::bail;
use clap::{Args, Subcommand, ValueEnum};
use rand::SeedableRng;
use zkforge_filecoin::{fixtures::seal_proof_for, params, porep, shape::parse_sector_size};

use crate::progress::KeyGenBar;

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
    let bar = KeyGenBar::new("generating parameters");
    let t = Instant::now();
    let (id, pk) = match args.proof {
        ProofArg::Porep => {
            let proof = seal_proof_for(size)?;
            let id = porep::porep_params_id(proof)?;
            params::check_writable(&id, &dir, args.force)?;
            (id, porep::porep_random_keys(proof, &mut rng, &bar)?)
        }
        _ => bail!("parameter generation for this proof type is not implemented yet"),
    };
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
