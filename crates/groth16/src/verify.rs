//! The Groth16 pairing check: e(A, B) = e(α, β) · e(Σ xᵢ·ICᵢ, γ) · e(C, δ).

use blstrs::{Bls12, G2Prepared, Gt, Scalar};
use group::{prime::PrimeCurveAffine, Curve};
use pairing::{MillerLoopResult, MultiMillerLoop};

use crate::{Error, Proof, Result, VerifyingKey};

/// Checks `proof` against `public_inputs` (without the leading ONE).
pub fn verify(vk: &VerifyingKey, proof: &Proof, public_inputs: &[Scalar]) -> Result<bool> {
    if public_inputs.len() + 1 != vk.ic.len() {
        return Err(Error::PublicInputCount(
            public_inputs.len(),
            vk.ic.len().saturating_sub(1),
        ));
    }
    let mut acc = vk.ic[0].to_curve();
    for (x, ic) in public_inputs.iter().zip(&vk.ic[1..]) {
        acc += *ic * x;
    }
    let neg_gamma = G2Prepared::from(-vk.gamma_g2);
    let neg_delta = G2Prepared::from(-vk.delta_g2);
    let b = G2Prepared::from(proof.b);
    let acc = acc.to_affine();
    let ml =
        Bls12::multi_miller_loop(&[(&proof.a, &b), (&acc, &neg_gamma), (&proof.c, &neg_delta)]);
    let lhs: Gt = ml.final_exponentiation();
    let rhs = Bls12::multi_miller_loop(&[(&vk.alpha_g1, &G2Prepared::from(vk.beta_g2))])
        .final_exponentiation();
    Ok(lhs == rhs)
}
