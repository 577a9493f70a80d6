//! Small device-to-host reads (MSM counts and window sums) through a page-locked buffer per
//! stream: a pageable read would queue in the driver behind another worker's pageable upload
//! and stall this worker's kernels for its whole length. Standalone: the stream is passed in
//! (each `context::Core` owns one of these for its own stream).

use std::sync::{Arc, Mutex};

use cudarc::driver::{result, CudaContext, CudaStream, DevicePtr, DeviceRepr};

use crate::CudaError;

/// Bytes of the readback buffer: the largest read is one batch of window sums.
const READBACK_BYTES: usize = 1 << 20;

/// A page-locked host buffer, allocated on first use and freed on drop.
pub(crate) struct Readback {
    ptr: Mutex<usize>,
}

impl Readback {
    pub fn new() -> Self {
        Self { ptr: Mutex::new(0) }
    }

    /// Copies `len` elements of `src` to the host on `stream` and waits for them.
    pub fn read<T: DeviceRepr + Copy, S: DevicePtr<T>>(
        &self,
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        src: &S,
        len: usize,
    ) -> Result<Vec<T>, CudaError> {
        let bytes = len * std::mem::size_of::<T>();
        if bytes > READBACK_BYTES {
            let mut v = stream.clone_dtoh(src)?;
            v.truncate(len);
            return Ok(v);
        }
        // A poisoned lock still guards a valid pointer.
        let mut ptr = self.ptr.lock().unwrap_or_else(|e| e.into_inner());
        if *ptr == 0 {
            ctx.bind_to_thread()?;
            // SAFETY: a fresh page-locked allocation owned by this buffer.
            *ptr = unsafe { result::malloc_host(READBACK_BYTES, 0) }? as usize;
        }
        // SAFETY: the buffer is page-aligned, READBACK_BYTES long and only used under this
        // lock; the copy is complete after the stream synchronizes.
        let dst = unsafe { std::slice::from_raw_parts_mut(*ptr as *mut T, len) };
        {
            let (src_ptr, _record) = src.device_ptr(stream);
            unsafe { result::memcpy_dtoh_async(dst, src_ptr, stream.cu_stream()) }?;
        }
        stream.synchronize()?;
        Ok(dst.to_vec())
    }
}

impl Drop for Readback {
    fn drop(&mut self) {
        let p = *self.ptr.get_mut().unwrap_or_else(|e| e.into_inner());
        if p != 0 {
            // SAFETY: allocated by malloc_host above and no longer used.
            let _ = unsafe { result::free_host(p as *mut std::ffi::c_void) };
        }
    }
}
