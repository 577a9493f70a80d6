//! Choosing the prover backend: `cpu`, `cuda`, or `auto` (CUDA when built in and a GPU answers).

use std::sync::Arc;

use anyhow::{bail, Result};
use clap::ValueEnum;
use zkforge_groth16::{CpuBackend, ProverBackend};

#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub enum BackendArg {
    #[default]
    Auto,
    Cpu,
    Cuda,
}

/// The backend to prove with; `auto` falls back to the CPU and says why.
pub fn select(arg: BackendArg) -> Result<Arc<dyn ProverBackend>> {
    match arg {
        BackendArg::Cpu => Ok(Arc::new(CpuBackend::new())),
        BackendArg::Cuda => cuda(),
        BackendArg::Auto => cuda().or_else(|e| {
            tracing::info!("using the CPU backend: {e:#}");
            Ok(Arc::new(CpuBackend::new()))
        }),
    }
}

#[cfg(feature = "cuda")]
fn cuda() -> Result<Arc<dyn ProverBackend>> {
    if !zkforge_cuda::CudaDevice::available() {
        bail!("no CUDA driver or GPU found");
    }
    let backend = zkforge_cuda::CudaBackend::open(0)?;
    tracing::info!(device = %backend.device().name(), "using the CUDA backend");
    Ok(Arc::new(backend))
}

#[cfg(not(feature = "cuda"))]
fn cuda() -> Result<Arc<dyn ProverBackend>> {
    bail!("this zkforge was built without the `cuda` feature (cargo build --features cuda)")
}
