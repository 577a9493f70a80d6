//! Host-side math shared by the GPU driver and the tests: domain roots, power tables,
//! raw-limb views of blstrs types, XYZZ to projective conversion, and a CPU reference NTT.

use crate::NttDirection;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};
use group::Group;
use zkforge_groth16::poly::Domain;

/// How the GPU cuts one MSM. The default is the product path's; benchmarks and checks name
/// others to compare them, and the `[gpu]` table's `msm_*` keys set the backend's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmOptions {
    /// Signed window digits (|d| ≤ 2^(c−1): half the buckets, so wider windows, fewer of them).
    pub signed: bool,
    /// Window width in bits; None: the cost model's choice for the number of scalars.
    pub window_bits: Option<u32>,
    /// Windows whose buckets are filled at once; None: as many as the index entries and
    /// bucket memory of a batch allow.
    pub windows_per_batch: Option<u32>,
    /// Least sorted entries one accumulation thread adds (0: the chunk sizing's own choice).
    pub min_chunk: u32,
    /// How bucket points are added up.
    pub accumulate: Accumulate,
    /// Chunks a batch-affine thread aims to walk side by side, sharing each step's inversion:
    /// its chunks shorten (to 64 entries at least) until the GPU's resident threads get this
    /// many (at most 64). 0 keeps the XYZZ accumulation's chunks (256 entries for big batches).
    pub affine_slots: u32,
    /// Print each MSM's per-phase device times to stderr (tuning; it adds a sync per phase).
    pub profile: bool,
}

/// Bucket accumulation: XYZZ mixed additions, one chunk per thread; or affine additions,
/// several chunks per thread sharing one inversion per step (batch-affine).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accumulate {
    /// The curve's default (the faster one as measured; docs/gpu.md).
    Auto,
    Xyzz,
    Affine,
}

impl Default for MsmOptions {
    fn default() -> Self {
        MsmOptions {
            signed: true,
            window_bits: None,
            windows_per_batch: None,
            min_chunk: 0,
            accumulate: Accumulate::Auto,
            affine_slots: 64,
            profile: false,
        }
    }
}

/// ω of order n = 2^log_n, as the Groth16 crate's `Domain` chooses it (the one place it is
/// derived). Panics for 2^32 and beyond, which no domain reaches.
pub fn omega(log_n: u32) -> Scalar {
    Domain::with_log(log_n).expect("a domain below 2^32").omega
}

/// Tables such that w^e = lo[e mod 2^lb] · hi[e >> lb] for every e < 2^ebits.
pub struct PowTables {
    pub lb: u32,
    pub lo: Vec<Scalar>,
    pub hi: Vec<Scalar>,
}

pub fn pow_tables(w: Scalar, ebits: u32) -> PowTables {
    let lb = ebits.div_ceil(2).max(1);
    let hb = ebits.saturating_sub(lb);
    let mut lo = Vec::with_capacity(1 << lb);
    let mut x = Scalar::ONE;
    for _ in 0..(1u64 << lb) {
        lo.push(x);
        x *= w;
    }
    // x is now w^(2^lb)
    let mut hi = Vec::with_capacity(1 << hb);
    let mut y = Scalar::ONE;
    for _ in 0..(1u64 << hb) {
        hi.push(y);
        y *= x;
    }
    PowTables { lb, lo, hi }
}

pub fn scalars_as_u64(s: &[Scalar]) -> &[u64] {
    // SAFETY: Scalar is repr(transparent) over blst_fr, a repr(C) [u64; 4].
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u64, s.len() * 4) }
}

pub fn scalars_as_u64_mut(s: &mut [Scalar]) -> &mut [u64] {
    // SAFETY: as above; every bit pattern below the modulus is a valid Scalar and the device
    // only writes reduced field elements.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut u64, s.len() * 4) }
}

pub fn g1_affine_as_u64(p: &[G1Affine]) -> &[u64] {
    // SAFETY: G1Affine is repr(transparent) over blst_p1_affine = { x: [u64; 6], y: [u64; 6] }.
    unsafe { std::slice::from_raw_parts(p.as_ptr() as *const u64, p.len() * 12) }
}

pub fn g2_affine_as_u64(p: &[G2Affine]) -> &[u64] {
    // SAFETY: G2Affine is repr(transparent) over blst_p2_affine = { x: [[u64; 6]; 2], y: .. }.
    unsafe { std::slice::from_raw_parts(p.as_ptr() as *const u64, p.len() * 24) }
}

fn fp(l: &[u64]) -> blst::blst_fp {
    blst::blst_fp {
        l: l.try_into().expect("6 limbs"),
    }
}

fn fp2(l: &[u64]) -> blst::blst_fp2 {
    blst::blst_fp2 {
        fp: [fp(&l[..6]), fp(&l[6..12])],
    }
}

/// Device XYZZ (X, Y, ZZ, ZZZ in Montgomery form, 24 limbs) to a G1 point.
pub fn g1_from_xyzz(l: &[u64]) -> G1Projective {
    if l[12..18].iter().all(|&x| x == 0) {
        return G1Projective::identity();
    }
    let mut p = blst::blst_p1_affine::default();
    let mut inv = blst::blst_fp::default();
    // SAFETY: blst field arithmetic on initialised values.
    unsafe {
        blst::blst_fp_inverse(&mut inv, &fp(&l[12..18]));
        blst::blst_fp_mul(&mut p.x, &fp(&l[0..6]), &inv);
        blst::blst_fp_inverse(&mut inv, &fp(&l[18..24]));
        blst::blst_fp_mul(&mut p.y, &fp(&l[6..12]), &inv);
    }
    // SAFETY: G1Affine is repr(transparent) over blst_p1_affine.
    G1Projective::from(unsafe { std::mem::transmute::<blst::blst_p1_affine, G1Affine>(p) })
}

/// Device XYZZ over Fp2 (48 limbs) to a G2 point.
pub fn g2_from_xyzz(l: &[u64]) -> G2Projective {
    if l[24..36].iter().all(|&x| x == 0) {
        return G2Projective::identity();
    }
    let mut p = blst::blst_p2_affine::default();
    let mut inv = blst::blst_fp2::default();
    // SAFETY: as above.
    unsafe {
        blst::blst_fp2_inverse(&mut inv, &fp2(&l[24..36]));
        blst::blst_fp2_mul(&mut p.x, &fp2(&l[0..12]), &inv);
        blst::blst_fp2_inverse(&mut inv, &fp2(&l[36..48]));
        blst::blst_fp2_mul(&mut p.y, &fp2(&l[12..24]), &inv);
    }
    // SAFETY: G2Affine is repr(transparent) over blst_p2_affine.
    G2Projective::from(unsafe { std::mem::transmute::<blst::blst_p2_affine, G2Affine>(p) })
}

/// Z(g)⁻¹ on the coset of the domain of size m (a power of two), as `Domain` derives it.
pub fn coset_z_inv(m: usize) -> Scalar {
    Domain::for_len(m)
        .expect("a domain below 2^32")
        .vanishing_inverse_on_coset()
}

/// Reference NTT with the crate's exact conventions (natural order, coset generator 7).
pub fn cpu_ntt(data: &mut [Scalar], dir: NttDirection, coset: bool) {
    let n = data.len();
    assert!(n.is_power_of_two());
    let log_n = n.trailing_zeros();
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    if coset && dir == NttDirection::Forward {
        let mut p = Scalar::ONE;
        for x in data.iter_mut() {
            *x *= p;
            p *= g;
        }
    }
    let mut w = omega(log_n);
    if dir == NttDirection::Inverse {
        w = w.invert().unwrap();
    }
    for i in 0..n {
        let r = if log_n == 0 {
            0
        } else {
            i.reverse_bits() >> (usize::BITS - log_n)
        };
        if i < r {
            data.swap(i, r);
        }
    }
    let mut len = 2;
    while len <= n {
        let wl = w.pow_vartime([(n / len) as u64]);
        for chunk in data.chunks_mut(len) {
            let mut t = Scalar::ONE;
            let (a, b) = chunk.split_at_mut(len / 2);
            for (x, y) in a.iter_mut().zip(b.iter_mut()) {
                let v = *y * t;
                *y = *x - v;
                *x += v;
                t *= wl;
            }
        }
        len <<= 1;
    }
    if dir == NttDirection::Inverse {
        let ninv = Scalar::from(n as u64).invert().unwrap();
        let ginv = g.invert().unwrap();
        let mut p = ninv;
        for x in data.iter_mut() {
            *x *= p;
            if coset {
                p *= ginv;
            }
        }
    }
}
