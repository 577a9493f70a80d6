//! Poseidon computed natively, writing what neptune 11's legacy `circuit::poseidon_hash`
//! gadget allocates (the one filecoin-hashers' Poseidon uses), and the PoR gadget of
//! storage-proofs-core 19.1 over Poseidon trees (`PoRCircuit`, `SubPath`, `insert`).
//!
//! The gadget keeps the state as linear combinations (`Elt::Num`) between S-boxes and
//! allocates only inside them, so the allocation sequence is fixed by the round structure:
//! - first full round: the domain tag's S-box is a constant; each preimage element (already
//!   allocated) gets (l+k₀)², its square, and l⁴·(l+k₀)+k₁ (3 values);
//! - every later full round, each element, and every partial round, element 0: the element
//!   itself, l², l⁴ and l⁴·l(+k) (4 values);
//! - finally the digest (element 1).
//!
//! The linear layers (dense, pre-sparse and sparse matrices, compressed round constants) are
//! the gadget's; field arithmetic is exact, so the values are too.

use anyhow::{bail, ensure, Result};
use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::{PoseidonArity, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use neptune::poseidon::PoseidonConstants;
use neptune::Arity;
use storage_proofs_core::merkle::MerkleTreeTrait;
use typenum::{Unsigned, U11, U2};
use zkforge_groth16::AssignmentWriter;

use super::gadgets::push_packed_input;
use super::vanilla::PathOptions;

type Res<T> = Result<T, SynthesisError>;

/// The gadget's `product_mds` for the round just finished.
fn linear_layer<A: Arity<Scalar>>(
    c: &PoseidonConstants<Scalar, A>,
    round: usize,
    state: &mut [Scalar],
    tmp: &mut [Scalar],
) {
    let sparse_offset = c.half_full_rounds - 1;
    if round > sparse_offset && round < c.half_full_rounds + c.partial_rounds {
        let m = &c.sparse_matrixes[round - sparse_offset - 1];
        let first = state[0];
        state[0] = state.iter().zip(&m.w_hat).map(|(s, w)| *s * w).sum();
        for (s, v) in state[1..].iter_mut().zip(&m.v_rest) {
            *s += first * v;
        }
        return;
    }
    let matrix = if round == sparse_offset {
        &c.pre_sparse_matrix
    } else {
        &c.mds_matrices.m
    };
    for (j, t) in tmp.iter_mut().enumerate() {
        *t = state.iter().zip(matrix).map(|(s, row)| *s * row[j]).sum();
    }
    state.copy_from_slice(tmp);
}

/// An S-box on an element held as a linear combination: the element is allocated, then l²,
/// l⁴ and l⁵ (+ the round key).
fn s_box(w: &mut AssignmentWriter<'_>, l: &mut Scalar, post_key: Option<Scalar>) -> Res<()> {
    let l2 = l.square();
    let l4 = l2.square();
    let mut l5 = l4 * *l;
    if let Some(k) = post_key {
        l5 += k;
    }
    w.push(*l)?;
    w.push(l2)?;
    w.push(l4)?;
    w.push(l5)?;
    *l = l5;
    Ok(())
}

/// `neptune::circuit::poseidon_hash` over `preimage` (as allocated numbers) with `c`.
pub fn poseidon<A: Arity<Scalar>>(
    w: &mut AssignmentWriter<'_>,
    preimage: &[Scalar],
    c: &PoseidonConstants<Scalar, A>,
) -> Res<Scalar> {
    let width = A::to_usize() + 1;
    debug_assert_eq!(preimage.len() + 1, width);
    let mut state = [Scalar::ZERO; 37];
    let mut tmp = [Scalar::ZERO; 37];
    let (state, tmp) = (&mut state[..width], &mut tmp[..width]);
    state[0] = c.domain_tag;
    state[1..].copy_from_slice(preimage);
    let keys = &c.compressed_round_constants;
    let mut offset = 0;
    let mut round = 0;

    // First full round: keys added before and after the S-box; the tag's S-box is constant.
    let (pre, post) = (
        &keys[offset..offset + width],
        &keys[offset + width..offset + 2 * width],
    );
    offset += 2 * width;
    for (i, l) in state.iter_mut().enumerate() {
        let x = *l + pre[i];
        let x4 = x.square().square();
        if i > 0 {
            w.push(x.square())?;
            w.push(x4)?;
            w.push(x4 * x + post[i])?;
        }
        *l = x4 * x + post[i];
    }
    linear_layer(c, round, state, tmp);
    round += 1;

    let full = |w: &mut AssignmentWriter<'_>,
                state: &mut [Scalar],
                offset: &mut usize,
                last: bool|
     -> Res<()> {
        for (i, l) in state.iter_mut().enumerate() {
            let key = (!last).then(|| keys[*offset + i]);
            s_box(w, l, key)?;
        }
        if !last {
            *offset += width;
        }
        Ok(())
    };
    for _ in 1..c.full_rounds / 2 {
        full(w, state, &mut offset, false)?;
        linear_layer(c, round, state, tmp);
        round += 1;
    }
    for _ in 0..c.partial_rounds {
        s_box(w, &mut state[0], Some(keys[offset]))?;
        offset += 1;
        linear_layer(c, round, state, tmp);
        round += 1;
    }
    for _ in 0..c.full_rounds / 2 - 1 {
        full(w, state, &mut offset, false)?;
        linear_layer(c, round, state, tmp);
        round += 1;
    }
    full(w, state, &mut offset, true)?;
    linear_layer(c, round, state, tmp);

    w.push(state[1])?;
    Ok(state[1])
}

/// `hash_single_column`: Poseidon over a column of 2 or 11 rows, with the constants it uses.
pub fn column_hash(w: &mut AssignmentWriter<'_>, column: &[Scalar]) -> Result<Scalar> {
    Ok(match column.len() {
        2 => poseidon::<U2>(w, column, &POSEIDON_CONSTANTS_2)?,
        11 => poseidon::<U11>(w, column, &POSEIDON_CONSTANTS_11)?,
        n => bail!("columns of {n} rows have no column hash (2 or 11 layers)"),
    })
}

/// `insertion::pick`: one allocation.
fn pick(w: &mut AssignmentWriter<'_>, cond: bool, a: Scalar, b: Scalar) -> Res<Scalar> {
    let c = if cond { a } else { b };
    w.push(c)?;
    Ok(c)
}

/// `insertion::insert` for sizes 2 and 8 (the PoRep trees' arities): `x` inserted among
/// `e` at the position given by `bits`, with the gadget's picks in its order.
pub(super) fn insert(
    w: &mut AssignmentWriter<'_>,
    x: Scalar,
    bits: &[bool],
    e: &[Scalar],
) -> Result<Vec<Scalar>> {
    Ok(match (bits, e) {
        (&[b0], &[e0]) => vec![pick(w, b0, e0, x)?, pick(w, b0, x, e0)?],
        (&[b0, b1, b2], &[b, c, d, e, f, g, h]) => {
            let a = x;
            let nor = !b0 && !b1;
            let and = b0 && b1;
            w.push_bit(nor)?;
            w.push_bit(and)?;
            let p0_xx0 = pick(w, nor, a, b)?;
            let p0 = pick(w, b2, b, p0_xx0)?;
            let p1_x00 = pick(w, b0, a, b)?;
            let p1_xx0 = pick(w, b1, c, p1_x00)?;
            let p1 = pick(w, b2, c, p1_xx0)?;
            let p2_x10 = pick(w, b0, d, a)?;
            let p2_xx0 = pick(w, b1, p2_x10, c)?;
            let p2 = pick(w, b2, d, p2_xx0)?;
            let p3_xx0 = pick(w, and, a, d)?;
            let p3 = pick(w, b2, e, p3_xx0)?;
            let p4_xx1 = pick(w, nor, a, f)?;
            let p4 = pick(w, b2, p4_xx1, e)?;
            let p5_x01 = pick(w, b0, a, f)?;
            let p5_xx1 = pick(w, b1, g, p5_x01)?;
            let p5 = pick(w, b2, p5_xx1, f)?;
            let p6_x11 = pick(w, b0, h, a)?;
            let p6_xx1 = pick(w, b1, p6_x11, g)?;
            let p6 = pick(w, b2, p6_xx1, g)?;
            let p7_xx1 = pick(w, and, a, h)?;
            let p7 = pick(w, b2, p7_xx1, h)?;
            vec![p0, p1, p2, p3, p4, p5, p6, p7]
        }
        _ => bail!(
            "no native insertion for {} siblings and {} index bits",
            e.len(),
            bits.len()
        ),
    })
}

/// `SubPath::synthesize` for arity `A`: per level the index bits, the siblings, the
/// insertion and the hash of the level's children. Returns the new node.
fn sub_path<A: PoseidonArity>(
    w: &mut AssignmentWriter<'_>,
    levels: &[(Vec<Option<Scalar>>, Option<usize>)],
    mut cur: Scalar,
    path_bits: &mut Vec<bool>,
) -> Result<Scalar> {
    let arity = A::to_usize();
    if arity == 0 {
        ensure!(levels.is_empty(), "a path segment for an absent tree level");
        return Ok(cur);
    }
    let index_bits = arity.trailing_zeros() as usize;
    let mut siblings = Vec::with_capacity(arity);
    for (siblings_opt, index) in levels {
        let index = index.ok_or_else(|| anyhow::anyhow!("a path level has no position"))?;
        let bits: Vec<bool> = (0..index_bits).map(|i| (index >> i) & 1 == 1).collect();
        for &b in &bits {
            w.push_bit(b)?;
        }
        path_bits.extend_from_slice(&bits);
        siblings.clear();
        for s in siblings_opt {
            let s = s.ok_or_else(|| anyhow::anyhow!("a path level misses a sibling"))?;
            w.push(s)?;
            siblings.push(s);
        }
        let children = insert(w, cur, &bits, &siblings)?;
        cur = poseidon::<A>(w, &children, A::PARAMETERS())?;
    }
    Ok(cur)
}

/// `PoRCircuit::<Tree>::synthesize` with a private root, leaf and root already allocated:
/// base, sub and top segments, then the index bits packed into public inputs.
pub fn tree_inclusion<Tree: MerkleTreeTrait>(
    w: &mut AssignmentWriter<'_>,
    path: &PathOptions,
    leaf: Scalar,
) -> Result<()> {
    let has_sub = Tree::SubTreeArity::to_usize() > 0;
    let has_top = Tree::TopTreeArity::to_usize() > 0;
    let upper = usize::from(has_sub) + usize::from(has_top);
    ensure!(
        path.len() >= upper,
        "the path is shorter than the tree's upper levels"
    );
    let (base, rest) = path.split_at(path.len() - upper);
    let (sub, top) = rest.split_at(usize::from(has_sub));
    let mut bits = Vec::new();
    let cur = sub_path::<Tree::Arity>(w, base, leaf, &mut bits)?;
    let cur = sub_path::<Tree::SubTreeArity>(w, sub, cur, &mut bits)?;
    sub_path::<Tree::TopTreeArity>(w, top, cur, &mut bits)?;
    for chunk in bits.chunks(254) {
        push_packed_input(w, chunk)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::test_support::{allocate_alike, random};
    use bellpepper_core::num::AllocatedNum;
    use filecoin_hashers::POSEIDON_CONSTANTS_8;
    use filecoin_proofs::{SectorShape2KiB, SectorShape32GiB, SectorShape64GiB};
    use rand_core::SeedableRng;
    use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
    use storage_proofs_core::gadgets::variables::Root;

    fn hash_like_the_gadget<A: Arity<Scalar>>(c: &PoseidonConstants<Scalar, A>, seed: u64) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let preimage: Vec<Scalar> = (0..A::to_usize()).map(|_| random(&mut rng)).collect();
        let (theirs, ours, _) = allocate_alike(
            (0, 4096),
            |cs| {
                let nums = preimage
                    .iter()
                    .map(|&v| AllocatedNum::alloc(&mut *cs, || Ok(v)))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(neptune::circuit::poseidon_hash(&mut *cs, nums, c)?.get_value())
            },
            |w| {
                for &v in &preimage {
                    w.push(v)?;
                }
                Ok(poseidon(w, &preimage, c)?)
            },
        );
        assert_eq!(Some(ours), theirs);
    }

    #[test]
    fn poseidon_allocates_like_the_legacy_gadget() {
        hash_like_the_gadget(&POSEIDON_CONSTANTS_2, 1);
        hash_like_the_gadget(&POSEIDON_CONSTANTS_8, 2);
        hash_like_the_gadget(&POSEIDON_CONSTANTS_11, 3);
    }

    fn path_like_the_gadget<Tree: MerkleTreeTrait>(nodes: usize, seed: u64) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let path = super::super::synthetic::random_path::<Tree>(nodes, &mut rng);
        let (leaf, root) = (random(&mut rng), random(&mut rng));
        allocate_alike(
            (4, 1 << 16),
            |cs| {
                let leaf = AllocatedNum::alloc(&mut *cs, || Ok(leaf))?;
                let root = AllocatedNum::alloc(&mut *cs, || Ok(root))?;
                let auth: AuthPath<
                    Tree::Hasher,
                    Tree::Arity,
                    Tree::SubTreeArity,
                    Tree::TopTreeArity,
                > = path.clone().into();
                Ok(PoRCircuit::<Tree>::synthesize(
                    &mut *cs,
                    Root::Var(leaf),
                    auth,
                    Root::Var(root),
                    true,
                )?)
            },
            |w| {
                w.push(leaf)?;
                w.push(root)?;
                tree_inclusion::<Tree>(w, &path, leaf)
            },
        );
    }

    #[test]
    fn tree_paths_allocate_like_the_por_gadget_for_every_porep_tree_shape() {
        for seed in 0..3 {
            path_like_the_gadget::<SectorShape2KiB>(1 << 6, seed);
            path_like_the_gadget::<SectorShape32GiB>(1 << 30, seed);
            path_like_the_gadget::<SectorShape64GiB>(1 << 31, seed);
        }
    }
}
