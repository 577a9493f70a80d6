//! Small device-to-host reads (MSM counts and window sums) through a page-locked buffer per
//! handle: a pageable read would queue in the driver behind another worker's pageable upload
//! and stall this worker's kernels for its whole length.

use std::sync::Mutex;

use cudarc::driver::{result, DevicePtr, DeviceRepr};

use crate::device::{lock, CudaDevice};
use crate::CudaError;

/// Bytes of the per-handle readback buffer: the largest read is one batch of window sums.
const READBACK_BYTES: usize = 1 << 20;

/// A page-locked host buffer, freed on drop.
pub(crate) struct Readback {
    ptr: Mutex<usize>,
}

impl Readback {
    pub fn new() -> Self {
        Self { ptr: Mutex::new(0) }
    }
}

impl Drop for Readback {
    fn drop(&mut self) {
        let p = *self.ptr.get_mut().unwrap_or_else(|e| e.into_inner());
        if p != 0 {
            // SAFETY: allocated by malloc_host below and no longer used.
            let _ = unsafe { result::free_host(p as *mut std::ffi::c_void) };
        }
    }
}

impl CudaDevice {
    /// Copies `len` elements of `src` to the host and waits for them.
    pub(crate) fn read_back<T: DeviceRepr + Copy, S: DevicePtr<T>>(
        &self,
        src: &S,
        len: usize,
    ) -> Result<Vec<T>, CudaError> {
        let bytes = len * std::mem::size_of::<T>();
        if bytes > READBACK_BYTES {
            let mut v = self.stream.clone_dtoh(src)?;
            v.truncate(len);
            return Ok(v);
        }
        let mut ptr = lock(&self.readback.ptr);
        if *ptr == 0 {
            self.ctx.bind_to_thread()?;
            // SAFETY: a fresh page-locked allocation owned by this handle.
            *ptr = unsafe { result::malloc_host(READBACK_BYTES, 0) }? as usize;
        }
        // SAFETY: the buffer is page-aligned, READBACK_BYTES long and only used under this
        // lock; the copy is complete after the stream synchronizes.
        let dst = unsafe { std::slice::from_raw_parts_mut(*ptr as *mut T, len) };
        {
            let (src_ptr, _record) = src.device_ptr(&self.stream);
            unsafe { result::memcpy_dtoh_async(dst, src_ptr, self.stream.cu_stream()) }?;
        }
        self.stream.synchronize()?;
        Ok(dst.to_vec())
    }
}
