//! Key generation's fixed-base products on the GPU: the kernels (`keygen_fixed_base_g1`,
//! `_g2` in `kernels/keygen/fixed_base.cuh`), window tables made on the host, one thread per
//! point, the file encoding written by the kernel, and the next run computing while the host
//! hands the last one to the file.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::{result, CudaFunction, CudaSlice, DevicePtr, PushKernelArg};
use group::{prime::PrimeCurveAffine, Curve, Group};
use zkforge_groth16::generator::{FixedBaseBackend, PointSink};

use crate::context::{grid, Core};
use crate::host::{g1_affine_as_u64, g2_affine_as_u64, scalars_as_u64};
use crate::pinned::PinnedBuffer;
use crate::{CudaDevice, CudaError};

/// Must match KEYGEN_WINDOW in kernels/keygen/fixed_base.cuh.
const WINDOW: usize = 8;
const WINDOWS: usize = 255usize.div_ceil(WINDOW);
/// Points per run: 4M G1 points are 384 MB of output, a few tens of ms of kernel time.
const RUN: usize = 1 << 22;

/// The group-specific parts: table layout, kernel, and encoded size.
trait KeygenCurve: Group<Scalar = Scalar> + Curve + Copy {
    /// u32 words of one encoded point.
    const WORDS: usize;
    fn limbs(table: &[Self::AffineRepr]) -> &[u64];
    fn kernel(b: &CudaFixedBase) -> &CudaFunction;
}

impl KeygenCurve for G1Projective {
    const WORDS: usize = 24;
    fn limbs(table: &[G1Affine]) -> &[u64] {
        g1_affine_as_u64(table)
    }
    fn kernel(b: &CudaFixedBase) -> &CudaFunction {
        &b.g1
    }
}

impl KeygenCurve for G2Projective {
    const WORDS: usize = 48;
    fn limbs(table: &[G2Affine]) -> &[u64] {
        g2_affine_as_u64(table)
    }
    fn kernel(b: &CudaFixedBase) -> &CudaFunction {
        &b.g2
    }
}

/// `table[w·255 + d − 1] = d·2^(8w)·base`, in affine form.
fn window_table<C: KeygenCurve>(base: C) -> Vec<C::AffineRepr>
where
    C::AffineRepr: PrimeCurveAffine + Default,
{
    let digits = (1 << WINDOW) - 1;
    let mut proj = Vec::with_capacity(WINDOWS * digits);
    let mut unit = base;
    for _ in 0..WINDOWS {
        let mut acc = unit;
        for _ in 0..digits {
            proj.push(acc);
            acc += unit;
        }
        // acc = 256·unit: the next window's unit.
        unit = acc;
    }
    let mut table = vec![C::AffineRepr::default(); proj.len()];
    C::batch_normalize(&proj, &mut table);
    table
}

/// Fixed-base products on one GPU: its stream and the two kernels.
pub struct CudaFixedBase {
    core: Core,
    g1: CudaFunction,
    g2: CudaFunction,
}

impl CudaFixedBase {
    /// Takes `dev`'s stream and loads the kernels from its module.
    pub fn new(dev: CudaDevice) -> Result<Self, CudaError> {
        let core = dev.core;
        let [g1, g2] = core.functions(["keygen_fixed_base_g1", "keygen_fixed_base_g2"])?;
        Ok(Self { g1, g2, core })
    }

    fn run<C: KeygenCurve>(
        &self,
        base: C,
        scalars: &[Scalar],
        sink: &mut PointSink,
    ) -> zkforge_groth16::Result<()>
    where
        C::AffineRepr: PrimeCurveAffine + Default,
    {
        if scalars.is_empty() {
            return Ok(());
        }
        let d = &self.core;
        cu(d.ctx.bind_to_thread())?;
        let table = cu(d.stream.clone_htod(C::limbs(&window_table(base))))?;
        // Buffers sized to the work, so small keys do not pin gigabytes.
        let run = RUN.min(scalars.len());
        let mut slots = cu(Slots::new(d, run, C::WORDS))?;
        let runs: Vec<&[Scalar]> = scalars.chunks(run).collect();
        let mut done = Vec::with_capacity(runs.len());
        let kernel = C::kernel(self);
        done.push(cu(slots.submit(d, kernel, &table, 0, runs[0], C::WORDS))?);
        for k in 0..runs.len() {
            if k + 1 < runs.len() {
                let next = cu(slots.submit(d, kernel, &table, (k + 1) % 2, runs[k + 1], C::WORDS))?;
                done.push(next);
            }
            cu(done[k].synchronize())?;
            let len = runs[k].len() * C::WORDS * 4;
            // SAFETY: the copy into this slot completed (event above); the next copy into it
            // is only submitted after this sink returns.
            sink(unsafe { slots.host[k % 2].slice::<u8>(len) })?;
        }
        Ok(())
    }
}

/// Two of everything: run k + 1 computes and copies while the host writes run k.
struct Slots {
    scalars: [CudaSlice<u64>; 2],
    out: [CudaSlice<u32>; 2],
    host: [PinnedBuffer; 2],
}

impl Slots {
    fn new(d: &Core, run: usize, words: usize) -> Result<Self, CudaError> {
        // SAFETY: every element read is written first, by a copy or the kernel.
        let scalars = || unsafe { d.stream.alloc::<u64>(run * 4) };
        let out = || unsafe { d.stream.alloc::<u32>(run * words) };
        let host = || PinnedBuffer::new(run * words * 4);
        Ok(Self {
            scalars: [scalars()?, scalars()?],
            out: [out()?, out()?],
            host: [host()?, host()?],
        })
    }

    /// Uploads `run`, launches its products into `slot` and copies them to the slot's host
    /// buffer; returns the event that marks the copy done.
    fn submit(
        &mut self,
        d: &Core,
        kernel: &CudaFunction,
        table: &CudaSlice<u64>,
        slot: usize,
        run: &[Scalar],
        words: usize,
    ) -> Result<cudarc::driver::CudaEvent, CudaError> {
        let n = run.len() as u64;
        d.stream.memcpy_htod(
            scalars_as_u64(run),
            &mut self.scalars[slot].slice_mut(..run.len() * 4),
        )?;
        let mut b = d.stream.launch_builder(kernel);
        b.arg(&mut self.out[slot])
            .arg(table)
            .arg(&self.scalars[slot])
            .arg(&n);
        unsafe { b.launch(grid(n, 128)) }?;
        // SAFETY: the previous copy into this slot was waited for before its sink ran.
        let dst = unsafe { self.host[slot].slice_mut::<u32>(run.len() * words) };
        let (src, _record) = self.out[slot].device_ptr(&d.stream);
        unsafe { result::memcpy_dtoh_async(dst, src, d.stream.cu_stream()) }?;
        d.mark()
    }
}

/// A CUDA failure as the prover crate's error.
fn cu<T, E: Into<CudaError>>(r: Result<T, E>) -> zkforge_groth16::Result<T> {
    r.map_err(|e| zkforge_groth16::Error::from(e.into()))
}

impl FixedBaseBackend for CudaFixedBase {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn g1(
        &self,
        base: G1Projective,
        s: &[Scalar],
        sink: &mut PointSink,
    ) -> zkforge_groth16::Result<()> {
        self.run(base, s, sink)
    }

    fn g2(
        &self,
        base: G2Projective,
        s: &[Scalar],
        sink: &mut PointSink,
    ) -> zkforge_groth16::Result<()> {
        self.run(base, s, sink)
    }
}
