//! Host side of the Pippenger MSM: window choice, batching of windows, final Horner sum.

use crate::device::{
    grid, single_block, CudaDevice, DeviceBasesG1, DeviceBasesG2, DeviceScalars, MsmKernels,
};
use crate::host::{g1_from_xyzz, g2_from_xyzz, scalars_as_u64, Accumulate, MsmOptions};
use crate::CudaError;
use blstrs::{G1Projective, G2Projective, Scalar};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use group::Group;

/// Scalars are below r < 2^255, so 255 bits cover every plain digit; signed digits need one
/// more window bit for the last carry (`windows`).
const SCALAR_BITS: u32 = 255;
/// Entries per tile of the prefix sum (ZKF_SCAN_TILE in kernels/msm/scalars.cuh).
const SCAN_TILE: u32 = 8192;
/// Buckets per segment in the parallel bucket reduction.
const SEG_BITS: u32 = 5;
/// Partials one block sums per level of the tree that turns segments into window sums.
const REDUCE_GROUP: u32 = 256;
/// Most sorted entries one accumulation thread adds (its chunk K), unless the fullest bucket
/// needs more (K ≥ √fullest keeps the chain of chunk heads in bucket_reduce short) ...
const CHUNK: u32 = 256;
/// ... and fewest, so small batches still spread over about this many threads.
const MIN_CHUNK: u32 = 16;
const TARGET_THREADS: u64 = 1 << 17;
/// Cap on (window, point) index entries per batch of windows: 2 GiB of u32 (four windows of a
/// 2^27-point MSM per batch: each batch re-reads every scalar to scatter its entries).
const MAX_IDX_ENTRIES: u64 = 1 << 29;
/// Device bytes of bucket sums and chunk heads per batch of windows.
const MAX_BUCKET_BYTES: u64 = 2 << 30;
/// Widest window the cost model may pick (2^21 bucket slots a window when signed).
const MAX_WINDOW_BITS: u32 = 22;
/// Cost of one bucket slot in units of one point entry (its addition, sort and scatter): the
/// slot's two full additions in the running sum and its segment's multiple, at the reduction's
/// lower occupancy. Fitted to the H200 profile at 2^27 (docs/gpu.md: 5.2 ns a slot, 0.56 ns an
/// entry), which makes c = 20 signed the choice there (911.8 ms; c = 22: 1042.6).
const BUCKET_WEIGHT: u64 = 9;
/// Blocks summing the bases of scalars equal to 1 (then one block sums their partials).
const ONES_BLOCKS: u64 = 2048;
/// Batch-affine accumulation: threads per block, and most chunks one thread walks side by side
/// (the kernel keeps per-chunk bits in 64-bit masks).
const AFFINE_BLOCK: u64 = 128;
const AFFINE_MAX_SLOTS: u64 = 64;
/// Fewest slots for which `Accumulate::Auto` takes batch-affine (each step's inversion is shared
/// by the slots): measured on the H200, H at 2^27 (42 slots) 734 → 666 ms of accumulation, L
/// (17 slots) 88.9 → 91.3, B_G1 (5 slots) 24.6 → 37.4.
const AFFINE_MIN_SLOTS: u64 = 32;

pub(crate) trait Curve {
    type Proj: Group + Copy;
    /// `Accumulate::Auto` means batch-affine for this curve.
    const AFFINE: bool;
    /// u64 limbs of one device XYZZ point.
    const XYZZ_LIMBS: usize;
    /// Threads per block in the shared-memory point reductions (their XYZZ must fit 48 KiB).
    const REDUCE_THREADS: u32;
    fn kernels(d: &CudaDevice) -> &MsmKernels;
    fn from_xyzz(l: &[u64]) -> Self::Proj;
}

pub(crate) struct G1;
pub(crate) struct G2;

impl Curve for G1 {
    type Proj = G1Projective;
    const AFFINE: bool = true;
    const XYZZ_LIMBS: usize = 24;
    const REDUCE_THREADS: u32 = 128;
    fn kernels(d: &CudaDevice) -> &MsmKernels {
        &d.k.g1
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
    fn kernels(d: &CudaDevice) -> &MsmKernels {
        &d.k.g2
    }
    fn from_xyzz(l: &[u64]) -> G2Projective {
        g2_from_xyzz(l)
    }
}

fn env_u32(name: &str) -> Option<u32> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Windows of c bits: plain digits cover 255 bits; signed digits 256, so that the top window
/// has at most c−1 bits and its digit (with the carry from below) fits 2^(c−1) slots.
fn windows(c: u32, signed: bool) -> u32 {
    if signed {
        (SCALAR_BITS + 1).div_ceil(c)
    } else {
        SCALAR_BITS.div_ceil(c)
    }
}

/// Bucket slots per window: |digit| − 1 for signed digits, digit − 1 for plain ones.
fn slot_bits(c: u32, signed: bool) -> u32 {
    c - signed as u32
}

/// Window width minimising tail·windows (every window adds every tail point once) +
/// BUCKET_WEIGHT·slots (bucket reduction) + a serial-chain penalty. The top window holds only
/// 255 − (W−1)·c bits, so its few buckets hold many points each; chunked accumulation splits
/// them, leaving a chain of about 2·√(fullest bucket) additions, weighed like a full wave of
/// parallel ones (~32K threads in flight). (c = 18 plain once made one thread add a third of all
/// points at 2^24, 44 s, before the work was split.)
fn window_bits(tail: u64, opts: &MsmOptions) -> u32 {
    if let Some(c) = opts.window_bits.or_else(|| env_u32("ZKFORGE_MSM_C")) {
        return c.clamp(2 + opts.signed as u32, MAX_WINDOW_BITS);
    }
    (2 + opts.signed as u32..=MAX_WINDOW_BITS)
        .min_by_key(|&c| {
            let w = windows(c, opts.signed) as u64;
            let top_bits = SCALAR_BITS
                .saturating_sub((w as u32 - 1) * c)
                .min(slot_bits(c, opts.signed));
            let fullest = (tail >> top_bits)
                .max(tail >> slot_bits(c, opts.signed))
                .max(1);
            let chain = 2 * (fullest as f64).sqrt() as u64;
            tail * w + BUCKET_WEIGHT * w * (1u64 << slot_bits(c, opts.signed)) + (1 << 15) * chain
        })
        .unwrap()
}

/// Windows per batch: bounded by the index entries and the bucket memory of a batch.
fn windows_per_batch(tail: u64, c: u32, point_bytes: u64, opts: &MsmOptions) -> u32 {
    let nwin = windows(c, opts.signed);
    let per_window = point_bytes * ((1u64 << slot_bits(c, opts.signed)) + tail / CHUNK as u64);
    let by_idx = (MAX_IDX_ENTRIES / tail.max(1)).max(1);
    let by_mem =
        (MAX_BUCKET_BYTES.saturating_sub(point_bytes * TARGET_THREADS) / per_window).max(1);
    env_u32("ZKFORGE_MSM_WB")
        .map(|w| w as u64)
        .unwrap_or(by_idx.min(by_mem))
        .clamp(1, nwin as u64) as u32
}

/// Accumulation chunk for a batch of `entries` sorted entries whose fullest bucket holds
/// `fullest`: CHUNK, less for small batches (down to MIN_CHUNK), more for a very full bucket.
fn chunk_len(entries: u64, fullest: u32) -> u32 {
    let k = (entries / TARGET_THREADS).clamp(MIN_CHUNK as u64, CHUNK as u64) as u32;
    let k = k.max(env_u32("ZKFORGE_MSM_CAP").unwrap_or(0));
    k.max((fullest as f64).sqrt() as u32)
}

/// Chunk heads a batch of `entries` sorted entries can produce (one per chunk).
fn max_heads(entries: u64) -> u64 {
    (entries / CHUNK as u64).max(TARGET_THREADS + TARGET_THREADS / 8) + 2
}

/// Chunks one thread walks side by side in batch-affine accumulation of `chunks` chunks, and
/// the threads of the launch (whole blocks): as many slots as it takes to fit the `resident`
/// threads the GPU runs at once, so one wave does it (every thread runs the same steps, so a
/// second, partly filled wave would cost as much as the first).
fn affine_launch(chunks: u64, resident: u64) -> (u64, u64) {
    let slots = chunks.div_ceil(resident.max(1)).clamp(1, AFFINE_MAX_SLOTS);
    let threads = chunks.div_ceil(slots).next_multiple_of(AFFINE_BLOCK);
    (slots, threads)
}

/// Device bytes of batch-affine chunk state for a batch of `entries` sorted entries, whatever
/// chunk length `chunk_len` picks (never below the least one, so never more chunks than this):
/// per chunk x, y and a prefix product (three coordinate-field elements, a quarter of an XYZZ
/// point each) and two u32.
fn affine_state_bytes(entries: u64, point_bytes: u64) -> u64 {
    let least = (entries / TARGET_THREADS).clamp(MIN_CHUNK as u64, CHUNK as u64);
    let chunks = entries.div_ceil(least);
    (chunks + AFFINE_BLOCK * AFFINE_MAX_SLOTS) * (3 * point_bytes / 4 + 8)
}

/// Upper bound on the device bytes `msm_core` allocates for `n` scalars of a curve whose
/// XYZZ point has `xyzz_limbs` u64 limbs (mirrors its sizing; the VRAM budget reserves this).
pub(crate) fn scratch_bytes(n: usize, xyzz_limbs: usize) -> u64 {
    let opts = MsmOptions::default();
    let n = n as u64;
    let point = (xyzz_limbs * 8) as u64;
    let c = window_bits(n.max(1), &opts);
    let nwin = windows(c, opts.signed) as u64;
    let slots = 1u64 << slot_bits(c, opts.signed);
    let wb = windows_per_batch(n, c, point, &opts) as u64;
    let nb = wb * slots;
    let heads = max_heads(n * wb);
    let segs = nb >> SEG_BITS.min(slot_bits(c, opts.signed));
    let affine = if xyzz_limbs == G1::XYZZ_LIMBS {
        G1::AFFINE
    } else {
        G2::AFFINE
    };
    32 * n
        + 4 * nwin * slots
        + 4 * n * wb
        + 12 * nb
        + (nb + heads + 2 * segs) * point
        + if affine {
            affine_state_bytes(n * wb, point)
        } else {
            0
        }
        + (4 << 20)
}

/// Per-phase device times of one MSM, printed when ZKFORGE_MSM_PROFILE is set.
struct Profile<'a> {
    dev: &'a CudaDevice,
    on: bool,
    last: Option<cudarc::driver::CudaEvent>,
    phases: Vec<(&'static str, f32)>,
    notes: Vec<String>,
}

impl<'a> Profile<'a> {
    fn new(dev: &'a CudaDevice) -> Self {
        let on = std::env::var_os("ZKFORGE_MSM_PROFILE").is_some();
        let mut p = Profile {
            dev,
            on,
            last: None,
            phases: Vec::new(),
            notes: Vec::new(),
        };
        if on {
            p.last = p.dev.mark().ok();
        }
        p
    }
    fn mark(&mut self, name: &'static str) -> Result<(), CudaError> {
        if !self.on {
            return Ok(());
        }
        let e = self.dev.mark()?;
        if let Some(prev) = &self.last {
            let ms = prev.elapsed_ms(&e)?;
            match self.phases.iter_mut().find(|(n, _)| *n == name) {
                Some(x) => x.1 += ms,
                None => self.phases.push((name, ms)),
            }
        }
        self.last = Some(e);
        Ok(())
    }
    fn note(&mut self, s: String) {
        if self.on {
            self.notes.push(s);
        }
    }
    fn report(&self, what: &str) {
        if self.on {
            let ph: Vec<String> = self
                .phases
                .iter()
                .map(|(n, t)| format!("{n} {t:.2}"))
                .collect();
            eprintln!(
                "msm profile {what} {}: {} (ms)",
                self.notes.join(" "),
                ph.join(", ")
            );
        }
    }
}

impl CudaDevice {
    /// Exclusive prefix sum of `n` counts into `out[0..=n]` (`out` at least n + 1 long).
    pub(crate) fn scan_exclusive(&self, counts: u64, out: u64, n: u32) -> Result<(), CudaError> {
        let st = &self.stream;
        let tiles = n.div_ceil(SCAN_TILE).max(1);
        let mut sums = st.alloc_zeros::<u32>(tiles as usize)?;
        let mut offs = st.alloc_zeros::<u32>(tiles as usize + 1)?;
        let mut b = st.launch_builder(&self.k.scan_tiles);
        b.arg(&counts).arg(&out).arg(&n).arg(&mut sums);
        unsafe { b.launch(crate::device::blocks(tiles, 1024)) }?;
        let mut b = st.launch_builder(&self.k.scan_u32);
        b.arg(&sums).arg(&mut offs).arg(&tiles);
        unsafe { b.launch(single_block(1024)) }?;
        let mut b = st.launch_builder(&self.k.scan_add);
        b.arg(&out).arg(&n).arg(&offs);
        unsafe { b.launch(grid(n as u64 + 1, 256)) }?;
        Ok(())
    }

    pub(crate) fn msm_core<C: Curve>(
        &self,
        bases: &CudaSlice<u64>,
        nbases: usize,
        scalars: &CudaSlice<u64>,
        n: usize,
    ) -> Result<C::Proj, CudaError> {
        self.msm_core_with::<C>(bases, nbases, scalars, n, &MsmOptions::default())
    }

    pub(crate) fn msm_core_with<C: Curve>(
        &self,
        bases: &CudaSlice<u64>,
        nbases: usize,
        scalars: &CudaSlice<u64>,
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
        let st = &self.stream;
        let mut prof = Profile::new(self);
        let n64 = n as u64;
        let xl = C::XYZZ_LIMBS;

        let mut sc = unsafe { st.alloc::<u64>(n * 4) }?;
        {
            let mut b = st.launch_builder(&self.k.fr_from_mont);
            b.arg(scalars).arg(&mut sc).arg(&n64);
            unsafe { b.launch(grid(n64, 256)) }?;
        }
        let mut cnt = st.alloc_zeros::<u32>(2)?;
        {
            let mut b = st.launch_builder(&self.k.msm_classify);
            b.arg(&sc).arg(&n64).arg(&mut cnt);
            unsafe { b.launch(grid(n64, 256)) }?;
        }
        prof.mark("convert+classify")?;
        let cnt = self.read_back(&cnt, 2)?;
        let (tail, ones) = (cnt[0] as u64, cnt[1] as u64);

        let mut acc = C::Proj::identity();
        if tail > 0 {
            let signed = opts.signed as u32;
            let c = window_bits(tail, opts);
            let cb = slot_bits(c, opts.signed);
            let nwin = windows(c, opts.signed);
            let point = (xl * 8) as u64;
            let wb = windows_per_batch(tail, c, point, opts);
            let nb = (wb as usize) << cb;
            let seg_bits = SEG_BITS.min(cb);
            let nseg = 1u32 << (cb - seg_bits);
            let len = 1u32 << seg_bits;

            // Every window's bucket sizes in one pass over the scalars.
            let mut counts = st.alloc_zeros::<u32>((nwin as usize) << cb)?;
            let mut b = st.launch_builder(&self.k.msm_hist);
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
                use cudarc::driver::sys::CUdevice_attribute as A;
                let sms = self
                    .ctx
                    .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
                let per_sm = ker
                    .accumulate_affine
                    .occupancy_max_active_blocks_per_multiprocessor(AFFINE_BLOCK as u32, 0, None)?;
                sms.max(1) as u64 * per_sm.max(1) as u64 * AFFINE_BLOCK
            } else {
                0
            };
            // Auto: batch-affine where a full-size batch gives each thread enough slots.
            let affine = affine
                && (forced
                    || affine_launch((tail * wb as u64).div_ceil(CHUNK as u64), resident).0
                        >= AFFINE_MIN_SLOTS);
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
                let counts_at = self.ptr32(&counts) + 4 * ((w0 as u64) << cb);
                self.scan_exclusive(counts_at, self.ptr32(&offs), nbc)?;
                st.memcpy_dtod(&offs, &mut cursor)?;
                prof.mark("scan")?;
                {
                    let mut b = st.launch_builder(&self.k.msm_scatter);
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
                let mut b = st.launch_builder(&self.k.msm_max_count);
                b.arg(&offs).arg(&nbc).arg(&mut maxc);
                unsafe { b.launch(grid(nbc as u64, 256)) }?;
                let fullest = self.read_back(&maxc, 1)?[0];
                let entries = tail * wcur as u64;
                let k = chunk_len(entries, fullest);
                let chunks = entries.div_ceil(k as u64);
                let (slots, threads) = affine_launch(chunks, resident);
                let state = state
                    .as_mut()
                    .filter(|_| forced || slots >= AFFINE_MIN_SLOTS);
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
                let mut b = st.launch_builder(&ker.bucket_reduce);
                b.arg(&sums_buf)
                    .arg(&heads)
                    .arg(&offs)
                    .arg(&k)
                    .arg(&cb)
                    .arg(&wcur)
                    .arg(&len)
                    .arg(&mut partials);
                unsafe { b.launch(grid(wcur as u64 * nseg as u64, 128)) }?;
                prof.mark("bucket_reduce")?;
                // Segment partials to window sums: groups of REDUCE_GROUP, then the rest.
                let t = C::REDUCE_THREADS;
                let cfg = |blocks: u32| LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (t, 1, 1),
                    shared_mem_bytes: t * xl as u32 * 8,
                };
                let g1 = REDUCE_GROUP.min(nseg);
                let rest = nseg / g1;
                let mut b = st.launch_builder(&ker.reduce_groups);
                b.arg(&partials).arg(&g1).arg(&mut partials2);
                unsafe { b.launch(cfg(wcur * rest)) }?;
                if rest > 1 {
                    let mut b = st.launch_builder(&ker.reduce_groups);
                    b.arg(&partials2).arg(&rest).arg(&mut partials);
                    unsafe { b.launch(cfg(wcur)) }?;
                }
                prof.mark("window_sum")?;
                let wins = if rest > 1 { &partials } else { &partials2 };
                let host = self.read_back(wins, wcur as usize * xl)?;
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
            let t = C::REDUCE_THREADS;
            let mut list = unsafe { st.alloc::<u32>(ones as usize) }?;
            let mut listed = st.alloc_zeros::<u32>(1)?;
            let mut b = st.launch_builder(&self.k.msm_list_ones);
            b.arg(&sc).arg(&n64).arg(&mut list).arg(&mut listed);
            unsafe { b.launch(grid(n64, 256)) }?;
            let blocks = (ones.div_ceil(t as u64)).min(ONES_BLOCKS) as u32;
            let mut partials = unsafe { st.alloc::<u64>(blocks as usize * xl) }?;
            let mut out = unsafe { st.alloc::<u64>(xl) }?;
            let shared = t * xl as u32 * 8;
            let count = ones as u32;
            let mut b = st.launch_builder(&ker.sum_ones);
            b.arg(bases).arg(&list).arg(&count).arg(&mut partials);
            unsafe {
                b.launch(LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (t, 1, 1),
                    shared_mem_bytes: shared,
                })
            }?;
            let mut b = st.launch_builder(&ker.reduce_groups);
            b.arg(&partials).arg(&blocks).arg(&mut out);
            unsafe {
                b.launch(LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (t, 1, 1),
                    shared_mem_bytes: shared,
                })
            }?;
            acc += C::from_xyzz(&self.read_back(&out, xl)?);
            prof.mark("ones")?;
        }
        prof.report(&format!("n={n} tail={tail} ones={ones}"));
        Ok(acc)
    }

    /// Σ scalars[i]·bases[i] over the first scalars.len() resident G1 bases.
    pub fn msm_g1(
        &self,
        bases: &DeviceBasesG1,
        scalars: &[Scalar],
    ) -> Result<G1Projective, CudaError> {
        self.msm_g1_with(bases, scalars, &MsmOptions::default())
    }

    /// As msm_g1, cut as `opts` says (benchmarks and checks compare variants).
    pub fn msm_g1_with(
        &self,
        bases: &DeviceBasesG1,
        scalars: &[Scalar],
        opts: &MsmOptions,
    ) -> Result<G1Projective, CudaError> {
        let s = self.stream.clone_htod(scalars_as_u64(scalars))?;
        self.msm_core_with::<G1>(&bases.buf, bases.len, &s, scalars.len(), opts)
    }

    /// Σ scalars[i]·bases[i] over the first scalars.len() resident G2 bases.
    pub fn msm_g2(
        &self,
        bases: &DeviceBasesG2,
        scalars: &[Scalar],
    ) -> Result<G2Projective, CudaError> {
        self.msm_g2_with(bases, scalars, &MsmOptions::default())
    }

    pub fn msm_g2_with(
        &self,
        bases: &DeviceBasesG2,
        scalars: &[Scalar],
        opts: &MsmOptions,
    ) -> Result<G2Projective, CudaError> {
        let s = self.stream.clone_htod(scalars_as_u64(scalars))?;
        self.msm_core_with::<G2>(&bases.buf, bases.len, &s, scalars.len(), opts)
    }

    /// As msm_g1, with scalars already on the device (e.g. the h coefficients).
    pub fn msm_g1_resident(
        &self,
        bases: &DeviceBasesG1,
        scalars: &DeviceScalars,
    ) -> Result<G1Projective, CudaError> {
        self.msm_g1_resident_with(bases, scalars, &MsmOptions::default())
    }

    pub fn msm_g1_resident_with(
        &self,
        bases: &DeviceBasesG1,
        scalars: &DeviceScalars,
        opts: &MsmOptions,
    ) -> Result<G1Projective, CudaError> {
        self.msm_core_with::<G1>(&bases.buf, bases.len, &scalars.buf, scalars.len, opts)
    }

    pub fn msm_g2_resident(
        &self,
        bases: &DeviceBasesG2,
        scalars: &DeviceScalars,
    ) -> Result<G2Projective, CudaError> {
        self.msm_g2_resident_with(bases, scalars, &MsmOptions::default())
    }

    pub fn msm_g2_resident_with(
        &self,
        bases: &DeviceBasesG2,
        scalars: &DeviceScalars,
        opts: &MsmOptions,
    ) -> Result<G2Projective, CudaError> {
        self.msm_core_with::<G2>(&bases.buf, bases.len, &scalars.buf, scalars.len, opts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_choice_avoids_narrow_top_windows() {
        for signed in [false, true] {
            let opts = MsmOptions {
                signed,
                window_bits: None,
                ..MsmOptions::default()
            };
            for log in [10u32, 16, 20, 22, 24, 26, 27] {
                let c = window_bits(1 << log, &opts);
                let w = windows(c, signed);
                let top = SCALAR_BITS.saturating_sub((w - 1) * c);
                assert!(
                    log < 12 || top + 9 >= c,
                    "2^{log} signed={signed}: c={c} leaves {top} top bits"
                );
            }
        }
    }

    #[test]
    fn signed_windows_hold_the_last_carry() {
        for c in 3..=MAX_WINDOW_BITS {
            let w = windows(c, true);
            // The top window's digit is below 2^(255 − (w−1)c) plus a carry: it must fit the
            // 2^(c−1) slots without a window above it.
            assert!(SCALAR_BITS - (w - 1) * c < c, "c={c}");
        }
    }

    #[test]
    fn affine_launch_covers_every_chunk() {
        for chunks in [1u64, 5, 127, 128, 129, 50_000, 1 << 21, 1 << 23] {
            for resident in [128u64, 50_688, 67_584] {
                let (slots, threads) = affine_launch(chunks, resident);
                assert!(slots * threads >= chunks && threads % AFFINE_BLOCK == 0);
                assert!(slots * threads <= chunks + AFFINE_BLOCK * AFFINE_MAX_SLOTS);
                assert!(slots <= AFFINE_MAX_SLOTS);
            }
        }
    }

    #[test]
    fn batches_fit_their_buffers() {
        for log in [10u32, 20, 24, 26, 27] {
            let n = 1u64 << log;
            for point in [192u64, 384] {
                let opts = MsmOptions::default();
                let c = window_bits(n, &opts);
                let wb = windows_per_batch(n, c, point, &opts) as u64;
                assert!(wb * n <= MAX_IDX_ENTRIES.max(n));
                assert!(scratch_bytes(n as usize, point as usize / 8) < 16 << 30);
            }
        }
    }
}
