//! Page-locking witness buffers with `cuMemHostRegister`, portable across every GPU.

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext};
use zkforge_groth16::HostPinner;

pub(crate) struct CudaPinner {
    pub ctx: Arc<CudaContext>,
}

impl HostPinner for CudaPinner {
    fn pin(&self, addr: usize, bytes: usize) -> bool {
        if self.ctx.bind_to_thread().is_err() {
            return false;
        }
        // SAFETY: [addr, addr+bytes) is one live allocation owned by the pool, which unpins it
        // before freeing; PORTABLE makes it pinned for every context, i.e. every GPU.
        let r = unsafe {
            sys::cuMemHostRegister_v2(
                addr as *mut std::ffi::c_void,
                bytes,
                sys::CU_MEMHOSTREGISTER_PORTABLE,
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            tracing::warn!(
                bytes,
                "cuMemHostRegister failed ({r:?}); buffer stays pageable"
            );
        }
        r == sys::CUresult::CUDA_SUCCESS
    }

    fn unpin(&self, addr: usize) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: addr was registered by `pin` and is still allocated.
            let r = unsafe { sys::cuMemHostUnregister(addr as *mut std::ffi::c_void) };
            if r != sys::CUresult::CUDA_SUCCESS {
                tracing::warn!("cuMemHostUnregister failed ({r:?})");
            }
        }
    }
}
