//! The FallbackPoSt circuit's assignment (WinningPoSt and WindowPoSt), generated natively: the
//! values storage-proofs-post 19.1's `Sector::synthesize` allocates, in its order — comm_r_last,
//! comm_c, comm_r (also a public input), Poseidon(comm_c, comm_r_last), then per challenge the
//! leaf and its PoR path in tree R (the path's index bits packed into a public input).
//!
//! Sectors are independent and allocate alike (the counts depend on the tree's shape, never on
//! values), so after ONE each sector is written by its own thread into its region: a 2,349-sector
//! WindowPoSt partition spreads over every core, where the gadgets run one sector after another.

use std::sync::Arc;

use anyhow::{ensure, Result};
use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::PoseidonArity;
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_post::fallback::SectorProof;
use typenum::U2;
use zkforge_groth16::{Assignment, AssignmentWriter, ScalarPool};

use super::gadgets::check_tree_path;
use super::poseidon::{poseidon, tree_inclusion};
use super::synthesis_error;
use super::vanilla::PathOptions;

/// What the circuit takes of one sector: its commitments and each challenge's leaf and path.
#[derive(Clone, Debug)]
pub struct SectorInputs {
    pub comm_r: Scalar,
    pub comm_c: Scalar,
    pub comm_r_last: Scalar,
    pub leafs: Vec<Scalar>,
    pub paths: Vec<PathOptions>,
}

impl SectorInputs {
    /// As `Sector::circuit` reads them: `comm_r` from the public sector, the rest from its
    /// vanilla proof.
    pub fn from_vanilla<P: MerkleProofTrait>(comm_r: Scalar, proof: &SectorProof<P>) -> Self {
        Self {
            comm_r,
            comm_c: proof.comm_c.into(),
            comm_r_last: proof.comm_r_last.into(),
            leafs: proof.leafs().into_iter().map(Into::into).collect(),
            paths: proof.as_options(),
        }
    }

    /// Checks every path has the shape the gadgets assume for `Tree` with `leaves` leaves.
    fn check<Tree: MerkleTreeTrait>(&self, leaves: usize) -> Result<()> {
        ensure!(
            self.leafs.len() == self.paths.len(),
            "{} leaves and {} paths",
            self.leafs.len(),
            self.paths.len()
        );
        for (i, path) in self.paths.iter().enumerate() {
            check_tree_path::<Tree>(path, leaves, &format!("challenge {i}'s path"))?;
        }
        Ok(())
    }

    fn write<Tree: MerkleTreeTrait>(&self, w: &mut AssignmentWriter<'_>) -> Result<()> {
        w.push(self.comm_r_last)?;
        w.push(self.comm_c)?;
        w.push(self.comm_r)?;
        w.push_input(self.comm_r)?;
        poseidon::<U2>(w, &[self.comm_c, self.comm_r_last], U2::PARAMETERS())?;
        for (&leaf, path) in self.leafs.iter().zip(&self.paths) {
            w.push(leaf)?;
            tree_inclusion::<Tree>(w, path, leaf)?;
        }
        Ok(())
    }
}

/// The assignment of a FallbackPoSt circuit over `sectors` (each checked against a tree of
/// `leaves` leaves), its aux buffer from `pool`, the sectors written on up to `threads` threads.
pub fn post_assignment<Tree: MerkleTreeTrait>(
    sectors: &[SectorInputs],
    leaves: usize,
    threads: usize,
    pool: Option<Arc<ScalarPool>>,
) -> Result<Assignment> {
    ensure!(!sectors.is_empty(), "the circuit has no sectors");
    let write = |i: usize, w: &mut AssignmentWriter<'_>| {
        let s = &sectors[i];
        s.check::<Tree>(leaves)
            .and_then(|()| s.write::<Tree>(w))
            .map_err(|e| synthesis_error(format!("sector {i}"), e))
    };
    // Every sector allocates what the first does; each is checked to fill its region exactly.
    let ((), region) = Assignment::count(|w| write(0, w))?;
    let n = sectors.len();
    let mut a = Assignment::with_capacity(pool, 1 + n * region.inputs, n * region.aux);
    a.append(|w| Ok(w.push_input(Scalar::ONE)?))?;
    a.append_regions(&vec![region; n], threads, write)?;
    Ok(a)
}
