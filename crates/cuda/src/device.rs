//! The GPU handle: driver probe, context, stream, the embedded fatbin and its kernels.

use crate::host::{g1_affine_as_u64, g2_affine_as_u64, scalars_as_u64, MsmOptions};
use crate::{CudaError, CudaOptions};
use blstrs::{G1Affine, G2Affine, Scalar};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DriverError,
    LaunchConfig,
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

#[derive(Clone)]
pub(crate) struct MsmKernels {
    pub accumulate: CudaFunction,
    pub accumulate_affine: CudaFunction,
    pub fold_heads: CudaFunction,
    pub bucket_reduce: CudaFunction,
    pub reduce_groups: CudaFunction,
    pub sum_ones: CudaFunction,
}

#[derive(Clone)]
pub(crate) struct Kernels {
    pub ntt_dif_pass: CudaFunction,
    pub ntt_dit_pass: CudaFunction,
    pub ntt_bitrev_scale: CudaFunction,
    pub h_combine: CudaFunction,
    pub h_finish: CudaFunction,
    pub fr_from_mont: CudaFunction,
    pub msm_classify: CudaFunction,
    pub msm_hist: CudaFunction,
    pub msm_scatter: CudaFunction,
    pub scan_u32: CudaFunction,
    pub density_popcount: CudaFunction,
    pub density_gather: CudaFunction,
    pub scan_tiles: CudaFunction,
    pub scan_add: CudaFunction,
    pub msm_max_count: CudaFunction,
    pub msm_list_ones: CudaFunction,
    pub spmv_csr: CudaFunction,
    pub spmv_csr_long: CudaFunction,
    pub fr_hadamard: CudaFunction,
    pub keygen_g1: CudaFunction,
    pub keygen_g2: CudaFunction,
    pub decode_g1: CudaFunction,
    pub decode_g2: CudaFunction,
    pub g1: MsmKernels,
    pub g2: MsmKernels,
}

/// One GPU: its context, a stream, and the loaded kernels.
pub struct CudaDevice {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) k: Kernels,
    pub(crate) ntt_cache: Arc<crate::ntt::NttCache>,
    /// Page-locked buffer for small reads; one per handle (each handle has its own stream).
    pub(crate) readback: crate::readback::Readback,
    /// The cut of the `msm_*` calls that take no options (the backend's `[gpu]` settings).
    pub(crate) msm: MsmOptions,
    /// Bases per chunk of a streamed MSM.
    pub(crate) stream_chunk: usize,
    _module: Arc<CudaModule>,
    name: String,
    vram_total: usize,
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

impl CudaDevice {
    /// True when a driver is loadable and reports at least one GPU; never panics.
    pub fn available() -> bool {
        !FATBIN.is_empty() && Self::device_count() > 0
    }

    /// Number of GPUs the driver reports (0 without a driver).
    pub fn device_count() -> usize {
        if !driver_present() {
            return 0;
        }
        std::panic::catch_unwind(CudaContext::device_count)
            .ok()
            .and_then(|r| r.ok())
            .map_or(0, |c| c.max(0) as usize)
    }

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
        let f = |name: &str| module.load_function(name);
        let msm = |g: &str| -> Result<MsmKernels, DriverError> {
            Ok(MsmKernels {
                accumulate: f(&format!("msm_accumulate_{g}"))?,
                accumulate_affine: f(&format!("msm_accumulate_affine_{g}"))?,
                fold_heads: f(&format!("msm_fold_heads_{g}"))?,
                bucket_reduce: f(&format!("msm_bucket_reduce_{g}"))?,
                reduce_groups: f(&format!("msm_reduce_groups_{g}"))?,
                sum_ones: f(&format!("msm_sum_ones_{g}"))?,
            })
        };
        let k = Kernels {
            ntt_dif_pass: f("ntt_dif_pass")?,
            ntt_dit_pass: f("ntt_dit_pass")?,
            ntt_bitrev_scale: f("ntt_bitrev_scale")?,
            h_combine: f("h_combine")?,
            h_finish: f("h_finish")?,
            fr_from_mont: f("fr_from_mont")?,
            msm_classify: f("msm_classify")?,
            msm_hist: f("msm_hist")?,
            msm_scatter: f("msm_scatter")?,
            scan_u32: f("scan_u32")?,
            density_popcount: f("density_popcount")?,
            density_gather: f("density_gather")?,
            scan_tiles: f("scan_tiles")?,
            scan_add: f("scan_add")?,
            msm_max_count: f("msm_max_count")?,
            msm_list_ones: f("msm_list_ones")?,
            spmv_csr: f("spmv_csr")?,
            spmv_csr_long: f("spmv_csr_long")?,
            fr_hadamard: f("fr_hadamard")?,
            keygen_g1: f("keygen_fixed_base_g1")?,
            keygen_g2: f("keygen_fixed_base_g2")?,
            decode_g1: f("decode_points_g1")?,
            decode_g2: f("decode_points_g2")?,
            g1: msm("g1")?,
            g2: msm("g2")?,
        };
        let name = ctx.name()?;
        let vram_total = ctx.total_mem()?;
        keep_freed_memory_pooled(&ctx)?;
        Ok(CudaDevice {
            ctx,
            stream,
            k,
            ntt_cache: Default::default(),
            readback: crate::readback::Readback::new(),
            msm: MsmOptions::default(),
            stream_chunk: CudaOptions::default().stream_chunk,
            _module: module,
            name,
            vram_total,
        })
    }

    /// This handle with the MSM settings of `options`; its forks keep them.
    pub(crate) fn tuned(mut self, options: &CudaOptions) -> Self {
        self.msm = options.msm;
        self.stream_chunk = options.stream_chunk;
        self
    }

    /// Another handle on the same GPU with a stream of its own, for a concurrent worker.
    pub fn fork(&self) -> Result<Self, CudaError> {
        Ok(CudaDevice {
            ctx: self.ctx.clone(),
            stream: self.ctx.new_stream()?,
            k: self.k.clone(),
            ntt_cache: self.ntt_cache.clone(),
            readback: crate::readback::Readback::new(),
            msm: self.msm,
            stream_chunk: self.stream_chunk,
            _module: self._module.clone(),
            name: self.name.clone(),
            vram_total: self.vram_total,
        })
    }

    pub fn name(&self) -> String {
        self.name.clone()
    }

    pub fn vram_total(&self) -> usize {
        self.vram_total
    }

    pub fn vram_free(&self) -> Result<usize, CudaError> {
        Ok(self.ctx.mem_get_info()?.0)
    }

    pub fn synchronize(&self) -> Result<(), CudaError> {
        Ok(self.stream.synchronize()?)
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

    /// `len` scalars of device memory, uninitialized: for holding memory (tests, probes).
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

    /// A device-side copy of resident scalars (benchmarks repeat calls that consume theirs).
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
        self.stream.memcpy_dtoh(
            &s.buf.slice(..s.len * 4),
            crate::host::scalars_as_u64_mut(&mut out),
        )?;
        self.stream.synchronize()?;
        Ok(out)
    }

    /// Raw device address of a buffer, for kernel arguments that may be null.
    pub(crate) fn ptr(&self, s: &CudaSlice<u64>) -> u64 {
        s.device_ptr(&self.stream).0
    }

    /// Raw device address of a u32 buffer (kernel arguments at an offset into it).
    pub(crate) fn ptr32(&self, s: &CudaSlice<u32>) -> u64 {
        s.device_ptr(&self.stream).0
    }

    /// An event recorded on this handle's stream now, for device-side timing.
    pub(crate) fn mark(&self) -> Result<cudarc::driver::CudaEvent, CudaError> {
        Ok(self
            .stream
            .record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?)
    }

    /// Runs `f` and returns its result with the device time between two events around it.
    pub fn timed<R>(&self, f: impl FnOnce(&Self) -> R) -> Result<(R, f32), CudaError> {
        let a = self.mark()?;
        let r = f(self);
        let b = self.mark()?;
        Ok((r, a.elapsed_ms(&b)?))
    }
}
