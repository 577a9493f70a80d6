//! The PoRep circuit's smaller pieces, natively: bit decompositions (`to_bits_le`,
//! `UInt64::alloc`), packed public inputs, and the inclusion path in the binary SHA-256 tree D;
//! plus the path-shape checks that keep malformed paths from reaching a gadget's asserts.

use anyhow::{ensure, Result};
use bellpepper_core::num::AllocatedNum;
use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::PoseidonArity;
use storage_proofs_core::merkle::{base_path_length, MerkleTreeTrait};
use typenum::Unsigned;
use zkforge_groth16::AssignmentWriter;

use super::sha256::{digest_to_scalar, scalar_words, sha256, Word};
use super::vanilla::PathOptions;

type Res<T> = Result<T, bellpepper_core::SynthesisError>;

/// `AllocatedNum::alloc`.
pub fn alloc(w: &mut AssignmentWriter<'_>, value: Scalar) -> Res<AllocatedNum<Scalar>> {
    AllocatedNum::alloc(w, || Ok(value))
}

/// `AllocatedNum::to_bits_le`: the 255 low bits of `value`, least significant first.
pub fn push_bits_le(w: &mut AssignmentWriter<'_>, value: &Scalar) -> Res<()> {
    let bytes = value.to_bytes_le();
    for (i, limb) in bytes.chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes(limb.try_into().expect("8 bytes"));
        w.push_bits(x, if i == 3 { u64::MAX >> 1 } else { u64::MAX })?;
    }
    Ok(())
}

/// `multipack::pack_into_inputs` of at most 254 bits: one public input.
pub fn push_packed_input(w: &mut AssignmentWriter<'_>, bits: &[bool]) -> Res<()> {
    debug_assert!(bits.len() <= 254);
    let mut value = Scalar::from(0u64);
    let mut coeff = Scalar::from(1u64);
    for &b in bits {
        if b {
            value += coeff;
        }
        coeff = coeff.double();
    }
    w.push_input(value)
}

/// The PoR gadget over the binary SHA-256 tree D (`PoRCircuit<BinaryMerkleTree<Sha256>>`,
/// private root, leaf and root already allocated), natively. Per level: the index bit, the
/// sibling, the two `insert` picks, both children's 255 bits, the SHA-256 of their 64 bytes
/// and the packed digest; then the index bits packed into one public input.
pub fn comm_d_inclusion(
    w: &mut AssignmentWriter<'_>,
    path: &PathOptions,
    leaf: Scalar,
) -> Result<()> {
    ensure!(
        path.len() < 254,
        "the comm_d path has {} levels",
        path.len()
    );
    let mut cur = leaf;
    let mut index_bits = Vec::with_capacity(path.len());
    for (level, (siblings, index)) in path.iter().enumerate() {
        let (&[Some(sibling)], &Some(index)) = (siblings.as_slice(), index) else {
            anyhow::bail!("comm_d path level {level} is not one known sibling and a position");
        };
        let bit = index & 1 == 1;
        w.push_bit(bit)?;
        w.push(sibling)?;
        cur = sha256_level(w, cur, sibling, bit)?;
        index_bits.push(bit);
    }
    push_packed_input(w, &index_bits)?;
    Ok(())
}

/// `Sha256Function::hash2_circuit(a, b)` (also `hash_multi_leaf_circuit` of two nodes): both
/// nodes' 255 bits, the SHA-256 of their 64 bytes, the packed digest. Returns the digest.
pub fn sha256_hash2(w: &mut AssignmentWriter<'_>, a: Scalar, b: Scalar) -> Res<Scalar> {
    push_bits_le(w, &a)?;
    push_bits_le(w, &b)?;
    let mut message = [Word::constant(0); 16];
    message[..8].copy_from_slice(&scalar_words(&a));
    message[8..].copy_from_slice(&scalar_words(&b));
    let digest = digest_to_scalar(&sha256(w, &message)?);
    w.push(digest)?;
    Ok(digest)
}

/// One level of a PoR gadget in the binary SHA-256 tree D, the position bit and the sibling
/// already allocated: `insert`'s two picks (left, right), then their hash.
pub fn sha256_level(
    w: &mut AssignmentWriter<'_>,
    cur: Scalar,
    sibling: Scalar,
    bit: bool,
) -> Res<Scalar> {
    let (left, right) = if bit { (sibling, cur) } else { (cur, sibling) };
    w.push(left)?;
    w.push(right)?;
    sha256_hash2(w, left, right)
}

/// `UInt64::alloc` of the challenge, then `pack_into_input`.
pub fn challenge_number(w: &mut AssignmentWriter<'_>, challenge: u64) -> Res<()> {
    w.push_bits(challenge, u64::MAX)?;
    w.push_input(Scalar::from(challenge))
}

fn check_segment<A: PoseidonArity>(
    path: &[(Vec<Option<Scalar>>, Option<usize>)],
    what: &str,
) -> Result<()> {
    for (level, (siblings, index)) in path.iter().enumerate() {
        ensure!(
            siblings.len() + 1 == A::to_usize()
                && siblings.iter().all(Option::is_some)
                && index.is_some_and(|i| i < A::to_usize()),
            "{what}: level {level} has {} siblings and position {index:?} for arity {}",
            siblings.len(),
            A::to_usize()
        );
    }
    Ok(())
}

/// Checks that `path` has the levels and arities the PoR gadget asserts for `Tree` with
/// `leaves` leaves, so a malformed path is an error here rather than a panic there.
pub fn check_tree_path<Tree: MerkleTreeTrait>(
    path: &PathOptions,
    leaves: usize,
    what: &str,
) -> Result<()> {
    let base = base_path_length::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(leaves);
    let sub = usize::from(Tree::SubTreeArity::to_usize() > 0);
    let top = usize::from(Tree::TopTreeArity::to_usize() > 0);
    ensure!(
        path.len() == base + sub + top,
        "{what} has {} levels, the tree has {}",
        path.len(),
        base + sub + top
    );
    check_segment::<Tree::Arity>(&path[..base], what)?;
    check_segment::<Tree::SubTreeArity>(&path[base..base + sub], what)?;
    check_segment::<Tree::TopTreeArity>(&path[base + sub..], what)
}
