//! Choosing the prover backend: `cpu`, `cuda`, or `auto` (CUDA when built in and a GPU answers).

use std::sync::Arc;

use anyhow::{bail, Result};
use clap::ValueEnum;
use zkforge_cuda::CudaOptions;
use zkforge_groth16::{CpuBackend, ProverBackend};

#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub enum BackendArg {
    #[default]
    Auto,
    Cpu,
    Cuda,
}

/// The backend to prove with; `auto` falls back to the CPU and says why. The CPU backend
/// gets a pool of `cpu_threads` threads of its own (0: the global pool, one thread per core).
pub fn select(arg: BackendArg, cpu_threads: usize) -> Result<Arc<dyn ProverBackend>> {
    select_with(arg, cpu_threads, &CudaOptions::default())
}

/// As `select`, with the CUDA backend's options (the `[gpu]` table).
pub fn select_with(
    arg: BackendArg,
    cpu_threads: usize,
    gpu: &CudaOptions,
) -> Result<Arc<dyn ProverBackend>> {
    let cpu = || -> Result<Arc<dyn ProverBackend>> {
        Ok(match cpu_threads {
            0 => Arc::new(CpuBackend::new()),
            n => Arc::new(CpuBackend::with_threads(n)?),
        })
    };
    let backend = match arg {
        BackendArg::Cpu => cpu(),
        BackendArg::Cuda => cuda(gpu),
        BackendArg::Auto => cuda(gpu).or_else(|e| {
            tracing::info!("using the CPU backend: {e:#}");
            cpu()
        }),
    }?;
    #[cfg(feature = "fault-injection")]
    let backend = zkforge_groth16::fault::from_env(backend);
    Ok(backend)
}

#[cfg(feature = "cuda")]
fn cuda(options: &CudaOptions) -> Result<Arc<dyn ProverBackend>> {
    if !zkforge_cuda::CudaDevice::available() {
        bail!("no CUDA driver or GPU found");
    }
    let backend = zkforge_cuda::CudaBackend::with_options(options)?;
    let names: Vec<String> = backend.devices().into_iter().map(|d| d.name).collect();
    tracing::info!(devices = ?names, "using the CUDA backend");
    Ok(Arc::new(backend))
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &CudaOptions) -> Result<Arc<dyn ProverBackend>> {
    bail!("this zkforge was built without the `cuda` feature (cargo build --features cuda)")
}
