//! The MSM object: its kernels (`kernels/msm/`: scalar conversion and classification, the
//! bucket sort, and each curve's accumulation and reductions), its options, and the host side
//! of Pippenger's method: the launches of one MSM, batch by batch of windows, and the final
//! Horner sum; how it is cut is `plan`, its optional phase timings `profile`. The prefix sum
//! it shares with density compaction is scan.rs.

mod plan;
mod profile;

pub(crate) use plan::scratch_bytes;

use crate::context::{grid, Core, DeviceScalars};
use crate::host::{g1_from_xyzz, g2_from_xyzz, scalars_as_u64, Accumulate, MsmOptions};
use crate::scan::Scan;
use crate::{CudaError, CudaOptions};
use blstrs::{G1Projective, G2Projective, Scalar};
use cudarc::driver::{CudaFunction, CudaSlice, CudaView, DriverError, LaunchConfig, PushKernelArg};
use group::Group;
use plan::{
    affine_chunk_len, affine_launch, affine_state_bytes, chunk_len, max_heads, ones_launch,
    WindowPlan, AFFINE_BLOCK, ONES_BLOCK, ONES_GROUP,
};
use profile::Profile;

/// Partials one block sums per level of the tree that turns segments into window sums.
const REDUCE_GROUP: u32 = 256;
/// Fewest slots for which `Accumulate::Auto` takes batch-affine (each step's inversion is shared
/// by the slots), counted with batch-affine's own chunks (`affine_chunk_len`). Measured on the
/// H200 at 4 blocks an SM with 256-entry chunks (docs/gpu.md step 8), accumulation XYZZ →
/// batch-affine: H at 2^27 (32 slots) 715 → 621 ms, PoRep's L (13 slots) 86.5 → 82.0, B_G1
/// (4 slots) 23.8 → 36.4; a cost of a + b/slots through the last two breaks even at ~11. With
/// chunks shortened for 64 slots (step 9) B_G1 gets 13 and takes it: 38.3 → 36.9 ms in all.
const AFFINE_MIN_SLOTS: u64 = 12;

/// Multi-scalar multiplications on one GPU: the kernels, and how the calls that take no
/// options are cut (the backend's `[gpu]` settings; a fork of a handle keeps them).
#[derive(Clone)]
pub(crate) struct Msm {
    g1: CurveKernels,
    g2: CurveKernels,
    fr_from_mont: CudaFunction,
    classify: CudaFunction,
    hist: CudaFunction,
    scatter: CudaFunction,
    max_count: CudaFunction,
    list_ones: CudaFunction,
    scan: Scan,
    /// The cut of the MSMs that take no options.
    pub options: MsmOptions,
    /// Bases per chunk of a streamed MSM.
    pub stream_chunk: usize,
}

/// One curve's kernels (`msm_*_g1`, `msm_*_g2`).
#[derive(Clone)]
pub(crate) struct CurveKernels {
    accumulate: CudaFunction,
    accumulate_affine: CudaFunction,
    fold_heads: CudaFunction,
    bucket_reduce: CudaFunction,
    reduce_groups: CudaFunction,
    sum_ones: CudaFunction,
}

impl CurveKernels {
    fn load(core: &Core, g: &str) -> Result<Self, DriverError> {
        let f = |name: &str| core.function(&format!("msm_{name}_{g}"));
        Ok(CurveKernels {
            accumulate: f("accumulate")?,
            accumulate_affine: f("accumulate_affine")?,
            fold_heads: f("fold_heads")?,
            bucket_reduce: f("bucket_reduce")?,
            reduce_groups: f("reduce_groups")?,
            sum_ones: f("sum_ones")?,
        })
    }
}

pub(crate) trait Curve {
    type Proj: Group + Copy;
    /// `Accumulate::Auto` means batch-affine for this curve.
    const AFFINE: bool;
    /// u64 limbs of one device XYZZ point.
    const XYZZ_LIMBS: usize;
    /// Threads per block in the shared-memory point reductions (their XYZZ must fit 48 KiB).
    const REDUCE_THREADS: u32;
    /// `blocks` blocks of `reduce_groups`, a thread's XYZZ point each in shared memory.
    fn reduce_launch(blocks: u32) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (Self::REDUCE_THREADS, 1, 1),
            shared_mem_bytes: Self::REDUCE_THREADS * Self::XYZZ_LIMBS as u32 * 8,
        }
    }
    fn kernels(m: &Msm) -> &CurveKernels;
    fn from_xyzz(l: &[u64]) -> Self::Proj;
}

pub(crate) struct G1;
pub(crate) struct G2;

impl Curve for G1 {
    type Proj = G1Projective;
    const AFFINE: bool = true;
    const XYZZ_LIMBS: usize = 24;
    const REDUCE_THREADS: u32 = 128;
    fn kernels(m: &Msm) -> &CurveKernels {
        &m.g1
    }
    fn from_xyzz(l: &[u64]) -> G1Projective {
        g1_from_xyzz(l)
    }
}

impl Curve for G2 {
    type Proj = G2Projective;
    /// Slower at B_G2's size (82.8 → 115.7 ms of accumulation: 255 registers, 2 blocks an SM,
    /// 7 slots), so XYZZ unless asked.
    const AFFINE: bool = false;
    const XYZZ_LIMBS: usize = 48;
    const REDUCE_THREADS: u32 = 64;
    fn kernels(m: &Msm) -> &CurveKernels {
        &m.g2
    }
    fn from_xyzz(l: &[u64]) -> G2Projective {
        g2_from_xyzz(l)
    }
}

impl Msm {
    /// The kernels of `core`'s module, cut as `CudaOptions::default()` says.
    pub fn load(core: &Core, scan: Scan) -> Result<Self, DriverError> {
        let [fr_from_mont, classify, hist, scatter, max_count, list_ones] = core.functions([
            "fr_from_mont",
            "msm_classify",
            "msm_hist",
            "msm_scatter",
            "msm_max_count",
            "msm_list_ones",
        ])?;
        Ok(Msm {
            g1: CurveKernels::load(core, "g1")?,
            g2: CurveKernels::load(core, "g2")?,
            fr_from_mont,
            classify,
            hist,
            scatter,
            max_count,
            list_ones,
            scan,
            options: MsmOptions::default(),
            stream_chunk: CudaOptions::default().stream_chunk,
        })
    }

    /// Σ scalars[i]·bases[i] over the first `n` scalars (Montgomery form) of `scalars` and
    /// points (`C`'s affine layout) of `bases`, cut as `opts` says (`self.options` but where a
    /// check or benchmark asks otherwise). Views, so that a streamed or phased MSM runs on a
    /// chunk of a larger buffer in place.
    pub fn run_with<C: Curve>(
        &self,
        core: &Core,
        bases: &CudaView<'_, u64>,
        nbases: usize,
        scalars: &CudaView<'_, u64>,
        n: usize,
        opts: &MsmOptions,
    ) -> Result<C::Proj, CudaError> {
        if n > nbases {
            return Err(CudaError::Invalid(format!(
                "{n} scalars but only {nbases} bases"
            )));
        }
        if n == 0 {
            return Ok(C::Proj::identity());
        }
        let ker = C::kernels(self);
        let st = &core.stream;
        let mut prof = Profile::new(core, opts.profile);
        let n64 = n as u64;
        let xl = C::XYZZ_LIMBS;

        let mut sc = unsafe { st.alloc::<u64>(n * 4) }?;
        {
            let mut b = st.launch_builder(&self.fr_from_mont);
            b.arg(scalars).arg(&mut sc).arg(&n64);
            unsafe { b.launch(grid(n64, 256)) }?;
        }
        let mut cnt = st.alloc_zeros::<u32>(2)?;
        {
            let mut b = st.launch_builder(&self.classify);
            b.arg(&sc).arg(&n64).arg(&mut cnt);
            unsafe { b.launch(grid(n64, 256)) }?;
        }
        prof.mark("convert+classify")?;
        let cnt = core.read_back(&cnt, 2)?;
        let (tail, ones) = (cnt[0] as u64, cnt[1] as u64);

        let mut acc = C::Proj::identity();
        if tail > 0 {
            let signed = opts.signed as u32;
            let point = (xl * 8) as u64;
            let plan = WindowPlan::new(tail, point, opts);
            let (c, cb, nwin, wb) = (plan.c, plan.slot_bits, plan.windows, plan.per_batch);
            let nb = plan.batch_slots() as usize;
            let seg_bits = plan.segment_bits();
            let nseg = 1u32 << (cb - seg_bits);
            let len = 1u32 << seg_bits;

            // Every window's bucket sizes in one pass over the scalars.
            let mut counts = st.alloc_zeros::<u32>((nwin as usize) << cb)?;
            let mut b = st.launch_builder(&self.hist);
            let w0 = 0u32;
            b.arg(&sc)
                .arg(&n64)
                .arg(&c)
                .arg(&w0)
                .arg(&nwin)
                .arg(&nwin)
                .arg(&signed)
                .arg(&mut counts);
            unsafe { b.launch(grid(n64, 256)) }?;
            prof.mark("hist")?;

            let offs = st.alloc_zeros::<u32>(nb + 1)?;
            let mut cursor = st.alloc_zeros::<u32>(nb + 1)?;
            let mut idx = unsafe { st.alloc::<u32>((tail * wb as u64) as usize) }?;
            let mut maxc = st.alloc_zeros::<u32>(1)?;
            let mut sums_buf = unsafe { st.alloc::<u64>(nb * xl) }?;
            let mut heads = unsafe { st.alloc::<u64>(max_heads(tail * wb as u64) as usize * xl) }?;
            let mut partials = unsafe { st.alloc::<u64>(wb as usize * nseg as usize * xl) }?;
            let mut partials2 = unsafe {
                st.alloc::<u64>(wb as usize * (nseg / REDUCE_GROUP.min(nseg)).max(1) as usize * xl)
            }?;
            let affine = match opts.accumulate {
                Accumulate::Auto => C::AFFINE,
                Accumulate::Xyzz => false,
                Accumulate::Affine => true,
            };
            let forced = opts.accumulate == Accumulate::Affine;
            let resident = if affine {
                resident_threads(core, &ker.accumulate_affine, AFFINE_BLOCK)?
            } else {
                0
            };
            // A batch's batch-affine cut: its chunk, slots a thread and threads. Auto takes
            // batch-affine for a batch whose chunks give each thread enough slots.
            let affine_cut = |entries: u64, fullest: u32| {
                let k = affine_chunk_len(entries, fullest, resident, opts);
                let (slots, threads) = affine_launch(entries.div_ceil(k as u64), resident);
                (k, slots, threads)
            };
            let affine =
                affine && (forced || affine_cut(tail * wb as u64, 0).1 >= AFFINE_MIN_SLOTS);
            let mut state = if affine {
                let bytes = affine_state_bytes(tail * wb as u64, point);
                Some(unsafe { st.alloc::<u64>(bytes.div_ceil(8) as usize) }?)
            } else {
                None
            };
            prof.note(format!(
                "c={c} signed={} windows={nwin} per_batch={wb} affine={affine}",
                opts.signed
            ));
            let mut sums = Vec::with_capacity(nwin as usize);

            let mut w0 = 0u32;
            while w0 < nwin {
                let wcur = wb.min(nwin - w0);
                let nbc = wcur << cb;
                let counts_at = core.ptr32(&counts) + 4 * ((w0 as u64) << cb);
                self.scan
                    .exclusive(core, counts_at, core.ptr32(&offs), nbc)?;
                st.memcpy_dtod(&offs, &mut cursor)?;
                prof.mark("scan")?;
                {
                    let mut b = st.launch_builder(&self.scatter);
                    b.arg(&sc)
                        .arg(&n64)
                        .arg(&c)
                        .arg(&w0)
                        .arg(&wcur)
                        .arg(&nwin)
                        .arg(&signed)
                        .arg(&mut cursor)
                        .arg(&mut idx);
                    unsafe { b.launch(grid(n64, 256)) }?;
                }
                prof.mark("scatter")?;
                st.memset_zeros(&mut maxc)?;
                let mut b = st.launch_builder(&self.max_count);
                b.arg(&offs).arg(&nbc).arg(&mut maxc);
                unsafe { b.launch(grid(nbc as u64, 256)) }?;
                let fullest = core.read_back(&maxc, 1)?[0];
                let entries = tail * wcur as u64;
                let (ka, slots, threads) = affine_cut(entries, fullest);
                let state = state
                    .as_mut()
                    .filter(|_| forced || slots >= AFFINE_MIN_SLOTS);
                let k = if state.is_some() {
                    ka
                } else {
                    chunk_len(entries, fullest, opts)
                };
                if let Some(state) = state {
                    let slots = slots as u32;
                    let mut b = st.launch_builder(&ker.accumulate_affine);
                    b.arg(bases)
                        .arg(&offs)
                        .arg(&idx)
                        .arg(&nbc)
                        .arg(&k)
                        .arg(&slots)
                        .arg(state)
                        .arg(&mut sums_buf)
                        .arg(&mut heads);
                    unsafe { b.launch(grid(threads, AFFINE_BLOCK as u32)) }?;
                } else {
                    let chunks = entries.div_ceil(k as u64);
                    let mut b = st.launch_builder(&ker.accumulate);
                    b.arg(bases)
                        .arg(&offs)
                        .arg(&idx)
                        .arg(&nbc)
                        .arg(&k)
                        .arg(&mut sums_buf)
                        .arg(&mut heads);
                    unsafe { b.launch(grid(chunks, 128)) }?;
                }
                prof.mark("accumulate")?;
                let mut b = st.launch_builder(&ker.fold_heads);
                b.arg(&mut sums_buf)
                    .arg(&heads)
                    .arg(&offs)
                    .arg(&nbc)
                    .arg(&k);
                unsafe { b.launch(grid(nbc as u64, 128)) }?;
                prof.mark("fold_heads")?;
                let mut b = st.launch_builder(&ker.bucket_reduce);
                b.arg(&sums_buf)
                    .arg(&offs)
                    .arg(&cb)
                    .arg(&wcur)
                    .arg(&len)
                    .arg(&mut partials);
                unsafe { b.launch(grid(wcur as u64 * nseg as u64, 128)) }?;
                prof.mark("bucket_reduce")?;
                // Segment partials to window sums: groups of REDUCE_GROUP, then the rest.
                let g1 = REDUCE_GROUP.min(nseg);
                let rest = nseg / g1;
                let mut b = st.launch_builder(&ker.reduce_groups);
                b.arg(&partials).arg(&g1).arg(&mut partials2);
                unsafe { b.launch(C::reduce_launch(wcur * rest)) }?;
                if rest > 1 {
                    let mut b = st.launch_builder(&ker.reduce_groups);
                    b.arg(&partials2).arg(&rest).arg(&mut partials);
                    unsafe { b.launch(C::reduce_launch(wcur)) }?;
                }
                prof.mark("window_sum")?;
                let wins = if rest > 1 { &partials } else { &partials2 };
                let host = core.read_back(wins, wcur as usize * xl)?;
                for w in 0..wcur as usize {
                    sums.push(C::from_xyzz(&host[w * xl..(w + 1) * xl]));
                }
                w0 += wcur;
            }
            for s in sums.iter().rev() {
                for _ in 0..c {
                    acc = acc.double();
                }
                acc += s;
            }
        }
        if ones > 0 {
            acc += self.sum_ones::<C>(core, bases, &sc, n64, ones)?;
            prof.mark("ones")?;
        }
        prof.report(&format!("n={n} tail={tail} ones={ones}"));
        Ok(acc)
    }

    /// Σ bases[i] over the `ones` scalars of `sc` equal to 1: their indices listed, the list
    /// summed by one wave of threads (a partial each), the partials added up in groups.
    fn sum_ones<C: Curve>(
        &self,
        core: &Core,
        bases: &CudaView<'_, u64>,
        sc: &CudaSlice<u64>,
        n: u64,
        ones: u64,
    ) -> Result<C::Proj, CudaError> {
        let ker = C::kernels(self);
        let st = &core.stream;
        let xl = C::XYZZ_LIMBS;
        let mut list = unsafe { st.alloc::<u32>(ones as usize) }?;
        let mut listed = st.alloc_zeros::<u32>(1)?;
        let mut b = st.launch_builder(&self.list_ones);
        b.arg(sc).arg(&n).arg(&mut list).arg(&mut listed);
        unsafe { b.launch(grid(n, 256)) }?;

        let resident = resident_threads(core, &ker.sum_ones, ONES_BLOCK)?;
        let (threads, groups) = ones_launch(ones, resident);
        let mut partials = unsafe { st.alloc::<u64>(threads as usize * xl) }?;
        let count = ones as u32;
        let mut b = st.launch_builder(&ker.sum_ones);
        b.arg(bases).arg(&list).arg(&count).arg(&mut partials);
        unsafe { b.launch(grid(threads, ONES_BLOCK as u32)) }?;

        let (group, groups) = (ONES_GROUP as u32, groups as u32);
        let mut sums = unsafe { st.alloc::<u64>(groups as usize * xl) }?;
        let mut b = st.launch_builder(&ker.reduce_groups);
        b.arg(&partials).arg(&group).arg(&mut sums);
        unsafe { b.launch(C::reduce_launch(groups)) }?;
        let mut out = unsafe { st.alloc::<u64>(xl) }?;
        let mut b = st.launch_builder(&ker.reduce_groups);
        b.arg(&sums).arg(&groups).arg(&mut out);
        unsafe { b.launch(C::reduce_launch(1)) }?;
        Ok(C::from_xyzz(&core.read_back(&out, xl)?))
    }

    /// Σ scalars[i]·bases[i] over the first `scalars.len()` of `bases` (`C`'s affine layout,
    /// resident), as MSMs of at most `chunk` points whose sums are added on the host: the
    /// phased order's MSMs over resident bases, whose scratch is then a chunk's.
    pub fn chunked<C: Curve>(
        &self,
        core: &Core,
        bases: &CudaSlice<u64>,
        limbs: usize,
        scalars: &DeviceScalars,
        chunk: usize,
    ) -> Result<C::Proj, CudaError> {
        let n = scalars.len;
        if n * limbs > bases.len() {
            return Err(CudaError::Invalid(format!(
                "{n} scalars but only {} bases",
                bases.len() / limbs
            )));
        }
        let mut acc = C::Proj::identity();
        for start in (0..n).step_by(chunk.max(1)) {
            let len = chunk.max(1).min(n - start);
            acc += self.run_with::<C>(
                core,
                &bases.slice(start * limbs..(start + len) * limbs),
                len,
                &scalars.buf.slice(start * 4..(start + len) * 4),
                len,
                &self.options,
            )?;
        }
        Ok(acc)
    }

    /// Σ scalars[i]·bases[i] over the first `scalars.len()` of `nbases` resident bases,
    /// the scalars copied from the host first.
    pub fn run_from_host<C: Curve>(
        &self,
        core: &Core,
        bases: &CudaSlice<u64>,
        nbases: usize,
        scalars: &[Scalar],
        opts: &MsmOptions,
    ) -> Result<C::Proj, CudaError> {
        let s = core.stream.clone_htod(scalars_as_u64(scalars))?;
        self.run_with::<C>(
            core,
            &bases.as_view(),
            nbases,
            &s.as_view(),
            scalars.len(),
            opts,
        )
    }
}

/// Threads of `kernel` in blocks of `block` the GPU runs at once: batch-affine and the sum of
/// the ones launch one wave of them.
fn resident_threads(core: &Core, kernel: &CudaFunction, block: u64) -> Result<u64, CudaError> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let sms = core
        .ctx
        .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let per_sm = kernel.occupancy_max_active_blocks_per_multiprocessor(block as u32, 0, None)?;
    Ok(sms.max(1) as u64 * per_sm.max(1) as u64 * block)
}
