//! The scalars every key point is made from: the QAP polynomials of the recorded matrices
//! evaluated at τ, combined with the toxic waste.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::Setup;
use crate::poly::{inverse, Domain, Twiddles};
use crate::r1cs::{ConstraintMatrices, SparseMatrix, COEFF_MINUS_ONE, COEFF_ONE};
use crate::synthesis::Density;

/// The h query scalars τ^i·Z(τ)/δ (i < n − 1) and the Lagrange basis evaluated at τ.
pub(super) fn h_and_lagrange(domain: &Domain, s: &Setup) -> (Vec<Scalar>, Vec<Scalar>) {
    const CHUNK: usize = 1 << 14;
    let mut powers = vec![Scalar::ZERO; domain.n];
    powers
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut p = s.tau.pow_vartime([(k * CHUNK) as u64]);
            for v in chunk {
                *v = p;
                p *= s.tau;
            }
        });
    let z_tau = s.tau.pow_vartime([domain.n as u64]) - Scalar::ONE;
    let h_coeff = z_tau * s.delta.invert().unwrap();
    let h = powers[..domain.n - 1]
        .par_iter()
        .map(|p| *p * h_coeff)
        .collect();
    // L_j(τ) = (1/n) Σ_i τ^i ω^{-ij}: an inverse NTT of the powers of τ.
    inverse(&mut powers, &Twiddles::inverse(domain), domain);
    (h, powers)
}

/// Column j's polynomial at τ: Σ over rows r of M[r][j]·L_r(τ).
///
/// One pass over the rows in order (a column's entries are spread over many rows, so the
/// sums cannot be split by rows without a copy per thread); the caller runs A, B and C at once.
fn columns_at_tau(
    m: &SparseMatrix,
    coefficients: &[Scalar],
    lagrange: &[Scalar],
    columns: usize,
) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; columns];
    for (r, l) in lagrange.iter().enumerate().take(m.rows()) {
        for e in m.row(r) {
            let acc = &mut out[e.column as usize];
            match e.coeff {
                COEFF_ONE => *acc += l,
                COEFF_MINUS_ONE => *acc -= l,
                id => *acc += coefficients[id as usize] * l,
            }
        }
    }
    out
}

/// The scalars of the verifying key's ic and of the four G1/G2 queries besides h.
pub(super) struct QueryScalars {
    pub ic: Vec<Scalar>,
    pub l: Vec<Scalar>,
    pub a: Vec<Scalar>,
    /// Shared by b_g1 and b_g2.
    pub b: Vec<Scalar>,
}

impl QueryScalars {
    pub fn new(m: &ConstraintMatrices, lagrange: &[Scalar], s: &Setup) -> Self {
        let columns = m.num_inputs + m.num_aux;
        let at = |x: &SparseMatrix| columns_at_tau(x, &m.coefficients, lagrange, columns);
        let (a_tau, (b_tau, c_tau)) =
            rayon::join(|| at(&m.a), || rayon::join(|| at(&m.b), || at(&m.c)));
        let n_in = m.num_inputs;

        let combine = |range: std::ops::Range<usize>, inv: Scalar| -> Vec<Scalar> {
            range
                .into_par_iter()
                .map(|j| (s.beta * a_tau[j] + s.alpha * b_tau[j] + c_tau[j]) * inv)
                .collect()
        };
        let select = |v: &[Scalar], d: &Density| -> Vec<Scalar> {
            v.iter()
                .zip(d.iter())
                .filter_map(|(x, marked)| marked.then_some(*x))
                .collect()
        };
        let mut a = a_tau[..n_in].to_vec();
        a.extend(select(&a_tau[n_in..], &m.a_aux_density));
        let mut b = select(&b_tau[..n_in], &m.b_input_density);
        b.extend(select(&b_tau[n_in..], &m.b_aux_density));
        Self {
            ic: combine(0..n_in, s.gamma.invert().unwrap()),
            l: combine(n_in..columns, s.delta.invert().unwrap()),
            a,
            b,
        }
    }
}
