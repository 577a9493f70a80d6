//! Random inputs and CPU references shared by the GPU integration test and gpu_bench.
#![allow(dead_code)]

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use zkforge_cuda::host::{coset_z_inv, cpu_ntt, omega, Accumulate, MsmOptions};
use zkforge_cuda::{CudaDevice, NttDirection};

pub mod spmv;

pub fn fresh_rng() -> (ChaCha20Rng, u64) {
    let seed = std::env::var("ZKFORGE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    (ChaCha20Rng::seed_from_u64(seed), seed)
}

/// Uniform-enough random scalars, fast: raw limbs below 2^254 < r are valid Montgomery values.
pub fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(1 << 16).enumerate().for_each(|(i, ch)| {
        let mut r = ChaCha20Rng::seed_from_u64(seed ^ ((i as u64) << 32));
        for s in ch.iter_mut() {
            let l = [
                r.gen::<u64>(),
                r.gen::<u64>(),
                r.gen::<u64>(),
                r.gen::<u64>() >> 2,
            ];
            *s = Scalar::from_u64s_le(&l).unwrap();
        }
    });
    out
}

/// Scalars that are 0 or 1 with equal probability (Filecoin witnesses are mostly bits).
pub fn bit_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(1 << 16).enumerate().for_each(|(i, ch)| {
        let mut r = ChaCha20Rng::seed_from_u64(seed ^ ((i as u64) << 32) ^ 0xb175);
        for s in ch.iter_mut() {
            *s = if r.gen::<bool>() {
                Scalar::ONE
            } else {
                Scalar::ZERO
            };
        }
    });
    out
}

/// What the checks need of G1 and G2, so that each helper below is written once: points made
/// and summed on the CPU, uploaded and summed on the device (scalars uploaded first, as
/// `CudaDevice::msm_g1` does).
pub trait Points: Group<Scalar = Scalar> + Curve<AffineRepr = Self::Affine> + Send + Sync {
    type Affine: PrimeCurveAffine<Curve = Self> + std::ops::Neg<Output = Self::Affine> + Send + Sync;
    type OnDevice;
    /// "g1" or "g2", in check names.
    const NAME: &'static str;
    /// Mixed into the seeds, so that G1 and G2 inputs differ for one seed.
    const SALT: u64;
    fn multi_exp(points: &[Self], scalars: &[Scalar]) -> Self;
    fn upload(
        dev: &CudaDevice,
        bases: &[Self::Affine],
    ) -> Result<Self::OnDevice, zkforge_cuda::CudaError>;
    fn msm(
        dev: &CudaDevice,
        bases: &Self::OnDevice,
        scalars: &[Scalar],
        opts: &MsmOptions,
    ) -> Result<Self, zkforge_cuda::CudaError>;
}

/// `Points` for one group: its affine type, device bases, name, seed salt and device calls.
macro_rules! points {
    ($proj:ty, $affine:ty, $on_device:ty, $name:literal, $salt:literal, $upload:ident, $msm:ident) => {
        impl Points for $proj {
            type Affine = $affine;
            type OnDevice = $on_device;
            const NAME: &'static str = $name;
            const SALT: u64 = $salt;
            fn multi_exp(points: &[Self], scalars: &[Scalar]) -> Self {
                <$proj>::multi_exp(points, scalars)
            }
            fn upload(
                dev: &CudaDevice,
                bases: &[$affine],
            ) -> Result<Self::OnDevice, zkforge_cuda::CudaError> {
                dev.$upload(bases)
            }
            fn msm(
                dev: &CudaDevice,
                bases: &Self::OnDevice,
                scalars: &[Scalar],
                opts: &MsmOptions,
            ) -> Result<Self, zkforge_cuda::CudaError> {
                dev.$msm(bases, &dev.upload_scalars(scalars)?, opts)
            }
        }
    };
}

points!(
    G1Projective,
    G1Affine,
    zkforge_cuda::DeviceBasesG1,
    "g1",
    0x91,
    upload_g1,
    msm_g1_resident_with
);
points!(
    G2Projective,
    G2Affine,
    zkforge_cuda::DeviceBasesG2,
    "g2",
    0x92,
    upload_g2,
    msm_g2_resident_with
);

/// Distinct random points: each chunk starts at a random multiple of the generator and walks
/// by a fixed random step, so n points cost n additions instead of n scalar multiplications.
pub fn random_points<P: Points>(n: usize, seed: u64) -> Vec<P::Affine> {
    let mut r = ChaCha20Rng::seed_from_u64(seed ^ P::SALT);
    let step = P::generator() * Scalar::random(&mut r);
    let mut out = vec![P::Affine::identity(); n];
    out.par_chunks_mut(1 << 12).enumerate().for_each(|(i, ch)| {
        let mut r = ChaCha20Rng::seed_from_u64(seed ^ ((i as u64) << 20) ^ P::SALT);
        let mut p = P::generator() * Scalar::random(&mut r);
        let mut proj = Vec::with_capacity(ch.len());
        for _ in 0..ch.len() {
            proj.push(p);
            p += step;
        }
        P::batch_normalize(&proj, ch);
    });
    out
}

pub fn random_g1(n: usize, seed: u64) -> Vec<G1Affine> {
    random_points::<G1Projective>(n, seed)
}

pub fn random_g2(n: usize, seed: u64) -> Vec<G2Affine> {
    random_points::<G2Projective>(n, seed)
}

/// Σ s[i]·b[i] by blst's Pippenger (the reference the device's MSMs are held to).
pub fn cpu_msm<P: Points>(b: &[P::Affine], s: &[Scalar]) -> P {
    // Identity bases contribute nothing; dropping them keeps blst's Pippenger on its happy path.
    let (b, s): (Vec<P::Affine>, Vec<Scalar>) = b
        .iter()
        .zip(s)
        .filter(|(p, _)| !bool::from(p.is_identity()))
        .map(|(p, s)| (*p, *s))
        .unzip();
    let p: Vec<P> = b.par_iter().map(|x| x.to_curve()).collect();
    // blst's Pippenger mishandles n = 1 and identity points on some versions; a plain sum
    // for tiny inputs keeps the reference unquestionable.
    if s.len() <= 64 {
        return p.iter().zip(&s).map(|(p, s)| *p * s).sum();
    }
    p.par_chunks(1 << 16)
        .zip(s.par_chunks(1 << 16))
        .map(|(p, s)| P::multi_exp(p, s))
        .reduce(P::identity, |a, b| a + b)
}

pub fn cpu_msm_g1(b: &[G1Affine], s: &[Scalar]) -> G1Projective {
    cpu_msm::<G1Projective>(b, s)
}

pub fn cpu_msm_g2(b: &[G2Affine], s: &[Scalar]) -> G2Projective {
    cpu_msm::<G2Projective>(b, s)
}

/// Σ_j a[j]·x^j
pub fn eval_poly(a: &[Scalar], x: Scalar) -> Scalar {
    let chunk = 1 << 16;
    a.par_chunks(chunk)
        .enumerate()
        .map(|(i, c)| {
            let mut acc = Scalar::ZERO;
            for v in c.iter().rev() {
                acc = acc * x + v;
            }
            acc * x.pow_vartime([(i * chunk) as u64])
        })
        .sum()
}

pub fn cpu_h(a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Vec<Scalar> {
    let m = a.len();
    let mut v = [a.to_vec(), b.to_vec(), c.to_vec()];
    v.par_iter_mut().for_each(|x| {
        cpu_ntt(x, NttDirection::Inverse, false);
        cpu_ntt(x, NttDirection::Forward, true);
    });
    let zinv = coset_z_inv(m);
    let mut t: Vec<Scalar> = (0..m)
        .map(|i| (v[0][i] * v[1][i] - v[2][i]) * zinv)
        .collect();
    cpu_ntt(&mut t, NttDirection::Inverse, true);
    t.truncate(m - 1);
    t
}

/// Outcome of one check, for the summary table.
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

fn rec(out: &mut Vec<Check>, name: String, ok: bool, detail: String) {
    println!("{} {name} {detail}", if ok { "PASS" } else { "FAIL" });
    out.push(Check { name, ok, detail });
}

/// NTT at 2^log_n: full comparison with the CPU for small sizes, otherwise direct evaluation
/// at random indices plus inverse round trips.
pub fn check_ntt(dev: &CudaDevice, log_n: u32, seed: u64, out: &mut Vec<Check>) {
    let n = 1usize << log_n;
    let x = random_scalars(n, seed);
    let full = log_n <= 16;
    for (dir, coset) in [
        (NttDirection::Forward, false),
        (NttDirection::Forward, true),
        (NttDirection::Inverse, false),
        (NttDirection::Inverse, true),
    ] {
        let name = format!("ntt 2^{log_n} {dir:?}{}", if coset { " coset" } else { "" });
        let mut g = x.clone();
        let t = std::time::Instant::now();
        if let Err(e) = dev.ntt(&mut g, dir, coset) {
            rec(out, name, false, format!("error {e}"));
            continue;
        }
        let gpu_ms = t.elapsed().as_secs_f64() * 1e3;
        let ok = if full {
            let mut c = x.clone();
            cpu_ntt(&mut c, dir, coset);
            c == g
        } else if dir == NttDirection::Forward {
            let mut r = ChaCha20Rng::seed_from_u64(seed ^ 0x5eed);
            let w = omega(log_n);
            let gcos = if coset {
                Scalar::MULTIPLICATIVE_GENERATOR
            } else {
                Scalar::ONE
            };
            (0..3).all(|_| {
                let i = r.gen_range(0..n);
                eval_poly(&x, gcos * w.pow_vartime([i as u64])) == g[i]
            })
        } else {
            let mut back = g.clone();
            dev.ntt(&mut back, NttDirection::Forward, coset).is_ok() && back == x
        };
        rec(
            out,
            name,
            ok,
            format!(
                "({}; call {gpu_ms:.1} ms)",
                if full {
                    "full vs CPU"
                } else if dir == NttDirection::Forward {
                    "3 random points by direct evaluation"
                } else {
                    "round trip"
                }
            ),
        );
    }
}

pub fn check_h(dev: &CudaDevice, log_m: u32, seed: u64, out: &mut Vec<Check>) {
    let m = 1usize << log_m;
    let a = random_scalars(m, seed);
    let b = random_scalars(m, seed ^ 1);
    let c = random_scalars(m, seed ^ 2);
    let name = format!("h_coefficients 2^{log_m}");
    match dev.h_coefficients(&a, &b, &c) {
        Ok(h) => {
            let r = cpu_h(&a, &b, &c);
            rec(
                out,
                name,
                h.len() == m - 1 && h == r,
                format!("(len {})", h.len()),
            );
        }
        Err(e) => rec(out, name, false, format!("error {e}")),
    }
}

/// Scalar mixes for the MSM checks.
pub fn scalar_mix(kind: &str, n: usize, seed: u64) -> Vec<Scalar> {
    let mut r = ChaCha20Rng::seed_from_u64(seed ^ 0x3131);
    let minus_one = -Scalar::ONE;
    match kind {
        "random" => random_scalars(n, seed),
        "bits" => bit_scalars(n, seed),
        "edge" => (0..n)
            .map(|i| match i % 7 {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                2 => minus_one,
                3 => Scalar::from(r.gen::<u64>()),
                4 => Scalar::from(2u64),
                _ => Scalar::random(&mut r),
            })
            .collect(),
        // Every scalar equal: one bucket per window holds every point (worst-case imbalance
        // and repeated-point doublings).
        "same" => vec![Scalar::from(0xdead_beefu64); n],
        // Small values (many windows all zero above the first) and r − small (every window
        // full, the signed carry running through the top).
        "small" => (0..n)
            .map(|_| Scalar::from(r.gen_range(2u64..1 << 20)))
            .collect(),
        "high" => (0..n)
            .map(|_| minus_one - Scalar::from(r.gen_range(0u64..1 << 20)))
            .collect(),
        // A 32 GiB PoRep witness: 45% zeros, 45% ones, 10% random.
        "porep" => porep_scalars(n, seed),
        "sparse" => (0..n)
            .map(|i| {
                if i % 10 == 0 {
                    Scalar::random(&mut r)
                } else if i % 3 == 0 {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                }
            })
            .collect(),
        _ => unreachable!(),
    }
}

/// 45% zeros, 45% ones, 10% random: the aux assignment of a 32 GiB PoRep partition.
pub fn porep_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = random_scalars(n, seed);
    out.par_chunks_mut(1 << 16).enumerate().for_each(|(i, ch)| {
        let mut r = ChaCha20Rng::seed_from_u64(seed ^ ((i as u64) << 32) ^ 0x9e9);
        for s in ch.iter_mut() {
            match r.gen_range(0..20u32) {
                0..=8 => *s = Scalar::ZERO,
                9..=17 => *s = Scalar::ONE,
                _ => {}
            }
        }
    });
    out
}

/// Short label of MSM options for check and bench names.
pub fn opts_label(o: &MsmOptions) -> String {
    format!(
        "{}{}{}{}",
        if o.signed { "signed" } else { "plain" },
        o.window_bits.map_or(String::new(), |c| format!(" c={c}")),
        match o.accumulate {
            Accumulate::Auto => "",
            Accumulate::Xyzz => " xyzz",
            Accumulate::Affine => " affine",
        },
        if o.affine_slots == MsmOptions::default().affine_slots {
            String::new()
        } else {
            format!(" slots={}", o.affine_slots)
        }
    )
}

/// Bases with repeated and opposite points and identities mixed in, for the edge-case mixes.
pub fn with_edge_bases<A: PrimeCurveAffine + std::ops::Neg<Output = A>>(mut b: Vec<A>) -> Vec<A> {
    let n = b.len();
    for i in (0..n).step_by(5) {
        b[i] = A::identity();
    }
    for i in (1..n).step_by(5) {
        b[i] = b[(i + 2) % n];
    }
    // Opposite points too: with equal scalars a bucket meets P and −P.
    for i in (2..n).step_by(5) {
        b[i] = -b[(i + 2) % n];
    }
    b
}

pub fn with_edge_bases_g1(b: Vec<G1Affine>) -> Vec<G1Affine> {
    with_edge_bases(b)
}

pub fn with_edge_bases_g2(b: Vec<G2Affine>) -> Vec<G2Affine> {
    with_edge_bases(b)
}

/// The device's MSM of n points against the CPU's, over distinct bases and over bases with
/// repeats, opposites and identities, for each scalar mix in `kinds`.
pub fn check_msm<P: Points>(
    dev: &CudaDevice,
    n: usize,
    kinds: &[&str],
    seed: u64,
    opts: &MsmOptions,
    out: &mut Vec<Check>,
) {
    let plain = random_points::<P>(n, seed);
    for (bi, bases) in [plain.clone(), with_edge_bases(plain)]
        .into_iter()
        .enumerate()
    {
        let d = match P::upload(dev, &bases) {
            Ok(d) => d,
            Err(e) => {
                return rec(
                    out,
                    format!("{} upload {n}", P::NAME),
                    false,
                    format!("error {e}"),
                )
            }
        };
        for kind in kinds {
            let s = scalar_mix(kind, n, seed ^ bi as u64);
            let name = format!(
                "msm_{} n={n} {} scalars={kind} bases={}",
                P::NAME,
                opts_label(opts),
                if bi == 0 {
                    "distinct"
                } else {
                    "repeated+identity"
                }
            );
            match P::msm(dev, &d, &s, opts) {
                Ok(g) => rec(out, name, g == cpu_msm::<P>(&bases, &s), String::new()),
                Err(e) => rec(out, name, false, format!("error {e}")),
            }
        }
    }
}

pub fn check_msm_g1(dev: &CudaDevice, n: usize, kinds: &[&str], seed: u64, out: &mut Vec<Check>) {
    check_msm::<G1Projective>(dev, n, kinds, seed, &MsmOptions::default(), out)
}

pub fn check_msm_g2(dev: &CudaDevice, n: usize, kinds: &[&str], seed: u64, out: &mut Vec<Check>) {
    check_msm::<G2Projective>(dev, n, kinds, seed, &MsmOptions::default(), out)
}

/// Also checks that a prefix of the resident bases is used when fewer scalars are given.
pub fn check_msm_prefix(dev: &CudaDevice, seed: u64, out: &mut Vec<Check>) {
    let b = random_g1(1000, seed);
    let s = random_scalars(777, seed);
    let ok = dev
        .upload_g1(&b)
        .and_then(|d| dev.msm_g1(&d, &s))
        .map(|g| g == cpu_msm_g1(&b[..777], &s));
    rec(
        out,
        "msm_g1 prefix 777 of 1000 bases".into(),
        matches!(ok, Ok(true)),
        format!("{:?}", ok.err()),
    );
}
