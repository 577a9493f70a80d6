//! The PoRep partition's variable assignment (inputs, aux), generated natively: the same
//! values, in the same order, as synthesizing storage-proofs-porep 19.1's `StackedCircuit`
//! through [`WitnessBuilder`](zkforge_groth16::WitnessBuilder) puts in a witness, without
//! building a linear combination: each gadget is mirrored by code that computes the values it
//! would allocate, in its order, and writes them into an [`AssignmentWriter`].
//!
//! - [`sha256`]: bellperson's SHA-256 gadget mirrored 32 bits at a time (≈97% of the values);
//! - `poseidon`: neptune's legacy Poseidon circuit, the PoR and insertion gadgets;
//! - `gadgets`: bit decompositions, packed inputs, the SHA-256 tree D path, path checks;
//! - `challenge`: the circuit's allocation order (the prefix, then one challenge); the prefix's
//!   single Poseidon hash still runs as the gadget in the witness-only constraint system;
//! - `vanilla`: a challenge's inputs read from its vanilla proof;
//! - `synthetic`: partitions of a real shape with made-up values, for benchmarks;
//! - `post`: the FallbackPoSt circuit (WinningPoSt, WindowPoSt), sector by sector, from the
//!   same Poseidon and PoR mirrors;
//! - `snap`: the EmptySectorUpdate circuit (SnapDeals): the apex tree row by row, then the
//!   challenges, from the same SHA-256, Poseidon and insertion mirrors.
//!
//! The challenges of a partition are independent and each allocates the same number of
//! values (what is allocated depends on the circuit's shape, never on values), so after the
//! prefix each challenge is written by its own thread straight into its region of the one
//! aux buffer. Region sizes are learned once per parameter set by counting one challenge,
//! and every challenge is checked to fill its region exactly.

mod challenge;
mod gadgets;
mod poseidon;
mod post;
pub mod sha256;
mod snap;
mod snap_paths;
mod synthetic;
#[cfg(test)]
mod test_support;
mod vanilla;

pub use post::{post_assignment, SectorInputs};
pub use snap::{snap_assignment, snap_layout, SnapChallenge, SnapLayout, SnapPartition, SnapShape};
pub use synthetic::{synthetic_porep, SyntheticPoRep};

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{ensure, Result};
use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::{poseidon::PoseidonHasher, Hasher};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked;
use zkforge_groth16::{Assignment, AssignmentWriter, Region, ScalarPool};

pub use challenge::PartitionValues;
use challenge::{Shared, DRG_PARENTS, EXP_PARENTS};
pub use vanilla::{ChallengeInputs, Opening, PathOptions};

use crate::ParamsId;

/// How many values one PoRep partition circuit allocates, part by part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoRepLayout {
    /// ONE and the prefix shared by all challenges.
    pub prefix: Region,
    /// Each challenge.
    pub challenge: Region,
    pub challenges: usize,
}

impl PoRepLayout {
    /// The whole assignment.
    pub fn total(&self) -> Region {
        Region {
            inputs: self.prefix.inputs + self.challenges * self.challenge.inputs,
            aux: self.prefix.aux + self.challenges * self.challenge.aux,
        }
    }
}

/// The shape of one partition's circuit, from the public parameters.
#[derive(Clone, Copy, Debug)]
pub struct CircuitShape {
    pub layers: usize,
    /// Nodes in the sector (leaves of trees D, R and C).
    pub nodes: usize,
}

impl CircuitShape {
    pub fn of<Tree: 'static + MerkleTreeTrait>(pp: &stacked::PublicParams<Tree>) -> Result<Self> {
        ensure!(
            Tree::Hasher::name() == PoseidonHasher::name(),
            "the native assignment mirrors Poseidon trees; this tree hashes with {}",
            Tree::Hasher::name()
        );
        ensure!(
            pp.graph.base_graph().degree() == DRG_PARENTS
                && pp.graph.expansion_degree() == EXP_PARENTS,
            "the graph has {} DRG and {} expander parents; the PoRep label circuit is written \
             for {DRG_PARENTS} and {EXP_PARENTS}",
            pp.graph.base_graph().degree(),
            pp.graph.expansion_degree()
        );
        Ok(Self {
            layers: pp.num_layers,
            nodes: pp.graph.size(),
        })
    }
}

fn synthesis_error(what: String, e: anyhow::Error) -> zkforge_groth16::Error {
    zkforge_groth16::Error::Synthesis(format!("{what}: {e:#}"))
}

/// Reads challenge `i`'s inputs and checks every path has the shape the gadgets assume.
fn read_challenge<Tree: MerkleTreeTrait, G: Hasher>(
    proof: &stacked::Proof<Tree, G>,
    shape: CircuitShape,
) -> Result<ChallengeInputs> {
    let c = ChallengeInputs::from_vanilla(proof, shape.layers, DRG_PARENTS, EXP_PARENTS)?;
    let depth = shape.nodes.trailing_zeros() as usize;
    ensure!(
        shape.nodes.is_power_of_two() && c.comm_d_path.len() == depth,
        "the comm_d path has {} levels, tree D has {depth}",
        c.comm_d_path.len()
    );
    let trees = [
        (&c.comm_r_last_path, "the comm_r_last path"),
        (&c.comm_c_path, "the comm_c path"),
    ];
    for (path, what) in trees {
        gadgets::check_tree_path::<Tree>(path, shape.nodes, what)?;
    }
    for (i, p) in c.drg_parents.iter().chain(&c.exp_parents).enumerate() {
        gadgets::check_tree_path::<Tree>(&p.path, shape.nodes, &format!("parent {i}'s path"))?;
    }
    Ok(c)
}

fn write_prefix<Tree: MerkleTreeTrait>(
    w: &mut AssignmentWriter<'_>,
    values: &PartitionValues,
) -> zkforge_groth16::Result<Shared> {
    w.push_input(Scalar::ONE)?;
    challenge::prefix::<Tree>(w, values).map_err(|e| synthesis_error("the prefix".into(), e))
}

/// A partition's challenges: how many there are, and challenge `i`'s inputs on demand (read
/// by the thread that writes it).
pub struct ChallengeSource<'a> {
    count: usize,
    read: Box<dyn Fn(usize) -> Result<Cow<'a, ChallengeInputs>> + Sync + 'a>,
}

impl<'a> ChallengeSource<'a> {
    /// From vanilla proofs, each read and checked against `shape` when it is written.
    pub fn vanilla<Tree: MerkleTreeTrait, G: Hasher>(
        proofs: &'a [stacked::Proof<Tree, G>],
        shape: CircuitShape,
    ) -> Self {
        Self {
            count: proofs.len(),
            read: Box::new(move |i| Ok(Cow::Owned(read_challenge(&proofs[i], shape)?))),
        }
    }

    /// From inputs at hand.
    pub fn inputs(inputs: &'a [ChallengeInputs]) -> Self {
        Self {
            count: inputs.len(),
            read: Box::new(move |i| Ok(Cow::Borrowed(&inputs[i]))),
        }
    }

    fn write<Tree: MerkleTreeTrait>(
        &self,
        w: &mut AssignmentWriter<'_>,
        i: usize,
        shared: &Shared,
    ) -> zkforge_groth16::Result<()> {
        (self.read)(i)
            .and_then(|c| challenge::challenge::<Tree>(w, &c, shared))
            .map_err(|e| synthesis_error(format!("challenge {i}"), e))
    }
}

/// Region sizes per parameter set, learned from the first partition seen.
fn layouts() -> &'static Mutex<HashMap<ParamsId, (Region, Region)>> {
    static LAYOUTS: OnceLock<Mutex<HashMap<ParamsId, (Region, Region)>>> = OnceLock::new();
    LAYOUTS.get_or_init(Default::default)
}

/// The layout of a partition of the circuit `params_id` names: cached per parameter set,
/// otherwise counted by running the prefix and the first challenge without keeping values.
pub fn layout<Tree: MerkleTreeTrait>(
    params_id: &ParamsId,
    values: &PartitionValues,
    challenges: &ChallengeSource<'_>,
) -> Result<PoRepLayout> {
    ensure!(challenges.count > 0, "the partition has no challenges");
    let cached = layouts()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(params_id)
        .copied();
    let (prefix, challenge) = match cached {
        Some(regions) => regions,
        None => {
            let (shared, prefix) = Assignment::count(|w| write_prefix::<Tree>(w, values))?;
            let ((), challenge) = Assignment::count(|w| challenges.write::<Tree>(w, 0, &shared))?;
            layouts()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(params_id.clone(), (prefix, challenge));
            (prefix, challenge)
        }
    };
    Ok(PoRepLayout {
        prefix,
        challenge,
        challenges: challenges.count,
    })
}

/// The assignment of one partition, its aux buffer from `pool`, the challenges written on up
/// to `threads` threads.
pub fn assignment<Tree: MerkleTreeTrait>(
    params_id: &ParamsId,
    values: &PartitionValues,
    challenges: &ChallengeSource<'_>,
    threads: usize,
    pool: Option<Arc<ScalarPool>>,
) -> Result<Assignment> {
    let layout = layout::<Tree>(params_id, values, challenges)?;
    let total = layout.total();
    let mut a = Assignment::with_capacity(pool, total.inputs, total.aux);
    let (shared, prefix) = a.append(|w| write_prefix::<Tree>(w, values))?;
    ensure!(
        prefix == layout.prefix,
        "the prefix allocated {prefix:?}, the layout says {:?}",
        layout.prefix
    );
    let regions = vec![layout.challenge; layout.challenges];
    a.append_regions(&regions, threads, |i, w| {
        challenges.write::<Tree>(w, i, &shared)
    })?;
    Ok(a)
}
