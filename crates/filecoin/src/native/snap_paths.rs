//! The EmptySectorUpdate circuit's openings, natively: `por_no_challenge_input` over tree R
//! (the path's positions taken from the challenge's bits, its siblings allocated beforehand by
//! the circuit), `insertion::select` of the apex leaf, and the shape checks that keep a
//! malformed path from reaching the gadgets' asserts. (The tree D levels are PoRep's
//! [`sha256_level`](super::gadgets::sha256_level).)

use anyhow::{ensure, Context, Result};
use blstrs::Scalar;
use filecoin_hashers::PoseidonArity;
use storage_proofs_core::merkle::MerkleTreeTrait;
use typenum::Unsigned;
use zkforge_groth16::AssignmentWriter;

use super::poseidon::{insert, poseidon};

/// A tree R path's levels and arities against `Tree` with 2^`bits` leaves.
pub(super) fn check_tree_r<Tree: MerkleTreeTrait>(
    path: &[Vec<Scalar>],
    bits: usize,
    what: &str,
) -> Result<()> {
    let arities = tree_r_arities::<Tree>(bits)?;
    ensure!(
        path.len() == arities.len(),
        "{what} has {} levels, the tree has {}",
        path.len(),
        arities.len()
    );
    for (level, (siblings, arity)) in path.iter().zip(&arities).enumerate() {
        ensure!(
            siblings.len() + 1 == *arity,
            "{what}: level {level} has {} siblings for arity {arity}",
            siblings.len()
        );
    }
    Ok(())
}

/// The arity of each level of tree R with 2^`bits` leaves: base levels, then sub and top.
fn tree_r_arities<Tree: MerkleTreeTrait>(bits: usize) -> Result<Vec<usize>> {
    let (base, sub, top) = (
        Tree::Arity::to_usize(),
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    );
    let log = |a: usize| {
        if a > 0 {
            a.trailing_zeros() as usize
        } else {
            0
        }
    };
    let upper = log(sub) + log(top);
    ensure!(
        base >= 2
            && base.is_power_of_two()
            && bits >= upper
            && (bits - upper).is_multiple_of(log(base)),
        "a tree of arities {base}/{sub}/{top} cannot have 2^{bits} leaves"
    );
    let mut arities = vec![base; (bits - upper) / log(base)];
    arities.extend([sub, top].into_iter().filter(|&a| a > 0));
    Ok(arities)
}

/// `len` bits of the little-endian `bytes`, from bit `start`.
pub(super) fn bits_at(bytes: &[u8; 32], start: usize, len: usize) -> u64 {
    (0..len).fold(0, |v, i| {
        let b = start + i;
        v | (u64::from(bytes[b / 8] >> (b % 8) & 1) << i)
    })
}

/// One level of tree R (`por_no_challenge_input`): the position from the challenge's next
/// bits, `insert`'s picks, the hash of the level's children.
fn tree_r_level<A: PoseidonArity>(
    w: &mut AssignmentWriter<'_>,
    cur: Scalar,
    siblings: &[Scalar],
    c: u64,
    shift: &mut usize,
) -> Result<Scalar> {
    let n = A::to_usize().trailing_zeros() as usize;
    let bits: Vec<bool> = (0..n).map(|i| (c >> (*shift + i)) & 1 == 1).collect();
    *shift += n;
    let children = insert(w, cur, &bits, siblings)?;
    Ok(poseidon::<A>(w, &children, A::PARAMETERS())?)
}

/// `por_no_challenge_input` over tree R, siblings already allocated (the path is checked).
pub(super) fn tree_r_path<Tree: MerkleTreeTrait>(
    w: &mut AssignmentWriter<'_>,
    leaf: Scalar,
    path: &[Vec<Scalar>],
    c: u64,
) -> Result<()> {
    let upper = usize::from(Tree::SubTreeArity::to_usize() > 0)
        + usize::from(Tree::TopTreeArity::to_usize() > 0);
    let (base, rest) = path.split_at(path.len() - upper);
    let (mut cur, mut shift) = (leaf, 0);
    for siblings in base {
        cur = tree_r_level::<Tree::Arity>(w, cur, siblings, c, &mut shift)?;
    }
    let mut rest = rest.iter();
    if Tree::SubTreeArity::to_usize() > 0 {
        let siblings = rest.next().context("no sub-tree level")?;
        cur = tree_r_level::<Tree::SubTreeArity>(w, cur, siblings, c, &mut shift)?;
    }
    if Tree::TopTreeArity::to_usize() > 0 {
        let siblings = rest.next().context("no top-tree level")?;
        tree_r_level::<Tree::TopTreeArity>(w, cur, siblings, c, &mut shift)?;
    }
    Ok(())
}

/// `insertion::select`: the apex leaf at `index` (`bits` bits), by halving, most significant
/// bit first, one pick per remaining candidate.
pub(super) fn select(
    w: &mut AssignmentWriter<'_>,
    from: &[Scalar],
    index: u64,
    bits: usize,
) -> Result<()> {
    let mut state = from.to_vec();
    for i in (0..bits).rev() {
        let half = state.len() / 2;
        let high = (index >> i) & 1 == 1;
        for j in 0..half {
            let v = if high { state[half + j] } else { state[j] };
            w.push(v)?;
            state[j] = v;
        }
        state.truncate(half);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::test_support::{allocate_alike, random};
    use bellpepper_core::boolean::{AllocatedBit, Boolean};
    use bellpepper_core::num::AllocatedNum;
    use ff::Field;
    use filecoin_proofs::{SectorShape2KiB, SectorShape32GiB, SectorShape64GiB};
    use rand_core::{RngCore, SeedableRng};
    use storage_proofs_core::gadgets::insertion::select as select_gadget;
    use storage_proofs_core::gadgets::por::por_no_challenge_input;

    /// The challenge bits, the leaf, the root and the siblings allocated first (as the circuit
    /// does), then the path: ours against `por_no_challenge_input`.
    fn tree_r_like_the_gadget<Tree: MerkleTreeTrait>(bits: usize, seed: u64) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let c = rng.next_u64() & ((1 << bits) - 1);
        let path: Vec<Vec<Scalar>> = tree_r_arities::<Tree>(bits)
            .unwrap()
            .into_iter()
            .map(|a| (1..a).map(|_| random(&mut rng)).collect())
            .collect();
        check_tree_r::<Tree>(&path, bits, "the path").unwrap();
        let (leaf, root) = (random(&mut rng), random(&mut rng));
        allocate_alike(
            (0, 1 << 16),
            |cs| {
                let c_bits = (0..bits)
                    .map(|i| AllocatedBit::alloc(&mut *cs, Some((c >> i) & 1 == 1)))
                    .collect::<Result<Vec<_>, _>>()?;
                let leaf = AllocatedNum::alloc(&mut *cs, || Ok(leaf))?;
                let root = AllocatedNum::alloc(&mut *cs, || Ok(root))?;
                let path = path
                    .iter()
                    .map(|level| {
                        level
                            .iter()
                            .map(|&s| AllocatedNum::alloc(&mut *cs, || Ok(s)))
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(por_no_challenge_input::<Tree, _>(
                    &mut *cs, c_bits, leaf, path, root,
                )?)
            },
            |w| {
                w.push_bits(c, (1 << bits) - 1)?;
                w.push(leaf)?;
                w.push(root)?;
                for &s in path.iter().flatten() {
                    w.push(s)?;
                }
                tree_r_path::<Tree>(w, leaf, &path, c)
            },
        );
    }

    #[test]
    fn tree_r_paths_allocate_like_the_gadget_for_every_snap_tree_shape() {
        for seed in 0..3 {
            tree_r_like_the_gadget::<SectorShape2KiB>(6, seed);
            // Sub levels (arity 8) at 32 GiB; sub and top (arity 2) at 64 GiB.
            tree_r_like_the_gadget::<SectorShape32GiB>(30, seed);
            tree_r_like_the_gadget::<SectorShape64GiB>(31, seed);
        }
    }

    #[test]
    fn apex_leaf_selection_allocates_like_the_gadget() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for bits in [3, 7] {
            let leaves: Vec<Scalar> = (0..1 << bits).map(|_| random(&mut rng)).collect();
            for index in [0, 1, (1 << bits) - 1, rng.next_u64() & ((1 << bits) - 1)] {
                let (_, _, native) = allocate_alike(
                    (0, 1 << 10),
                    |cs| {
                        let from = leaves
                            .iter()
                            .map(|&l| AllocatedNum::alloc(&mut *cs, || Ok(l)))
                            .collect::<Result<Vec<_>, _>>()?;
                        let bits: Vec<Boolean> = (0..bits)
                            .map(|i| {
                                AllocatedBit::alloc(&mut *cs, Some((index >> i) & 1 == 1))
                                    .map(Boolean::from)
                            })
                            .collect::<Result<_, _>>()?;
                        Ok(select_gadget(&mut *cs, &from, &bits)?)
                    },
                    |w| {
                        for &l in &leaves {
                            w.push(l)?;
                        }
                        w.push_bits(index, (1 << bits) - 1)?;
                        select(w, &leaves, index, bits)
                    },
                );
                assert_eq!(*native.aux.last().unwrap(), leaves[index as usize]);
            }
        }
    }

    #[test]
    fn malformed_paths_are_named_errors() {
        let good: Vec<Vec<Scalar>> = vec![vec![Scalar::ONE; 7]; 10];
        check_tree_r::<SectorShape32GiB>(&good, 30, "p").unwrap();
        let mut short = good.clone();
        short.pop();
        let e = check_tree_r::<SectorShape32GiB>(&short, 30, "p").unwrap_err();
        assert!(
            e.to_string().contains("has 9 levels, the tree has 10"),
            "{e}"
        );
        let mut narrow = good;
        narrow[4].pop();
        let e = check_tree_r::<SectorShape32GiB>(&narrow, 30, "p").unwrap_err();
        assert!(e.to_string().contains("level 4 has 6 siblings"), "{e}");
        assert!(tree_r_arities::<SectorShape32GiB>(29).is_err());
    }

    #[test]
    fn bits_are_read_little_endian_across_bytes() {
        let mut bytes = [0u8; 32];
        bytes[0] = 0b1000_0000;
        bytes[1] = 0b0000_0101;
        assert_eq!(bits_at(&bytes, 7, 4), 0b1011);
        assert_eq!(bits_at(&bytes, 0, 7), 0);
    }
}
