//! The low layer every GPU object stands on: the driver probe, one stream on one GPU's context
//! with the embedded fatbin loaded (`Core`), launch shapes, and the device buffers. It imports
//! none of the objects (ntt, msm, spmv, ...); they import it.

use crate::host::{g1_affine_as_u64, g2_affine_as_u64, scalars_as_u64, scalars_as_u64_mut};
use crate::readback::Readback;
use crate::CudaError;
use blstrs::{G1Affine, G2Affine, Scalar};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    DriverError, LaunchConfig,
};
use std::sync::Arc;

static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/zkforge.fatbin"));

impl From<DriverError> for CudaError {
    fn from(e: DriverError) -> Self {
        if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            CudaError::OutOfMemory(format!("{e:?}"))
        } else {
            CudaError::Driver(format!("{e:?}"))
        }
    }
}

/// Device buffers are allocated stream-ordered from the default pool; a release threshold of
/// "never" keeps freed memory in the pool, so each partition reuses the last one's buffers
/// instead of going back to the driver.
fn keep_freed_memory_pooled(ctx: &CudaContext) -> Result<(), CudaError> {
    use cudarc::driver::sys;
    let pool = default_mem_pool(ctx)?;
    let mut threshold = u64::MAX;
    // SAFETY: a plain driver call on the device's own pool with a valid value pointer.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            &mut threshold as *mut u64 as *mut std::ffi::c_void,
        )
        .result()?;
    }
    Ok(())
}

/// Returns the memory the pool kept for reuse to the driver (when a backend shuts down).
pub(crate) fn release_pooled_memory(ctx: &CudaContext) {
    if ctx.bind_to_thread().is_err() || ctx.synchronize().is_err() {
        return;
    }
    if let Ok(pool) = default_mem_pool(ctx) {
        // SAFETY: trimming only releases memory the pool holds unused.
        let _ = unsafe { cudarc::driver::sys::cuMemPoolTrimTo(pool, 0) }.result();
    }
}

/// The device's default stream-ordered memory pool (where `alloc` takes from).
fn default_mem_pool(ctx: &CudaContext) -> Result<cudarc::driver::sys::CUmemoryPool, CudaError> {
    ctx.bind_to_thread()?;
    let mut pool = std::ptr::null_mut();
    // SAFETY: a plain driver call on the context's own device with a valid out-pointer.
    unsafe { cudarc::driver::sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) }
        .result()?;
    Ok(pool)
}

/// A poisoned lock still guards valid data here (no invariant spans a panic), so take it.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// cudarc panics on first use when libcuda is missing, so every entry point probes first.
fn driver_present() -> bool {
    // SAFETY: only tries to dlopen libcuda; no symbol is called.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// True when the fatbin is embedded, a driver is loadable and it reports at least one GPU.
pub(crate) fn available() -> bool {
    !FATBIN.is_empty() && device_count() > 0
}

/// Number of GPUs the driver reports (0 without a driver).
pub(crate) fn device_count() -> usize {
    if !driver_present() {
        return 0;
    }
    std::panic::catch_unwind(CudaContext::device_count)
        .ok()
        .and_then(|r| r.ok())
        .map_or(0, |c| c.max(0) as usize)
}

/// One stream on one GPU: the context, the loaded fatbin (where each GPU object takes its
/// kernels from), a stream of its own, and a page-locked buffer for small reads on it.
pub(crate) struct Core {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    /// One per stream (a fork gets its own).
    readback: Readback,
}

impl Core {
    /// The context of GPU `ordinal`, its default stream, the fatbin loaded, and freed device
    /// memory kept pooled.
    pub fn open(ordinal: usize) -> Result<Self, CudaError> {
        if FATBIN.is_empty() {
            return Err(CudaError::NotBuilt);
        }
        if !driver_present() {
            return Err(CudaError::NoDriver);
        }
        let ctx = std::panic::catch_unwind(|| CudaContext::new(ordinal))
            .map_err(|_| CudaError::NoDriver)??;
        let stream = ctx.default_stream();
        let module = ctx.load_module(cudarc::nvrtc::Ptx::from_binary(FATBIN.to_vec()))?;
        keep_freed_memory_pooled(&ctx)?;
        Ok(Core {
            ctx,
            stream,
            module,
            readback: Readback::new(),
        })
    }

    /// The same context and module with a new stream (and readback buffer) of its own.
    pub fn fork(&self) -> Result<Self, CudaError> {
        Ok(Core {
            ctx: self.ctx.clone(),
            stream: self.ctx.new_stream()?,
            module: self.module.clone(),
            readback: Readback::new(),
        })
    }

    /// The kernel `name` of the loaded fatbin.
    pub fn function(&self, name: &str) -> Result<CudaFunction, DriverError> {
        self.module.load_function(name)
    }

    /// The kernels `names` of the loaded fatbin, in order (a GPU object's set, taken apart
    /// with a `let [..]` pattern).
    pub fn functions<const N: usize>(
        &self,
        names: [&str; N],
    ) -> Result<[CudaFunction; N], DriverError> {
        let loaded = names
            .iter()
            .map(|name| self.function(name))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(std::array::from_fn(|i| loaded[i].clone()))
    }

    /// Raw device address of a buffer, for kernel arguments that may be null.
    pub fn ptr(&self, s: &CudaSlice<u64>) -> u64 {
        s.device_ptr(&self.stream).0
    }

    /// Raw device address of a u32 buffer (kernel arguments at an offset into it).
    pub fn ptr32(&self, s: &CudaSlice<u32>) -> u64 {
        s.device_ptr(&self.stream).0
    }

    /// An event recorded on this stream now, for device-side timing.
    pub fn mark(&self) -> Result<cudarc::driver::CudaEvent, CudaError> {
        Ok(self
            .stream
            .record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?)
    }

    /// Copies `len` elements of `src` to the host and waits for them (small reads through
    /// the page-locked buffer: see `readback.rs`).
    pub fn read_back<T: DeviceRepr + Copy, S: DevicePtr<T>>(
        &self,
        src: &S,
        len: usize,
    ) -> Result<Vec<T>, CudaError> {
        self.readback.read(&self.ctx, &self.stream, src, len)
    }

    pub fn upload_g1(&self, bases: &[G1Affine]) -> Result<DeviceBasesG1, CudaError> {
        let buf = self.stream.clone_htod(g1_affine_as_u64(bases))?;
        Ok(DeviceBasesG1 {
            buf,
            len: bases.len(),
        })
    }

    pub fn upload_g2(&self, bases: &[G2Affine]) -> Result<DeviceBasesG2, CudaError> {
        let buf = self.stream.clone_htod(g2_affine_as_u64(bases))?;
        Ok(DeviceBasesG2 {
            buf,
            len: bases.len(),
        })
    }

    /// `len` scalars of device memory, uninitialized.
    pub fn alloc_scalars(&self, len: usize) -> Result<DeviceScalars, CudaError> {
        // SAFETY: the contents are never read before a kernel or copy writes them.
        let buf = unsafe { self.stream.alloc::<u64>(len * 4) }?;
        Ok(DeviceScalars { buf, len })
    }

    pub fn upload_scalars(&self, scalars: &[Scalar]) -> Result<DeviceScalars, CudaError> {
        let buf = self.stream.clone_htod(scalars_as_u64(scalars))?;
        Ok(DeviceScalars {
            buf,
            len: scalars.len(),
        })
    }

    /// Uploads `host` into a new buffer of `len ≥ host.len()` scalars, zeroing the rest. The
    /// copy is asynchronous from page-locked memory; synchronize before reusing `host`.
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

    /// A device-side copy of resident scalars.
    pub fn copy_scalars(&self, s: &DeviceScalars) -> Result<DeviceScalars, CudaError> {
        // SAFETY: fully overwritten by the copy.
        let mut buf = unsafe { self.stream.alloc::<u64>(s.len.max(1) * 4) }?;
        self.stream
            .memcpy_dtod(&s.buf.slice(..s.len * 4), &mut buf.slice_mut(..s.len * 4))?;
        Ok(DeviceScalars { buf, len: s.len })
    }

    /// Copies resident scalars back to the host.
    pub fn download_scalars(&self, s: &DeviceScalars) -> Result<Vec<Scalar>, CudaError> {
        let mut out = vec![Scalar::from(0u64); s.len];
        self.stream
            .memcpy_dtoh(&s.buf.slice(..s.len * 4), scalars_as_u64_mut(&mut out))?;
        self.stream.synchronize()?;
        Ok(out)
    }
}

/// G1 bases resident in device memory (blst_p1_affine layout).
pub struct DeviceBasesG1 {
    pub(crate) buf: CudaSlice<u64>,
    pub(crate) len: usize,
}

/// G2 bases resident in device memory (blst_p2_affine layout).
pub struct DeviceBasesG2 {
    pub(crate) buf: CudaSlice<u64>,
    pub(crate) len: usize,
}

/// Scalars resident in device memory, in blstrs' Montgomery form.
pub struct DeviceScalars {
    pub(crate) buf: CudaSlice<u64>,
    pub(crate) len: usize,
}

macro_rules! impl_len {
    ($($t:ty),*) => {$(
        impl $t {
            pub fn len(&self) -> usize { self.len }
            pub fn is_empty(&self) -> bool { self.len == 0 }
        }
    )*};
}
impl_len!(DeviceBasesG1, DeviceBasesG2, DeviceScalars);

/// Threads for `n` items in blocks of `block`.
pub(crate) fn grid(n: u64, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(block as u64).max(1) as u32, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `n` blocks of `threads` threads.
pub(crate) fn blocks(n: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.max(1), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// One block of `threads` threads (the single-block scan).
pub(crate) fn single_block(threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}
