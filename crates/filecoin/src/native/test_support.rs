//! What the mirrors' unit tests share: random field values and the comparison with the
//! gadgets' assignment.

use ff::Field;
use rand_core::RngCore;
use zkforge_groth16::{Assignment, Scalar};

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
