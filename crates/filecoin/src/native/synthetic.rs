//! A partition with a registered proof's real circuit shape (layers, challenges, tree shape,
//! path lengths) and made-up values, to measure the native assignment where no C1 output of
//! that size is at hand (a 32 GiB C1 needs a sealed 32 GiB sector). The work and the memory
//! do not depend on the values; nothing checks them either: only shape and cost are real.

use std::marker::PhantomData;
use std::sync::Arc;

use anyhow::Result;
use blstrs::Scalar;
use ff::Field;
use filecoin_proofs::{parameters::public_params, MerkleTreeTrait};
use filecoin_proofs_api::RegisteredSealProof;
use rand_core::{RngCore, SeedableRng};
use storage_proofs_core::merkle::base_path_length;
use typenum::Unsigned;
use zkforge_groth16::{Assignment, ScalarPool};

use super::{
    assignment, layout, ChallengeInputs, ChallengeSource, CircuitShape, Opening, PartitionValues,
    PathOptions, PoRepLayout, DRG_PARENTS, EXP_PARENTS,
};
use crate::shape::with_tree;
use crate::ParamsId;

/// One made-up partition of a registered proof's circuit.
pub trait SyntheticPoRep: Send + Sync {
    fn layout(&self) -> Result<PoRepLayout>;
    fn assignment(&self, threads: usize, pool: Option<Arc<ScalarPool>>) -> Result<Assignment>;
}

struct Synthetic<Tree> {
    /// The real parameter set's id with a `-synthetic` stem: its own layout cache entry.
    id: ParamsId,
    values: PartitionValues,
    challenges: Vec<ChallengeInputs>,
    _tree: PhantomData<Tree>,
}

impl<Tree: 'static + MerkleTreeTrait> SyntheticPoRep for Synthetic<Tree> {
    fn layout(&self) -> Result<PoRepLayout> {
        layout::<Tree>(
            &self.id,
            &self.values,
            &ChallengeSource::inputs(&self.challenges),
        )
    }

    fn assignment(&self, threads: usize, pool: Option<Arc<ScalarPool>>) -> Result<Assignment> {
        let challenges = ChallengeSource::inputs(&self.challenges);
        assignment::<Tree>(&self.id, &self.values, &challenges, threads, pool)
    }
}

/// A made-up partition of `proof`'s circuit, deterministic for `seed`.
pub fn synthetic_porep(proof: RegisteredSealProof, seed: u64) -> Result<Box<dyn SyntheticPoRep>> {
    let size = u64::from(proof.sector_size());
    with_tree!(size, synthetic_for_tree, proof, seed)
}

fn synthetic_for_tree<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    seed: u64,
) -> Result<Box<dyn SyntheticPoRep>> {
    let config = proof.as_v1_config();
    let pp = public_params::<Tree>(&config)?;
    let shape = CircuitShape::of(&pp)?;
    let mut id = crate::porep::params_id_for_tree::<Tree>(&config)?;
    id.stem.push_str("-synthetic");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let values = PartitionValues {
        replica_id: Scalar::random(&mut rng),
        comm_d: Scalar::random(&mut rng),
        comm_r: Scalar::random(&mut rng),
        comm_r_last: Scalar::random(&mut rng),
        comm_c: Scalar::random(&mut rng),
    };
    let challenges = (0..pp.challenges.num_challenges_per_partition())
        .map(|_| random_challenge::<Tree>(shape, &mut rng))
        .collect();
    Ok(Box::new(Synthetic::<Tree> {
        id,
        values,
        challenges,
        _tree: PhantomData,
    }))
}

fn random_challenge<Tree: MerkleTreeTrait>(
    shape: CircuitShape,
    rng: &mut impl RngCore,
) -> ChallengeInputs {
    let challenge = rng.next_u64() % shape.nodes as u64;
    let depth = shape.nodes.trailing_zeros() as usize;
    let comm_d_path = (0..depth)
        .map(|level| {
            let bit = (challenge >> level) as usize & 1;
            (vec![Some(Scalar::random(&mut *rng))], Some(bit))
        })
        .collect();
    let opening = |rng: &mut dyn RngCore| Opening {
        rows: (0..shape.layers)
            .map(|_| Scalar::random(&mut *rng))
            .collect(),
        path: random_path::<Tree>(shape.nodes, &mut *rng),
    };
    ChallengeInputs {
        challenge,
        data_leaf: Scalar::random(&mut *rng),
        comm_d_path,
        drg_parents: (0..DRG_PARENTS).map(|_| opening(rng)).collect(),
        exp_parents: (0..EXP_PARENTS).map(|_| opening(rng)).collect(),
        comm_r_last_path: random_path::<Tree>(shape.nodes, &mut *rng),
        comm_c_path: random_path::<Tree>(shape.nodes, &mut *rng),
    }
}

/// A path of `Tree`'s shape over `nodes` leaves with random siblings and positions.
pub fn random_path<Tree: MerkleTreeTrait>(nodes: usize, rng: &mut dyn RngCore) -> PathOptions {
    let base = base_path_length::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(nodes);
    let arities = (0..base)
        .map(|_| Tree::Arity::to_usize())
        .chain([
            Tree::SubTreeArity::to_usize(),
            Tree::TopTreeArity::to_usize(),
        ])
        .filter(|&a| a > 0);
    arities
        .map(|a| {
            let siblings = (1..a).map(|_| Some(Scalar::random(&mut *rng))).collect();
            (siblings, Some(rng.next_u64() as usize % a))
        })
        .collect()
}
