//! Groth16's quotient polynomial h = (A·B − C) / Z, computed on a coset: bellperson's values,
//! one transform fewer.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{coset_forward, coset_inverse, inverse, Domain, Twiddles};
use crate::Result;

/// The `n − 1` coefficients of h, from the per-constraint evaluations of A, B and C.
///
/// Pads to the domain size n and computes what bellperson computes, the coset inverse of
/// (a·b − c)/Z(g) on the coset g·H, with one transform fewer: the coset inverse is linear and
/// C has degree < n, so coset-iNTT(C on the coset) is C's coefficients, iNTT(c). Hence
/// h = (coset-iNTT(A·B on the coset) − iNTT(c))/Z(g): a and b are interpolated and evaluated on
/// the coset, c only interpolated. The identity holds for any a, b, c (satisfied or not), so the
/// coefficients equal bellperson's to the byte. The last coefficient is always zero.
pub fn h_coefficients(a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> Result<Vec<Scalar>> {
    let domain = Domain::for_len(a.len().max(b.len()).max(c.len()))?;
    let pad = |mut v: Vec<Scalar>| {
        v.resize(domain.n, Scalar::ZERO);
        v
    };
    h_from_padded(&domain, pad(a), pad(b), pad(c))
}

/// [`h_coefficients`] on inputs already of the domain's size.
pub fn h_from_padded(
    domain: &Domain,
    mut a: Vec<Scalar>,
    mut b: Vec<Scalar>,
    mut c: Vec<Scalar>,
) -> Result<Vec<Scalar>> {
    let (fw, inv) = rayon::join(|| Twiddles::forward(domain), || Twiddles::inverse(domain));
    let to_coset = |v: &mut Vec<Scalar>| {
        inverse(v, &inv, domain);
        coset_forward(v, &fw);
    };
    rayon::join(
        || to_coset(&mut a),
        || rayon::join(|| to_coset(&mut b), || inverse(&mut c, &inv, domain)),
    );

    a.par_iter_mut()
        .zip(b.par_iter())
        .for_each(|(a, b)| *a *= b);
    crate::exec::reaper::drop_later(b);
    coset_inverse(&mut a, &inv, domain);

    let z_inv = domain.vanishing_inverse_on_coset();
    a.par_iter_mut()
        .zip(c.par_iter())
        .for_each(|(a, c)| *a = (*a - c) * z_inv);
    crate::exec::reaper::drop_later(c);
    a.truncate(domain.n - 1);
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    fn random(n: usize, seed: u64) -> Vec<Scalar> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| Scalar::random(&mut rng)).collect()
    }

    /// bellperson's chain: all three to the coset, (a·b − c)/Z(g), back.
    fn seven_transforms(domain: &Domain, a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Vec<Scalar> {
        let (fw, inv) = (Twiddles::forward(domain), Twiddles::inverse(domain));
        let [mut a, b, c] = [a, b, c].map(|v| {
            let mut v = v.to_vec();
            inverse(&mut v, &inv, domain);
            coset_forward(&mut v, &fw);
            v
        });
        let z_inv = domain.vanishing_inverse_on_coset();
        for i in 0..domain.n {
            a[i] = (a[i] * b[i] - c[i]) * z_inv;
        }
        coset_inverse(&mut a, &inv, domain);
        a.truncate(domain.n - 1);
        a
    }

    #[test]
    fn six_transforms_equal_the_seven_on_any_input() {
        // Random a, b, c satisfy no constraint system: the identity must not depend on it.
        for log_n in [0u32, 1, 3, 10, 13] {
            let domain = Domain::with_log(log_n).unwrap();
            let [a, b, c] = [1u64, 2, 3].map(|k| random(domain.n, 100 * log_n as u64 + k));
            let want = seven_transforms(&domain, &a, &b, &c);
            let got = h_from_padded(&domain, a, b, c).unwrap();
            assert_eq!(got, want, "2^{log_n}");
        }
    }
}
