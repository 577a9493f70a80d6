//! Host side of the Pippenger MSM: window choice, batching of windows, final Horner sum.

use crate::device::{
    grid, single_block, CudaDevice, DeviceBasesG1, DeviceBasesG2, DeviceScalars, MsmKernels,
};
use crate::host::{g1_from_xyzz, g2_from_xyzz, scalars_as_u64};
use crate::CudaError;
use blstrs::{G1Projective, G2Projective, Scalar};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use group::Group;

/// Scalars are below r < 2^255, so 255 bits cover every digit.
const SCALAR_BITS: u32 = 255;
/// Buckets per segment in the parallel bucket reduction.
const SEG_BITS: u32 = 5;
/// Most points one thread adds into a bucket partial; fuller buckets are split across threads.
const TASK_CAP: u32 = 256;
/// Cap on (window, point) index entries per batch of windows: 1 GiB of u32.
const MAX_IDX_ENTRIES: u64 = 1 << 28;

pub(crate) trait Curve {
    type Proj: Group + Copy;
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

/// Window width minimising tail·windows + bucket-reduction work + a serial-chain penalty; the
/// bucket weight (16 additions per bucket) is fitted to H200 sweeps at 2^24 and 2^26.
/// One thread sums each bucket, so the longest chain of additions is the fullest bucket: the
/// top window holds only 255 − (W−1)·c bits, and c = 18 (3 top bits) once made one thread add
/// a third of all points (44 s at 2^24). The penalty weighs each chained addition like a full
/// wave of parallel ones (~32K threads in flight), which rules such widths out.
fn window_bits(tail: u64) -> u32 {
    if let Some(c) = env_u32("ZKFORGE_MSM_C") {
        return c.clamp(2, 22);
    }
    (2..=20u32)
        .min_by_key(|&c| {
            let w = SCALAR_BITS.div_ceil(c) as u64;
            let top_bits = (SCALAR_BITS - (w as u32 - 1) * c).min(c);
            let chain = (tail >> top_bits).max(tail >> c).max(1);
            tail * w + 16 * w * (1u64 << c) + (1 << 15) * chain
        })
        .unwrap()
}

/// Upper bound on the device bytes `msm_core` allocates for `n` scalars of a curve whose
/// XYZZ point has `xyzz_limbs` u64 limbs (mirrors its sizing; the VRAM budget reserves this).
pub(crate) fn scratch_bytes(n: usize, xyzz_limbs: usize) -> u64 {
    let n = n as u64;
    let c = window_bits(n.max(1));
    let nwin = SCALAR_BITS.div_ceil(c) as u64;
    let point = (xyzz_limbs * 8) as u64;
    let by_mem = ((2u64 << 30) / (point << c)).max(1);
    let wb = by_mem.min(nwin);
    let nb = wb << c;
    let entries = (n * nwin).min(MAX_IDX_ENTRIES.max(n));
    let tasks = entries / TASK_CAP as u64 + nb;
    32 * n + 4 * entries + 20 * nb + tasks * point + (nb >> SEG_BITS.min(c)) * point + (4 << 20)
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
    pub(crate) fn msm_core<C: Curve>(
        &self,
        bases: &CudaSlice<u64>,
        nbases: usize,
        scalars: &CudaSlice<u64>,
        n: usize,
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
            let c = window_bits(tail);
            let nwin = SCALAR_BITS.div_ceil(c);
            let bucket_bytes = ((xl * 8) as u64) << c;
            let wb = env_u32("ZKFORGE_MSM_WB").unwrap_or_else(|| {
                let by_idx = (MAX_IDX_ENTRIES / tail).max(1);
                let by_mem = ((2u64 << 30) / bucket_bytes).max(1);
                by_idx.min(by_mem).min(nwin as u64) as u32
            });
            let wb = wb.clamp(1, nwin);
            let nb = (wb as usize) << c;
            prof.note(format!("c={c} windows={nwin} per_batch={wb}"));
            let seg_bits = SEG_BITS.min(c);
            let nseg = 1u32 << (c - seg_bits);
            let len = 1u32 << seg_bits;

            let mut counts = st.alloc_zeros::<u32>(nb)?;
            let mut offs = st.alloc_zeros::<u32>(nb + 1)?;
            let mut cursor = st.alloc_zeros::<u32>(nb + 1)?;
            let mut idx = unsafe { st.alloc::<u32>((tail * wb as u64) as usize) }?;
            let cap = env_u32("ZKFORGE_MSM_CAP").unwrap_or(TASK_CAP).max(1);
            let max_tasks = (tail * wb as u64).div_ceil(cap as u64) as usize + nb;
            let mut tcount = st.alloc_zeros::<u32>(nb)?;
            let mut maxc = st.alloc_zeros::<u32>(1)?;
            let mut toffs = st.alloc_zeros::<u32>(nb + 1)?;
            let mut sums_buf = unsafe { st.alloc::<u64>(max_tasks * xl) }?;
            let mut partials = unsafe { st.alloc::<u64>(wb as usize * nseg as usize * xl) }?;
            let mut wins = unsafe { st.alloc::<u64>(wb as usize * xl) }?;
            let mut sums = Vec::with_capacity(nwin as usize);

            let mut w0 = 0u32;
            while w0 < nwin {
                let wcur = wb.min(nwin - w0);
                let nbc = wcur << c;
                st.memset_zeros(&mut counts)?;
                let mut b = st.launch_builder(&self.k.msm_hist);
                b.arg(&sc)
                    .arg(&n64)
                    .arg(&c)
                    .arg(&w0)
                    .arg(&wcur)
                    .arg(&mut counts);
                unsafe { b.launch(grid(n64, 256)) }?;
                prof.mark("hist")?;
                let mut b = st.launch_builder(&self.k.scan_u32);
                b.arg(&counts).arg(&mut offs).arg(&nbc);
                unsafe { b.launch(single_block(1024)) }?;
                st.memcpy_dtod(&offs, &mut cursor)?;
                prof.mark("scan")?;
                let mut b = st.launch_builder(&self.k.msm_scatter);
                b.arg(&sc)
                    .arg(&n64)
                    .arg(&c)
                    .arg(&w0)
                    .arg(&wcur)
                    .arg(&mut cursor)
                    .arg(&mut idx);
                unsafe { b.launch(grid(n64, 256)) }?;
                prof.mark("scatter")?;
                // One chained addition per point of a task plus one per task partial of the
                // bucket: a cap near sqrt(fullest bucket) minimises the longer of the two chains.
                st.memset_zeros(&mut maxc)?;
                let mut b = st.launch_builder(&self.k.msm_max_count);
                b.arg(&offs).arg(&nbc).arg(&mut maxc);
                unsafe { b.launch(grid(nbc as u64, 256)) }?;
                let fullest = self.read_back(&maxc, 1)?[0];
                let cap = cap.max((fullest as f64).sqrt() as u32);
                let mut b = st.launch_builder(&self.k.msm_task_counts);
                b.arg(&offs).arg(&nbc).arg(&cap).arg(&mut tcount);
                unsafe { b.launch(grid(nbc as u64, 256)) }?;
                let mut b = st.launch_builder(&self.k.scan_u32);
                b.arg(&tcount).arg(&mut toffs).arg(&nbc);
                unsafe { b.launch(single_block(1024)) }?;
                let tasks = (tail * wcur as u64).div_ceil(cap as u64) + nbc as u64;
                let mut b = st.launch_builder(&ker.accumulate);
                b.arg(bases)
                    .arg(&offs)
                    .arg(&idx)
                    .arg(&toffs)
                    .arg(&nbc)
                    .arg(&cap)
                    .arg(&mut sums_buf);
                unsafe { b.launch(grid(tasks, 128)) }?;
                prof.mark("accumulate")?;
                let mut b = st.launch_builder(&ker.bucket_reduce);
                b.arg(&sums_buf)
                    .arg(&toffs)
                    .arg(&c)
                    .arg(&wcur)
                    .arg(&len)
                    .arg(&mut partials);
                unsafe { b.launch(grid(wcur as u64 * nseg as u64, 128)) }?;
                prof.mark("bucket_reduce")?;
                let mut b = st.launch_builder(&ker.reduce_groups);
                b.arg(&partials).arg(&nseg).arg(&mut wins);
                let t = C::REDUCE_THREADS;
                unsafe {
                    b.launch(LaunchConfig {
                        grid_dim: (wcur, 1, 1),
                        block_dim: (t, 1, 1),
                        shared_mem_bytes: t * xl as u32 * 8,
                    })
                }?;
                prof.mark("window_sum")?;
                let host = self.read_back(&wins, wcur as usize * xl)?;
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
            let blocks = (n64.div_ceil(t as u64)).min(2048) as u32;
            let mut partials = unsafe { st.alloc::<u64>(blocks as usize * xl) }?;
            let mut out = unsafe { st.alloc::<u64>(xl) }?;
            let shared = t * xl as u32 * 8;
            let mut b = st.launch_builder(&ker.sum_ones);
            b.arg(bases).arg(&sc).arg(&n64).arg(&mut partials);
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
        let s = self.stream.clone_htod(scalars_as_u64(scalars))?;
        self.msm_core::<G1>(&bases.buf, bases.len, &s, scalars.len())
    }

    /// Σ scalars[i]·bases[i] over the first scalars.len() resident G2 bases.
    pub fn msm_g2(
        &self,
        bases: &DeviceBasesG2,
        scalars: &[Scalar],
    ) -> Result<G2Projective, CudaError> {
        let s = self.stream.clone_htod(scalars_as_u64(scalars))?;
        self.msm_core::<G2>(&bases.buf, bases.len, &s, scalars.len())
    }

    /// As msm_g1, with scalars already on the device (e.g. the h coefficients).
    pub fn msm_g1_resident(
        &self,
        bases: &DeviceBasesG1,
        scalars: &DeviceScalars,
    ) -> Result<G1Projective, CudaError> {
        self.msm_core::<G1>(&bases.buf, bases.len, &scalars.buf, scalars.len)
    }

    pub fn msm_g2_resident(
        &self,
        bases: &DeviceBasesG2,
        scalars: &DeviceScalars,
    ) -> Result<G2Projective, CudaError> {
        self.msm_core::<G2>(&bases.buf, bases.len, &scalars.buf, scalars.len)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn window_choice_avoids_narrow_top_windows() {
        for log in [10u32, 16, 20, 22, 24, 26, 27] {
            let c = super::window_bits(1 << log);
            let w = super::SCALAR_BITS.div_ceil(c);
            let top = super::SCALAR_BITS - (w - 1) * c;
            assert!(
                log < 12 || top + 5 >= c,
                "2^{log}: c={c} leaves {top} top bits"
            );
        }
    }
}
