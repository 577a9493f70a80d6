//! A = α + rδ + ΣA,  B = β + sδ + ΣB,  C = sA' + rB' + rsδ + sα + rβ + ΣH + ΣL (bellperson's terms,
//! with A' = ΣA and B' = ΣB in G1).

use group::{prime::PrimeCurveAffine, Curve};

use super::{ProofRandomness, QuerySums};
use crate::{Error, Proof, Result, VerifyingKey};

pub fn assemble(vk: &VerifyingKey, q: &QuerySums, rnd: ProofRandomness) -> Result<Proof> {
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(Error::MalformedVerifyingKey(
            "delta is the point at infinity".into(),
        ));
    }
    let ProofRandomness { r, s } = rnd;
    let a = vk.alpha_g1 + vk.delta_g1 * r + q.a;
    let b = vk.beta_g2 + vk.delta_g2 * s + q.b_g2;
    let c =
        q.a * s + q.b_g1 * r + vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + q.h + q.l;
    Ok(Proof {
        a: a.to_affine(),
        b: b.to_affine(),
        c: c.to_affine(),
    })
}
