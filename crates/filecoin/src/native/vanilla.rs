//! What one challenge's circuit is made of, read from its vanilla proof: the values
//! `StackedCompound::circuit` hands to the circuit, in plain form.
//!
//! A few of them (column rows and inclusion proofs of column openings, the labeling proof's
//! node) are crate-private in storage-proofs-porep 19.1; they are read through the proof's
//! serde form, which is public and is what a C1 output is made of anyway.

use anyhow::{ensure, Context, Result};
use blstrs::Scalar;
use filecoin_hashers::Hasher;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_porep::stacked::{self, Column};

/// A Merkle path as the PoR gadget takes it: per level, the sibling hashes and the position.
pub type PathOptions = Vec<(Vec<Option<Scalar>>, Option<usize>)>;

/// A column opening: the column's rows (one per layer) and its path in tree C.
#[derive(Debug, Clone)]
pub struct Opening {
    pub rows: Vec<Scalar>,
    pub path: PathOptions,
}

/// The circuit inputs of one challenge, in the order `Proof::synthesize` consumes them.
#[derive(Debug, Clone)]
pub struct ChallengeInputs {
    /// The challenged node (from the first labeling proof).
    pub challenge: u64,
    pub data_leaf: Scalar,
    pub comm_d_path: PathOptions,
    pub drg_parents: Vec<Opening>,
    pub exp_parents: Vec<Opening>,
    pub comm_r_last_path: PathOptions,
    pub comm_c_path: PathOptions,
}

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// The serde form of a vanilla `ColumnProof` (whose fields are crate-private).
#[derive(Deserialize)]
#[serde(bound(deserialize = "P: DeserializeOwned"))]
struct ColumnProofParts<H: Hasher, P> {
    column: Column<H>,
    inclusion_proof: P,
}

/// The serde form of a vanilla `LabelingProof`, the node only.
#[derive(Deserialize)]
struct LabelingNode {
    node: u64,
}

fn reparse<T: DeserializeOwned>(value: &impl Serialize, what: &str) -> Result<T> {
    let v = serde_json::to_value(value).with_context(|| format!("serializing {what}"))?;
    serde_json::from_value(v).with_context(|| format!("reading {what}"))
}

fn opening<Tree: MerkleTreeTrait>(
    proof: &stacked::ColumnProof<TreeProof<Tree>>,
    layers: usize,
    what: &str,
) -> Result<Opening> {
    let parts: ColumnProofParts<Tree::Hasher, TreeProof<Tree>> = reparse(proof, what)?;
    let rows: Vec<Scalar> = parts.column.rows().iter().map(|&d| d.into()).collect();
    ensure!(
        rows.len() == layers,
        "{what} has {} rows, the circuit has {layers} layers",
        rows.len()
    );
    Ok(Opening {
        rows,
        path: parts.inclusion_proof.as_options(),
    })
}

impl ChallengeInputs {
    /// Reads the inputs of one challenge; `layers` is the circuit's layer count.
    pub fn from_vanilla<Tree: MerkleTreeTrait, G: Hasher>(
        proof: &stacked::Proof<Tree, G>,
        layers: usize,
        drg_degree: usize,
        exp_degree: usize,
    ) -> Result<Self> {
        let columns = &proof.replica_column_proofs;
        ensure!(
            columns.drg_parents.len() == drg_degree && columns.exp_parents.len() == exp_degree,
            "the proof opens {} DRG and {} expander parents, the graph has {drg_degree} and \
             {exp_degree}",
            columns.drg_parents.len(),
            columns.exp_parents.len()
        );
        let first = proof
            .labeling_proofs
            .first()
            .context("the proof has no labeling proofs")?;
        let LabelingNode { node } = reparse(first, "the first labeling proof")?;
        let parents = |list: &[stacked::ColumnProof<TreeProof<Tree>>], kind: &str| {
            list.iter()
                .enumerate()
                .map(|(i, p)| opening::<Tree>(p, layers, &format!("{kind} parent {i}")))
                .collect::<Result<Vec<_>>>()
        };
        let c_x: ColumnProofParts<Tree::Hasher, TreeProof<Tree>> =
            reparse(&columns.c_x, "the challenged column")?;
        Ok(Self {
            challenge: node,
            data_leaf: proof.comm_d_proofs.leaf().into(),
            comm_d_path: proof.comm_d_proofs.as_options(),
            drg_parents: parents(&columns.drg_parents, "DRG")?,
            exp_parents: parents(&columns.exp_parents, "expander")?,
            comm_r_last_path: proof.comm_r_last_proof.as_options(),
            comm_c_path: c_x.inclusion_proof.as_options(),
        })
    }
}
