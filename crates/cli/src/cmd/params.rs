//! `zkforge params generate`: random test parameters under the production file names (and
//! `params verify`, in params_verify.rs).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use zkforge_filecoin::{params, registry, shape::parse_sector_size};
use zkforge_groth16::generator::{CpuFixedBase, FixedBaseBackend};

use super::proof_arg::ProofArg;
use crate::progress::WorkBar;

#[derive(Subcommand)]
pub enum ParamsCommand {
    /// Generate random (test-only, insecure) .params/.vk/.meta files for a circuit.
    Generate(GenerateArgs),
    /// Check .params/.vk files against the published digests of the Filecoin parameter
    /// release (filecoin-proofs' parameters.json); exits non-zero on a mismatch or an
    /// unreadable file.
    Verify(super::params_verify::VerifyArgs),
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
    /// Where the points are computed: cpu, or cuda (a build with `--features cuda` and a GPU).
    #[arg(long, value_enum, default_value_t = KeygenBackend::Cpu)]
    backend: KeygenBackend,
    /// Fixes the toxic waste (τ, α, β, γ, δ) and generators, so the files are reproducible
    /// byte for byte (on any backend). Without it they come from the OS's entropy.
    #[arg(long)]
    seed: Option<u64>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum KeygenBackend {
    Cpu,
    Cuda,
}

fn fixed_base(backend: KeygenBackend) -> Result<Box<dyn FixedBaseBackend>> {
    match backend {
        KeygenBackend::Cpu => Ok(Box::new(CpuFixedBase)),
        KeygenBackend::Cuda => cuda_fixed_base(),
    }
}

#[cfg(feature = "cuda")]
fn cuda_fixed_base() -> Result<Box<dyn FixedBaseBackend>> {
    anyhow::ensure!(
        zkforge_cuda::CudaDevice::available(),
        "no CUDA driver or GPU found"
    );
    Ok(Box::new(zkforge_cuda::CudaFixedBase::new(
        zkforge_cuda::CudaDevice::open(0)?,
    )?))
}

#[cfg(not(feature = "cuda"))]
fn cuda_fixed_base() -> Result<Box<dyn FixedBaseBackend>> {
    anyhow::bail!("this zkforge was built without the `cuda` feature (cargo build --features cuda)")
}

pub fn run(cmd: ParamsCommand) -> Result<()> {
    match cmd {
        ParamsCommand::Generate(args) => generate(args),
        ParamsCommand::Verify(args) => super::params_verify::run(args),
    }
}

fn generate(args: GenerateArgs) -> Result<()> {
    let size = parse_sector_size(&args.sector_size)?;
    let dir = params::parameter_dir(args.out.as_deref());
    let kind = args.proof.kind();
    let id = registry::params_id(kind, size)?;
    params::check_writable(&id, &dir, args.force)?;
    let backend = fixed_base(args.backend)?;
    let bar = WorkBar::new(&format!("{}: recording the circuit", id.circuit_id()));
    let done = params::generate(kind, size, &dir, backend.as_ref(), args.seed, &bar)?;
    bar.finish();
    println!(
        "{}: {} constraints ({} non-zeros) recorded in {:.1} s; {} ({:.2} GB) written in {:.1} s \
         on the {} backend",
        id.circuit_id(),
        done.constraints,
        done.nonzeros,
        done.record_secs,
        id.params_path(&dir).display(),
        done.params_bytes as f64 / 1e9,
        done.keys_secs,
        backend.name()
    );
    Ok(())
}
