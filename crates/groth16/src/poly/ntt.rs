//! In-place radix-2 NTT over the scalar field, parallel with rayon.
//!
//! Decimation in time: bit-reverse, then log n butterfly stages. The first stages run inside
//! cache-sized blocks (all of them per block before moving on); the later ones stream the array.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::par::SharedMut;
use super::Domain;

/// log2 of the block that the early stages finish in before the next block (2^11 scalars, 64 KiB).
const LOCAL_LOG: u32 = 11;
/// Butterflies per rayon task in the streaming stages.
const TASK: usize = 1 << 12;

/// Powers `root^j` for `j < n/2`: every twiddle factor of an NTT of size n.
pub struct Twiddles {
    n: usize,
    table: Vec<Scalar>,
}

impl Twiddles {
    pub fn new(root: Scalar, n: usize) -> Self {
        let half = n / 2;
        let mut table = vec![Scalar::ZERO; half];
        table
            .par_chunks_mut(TASK)
            .enumerate()
            .for_each(|(k, chunk)| {
                let mut w = root.pow_vartime([(k * TASK) as u64]);
                for t in chunk {
                    *t = w;
                    w *= root;
                }
            });
        Self { n, table }
    }

    pub fn forward(domain: &Domain) -> Self {
        Self::new(domain.omega, domain.n)
    }

    pub fn inverse(domain: &Domain) -> Self {
        Self::new(domain.omega_inv, domain.n)
    }
}

/// Evaluates the polynomial with coefficients `data` on the domain: `out[i] = Σ data[j]·ω^{ij}`.
pub fn forward(data: &mut [Scalar], tw: &Twiddles) {
    ntt(data, tw);
}

/// Interpolates: the inverse of [`forward`], `tw` built from ω^-1.
pub fn inverse(data: &mut [Scalar], tw: &Twiddles, domain: &Domain) {
    ntt(data, tw);
    scale(data, domain.n_inv);
}

/// Evaluates on the coset g·H: multiplies coefficient j by g^j, then [`forward`].
pub fn coset_forward(data: &mut [Scalar], tw: &Twiddles) {
    distribute_powers(data, Domain::coset_shift(), Scalar::ONE);
    ntt(data, tw);
}

/// Interpolates from the coset g·H: the inverse of [`coset_forward`].
pub fn coset_inverse(data: &mut [Scalar], tw: &Twiddles, domain: &Domain) {
    ntt(data, tw);
    let g_inv = Domain::coset_shift().invert().unwrap();
    distribute_powers(data, g_inv, domain.n_inv);
}

/// `data[j] *= scale · g^j`.
pub fn distribute_powers(data: &mut [Scalar], g: Scalar, scale: Scalar) {
    data.par_chunks_mut(TASK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut u = g.pow_vartime([(k * TASK) as u64]) * scale;
            for v in chunk {
                *v *= u;
                u *= g;
            }
        });
}

fn scale(data: &mut [Scalar], s: Scalar) {
    data.par_iter_mut().for_each(|v| *v *= s);
}

fn ntt(data: &mut [Scalar], tw: &Twiddles) {
    let n = data.len();
    assert!(n.is_power_of_two(), "NTT size {n} is not a power of two");
    assert_eq!(tw.n, n, "twiddles for size {} used on size {n}", tw.n);
    if n == 1 {
        return;
    }
    let log_n = n.trailing_zeros();
    bit_reverse(data, log_n);

    let local = LOCAL_LOG.min(log_n);
    let local_tw: Vec<Vec<Scalar>> = (0..local)
        .map(|s| {
            let stride = n >> (s + 1);
            (0..1usize << s).map(|j| tw.table[j * stride]).collect()
        })
        .collect();
    data.par_chunks_mut(1 << local).for_each(|block| {
        for (s, w) in local_tw.iter().enumerate() {
            stage_in_block(block, 1 << s, w);
        }
    });

    for s in local..log_n {
        streaming_stage(data, s, &tw.table);
    }
}

#[inline(always)]
fn butterfly(x: &mut Scalar, y: &mut Scalar, w: Option<&Scalar>) {
    let v = match w {
        Some(w) => *y * w,
        None => *y,
    };
    let u = *x;
    *x = u + v;
    *y = u - v;
}

fn stage_in_block(block: &mut [Scalar], half: usize, w: &[Scalar]) {
    for group in block.chunks_exact_mut(2 * half) {
        let (lo, hi) = group.split_at_mut(half);
        butterfly(&mut lo[0], &mut hi[0], None);
        for j in 1..half {
            butterfly(&mut lo[j], &mut hi[j], Some(&w[j]));
        }
    }
}

/// One stage with half-length 2^s over the whole array, split into equal rayon tasks.
fn streaming_stage(data: &mut [Scalar], s: u32, table: &[Scalar]) {
    let n = data.len();
    let half = 1usize << s;
    let stride = n >> (s + 1);
    let ptr = SharedMut(data.as_mut_ptr());
    (0..n / 2).into_par_iter().step_by(TASK).for_each(|start| {
        let end = (start + TASK).min(n / 2);
        for t in start..end {
            let j = t & (half - 1);
            let i0 = ((t >> s) << (s + 1)) | j;
            // SAFETY: butterfly t alone touches i0 and i0 + half in this stage.
            let (x, y) = unsafe { (&mut *ptr.at(i0), &mut *ptr.at(i0 + half)) };
            butterfly(x, y, (j != 0).then(|| &table[j * stride]));
        }
    });
}

fn bit_reverse(data: &mut [Scalar], log_n: u32) {
    let n = data.len();
    let ptr = SharedMut(data.as_mut_ptr());
    (0..n).into_par_iter().step_by(TASK).for_each(|start| {
        for i in start..(start + TASK).min(n) {
            let j = i.reverse_bits() >> (usize::BITS - log_n);
            if i < j {
                // SAFETY: the pair (i, j) is swapped only by the task owning the smaller index.
                unsafe { std::ptr::swap(ptr.at(i), ptr.at(j)) };
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    fn random(n: usize, seed: u64) -> Vec<Scalar> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| Scalar::random(&mut rng)).collect()
    }

    fn naive_dft(coeffs: &[Scalar], root: Scalar) -> Vec<Scalar> {
        (0..coeffs.len())
            .map(|i| {
                let wi = root.pow_vartime([i as u64]);
                let mut x = Scalar::ONE;
                let mut acc = Scalar::ZERO;
                for c in coeffs {
                    acc += *c * x;
                    x *= wi;
                }
                acc
            })
            .collect()
    }

    #[test]
    fn forward_matches_naive_dft() {
        for log_n in [0u32, 1, 2, 3, 5, 8, 12] {
            let d = Domain::with_log(log_n).unwrap();
            let input = random(d.n, log_n as u64);
            let mut fast = input.clone();
            forward(&mut fast, &Twiddles::forward(&d));
            let naive = naive_dft(&input, d.omega);
            assert_eq!(fast, naive, "size 2^{log_n}");
        }
    }

    #[test]
    fn coset_forward_matches_naive_evaluation_on_coset() {
        let d = Domain::with_log(7).unwrap();
        let input = random(d.n, 99);
        let mut fast = input.clone();
        coset_forward(&mut fast, &Twiddles::forward(&d));
        let g = Domain::coset_shift();
        let shifted: Vec<Scalar> = input
            .iter()
            .enumerate()
            .map(|(j, c)| *c * g.pow_vartime([j as u64]))
            .collect();
        assert_eq!(fast, naive_dft(&shifted, d.omega));
    }

    #[test]
    fn inverses_undo_forwards() {
        for log_n in [1u32, 4, 11, 12, 14] {
            let d = Domain::with_log(log_n).unwrap();
            let (fw, inv) = (Twiddles::forward(&d), Twiddles::inverse(&d));
            let input = random(d.n, 7 + log_n as u64);
            let mut x = input.clone();
            forward(&mut x, &fw);
            assert_ne!(x, input);
            inverse(&mut x, &inv, &d);
            assert_eq!(x, input, "inverse∘forward, 2^{log_n}");
            coset_forward(&mut x, &fw);
            coset_inverse(&mut x, &inv, &d);
            assert_eq!(x, input, "coset inverse∘forward, 2^{log_n}");
        }
    }
}
