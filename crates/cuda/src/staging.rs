//! Getting a witness onto the device: zero-padded uploads and density compaction there.

use blstrs::Scalar;
use cudarc::driver::PushKernelArg;
use zkforge_groth16::Density;

use crate::device::{grid, CudaDevice, DeviceScalars};
use crate::host::scalars_as_u64;
use crate::CudaError;

impl CudaDevice {
    /// Uploads `host` into a new buffer of `len ≥ host.len()` scalars, zeroing the rest. The
    /// copy is asynchronous from page-locked memory; call `synchronize` before reusing `host`.
    pub fn upload_padded(&self, host: &[Scalar], len: usize) -> Result<DeviceScalars, CudaError> {
        if len < host.len() {
            return Err(CudaError::Invalid(format!(
                "padding {} scalars to {len}",
                host.len()
            )));
        }
        // SAFETY: every element is written below, by the copy or the memset.
        let mut buf = unsafe { self.stream.alloc::<u64>(len.max(1) * 4) }?;
        let m = host.len() * 4;
        if m > 0 {
            self.stream
                .memcpy_htod(scalars_as_u64(host), &mut buf.slice_mut(..m))?;
        }
        if len * 4 > m {
            self.stream.memset_zeros(&mut buf.slice_mut(m..))?;
        }
        Ok(DeviceScalars { buf, len })
    }

    /// The entries of `values` whose bit is set in `density`, in order, computed on the device.
    pub fn gather_by_density(
        &self,
        values: &DeviceScalars,
        density: &Density,
    ) -> Result<DeviceScalars, CudaError> {
        let count = density.count();
        let words = density.words();
        let nwords = words.len() as u32;
        // SAFETY: fully written by the gather (count entries).
        let mut out = unsafe { self.stream.alloc::<u64>(count.max(1) * 4) }?;
        if count > 0 {
            let dwords = self.stream.clone_htod(words)?;
            let mut counts = unsafe { self.stream.alloc::<u32>(words.len()) }?;
            let mut offs = unsafe { self.stream.alloc::<u32>(words.len() + 1) }?;
            let mut b = self.stream.launch_builder(&self.k.density_popcount);
            b.arg(&dwords).arg(&nwords).arg(&mut counts);
            unsafe { b.launch(grid(nwords as u64, 256)) }?;
            let mut b = self.stream.launch_builder(&self.k.scan_u32);
            b.arg(&counts).arg(&mut offs).arg(&nwords);
            unsafe { b.launch(crate::device::single_block(1024)) }?;
            let n = values.len as u64;
            let mut b = self.stream.launch_builder(&self.k.density_gather);
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
