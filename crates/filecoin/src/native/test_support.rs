//! What the mirrors' unit tests share: random field values and the comparison with the
//! gadgets' assignment.

use ff::Field;
use rand_core::RngCore;
use zkforge_groth16::{Assignment, AssignmentWriter, Scalar};

/// A field value spread over the whole field (a product of two squares-ish of u64s), so the
/// mirrors meet values of every bit length.
pub fn random(rng: &mut impl RngCore) -> Scalar {
    Scalar::from(rng.next_u64()) * Scalar::from(rng.next_u64()).square()
}

/// Ours equals the gadgets' in inputs and in aux, reporting the first aux value that differs.
pub fn assert_same(native: &Assignment, reference: &Assignment) {
    assert_eq!(native.inputs, reference.inputs, "inputs");
    assert_eq!(native.aux.len(), reference.aux.len(), "aux count");
    let first = (0..native.aux.len()).find(|&i| native.aux[i] != reference.aux[i]);
    assert_eq!(first, None, "first differing aux value");
}

/// The gadgets (`reference`) and our mirror (`native`), each written into an empty
/// assignment with room for `inputs` and `aux` values, allocate alike ([`assert_same`]); what
/// the two return comes back, with the mirror's assignment. The mirror's errors become
/// synthesis errors, as `append` takes them.
pub fn allocate_alike<R, N>(
    (inputs, aux): (usize, usize),
    reference: impl FnOnce(&mut AssignmentWriter<'_>) -> zkforge_groth16::Result<R>,
    native: impl FnOnce(&mut AssignmentWriter<'_>) -> anyhow::Result<N>,
) -> (R, N, Assignment) {
    let mut theirs = Assignment::with_capacity(None, inputs, aux);
    let (r, _) = theirs.append(reference).unwrap();
    let mut ours = Assignment::with_capacity(None, inputs, aux);
    let (n, _) = ours
        .append(|w| native(w).map_err(|e| zkforge_groth16::Error::Synthesis(e.to_string())))
        .unwrap();
    assert_same(&ours, &theirs);
    (r, n, ours)
}
