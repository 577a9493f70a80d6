//! Density compaction of a witness on the device: its kernels (`density_popcount`,
//! `density_gather` in `kernels/msm/density.cuh`) with the shared prefix sum of scan.rs.
//! Zero-padded uploads are plain buffer work: `context::Core::upload_padded`.

use cudarc::driver::{CudaFunction, DriverError, PushKernelArg};
use zkforge_groth16::Density;

use crate::context::{grid, Core, DeviceScalars};
use crate::scan::Scan;
use crate::CudaError;

#[derive(Clone)]
pub(crate) struct DensityGather {
    popcount: CudaFunction,
    gather: CudaFunction,
    scan: Scan,
}

impl DensityGather {
    pub fn load(core: &Core, scan: Scan) -> Result<Self, DriverError> {
        let [popcount, gather] = core.functions(["density_popcount", "density_gather"])?;
        Ok(DensityGather {
            popcount,
            gather,
            scan,
        })
    }

    /// The entries of `values` whose bit is set in `density`, in order, computed on the device.
    pub fn gather(
        &self,
        core: &Core,
        values: &DeviceScalars,
        density: &Density,
    ) -> Result<DeviceScalars, CudaError> {
        let count = density.count();
        let words = density.words();
        let nwords = words.len() as u32;
        let st = &core.stream;
        // SAFETY: fully written by the gather (count entries).
        let mut out = unsafe { st.alloc::<u64>(count.max(1) * 4) }?;
        if count > 0 {
            let dwords = st.clone_htod(words)?;
            let mut counts = unsafe { st.alloc::<u32>(words.len()) }?;
            let mut offs = unsafe { st.alloc::<u32>(words.len() + 1) }?;
            let mut b = st.launch_builder(&self.popcount);
            b.arg(&dwords).arg(&nwords).arg(&mut counts);
            unsafe { b.launch(grid(nwords as u64, 256)) }?;
            self.scan.one_block(core, &counts, &mut offs, nwords)?;
            let n = values.len as u64;
            let mut b = st.launch_builder(&self.gather);
            b.arg(&values.buf)
                .arg(&n)
                .arg(&dwords)
                .arg(&offs)
                .arg(&nwords)
                .arg(&mut out);
            unsafe { b.launch(grid(nwords as u64, 128)) }?;
        }
        Ok(DeviceScalars {
            buf: out,
            len: count,
        })
    }
}
