//! The allocation order of storage-proofs-porep 19.1's `StackedCircuit::synthesize` (the
//! prefix shared by all challenges) and `Proof::synthesize` (one challenge).

use anyhow::{ensure, Result};
use blstrs::Scalar;
use filecoin_hashers::{HashFunction, Hasher};
use storage_proofs_core::merkle::MerkleTreeTrait;
use zkforge_groth16::AssignmentWriter;

use super::gadgets::{alloc, challenge_number, comm_d_inclusion, push_bits_le};
use super::poseidon::{column_hash, tree_inclusion};
use super::sha256::{digest_to_scalar, scalar_words, sha256, Word};
use super::vanilla::ChallengeInputs;

/// DRG parents per node (`BASE_DEGREE`) and expander parents (`EXP_DEGREE`): the label
/// circuit's parent expansion to 37 parents is written for exactly these.
pub const DRG_PARENTS: usize = 6;
pub const EXP_PARENTS: usize = 8;

/// The partition's public and commitment values, as `StackedCompound::circuit` passes them.
#[derive(Clone, Copy, Debug)]
pub struct PartitionValues {
    pub replica_id: Scalar,
    pub comm_d: Scalar,
    pub comm_r: Scalar,
    pub comm_r_last: Scalar,
    pub comm_c: Scalar,
}

/// What every challenge reads from the prefix: `replica_id`'s bits as the label hash reads
/// them. (The roots comm_d, comm_r_last and comm_c are already allocated; the challenges'
/// inclusion gadgets only constrain them.)
#[derive(Clone)]
pub struct Shared {
    replica_id: [Word; 8],
}

/// `StackedCircuit::synthesize` up to the challenges: replica_id (input, 255 bits), comm_d and
/// comm_r (inputs), comm_r_last, comm_c, and the Poseidon hash of the last two (the one hash
/// left to the gadget: it runs once per partition).
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
    })
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
    ensure!(
        layers >= 1
            && c.drg_parents
                .iter()
                .chain(&c.exp_parents)
                .all(|p| p.rows.len() == layers),
        "parent columns must all have the same, non-zero number of rows"
    );

    // The initial data layer: the leaf and its path in tree D.
    w.push(c.data_leaf)?;
    comm_d_inclusion(w, &c.comm_d_path, c.data_leaf)?;

    // Replica column openings: each column, its hash, its path in tree C.
    for p in c.drg_parents.iter().chain(&c.exp_parents) {
        for &row in &p.rows {
            w.push(row)?;
        }
        let hash = column_hash(w, &p.rows)?;
        tree_inclusion::<Tree>(w, &p.path, hash)?;
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
        w.push(label)?;
        labels.push(label);
    }

    // Encoding (`encode`: one sum allocated): the last label plus the data, in tree R.
    let encoded = labels[layers - 1] + c.data_leaf;
    w.push(encoded)?;
    tree_inclusion::<Tree>(w, &c.comm_r_last_path, encoded)?;

    // The column of labels, in tree C.
    let column = column_hash(w, &labels)?;
    tree_inclusion::<Tree>(w, &c.comm_c_path, column)
}
