//! Errors returned by every GPU entry point.

/// Why a GPU operation could not run.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// The crate was compiled without the `cuda` feature.
    #[error("zkforge-cuda was built without the `cuda` feature; rebuild with --features cuda")]
    NotBuilt,
    /// libcuda.so could not be loaded (no NVIDIA driver on this machine).
    #[error("no CUDA driver: libcuda.so could not be loaded")]
    NoDriver,
    /// A CUDA driver call failed.
    #[error("CUDA driver error: {0}")]
    Driver(String),
    /// The device had no room for an allocation (another process may hold its memory).
    #[error("out of device memory: {0}")]
    OutOfMemory(String),
    /// The arguments cannot be processed (length, size, mismatch).
    #[error("invalid input: {0}")]
    Invalid(String),
}
