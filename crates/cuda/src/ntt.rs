//! The NTT object: its kernels (`kernels/ntt/ntt.cuh`: the DIF and DIT passes, the bit
//! reversal with its scaling; `kernels/poly/quotient.cuh`: the Groth16 h step's `h_combine`
//! and `h_finish`) and its twiddle cache, shared by every handle on one GPU.

use crate::context::{grid, lock, Core, DeviceScalars};
use crate::host::{coset_z_inv, omega, pow_tables, scalars_as_u64, scalars_as_u64_mut, PowTables};
use crate::{CudaError, NttDirection, MAX_LOG_N};
use blstrs::Scalar;
use cudarc::driver::{CudaFunction, CudaSlice, DriverError, LaunchConfig, PushKernelArg};
use ff::{Field, PrimeField};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Stages done per shared-memory pass: 2^10 elements of 32 bytes and their 2^9 twiddles = 48 KiB
/// per block, the most a launch gets without opting in.
const MAX_PASS_BITS: u32 = 10;
/// Stages a pass kernel runs in registers between trips through shared memory
/// (`ZKF_NTT_RADIX_BITS` in kernels/ntt/ntt.cuh).
const RADIX_BITS: u32 = 2;

/// NTTs and the Groth16 h step on one GPU: the kernels and the tables they read. A fork of a
/// handle clones it and so shares the tables.
#[derive(Clone)]
pub(crate) struct Ntt {
    dif_pass: CudaFunction,
    dit_pass: CudaFunction,
    bitrev_scale: CudaFunction,
    h_combine: CudaFunction,
    h_finish: CudaFunction,
    cache: Arc<NttCache>,
}

/// Power tables on the device (see `host::pow_tables`).
pub(crate) struct DevTables {
    lb: u32,
    lo: CudaSlice<u64>,
    hi: CudaSlice<u64>,
}

/// Twiddles and constants, uploaded once per device and shared by every handle: the h step
/// then queues its six NTTs without a single host round trip, so a busy host (synthesis on
/// every core) cannot stall the GPU between them.
#[derive(Default)]
struct NttCache {
    tables: Cache<DevTables>,
    scalars: Cache<CudaSlice<u64>>,
}

/// Device values by (name, log2 size).
type Cache<V> = Mutex<HashMap<(&'static str, u32), Arc<V>>>;

fn cached<V>(
    map: &Cache<V>,
    key: (&'static str, u32),
    make: impl FnOnce() -> Result<V, CudaError>,
) -> Result<Arc<V>, CudaError> {
    if let Some(v) = lock(map).get(&key) {
        return Ok(v.clone());
    }
    let v = Arc::new(make()?);
    lock(map).insert(key, v.clone());
    Ok(v)
}

fn log2_len(n: usize) -> Result<u32, CudaError> {
    if n == 0 || !n.is_power_of_two() || n.trailing_zeros() > MAX_LOG_N {
        return Err(CudaError::Invalid(format!(
            "NTT length {n} is not a power of two <= 2^{MAX_LOG_N}"
        )));
    }
    Ok(n.trailing_zeros())
}

impl Ntt {
    /// The kernels of `core`'s module, with an empty cache.
    pub fn load(core: &Core) -> Result<Self, DriverError> {
        let [dif_pass, dit_pass, bitrev_scale, h_combine, h_finish] = core.functions([
            "ntt_dif_pass",
            "ntt_dit_pass",
            "ntt_bitrev_scale",
            "h_combine",
            "h_finish",
        ])?;
        Ok(Ntt {
            dif_pass,
            dit_pass,
            bitrev_scale,
            h_combine,
            h_finish,
            cache: Default::default(),
        })
    }

    fn upload_tables(core: &Core, t: PowTables) -> Result<DevTables, CudaError> {
        Ok(DevTables {
            lb: t.lb,
            lo: core.stream.clone_htod(scalars_as_u64(&t.lo))?,
            hi: core.stream.clone_htod(scalars_as_u64(&t.hi))?,
        })
    }

    /// Powers of `w` for exponents below 2^ebits, cached under `name`.
    fn tables(
        &self,
        core: &Core,
        name: &'static str,
        ebits: u32,
        w: impl FnOnce() -> Scalar,
    ) -> Result<Arc<DevTables>, CudaError> {
        self.tables_from(core, name, ebits, || pow_tables(w(), ebits))
    }

    /// Scalars on the device, cached under (name, log n).
    fn constants(
        &self,
        core: &Core,
        name: &'static str,
        log_n: u32,
        make: impl FnOnce() -> Vec<Scalar>,
    ) -> Result<Arc<CudaSlice<u64>>, CudaError> {
        cached(&self.cache.scalars, (name, log_n), || {
            Ok(core.stream.clone_htod(scalars_as_u64(&make()))?)
        })
    }

    /// Tables built by `make`, cached under (name, ebits).
    fn tables_from(
        &self,
        core: &Core,
        name: &'static str,
        ebits: u32,
        make: impl FnOnce() -> PowTables,
    ) -> Result<Arc<DevTables>, CudaError> {
        cached(&self.cache.tables, (name, ebits), || {
            Self::upload_tables(core, make())
        })
    }

    /// The passes of one transform, in place, no bit reversal and no output scaling. DIF
    /// (`dit` false): natural order in, bit-reversed out; `twist` multiplies x[i] by its power i
    /// on load (the coset shift), i = 0 skipped. DIT: bit-reversed in, natural out; `twist`
    /// multiplies position i by its power bitrev(i), every i (its table may carry a factor).
    fn passes(
        &self,
        core: &Core,
        buf: &mut CudaSlice<u64>,
        log_n: u32,
        dir: NttDirection,
        dit: bool,
        twist: Option<&DevTables>,
    ) -> Result<(), CudaError> {
        if log_n == 0 {
            return Ok(());
        }
        let n = 1u64 << log_n;
        let w = || {
            let w = omega(log_n);
            match dir {
                NttDirection::Forward => w,
                NttDirection::Inverse => w.invert().unwrap(),
            }
        };
        let fwd = dir == NttDirection::Forward;
        let npass = log_n.div_ceil(MAX_PASS_BITS);
        let mut ks: Vec<u32> = (0..npass)
            .map(|p| log_n * (p + 1) / npass - log_n * p / npass)
            .collect();
        let kmax = *ks.iter().max().unwrap();
        // w_{2^kmax}^j for j < 2^(kmax-1): every pass's in-block twiddles are among these.
        let roots = self.constants(core, if fwd { "roots" } else { "iroots" }, log_n, || {
            let wk = w().pow_vartime([1u64 << (log_n - kmax)]);
            let mut roots = Vec::with_capacity(1 << (kmax - 1));
            let mut x = Scalar::ONE;
            for _ in 0..(1u32 << (kmax - 1)) {
                roots.push(x);
                x *= wk;
            }
            roots
        })?;
        let cross = self.tables(core, if fwd { "cross" } else { "icross" }, log_n, w)?;
        if dit {
            ks.reverse();
        }
        // DIF runs the top bits first, DIT the bottom bits first.
        let mut t_edge = if dit { 0 } else { log_n };
        for (p, &k) in ks.iter().enumerate() {
            let t_lo = if dit { t_edge } else { t_edge - k };
            // A thread per group of 2^RADIX_BITS elements (the kernel's rounds of stages).
            let cfg = LaunchConfig {
                grid_dim: ((n >> k) as u32, 1, 1),
                block_dim: (1 << (k - k.min(RADIX_BITS)), 1, 1),
                // The elements (32·2^k bytes), then the pass's twiddles (16·2^k): 48 KiB at k = 10.
                shared_mem_bytes: 48 << k,
            };
            let (glo, ghi, glb) = match (twist, p) {
                (Some(t), 0) => (core.ptr(&t.lo), core.ptr(&t.hi), t.lb),
                _ => (0u64, 0u64, 1u32),
            };
            let kernel = if dit { &self.dit_pass } else { &self.dif_pass };
            let mut b = core.stream.launch_builder(kernel);
            b.arg(&mut *buf)
                .arg(&log_n)
                .arg(&t_lo)
                .arg(&k)
                .arg(&*roots)
                .arg(&kmax);
            b.arg(&cross.lo)
                .arg(&cross.hi)
                .arg(&cross.lb)
                .arg(&glo)
                .arg(&ghi)
                .arg(&glb);
            unsafe { b.launch(cfg) }?;
            t_edge = if dit { t_lo + k } else { t_lo };
        }
        debug_assert_eq!(t_edge, if dit { log_n } else { 0 });
        Ok(())
    }

    /// The bit reversal that ends a natural-order transform, with its output scaling: n^-1 for
    /// the inverse, and g^-j on top for the inverse coset.
    fn reorder_scale(
        &self,
        core: &Core,
        buf: &mut CudaSlice<u64>,
        log_n: u32,
        dir: NttDirection,
        coset: bool,
    ) -> Result<(), CudaError> {
        let n = 1u64 << log_n;
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let (cst, tabs) = match dir {
            NttDirection::Forward => (None, None),
            NttDirection::Inverse => {
                let cst = self.constants(core, "ninv", log_n, || {
                    vec![Scalar::from(n).invert().unwrap()]
                })?;
                let tabs = if coset {
                    Some(self.tables(core, "icoset", log_n.max(1), || g.invert().unwrap())?)
                } else {
                    None
                };
                (Some(cst), tabs)
            }
        };
        let cst_p = cst.as_deref().map_or(0, |c| core.ptr(c));
        let (lo_p, hi_p, lb) = tabs
            .as_ref()
            .map_or((0, 0, 1), |t| (core.ptr(&t.lo), core.ptr(&t.hi), t.lb));
        let mut b = core.stream.launch_builder(&self.bitrev_scale);
        b.arg(&mut *buf)
            .arg(&log_n)
            .arg(&cst_p)
            .arg(&lo_p)
            .arg(&hi_p)
            .arg(&lb);
        unsafe { b.launch(grid(n, 256)) }?;
        // Tables are freed stream-ordered on drop, after the kernels that read them.
        Ok(())
    }

    /// In-place NTT of 2^log_n scalars already on the device (Montgomery form), natural order.
    fn natural(
        &self,
        core: &Core,
        buf: &mut CudaSlice<u64>,
        log_n: u32,
        dir: NttDirection,
        coset: bool,
    ) -> Result<(), CudaError> {
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let coset_in = if coset && dir == NttDirection::Forward {
            Some(self.tables(core, "coset", log_n.max(1), || g)?)
        } else {
            None
        };
        self.passes(core, buf, log_n, dir, false, coset_in.as_deref())?;
        self.reorder_scale(core, buf, log_n, dir, coset)
    }

    /// In-place NTT over the scalar field, natural order in and out, n = 2^k ≤ 2^27 (see
    /// `CudaDevice::ntt`).
    pub fn transform(
        &self,
        core: &Core,
        data: &mut [Scalar],
        dir: NttDirection,
        coset: bool,
    ) -> Result<(), CudaError> {
        let log_n = log2_len(data.len())?;
        let mut buf = core.stream.clone_htod(scalars_as_u64(data))?;
        self.natural(core, &mut buf, log_n, dir, coset)?;
        core.stream.memcpy_dtoh(&buf, scalars_as_u64_mut(data))?;
        core.stream.synchronize()?;
        Ok(())
    }

    /// NTT of scalars already resident on the device, leaving the result there.
    pub fn transform_resident(
        &self,
        core: &Core,
        data: &mut DeviceScalars,
        dir: NttDirection,
        coset: bool,
    ) -> Result<(), CudaError> {
        let log_n = log2_len(data.len)?;
        self.natural(core, &mut data.buf, log_n, dir, coset)
    }

    /// Groth16 h from a, b, c already on the device (each 2^k long, consumed); the m−1
    /// coefficients of (A·B − C)/Z stay on the device, in a's buffer. `natural` runs the
    /// earlier chain (seven natural-order transforms, seven bit reversals) instead of the
    /// six-transform one, for benchmarks to compare.
    ///
    /// Six transforms: h = coset-iNTT((A·B − C)/Z on the coset) and the coset inverse is
    /// linear, so it splits into coset-iNTT(A·B)/Z(g) − coset-iNTT(C)/Z(g); C has degree < m,
    /// so its coset inverse is its coefficients, iNTT(c), and C needs no coset evaluation.
    /// The identity is exact for any a, b, c, so h equals the seven-transform chain's (and
    /// bellperson's) to the byte. An inverse DIF leaves a and b's coefficients bit-reversed,
    /// the order a forward DIT takes; that DIT's first pass applies n^-1·g^j as it loads (j the
    /// coefficient's index), so the coset evaluations come out in natural order with no bit
    /// reversal and no scaling pass. The last inverse DIF and c's leave bit-reversed order;
    /// `h_finish` reverses both as it subtracts and scales.
    pub fn h(
        &self,
        core: &Core,
        a: DeviceScalars,
        b: DeviceScalars,
        c: DeviceScalars,
        natural: bool,
    ) -> Result<DeviceScalars, CudaError> {
        let m = a.len;
        if b.len != m || c.len != m {
            return Err(CudaError::Invalid(format!(
                "a, b, c lengths differ: {m}, {}, {}",
                b.len, c.len
            )));
        }
        let log_m = log2_len(m)?;
        if natural {
            return self.h_natural_chain(core, a, b, c, log_m);
        }
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let twist = self.tables_from(core, "coset_ninv", log_m.max(1), || {
            let mut t = pow_tables(g, log_m.max(1));
            let ninv = Scalar::from(m as u64).invert().unwrap();
            for x in t.lo.iter_mut() {
                *x *= ninv;
            }
            t
        })?;
        let (mut da, mut db, mut dc) = (a.buf, b.buf, c.buf);
        for d in [&mut da, &mut db] {
            self.passes(core, d, log_m, NttDirection::Inverse, false, None)?;
            self.passes(core, d, log_m, NttDirection::Forward, true, Some(&twist))?;
        }
        self.passes(core, &mut dc, log_m, NttDirection::Inverse, false, None)?;
        let n = m as u64;
        let mut l = core.stream.launch_builder(&self.h_combine);
        l.arg(&mut da).arg(&db).arg(&0u64).arg(&n).arg(&0u64);
        unsafe { l.launch(grid(n, 256)) }?;
        drop(db);
        self.passes(core, &mut da, log_m, NttDirection::Inverse, false, None)?;
        let cst = self.constants(core, "zinv_ninv", log_m, || {
            vec![coset_z_inv(m) * Scalar::from(n).invert().unwrap()]
        })?;
        let icoset = self.tables(core, "icoset", log_m.max(1), || g.invert().unwrap())?;
        let mut l = core.stream.launch_builder(&self.h_finish);
        l.arg(&mut da)
            .arg(&dc)
            .arg(&log_m)
            .arg(&*cst)
            .arg(&icoset.lo)
            .arg(&icoset.hi)
            .arg(&icoset.lb);
        unsafe { l.launch(grid(n, 256)) }?;
        drop(dc);
        Ok(DeviceScalars {
            buf: da,
            len: m - 1,
        })
    }

    /// The earlier h chain: a, b, c each through a natural-order inverse and coset forward NTT,
    /// t = (a·b − c)·Z(g)^-1, one natural-order coset inverse NTT.
    fn h_natural_chain(
        &self,
        core: &Core,
        a: DeviceScalars,
        b: DeviceScalars,
        c: DeviceScalars,
        log_m: u32,
    ) -> Result<DeviceScalars, CudaError> {
        let m = a.len;
        let mut bufs = vec![a.buf, b.buf, c.buf];
        for d in bufs.iter_mut() {
            self.natural(core, d, log_m, NttDirection::Inverse, false)?;
            self.natural(core, d, log_m, NttDirection::Forward, true)?;
        }
        let zinv = self.constants(core, "zinv", log_m, || vec![coset_z_inv(m)])?;
        let mut da = bufs.remove(0);
        let n = m as u64;
        let mut l = core.stream.launch_builder(&self.h_combine);
        l.arg(&mut da)
            .arg(&bufs[0])
            .arg(&bufs[1])
            .arg(&n)
            .arg(&*zinv);
        unsafe { l.launch(grid(n, 256)) }?;
        drop(bufs);
        self.natural(core, &mut da, log_m, NttDirection::Inverse, true)?;
        Ok(DeviceScalars {
            buf: da,
            len: m - 1,
        })
    }
}
