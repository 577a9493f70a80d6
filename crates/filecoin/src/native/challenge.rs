//! The allocation order of storage-proofs-porep 19.1's `StackedCircuit::synthesize` (the
//! prefix shared by all challenges) and `Proof::synthesize` (one challenge), with SHA-256 and
//! bit decompositions written natively and Poseidon through the gadgets.

use anyhow::{ensure, Result};
use bellpepper_core::num::AllocatedNum;
use blstrs::Scalar;
use filecoin_hashers::{HashFunction, Hasher};
use storage_proofs_core::gadgets::encode::encode;
use storage_proofs_core::merkle::MerkleTreeTrait;
use zkforge_groth16::AssignmentWriter;

use super::gadgets::{
    alloc, challenge_number, column_hash, comm_d_inclusion, push_bits_le, tree_inclusion,
};
use super::sha256::{digest_to_scalar, scalar_words, sha256, Word};
use super::vanilla::ChallengeInputs;

/// DRG parents per node (`BASE_DEGREE`) and expander parents (`EXP_DEGREE`): the label
/// circuit's parent expansion to 37 parents is written for exactly these.
pub const DRG_PARENTS: usize = 6;
pub const EXP_PARENTS: usize = 8;

/// The partition's public values, as `StackedCompound::circuit` passes them.
#[derive(Clone, Copy, Debug)]
pub struct PartitionValues {
    pub replica_id: Scalar,
    pub comm_d: Scalar,
    pub comm_r: Scalar,
    pub comm_r_last: Scalar,
    pub comm_c: Scalar,
}

/// What every challenge reads from the prefix.
#[derive(Clone)]
pub struct Shared {
    /// `replica_id`'s bits as the label hash reads them.
    replica_id: [Word; 8],
    comm_r_last: AllocatedNum<Scalar>,
    comm_c: AllocatedNum<Scalar>,
}

/// `StackedCircuit::synthesize` up to the challenges: replica_id (input, 255 bits), comm_d and
/// comm_r (inputs), comm_r_last, comm_c, and the Poseidon hash of the last two.
pub fn prefix<Tree: MerkleTreeTrait>(
    w: &mut AssignmentWriter<'_>,
    v: &PartitionValues,
) -> Result<Shared> {
    let replica_id = alloc(w, v.replica_id)?;
    replica_id.inputize(&mut *w)?;
    push_bits_le(w, &v.replica_id)?;
    let comm_d = alloc(w, v.comm_d)?;
    comm_d.inputize(&mut *w)?;
    let comm_r = alloc(w, v.comm_r)?;
    comm_r.inputize(&mut *w)?;
    let comm_r_last = alloc(w, v.comm_r_last)?;
    let comm_c = alloc(w, v.comm_c)?;
    <Tree::Hasher as Hasher>::Function::hash2_circuit(&mut *w, &comm_c, &comm_r_last)?;
    Ok(Shared {
        replica_id: scalar_words(&v.replica_id),
        comm_r_last,
        comm_c,
    })
}

/// A column opening's rows, allocated, their hash, and its inclusion in tree C.
fn column_opening<Tree: MerkleTreeTrait>(
    w: &mut AssignmentWriter<'_>,
    rows: &[Scalar],
    path: &super::vanilla::PathOptions,
    comm_c: &AllocatedNum<Scalar>,
) -> Result<()> {
    let column = rows
        .iter()
        .map(|&r| alloc(w, r))
        .collect::<Result<Vec<_>, _>>()?;
    let hash = column_hash(w, &column)?;
    tree_inclusion::<Tree>(w, path, &hash, comm_c)
}

/// `Proof::synthesize` for one challenge.
pub fn challenge<Tree: MerkleTreeTrait>(
    w: &mut AssignmentWriter<'_>,
    c: &ChallengeInputs,
    shared: &Shared,
) -> Result<()> {
    ensure!(
        c.drg_parents.len() == DRG_PARENTS && c.exp_parents.len() == EXP_PARENTS,
        "the label circuit needs {DRG_PARENTS} DRG and {EXP_PARENTS} expander parents"
    );
    let layers = c.drg_parents[0].rows.len();
    ensure!(layers >= 1, "columns have no rows");

    // The initial data layer.
    let data_leaf = alloc(w, c.data_leaf)?;
    // Tree D's root (comm_d) only appears in the gadget's final equality constraint.
    comm_d_inclusion(w, &c.comm_d_path, c.data_leaf)?;

    // Replica column openings.
    for p in c.drg_parents.iter().chain(&c.exp_parents) {
        column_opening::<Tree>(w, &p.rows, &p.path, &shared.comm_c)?;
    }

    // Labeling.
    challenge_number(w, c.challenge)?;
    let mut message = Vec::with_capacity(16 + 37 * 8);
    let mut parents: Vec<[Word; 8]> = Vec::with_capacity(DRG_PARENTS + EXP_PARENTS);
    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        parents.clear();
        let drg = c.drg_parents.iter().map(|p| p.rows[layer - 1]);
        let exp = c.exp_parents.iter().filter(|_| layer > 1);
        for value in drg.chain(exp.map(|p| p.rows[layer - 2])) {
            push_bits_le(w, &value)?;
            parents.push(scalar_words(&value));
        }

        // replica_id | layer (u32) | node (u64) | padding to 64 bytes | 37 parents.
        message.clear();
        message.extend_from_slice(&shared.replica_id);
        message.push(Word::constant(layer as u32));
        message.push(Word::allocated((c.challenge >> 32) as u32));
        message.push(Word::allocated(c.challenge as u32));
        message.extend([Word::constant(0); 5]);
        let expanded: Vec<&[Word; 8]> = if layer > 1 {
            parents
                .iter()
                .chain(&parents)
                .chain(&parents[..9])
                .collect()
        } else {
            parents
                .iter()
                .cycle()
                .take(6 * DRG_PARENTS)
                .chain(&parents[..1])
                .collect()
        };
        debug_assert_eq!(expanded.len(), 37);
        for p in expanded {
            message.extend_from_slice(p);
        }
        let label = digest_to_scalar(&sha256(w, &message)?);
        labels.push(alloc(w, label)?);
    }

    // Encoding: the last label plus the data, included in tree R.
    let key = labels.last().expect("layers >= 1");
    let encoded = encode(&mut *w, key, &data_leaf)?;
    tree_inclusion::<Tree>(w, &c.comm_r_last_path, &encoded, &shared.comm_r_last)?;

    // The column of labels, included in tree C.
    let column = column_hash(w, &labels)?;
    tree_inclusion::<Tree>(w, &c.comm_c_path, &column, &shared.comm_c)
}
