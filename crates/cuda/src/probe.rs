//! What the driver says of each GPU without loading this binary's kernels: a card the fatbin
//! has no code for is still named, with its compute capability, by `zkforge doctor`.

use crate::CudaError;

/// One GPU as the driver reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuProbe {
    pub ordinal: usize,
    pub name: String,
    /// Compute capability (major, minor): (9, 0) for an H100.
    pub compute: (u32, u32),
    pub vram_total: u64,
    pub vram_free: u64,
    /// The PCI address as sysfs names it (`0000:3b:00.0`).
    pub pci_address: String,
}

/// `domain:bus:device.0`, sysfs's name of a device the driver reports by these numbers (a GPU
/// is function 0 of its device).
pub fn pci_address(domain: u32, bus: u32, device: u32) -> String {
    format!("{domain:04x}:{bus:02x}:{device:02x}.0")
}

/// Every GPU the driver reports; `NoDriver` without one, `NotBuilt` in a build without CUDA.
#[cfg(feature = "cuda")]
pub fn probe_gpus() -> Result<Vec<GpuProbe>, CudaError> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    use cudarc::driver::CudaContext;
    if crate::context::device_count() == 0 {
        // No driver, or a driver that reports no GPU: cudarc panics on a missing libcuda.
        // SAFETY: only tries to dlopen libcuda.
        return match unsafe { cudarc::driver::sys::is_culib_present() } {
            true => Ok(Vec::new()),
            false => Err(CudaError::NoDriver),
        };
    }
    (0..crate::context::device_count())
        .map(|ordinal| {
            let ctx = CudaContext::new(ordinal)?;
            let attr = |a| ctx.attribute(a).map(|v| v.max(0) as u32);
            let (major, minor) = ctx.compute_capability()?;
            Ok(GpuProbe {
                ordinal,
                name: ctx.name()?,
                compute: (major.max(0) as u32, minor.max(0) as u32),
                vram_total: ctx.total_mem()? as u64,
                vram_free: ctx.mem_get_info()?.0 as u64,
                pci_address: pci_address(
                    attr(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
                    attr(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
                    attr(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?,
                ),
            })
        })
        .collect()
}

/// Every GPU the driver reports; `NotBuilt` in this build without CUDA.
#[cfg(not(feature = "cuda"))]
pub fn probe_gpus() -> Result<Vec<GpuProbe>, CudaError> {
    Err(CudaError::NotBuilt)
}
