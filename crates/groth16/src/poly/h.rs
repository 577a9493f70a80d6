//! Groth16's quotient polynomial h = (A·B − C) / Z, computed on a coset as bellperson does.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{coset_forward, coset_inverse, inverse, Domain, Twiddles};
use crate::Result;

/// The `n − 1` coefficients of h, from the per-constraint evaluations of A, B and C.
///
/// Pads to the domain size n, interpolates each of a, b, c, evaluates them on the coset g·H,
/// forms (a·b − c)/Z(g) pointwise and interpolates back. The last coefficient is always zero.
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
        || rayon::join(|| to_coset(&mut b), || to_coset(&mut c)),
    );

    let z_inv = domain.vanishing_inverse_on_coset();
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .for_each(|((a, b), c)| {
            *a = (*a * b - c) * z_inv;
        });
    crate::reaper::drop_later((b, c));

    coset_inverse(&mut a, &inv, domain);
    a.truncate(domain.n - 1);
    Ok(a)
}
