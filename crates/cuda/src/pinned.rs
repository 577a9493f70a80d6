//! Page-locked host buffers (`cuMemHostAlloc`), for copies that must not stall behind the
//! driver's staging of pageable memory.

use cudarc::driver::result;

use crate::CudaError;

/// A page-locked host allocation of `bytes`, freed on drop.
pub(crate) struct PinnedBuffer {
    ptr: *mut u8,
    bytes: usize,
}

// SAFETY: plain host memory; users synchronise access through streams and events.
unsafe impl Send for PinnedBuffer {}
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    /// Allocates in the current context (bind it first).
    pub fn new(bytes: usize) -> Result<Self, CudaError> {
        // SAFETY: a fresh allocation; flags 0 = cached, portable to this context only.
        let ptr = unsafe { result::malloc_host(bytes.max(1), 0) }? as *mut u8;
        Ok(Self { ptr, bytes })
    }

    /// The first `len` elements of type T (T plain data; `len·size_of::<T>() ≤ bytes`).
    ///
    /// # Safety
    /// No device copy into or out of these bytes may be in flight.
    pub unsafe fn slice_mut<T: Copy>(&mut self, len: usize) -> &mut [T] {
        assert!(len * std::mem::size_of::<T>() <= self.bytes);
        std::slice::from_raw_parts_mut(self.ptr as *mut T, len)
    }

    /// As [`slice_mut`](Self::slice_mut), read-only.
    ///
    /// # Safety
    /// No device copy into these bytes may be in flight.
    pub unsafe fn slice<T: Copy>(&self, len: usize) -> &[T] {
        assert!(len * std::mem::size_of::<T>() <= self.bytes);
        std::slice::from_raw_parts(self.ptr as *const T, len)
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by malloc_host; owners wait for their copies before dropping.
        let _ = unsafe { result::free_host(self.ptr as *mut std::ffi::c_void) };
    }
}
