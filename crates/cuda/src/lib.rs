//! GPU NTT, Groth16 h step and G1/G2 multi-scalar multiplication for BLS12-381 (blstrs types).
//! Built with the `cuda` feature it runs on an NVIDIA GPU; without it every call returns `NotBuilt`.

pub mod archs;
mod error;
pub mod host;
mod options;
pub mod placement;
mod probe;
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod resident;
mod vram;

/// Items that exist only with the `cuda` feature (the kernels and their host side); without
/// it, `stub.rs` stands in for the public ones.
macro_rules! with_cuda {
    ($($item:item)*) => { $( #[cfg(feature = "cuda")] $item )* };
}

with_cuda! {
    mod backend;
    mod context;
    mod decode;
    mod device;
    mod keygen;
    mod link;
    mod msm;
    mod ntt;
    mod pinned;
    mod readback;
    mod scan;
    mod spmv;
    mod staging;

    pub use backend::{partition_footprint, CudaBackend};
    pub use context::{DeviceBasesG1, DeviceBasesG2, DeviceScalars};
    pub use device::CudaDevice;
    pub use keygen::CudaFixedBase;
    pub use spmv::{matrices_bytes, DeviceMatrices};
}

#[cfg(not(feature = "cuda"))]
mod stub;

pub use error::CudaError;
pub use options::{parse_devices, CudaOptions, Residency};
pub use probe::{pci_address, probe_gpus, GpuProbe};
#[cfg(not(feature = "cuda"))]
pub use stub::{CudaDevice, DeviceBasesG1, DeviceBasesG2, DeviceMatrices, DeviceScalars};
pub use vram::{VramBudget, VramReservation};

/// Direction of a number-theoretic transform over the scalar field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NttDirection {
    /// out[i] = Σ_j in[j]·ω^{ij}
    Forward,
    /// out[i] = n^{-1}·Σ_j in[j]·ω^{-ij}
    Inverse,
}

/// Where the constraint products' c comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CFrom {
    /// c = C·z, for any assignment.
    Matrix,
    /// c = a∘b: equal to C·z row by row for an assignment that satisfies every constraint (the
    /// prover's always does), at the cost of one product a row instead of C's products. An
    /// assignment that does not satisfy them gives a proof that fails verification either
    /// way: C enters the proof through the key's L query, not through c alone.
    AB,
}

/// Largest supported transform: log2 of the Filecoin 32 GiB circuit domain.
pub const MAX_LOG_N: u32 = 27;

/// True when the crate was compiled with the `cuda` feature (kernels embedded).
pub const fn built_with_cuda() -> bool {
    cfg!(feature = "cuda")
}
