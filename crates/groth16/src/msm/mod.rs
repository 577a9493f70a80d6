//! Multi-scalar multiplication Σ sᵢ·Pᵢ on the CPU, for the G1 and G2 queries of the proving key.
//!
//! Work is split into one contiguous range of variables per thread. Within a range, zero scalars
//! are skipped, scalars equal to one add their base directly (Filecoin witnesses are mostly bits),
//! and the rest go through blst's Pippenger. A query may be density-filtered: then only the
//! marked variables have a base, stored consecutively.

mod group;

pub use group::{MsmGroup, G1, G2};

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::synthesis::Density;

/// Variables below this go to a single task: splitting would cost more than it saves.
const MIN_PER_TASK: usize = 1 << 12;

/// Σ scalars[i]·bases[i] over all variables.
pub fn msm<G: MsmGroup>(bases: &[G::Affine], scalars: &[Scalar]) -> G::Projective {
    assert!(
        bases.len() >= scalars.len(),
        "{} bases for {} scalars",
        bases.len(),
        scalars.len()
    );
    split_msm::<G>(bases, scalars, None)
}

/// Σ over the variables marked in `density` of scalars[i]·bases[rank(i)]: the query holds one
/// base per marked variable.
pub fn msm_with_density<G: MsmGroup>(
    bases: &[G::Affine],
    scalars: &[Scalar],
    density: &Density,
) -> G::Projective {
    assert_eq!(
        density.len(),
        scalars.len(),
        "density and scalar counts differ"
    );
    assert!(
        bases.len() >= density.count(),
        "{} bases for {} marked",
        bases.len(),
        density.count()
    );
    split_msm::<G>(bases, scalars, Some(density))
}

fn split_msm<G: MsmGroup>(
    bases: &[G::Affine],
    scalars: &[Scalar],
    density: Option<&Density>,
) -> G::Projective {
    let n = scalars.len();
    let tasks = rayon::current_num_threads().min(n / MIN_PER_TASK).max(1);
    // Task boundaries on multiples of 64 keep rank() on whole density words.
    let per_task = n.div_ceil(tasks).next_multiple_of(64);
    (0..n)
        .into_par_iter()
        .step_by(per_task.max(1))
        .map(|start| {
            let end = (start + per_task).min(n);
            let first_base = density.map_or(start, |d| d.rank(start));
            range_msm::<G>(bases, first_base, &scalars[start..end], density, start)
        })
        .reduce(G::identity, |mut a, b| {
            G::add(&mut a, &b);
            a
        })
}

/// Bases handed to one Pippenger call: bounds the scratch vectors (40 bytes a point).
const BATCH: usize = 1 << 20;

/// The sum for variables `offset..offset + scalars.len()`, whose first base is `bases[first_base]`.
fn range_msm<G: MsmGroup>(
    bases: &[G::Affine],
    first_base: usize,
    scalars: &[Scalar],
    density: Option<&Density>,
    offset: usize,
) -> G::Projective {
    let mut sum = G::identity();
    let cap = scalars.len().min(BATCH);
    let mut points: Vec<*const G::Affine> = Vec::with_capacity(cap);
    let mut digits: Vec<[u8; 32]> = Vec::with_capacity(cap);
    let mut base = first_base;
    for (i, s) in scalars.iter().enumerate() {
        if density.is_some_and(|d| !d.get(offset + i)) {
            continue;
        }
        let p = &bases[base];
        base += 1;
        if s.is_zero_vartime() {
            continue;
        }
        if *s == Scalar::ONE {
            G::add_affine(&mut sum, p);
            continue;
        }
        points.push(p);
        let le: blst::blst_scalar = (*s).into();
        digits.push(le.b);
        if points.len() == BATCH {
            G::add(&mut sum, &G::pippenger(&points, &digits));
            points.clear();
            digits.clear();
        }
    }
    G::add(&mut sum, &G::pippenger(&points, &digits));
    sum
}

#[cfg(test)]
mod tests;
