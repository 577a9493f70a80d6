//! The Groth16 pairing check: e(A, B) = e(α, β) · e(Σ xᵢ·ICᵢ, γ) · e(C, δ).

use blstrs::{Bls12, G2Prepared, Gt, Scalar};
use group::{prime::PrimeCurveAffine, Curve, Group};
use pairing::{MillerLoopResult, MultiMillerLoop};

use crate::msm::{msm, G1};
use crate::{Error, Proof, Result, VerifyingKey};

/// Checks `proof` against `public_inputs` (without the leading ONE).
pub fn verify(vk: &VerifyingKey, proof: &Proof, public_inputs: &[Scalar]) -> Result<bool> {
    if public_inputs.len() + 1 != vk.ic.len() {
        return Err(Error::PublicInputCount(
            public_inputs.len(),
            vk.ic.len().saturating_sub(1),
        ));
    }
    // An MSM, not a sum of scalar multiplications: a 32 GiB WindowPoSt has 23,490 public
    // inputs, 2.7 s one by one on the box, a proof's self-check took longer than its synthesis.
    let acc = vk.ic[0].to_curve() + msm::<G1>(&vk.ic[1..], public_inputs);
    // e(A, B) · e(acc, −γ) · e(C, −δ) · e(−α, β) = 1: one Miller loop, one final exponentiation.
    let neg_alpha = (-vk.alpha_g1.to_curve()).to_affine();
    let pairs = [
        (proof.a, G2Prepared::from(proof.b)),
        (acc.to_affine(), G2Prepared::from(-vk.gamma_g2)),
        (proof.c, G2Prepared::from(-vk.delta_g2)),
        (neg_alpha, G2Prepared::from(vk.beta_g2)),
    ];
    let terms: Vec<_> = pairs.iter().map(|(g1, g2)| (g1, g2)).collect();
    let product: Gt = Bls12::multi_miller_loop(&terms).final_exponentiation();
    Ok(bool::from(product.is_identity()))
}
