//! Benchmark keys: valid curve points of the right count for a witness, made by tiling a few
//! thousand distinct multiples, with no trapdoor behind them. Proofs made with them never
//! verify; they exist to time the prover at sizes whose real keys take hours to generate.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use crate::poly::Domain;
use crate::{ProvingKey, Result, VerifyingKey, Witness};

/// Distinct points per query before the pattern repeats (bucket work does not see repeats).
const DISTINCT: usize = 1 << 16;

/// k·R for k = 1..=n, R random: distinct valid points without a scalar multiplication each.
fn multiples<P: Group + Curve>(n: usize, rng: &mut impl RngCore) -> Vec<P::AffineRepr>
where
    P::AffineRepr: Copy + Default,
{
    let r = P::random(rng);
    let mut acc = r;
    let proj: Vec<P> = (0..n)
        .map(|_| {
            let p = acc;
            acc += r;
            p
        })
        .collect();
    let mut out = vec![P::AffineRepr::default(); n];
    P::batch_normalize(&proj, &mut out);
    out
}

fn tile<T: Copy + Send + Sync>(pattern: &[T], len: usize) -> Vec<T> {
    (0..len)
        .into_par_iter()
        .map(|i| pattern[i % pattern.len()])
        .collect()
}

/// A key of the shape `w` needs (see `ProvingKey::check_fits`), for benchmarks only.
pub fn tiled_key_for(w: &Witness, rng: &mut impl RngCore) -> Result<ProvingKey> {
    let domain = Domain::for_len(w.num_constraints())?;
    let g1 = multiples::<G1Projective>(DISTINCT, rng);
    let g2 = multiples::<G2Projective>(DISTINCT, rng);
    let b = w.b_input_density.count() + w.b_aux_density.count();
    let point1 =
        |rng: &mut dyn RngCore| (G1Projective::generator() * Scalar::random(rng)).to_affine();
    let point2 =
        |rng: &mut dyn RngCore| (G2Projective::generator() * Scalar::random(rng)).to_affine();
    let vk = VerifyingKey {
        alpha_g1: point1(rng),
        beta_g1: point1(rng),
        beta_g2: point2(rng),
        gamma_g2: point2(rng),
        delta_g1: point1(rng),
        delta_g2: point2(rng),
        ic: tile(&g1, w.inputs.len()),
    };
    Ok(ProvingKey {
        vk,
        h: tile::<G1Affine>(&g1, domain.n - 1),
        l: tile(&g1, w.aux.len()),
        a: tile(&g1, w.inputs.len() + w.a_aux_density.count()),
        b_g1: tile(&g1, b),
        b_g2: tile::<G2Affine>(&g2, b),
    })
}
