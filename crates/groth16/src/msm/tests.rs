use blstrs::{G1Affine, G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand_core::SeedableRng;

use super::{group::MsmGroup, group::G1, group::G2, msm, msm_with_density};
use crate::synthesis::Density;

fn naive<P: Group<Scalar = Scalar>>(bases: &[P], scalars: &[Scalar]) -> P {
    bases
        .iter()
        .zip(scalars)
        .fold(P::identity(), |acc, (b, s)| acc + *b * s)
}

/// Scalars mixing zeros, ones, r−1 and random values, as real witnesses do.
fn scalars(n: usize, rng: &mut impl rand_core::RngCore) -> Vec<Scalar> {
    (0..n)
        .map(|i| match i % 5 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            2 => -Scalar::ONE,
            _ => Scalar::random(&mut *rng),
        })
        .collect()
}

/// `msm` over `proj` (as affine bases) and fresh [`scalars`] equals the naive sum.
fn matches_naive_sum<G>(proj: &[G::Projective], rng: &mut impl rand_core::RngCore)
where
    G: MsmGroup,
    G::Projective: Curve<AffineRepr = G::Affine> + Group<Scalar = Scalar>,
{
    let s = scalars(proj.len(), rng);
    let bases: Vec<G::Affine> = proj.iter().map(|p| p.to_affine()).collect();
    let n = proj.len();
    assert_eq!(msm::<G>(&bases, &s), naive(proj, &s), "n = {n}");
}

#[test]
fn g1_matches_naive_sum_including_identity_and_repeated_bases() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    for n in [0usize, 1, 2, 3, 31, 33, 1000, 9000] {
        let mut proj: Vec<G1Projective> = (0..n).map(|_| G1Projective::random(&mut rng)).collect();
        if n > 3 {
            proj[1] = G1Projective::identity();
            proj[3] = proj[2];
        }
        matches_naive_sum::<G1>(&proj, &mut rng);
    }
}

#[test]
fn g2_matches_naive_sum() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    for n in [1usize, 2, 40, 5000] {
        let proj: Vec<G2Projective> = (0..n).map(|_| G2Projective::random(&mut rng)).collect();
        matches_naive_sum::<G2>(&proj, &mut rng);
    }
}

#[test]
fn density_pairs_marked_variables_with_consecutive_bases() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let n = 20_000;
    let mut density = Density::default();
    (0..n).for_each(|i| density.push(i % 3 != 1));
    let s = scalars(n, &mut rng);
    let proj: Vec<G1Projective> = (0..density.count())
        .map(|_| G1Projective::random(&mut rng))
        .collect();
    let bases: Vec<G1Affine> = proj.iter().map(|p| p.to_affine()).collect();
    let selected: Vec<Scalar> = s
        .iter()
        .enumerate()
        .filter(|(i, _)| density.get(*i))
        .map(|(_, s)| *s)
        .collect();
    assert_eq!(
        msm_with_density::<G1>(&bases, &s, &density),
        naive(&proj, &selected)
    );
}
