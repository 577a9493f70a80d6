//! The GPU handle: one stream on one GPU (`context::Core`) and the GPU objects built from its
//! loaded module, each in its own file with its kernels and state: `Ntt` (ntt.rs), `Msm`
//! (msm.rs), `Spmv` (spmv.rs), `DensityGather` (staging.rs), `Decode` (decode.rs). The public
//! methods here are the crate's API; each hands its call to the object that does it.

use crate::context::{self, Core, DeviceBasesG1, DeviceBasesG2, DeviceScalars};
use crate::decode::Decode;
use crate::host::MsmOptions;
use crate::msm::{Msm, G1, G2};
use crate::ntt::Ntt;
use crate::scan::Scan;
use crate::spmv::{DeviceMatrices, Spmv, StreamedMatrices};
use crate::staging::DensityGather;
use crate::{CFrom, CudaError, CudaOptions, NttDirection};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use zkforge_groth16::r1cs::ConstraintMatrices;
use zkforge_groth16::Density;

/// One GPU: a stream on its context, and the GPU objects. A fork shares the kernels and the
/// NTT tables and gets a stream of its own.
pub struct CudaDevice {
    pub(crate) core: Core,
    pub(crate) ntt: Ntt,
    /// Its options are the cut of the `msm_*` calls that take none.
    pub(crate) msm: Msm,
    pub(crate) spmv: Spmv,
    pub(crate) density: DensityGather,
    pub(crate) decode: Decode,
    name: String,
    vram_total: usize,
}

impl CudaDevice {
    /// True when a driver is loadable and reports at least one GPU; never panics.
    pub fn available() -> bool {
        context::available()
    }

    /// Number of GPUs the driver reports (0 without a driver).
    pub fn device_count() -> usize {
        context::device_count()
    }

    pub fn open(ordinal: usize) -> Result<Self, CudaError> {
        let core = Core::open(ordinal)?;
        let scan = Scan::load(&core)?;
        Ok(CudaDevice {
            ntt: Ntt::load(&core)?,
            msm: Msm::load(&core, scan.clone())?,
            spmv: Spmv::load(&core)?,
            density: DensityGather::load(&core, scan)?,
            decode: Decode::load(&core)?,
            name: core.ctx.name()?,
            vram_total: core.ctx.total_mem()?,
            core,
        })
    }

    /// This handle with the MSM settings of `options`; its forks keep them.
    pub(crate) fn tuned(mut self, options: &CudaOptions) -> Self {
        self.msm.options = options.msm;
        self.msm.stream_chunk = options.stream_chunk;
        self
    }

    /// Another handle on the same GPU with a stream of its own, for a concurrent worker.
    pub fn fork(&self) -> Result<Self, CudaError> {
        Ok(CudaDevice {
            core: self.core.fork()?,
            ntt: self.ntt.clone(),
            msm: self.msm.clone(),
            spmv: self.spmv.clone(),
            density: self.density.clone(),
            decode: self.decode.clone(),
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
        Ok(self.core.ctx.mem_get_info()?.0)
    }

    pub fn synchronize(&self) -> Result<(), CudaError> {
        Ok(self.core.stream.synchronize()?)
    }

    /// Runs `f` and returns its result with the device time between two events around it.
    pub fn timed<R>(&self, f: impl FnOnce(&Self) -> R) -> Result<(R, f32), CudaError> {
        let a = self.core.mark()?;
        let r = f(self);
        let b = self.core.mark()?;
        Ok((r, a.elapsed_ms(&b)?))
    }

    // Buffers (context.rs).

    pub fn upload_g1(&self, bases: &[G1Affine]) -> Result<DeviceBasesG1, CudaError> {
        self.core.upload_g1(bases)
    }

    pub fn upload_g2(&self, bases: &[G2Affine]) -> Result<DeviceBasesG2, CudaError> {
        self.core.upload_g2(bases)
    }

    /// `len` scalars of device memory, uninitialized: for holding memory (tests, probes).
    pub fn alloc_scalars(&self, len: usize) -> Result<DeviceScalars, CudaError> {
        self.core.alloc_scalars(len)
    }

    pub fn upload_scalars(&self, scalars: &[Scalar]) -> Result<DeviceScalars, CudaError> {
        self.core.upload_scalars(scalars)
    }

    /// Uploads `host` into a new buffer of `len ≥ host.len()` scalars, zeroing the rest. The
    /// copy is asynchronous from page-locked memory; call `synchronize` before reusing `host`.
    pub fn upload_padded(&self, host: &[Scalar], len: usize) -> Result<DeviceScalars, CudaError> {
        self.core.upload_padded(host, len)
    }

    /// A device-side copy of resident scalars (benchmarks repeat calls that consume theirs).
    pub fn copy_scalars(&self, s: &DeviceScalars) -> Result<DeviceScalars, CudaError> {
        self.core.copy_scalars(s)
    }

    /// Copies resident scalars back to the host.
    pub fn download_scalars(&self, s: &DeviceScalars) -> Result<Vec<Scalar>, CudaError> {
        self.core.download_scalars(s)
    }

    /// The entries of `values` whose bit is set in `density`, in order, computed on the device.
    pub fn gather_by_density(
        &self,
        values: &DeviceScalars,
        density: &Density,
    ) -> Result<DeviceScalars, CudaError> {
        self.density.gather(&self.core, values, density)
    }

    // NTT and the h step (ntt.rs).

    /// In-place NTT over the scalar field, natural order in and out, n = 2^k ≤ 2^27.
    /// Forward: out[i] = Σ_j in[j]·ω^(ij), ω = ROOT_OF_UNITY squared 32−k times. Inverse: with ω^-1,
    /// times n^-1. Coset forward first multiplies in[j] by g^j (g = 7); coset inverse finishes by
    /// multiplying out[j] by g^-j.
    pub fn ntt(
        &self,
        data: &mut [Scalar],
        dir: NttDirection,
        coset: bool,
    ) -> Result<(), CudaError> {
        self.ntt.transform(&self.core, data, dir, coset)
    }

    /// NTT of scalars already resident on the device, leaving the result there.
    pub fn ntt_resident(
        &self,
        data: &mut DeviceScalars,
        dir: NttDirection,
        coset: bool,
    ) -> Result<(), CudaError> {
        self.ntt.transform_resident(&self.core, data, dir, coset)
    }

    /// Groth16 h: the m−1 coefficients of (A·B − C)/Z from the evaluations a, b, c on the domain.
    pub fn h_coefficients(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
    ) -> Result<Vec<Scalar>, CudaError> {
        let h = self.h_coefficients_resident(a, b, c)?;
        self.download_scalars(&h)
    }

    /// As h_coefficients, leaving the m−1 coefficients on the device for the H MSM.
    pub fn h_coefficients_resident(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
    ) -> Result<DeviceScalars, CudaError> {
        let up = |v: &[Scalar]| self.upload_scalars(v);
        self.h_from_device(up(a)?, up(b)?, up(c)?)
    }

    /// Groth16 h from a, b, c already on the device (each 2^k long, consumed); the m−1
    /// coefficients stay on the device, in a's buffer.
    pub fn h_from_device(
        &self,
        a: DeviceScalars,
        b: DeviceScalars,
        c: DeviceScalars,
    ) -> Result<DeviceScalars, CudaError> {
        self.ntt.h(&self.core, a, b, c, false)
    }

    /// As h_from_device; `natural` runs the earlier seven-transform chain instead of the
    /// six-transform one, for benchmarks to compare (see `Ntt::h`).
    pub fn h_from_device_with(
        &self,
        a: DeviceScalars,
        b: DeviceScalars,
        c: DeviceScalars,
        natural: bool,
    ) -> Result<DeviceScalars, CudaError> {
        self.ntt.h(&self.core, a, b, c, natural)
    }

    // MSM (msm.rs): G1 bases are 12 u64 limbs a point, G2 24.

    /// Σ scalars[i]·bases[i] over the first scalars.len() resident G1 bases, cut as this
    /// handle says (the backend's `[gpu]` MSM settings; the default cut on its own).
    pub fn msm_g1(
        &self,
        bases: &DeviceBasesG1,
        scalars: &[Scalar],
    ) -> Result<G1Projective, CudaError> {
        self.msm.run_from_host::<G1>(
            &self.core,
            &bases.buf,
            bases.len,
            scalars,
            &self.msm.options,
        )
    }

    /// As msm_g1, with scalars already on the device (e.g. the h coefficients).
    pub fn msm_g1_resident(
        &self,
        bases: &DeviceBasesG1,
        scalars: &DeviceScalars,
    ) -> Result<G1Projective, CudaError> {
        self.msm_g1_resident_with(bases, scalars, &self.msm.options)
    }

    pub fn msm_g1_resident_with(
        &self,
        bases: &DeviceBasesG1,
        scalars: &DeviceScalars,
        opts: &MsmOptions,
    ) -> Result<G1Projective, CudaError> {
        let (b, s) = (bases.buf.as_view(), scalars.buf.as_view());
        self.msm
            .run_with::<G1>(&self.core, &b, bases.len, &s, scalars.len, opts)
    }

    pub fn msm_g2_resident(
        &self,
        bases: &DeviceBasesG2,
        scalars: &DeviceScalars,
    ) -> Result<G2Projective, CudaError> {
        self.msm_g2_resident_with(bases, scalars, &self.msm.options)
    }

    pub fn msm_g2_resident_with(
        &self,
        bases: &DeviceBasesG2,
        scalars: &DeviceScalars,
        opts: &MsmOptions,
    ) -> Result<G2Projective, CudaError> {
        let (b, s) = (bases.buf.as_view(), scalars.buf.as_view());
        self.msm
            .run_with::<G2>(&self.core, &b, bases.len, &s, scalars.len, opts)
    }

    /// As [`msm_g1_resident`](Self::msm_g1_resident), in MSMs of at most `chunk` points
    /// (benchmarks compare chunk sizes; the product calls it through the phased order).
    pub fn msm_g1_resident_chunked(
        &self,
        bases: &DeviceBasesG1,
        scalars: &DeviceScalars,
        chunk: usize,
    ) -> Result<G1Projective, CudaError> {
        self.msm
            .chunked::<G1>(&self.core, &bases.buf, 12, scalars, chunk)
    }

    /// As [`msm_g2_resident`](Self::msm_g2_resident), in MSMs of at most `chunk` points.
    pub fn msm_g2_resident_chunked(
        &self,
        bases: &DeviceBasesG2,
        scalars: &DeviceScalars,
        chunk: usize,
    ) -> Result<G2Projective, CudaError> {
        self.msm
            .chunked::<G2>(&self.core, &bases.buf, 24, scalars, chunk)
    }

    // Constraint products (spmv.rs).

    /// Copies the matrices to the device (once per circuit; keep the result).
    pub fn upload_matrices(&self, m: &ConstraintMatrices) -> Result<DeviceMatrices, CudaError> {
        DeviceMatrices::upload(&self.core, m)
    }

    /// What a partition's products need of `m` on the device when its A and B stay in host
    /// memory, copied in blocks of at most `block_bytes`.
    pub fn stream_matrices(
        &self,
        m: &ConstraintMatrices,
        block_bytes: usize,
    ) -> Result<StreamedMatrices, CudaError> {
        StreamedMatrices::new(&self.core, m, block_bytes)
    }

    /// c = a∘b over the domain (a synthesized witness satisfies every constraint).
    pub fn hadamard(
        &self,
        a: &DeviceScalars,
        b: &DeviceScalars,
    ) -> Result<DeviceScalars, CudaError> {
        self.spmv.hadamard(&self.core, a, b)
    }

    /// A·z and B·z from the resident matrices, zero-padded to `padded` rows (c = a∘b is left
    /// for later, when fewer vectors are live: see [`hadamard`](Self::hadamard)).
    pub fn resident_products(
        &self,
        m: &DeviceMatrices,
        inputs: &DeviceScalars,
        aux: &DeviceScalars,
        padded: usize,
    ) -> Result<[DeviceScalars; 2], CudaError> {
        let (a, b, _) = self.spmv.products(&self.core, m, inputs, aux, padded, None)?;
        Ok([a, b])
    }

    /// A·z, B·z and C·z (or A·z ∘ B·z, see [`CFrom`]) for z = inputs ‖ aux, each zero-padded
    /// to `padded` rows (the domain).
    pub fn constraint_products(
        &self,
        m: &DeviceMatrices,
        inputs: &DeviceScalars,
        aux: &DeviceScalars,
        padded: usize,
        c_from: CFrom,
    ) -> Result<[DeviceScalars; 3], CudaError> {
        match self
            .spmv
            .products(&self.core, m, inputs, aux, padded, Some(c_from))?
        {
            (a, b, Some(c)) => Ok([a, b, c]),
            _ => Err(CudaError::Internal("c was not computed".into())),
        }
    }
}
