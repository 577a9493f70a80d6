//! SnapDeals (empty sector update): one EmptySectorUpdate circuit per partition proof.
//!
//! The product path (`assign`) takes the native assignment ([`crate::native::snap_assignment`]);
//! [`snap_assignments`] keeps the gadgets (the witness-only constraint system) beside it, for
//! comparisons and benchmarks.
//!
//! The partition count is checked before any proof is decoded, and every partition proof is
//! checked with storage-proofs-update's vanilla verifier at submission: the bincode types of
//! small sector sizes are alike, so a 2 KiB proof decodes as an 8 MiB one and would otherwise be
//! queued, to fail in synthesis.

use std::sync::Arc;

use anyhow::{ensure, Context, Result};
use blstrs::Scalar;
use filecoin_hashers::Domain;
use filecoin_proofs::{
    as_safe_commitment, DefaultPieceDomain, MerkleTreeTrait, PoRepConfig, SectorUpdateConfig,
    TreeRHasher,
};
use filecoin_proofs_api::RegisteredUpdateProof;
use rayon::prelude::*;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::TreeRDomain;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams,
};
use zkforge_groth16::exec::pool;
use zkforge_groth16::r1cs::record_sliced;
use zkforge_groth16::{Assignment, ConstraintMatrices, Witness};

use crate::native::{self, SnapChallenge, SnapLayout, SnapPartition};
use crate::registered_proof::params_id;
use crate::shape::{format_sector_size, with_proof_tree, with_tree};
use crate::untrusted::{decode_each, refusing_panics};
use crate::{ParamsId, PartitionedCircuit, ProofKind};

/// A SnapDeals proving request, as the cuzk API carries it.
#[derive(Clone, Debug)]
pub struct SnapRequest {
    pub registered_proof: RegisteredUpdateProof,
    /// bincode of `PartitionProof`, one per partition.
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
}

pub fn snap_circuits(req: SnapRequest) -> Result<Box<dyn PartitionedCircuit>> {
    let size = u64::from(req.registered_proof.sector_size());
    refusing_panics("the SnapDeals vanilla proofs", || {
        with_tree!(size, snap_for_tree, req)
    })
}

/// A SnapDeals request's two ways to a partition's assignment, side by side: the native one
/// the product path takes, and the circuit run through the witness-only constraint system.
pub trait SnapAssignments: Send + Sync {
    fn partitions(&self) -> usize;
    /// Partition `k`'s circuit inputs as plain values, what `native` starts from.
    fn values(&self, k: usize) -> Result<SnapPartition>;
    /// Native, from `values` (those of [`values`](Self::values), or altered ones: tests show
    /// with them that a single wrong value is caught): the apex tree's rows and the
    /// challenges spread over up to `threads` threads.
    fn native_of(&self, values: &SnapPartition, threads: usize) -> Result<Assignment>;
    /// Native, partition `k`.
    fn native(&self, k: usize, threads: usize) -> Result<Assignment> {
        self.native_of(&self.values(k)?, threads)
            .with_context(|| format!("native assignment of partition {k}"))
    }
    /// The gadgets, in a buffer sized like `native`'s output.
    fn witness_only(&self, k: usize, like: &Assignment) -> Result<Assignment>;
    /// How many values partition `k` allocates, part by part.
    fn layout(&self, k: usize) -> Result<SnapLayout>;
}

/// [`SnapAssignments`] of a request, for any sector size (checked as `snap_circuits` does).
pub fn snap_assignments(req: SnapRequest) -> Result<Box<dyn SnapAssignments>> {
    let size = u64::from(req.registered_proof.sector_size());
    refusing_panics("the SnapDeals vanilla proofs", || {
        with_tree!(size, assignments_for_tree, req)
    })
}

pub fn snap_params_id(proof: RegisteredUpdateProof) -> Result<ParamsId> {
    with_proof_tree!(proof, params_id_for_tree)
}

/// The recorded constraints of a registered SnapDeals proof's circuit.
pub fn snap_matrices(proof: RegisteredUpdateProof) -> Result<ConstraintMatrices> {
    with_proof_tree!(proof, matrices_for_tree)
}

type Compound<Tree> = EmptySectorUpdateCompound<Tree>;
type Scheme<Tree> = EmptySectorUpdate<Tree>;
type Circuit<Tree> = EmptySectorUpdateCircuit<Tree>;

fn params_id_for_tree<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    config: &PoRepConfig,
) -> Result<ParamsId> {
    let pp = PublicParams::from_sector_size(u64::from(config.sector_size));
    let id = <Compound<Tree> as CacheableParameters<Circuit<Tree>, _>>::cache_identifier(&pp);
    Ok(params_id(
        ProofKind::SnapDeals,
        u64::from(config.sector_size),
        &id,
    ))
}

fn matrices_for_tree<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    config: &PoRepConfig,
) -> Result<ConstraintMatrices> {
    blank_matrices::<Tree>(&PublicParams::from_sector_size(u64::from(
        config.sector_size,
    )))
}

/// The blank circuit recorded on every core ([`record_sliced`]): its challenges differ in
/// their constants, so it is not made of identical parts as PoRep's and PoSt's are (32 GiB
/// on the H200 box: 64 s on one thread, 38 s in 16 slices).
fn blank_matrices<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &PublicParams,
) -> Result<ConstraintMatrices> {
    let blank =
        || <Compound<Tree> as CompoundProof<Scheme<Tree>, Circuit<Tree>>>::blank_circuit(pp);
    Ok(record_sliced(blank, rayon::current_num_threads())?)
}

struct SnapCircuits<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    params_id: ParamsId,
    public_params: PublicParams,
    public_inputs: PublicInputs,
    partitions: Vec<PartitionProof<Tree>>,
}

fn snap_for_tree<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    req: SnapRequest,
) -> Result<Box<dyn PartitionedCircuit>> {
    Ok(Box::new(parse_request::<Tree>(req)?))
}

fn assignments_for_tree<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    req: SnapRequest,
) -> Result<Box<dyn SnapAssignments>> {
    Ok(Box::new(parse_request::<Tree>(req)?))
}

fn parse_request<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    req: SnapRequest,
) -> Result<SnapCircuits<Tree>> {
    let config = req.registered_proof.as_v1_config();
    let update = SectorUpdateConfig::from_porep_config(&config);
    let expected = usize::from(update.update_partitions);
    ensure!(
        req.vanilla_proofs.len() == expected,
        "{:?} needs {expected} partition proofs, the request has {}",
        req.registered_proof,
        req.vanilla_proofs.len()
    );
    let proof_type = req.registered_proof;
    let partitions: Vec<PartitionProof<Tree>> = decode_each(req.vanilla_proofs, |i| {
        format!("vanilla proof {i} is not a {proof_type:?} partition proof")
    })?;
    let public_inputs = PublicInputs {
        k: expected,
        comm_r_old: as_safe_commitment::<TreeRDomain, _>(&req.comm_r_old, "comm_r_old")?,
        comm_d_new: DefaultPieceDomain::try_from_bytes(&req.comm_d_new).context("comm_d_new")?,
        comm_r_new: as_safe_commitment::<TreeRDomain, _>(&req.comm_r_new, "comm_r_new")?,
        h: update.h,
    };
    let public_params = PublicParams::from_sector_size(u64::from(config.sector_size));
    partitions
        .par_iter()
        .enumerate()
        .try_for_each(|(k, p)| check_partition(&public_params, &public_inputs, k, p))
        .with_context(|| format!("the vanilla proofs are refused as {proof_type:?}"))?;
    Ok(SnapCircuits::<Tree> {
        params_id: params_id_for_tree::<Tree>(&config)?,
        public_params,
        public_inputs,
        partitions,
    })
}

/// Partition proof `k`'s shape for this sector size (named when it is another size's), then
/// storage-proofs-update's vanilla verifier against the request's commitments.
fn check_partition<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &PublicParams,
    public_inputs: &PublicInputs,
    k: usize,
    proof: &PartitionProof<Tree>,
) -> Result<()> {
    let size = format_sector_size((pp.sector_nodes as u64) << 5);
    let (apex, challenges) = (proof.apex_leafs.len(), proof.challenge_proofs.len());
    ensure!(
        apex == pp.apex_leaf_count && challenges == pp.challenge_count,
        "partition proof {k} has {apex} apex leaves and {challenges} challenge proofs, a {size} \
         sector's has {} and {} (a proof for another sector size?)",
        pp.apex_leaf_count,
        pp.challenge_count
    );
    for (c, p) in proof.challenge_proofs.iter().enumerate() {
        let paths = [
            (
                "TreeROld",
                p.proof_r_old.path().len(),
                p.proof_r_old.expected_len(pp.sector_nodes),
            ),
            (
                "TreeDNew",
                p.proof_d_new.path().len(),
                p.proof_d_new.expected_len(pp.sector_nodes),
            ),
            (
                "TreeRNew",
                p.proof_r_new.path().len(),
                p.proof_r_new.expected_len(pp.sector_nodes),
            ),
        ];
        for (tree, got, want) in paths {
            ensure!(
                got == want,
                "partition proof {k}, challenge {c}: the {tree} path has {got} levels, a {size} \
                 sector's has {want} (a proof for another sector size?)"
            );
        }
    }
    let inputs = PublicInputs {
        k,
        ..public_inputs.clone()
    };
    let valid = EmptySectorUpdate::<Tree>::verify(pp, &inputs, proof)
        .with_context(|| format!("partition proof {k}"))?;
    ensure!(
        valid,
        "partition proof {k} does not verify against comm_r_old, comm_r_new and comm_d_new: \
         made for other commitments, or damaged"
    );
    Ok(())
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapCircuits<Tree> {
    fn circuit(&self, k: usize) -> Result<Circuit<Tree>> {
        <Compound<Tree> as CompoundProof<Scheme<Tree>, Circuit<Tree>>>::circuit(
            &self.public_inputs,
            (),
            &self.partitions[k],
            &self.public_params,
            Some(k),
        )
        .with_context(|| format!("building the circuit of partition {k}"))
    }

    /// Partition `k`'s circuit inputs as plain values, read as `PrivateInputs::new` and
    /// `circuit::PublicInputs::new` read them (the tree R roots from the first challenge).
    fn partition_values(&self, k: usize) -> Result<SnapPartition> {
        let proof = self
            .partitions
            .get(k)
            .with_context(|| format!("partition {k} of {}", self.partitions.len()))?;
        let first = proof
            .challenge_proofs
            .first()
            .with_context(|| format!("partition proof {k} has no challenge proofs"))?;
        let inputs = &self.public_inputs;
        Ok(SnapPartition {
            k,
            h: inputs.h,
            comm_r_old: inputs.comm_r_old.into(),
            comm_d_new: inputs.comm_d_new.into(),
            comm_r_new: inputs.comm_r_new.into(),
            comm_c: proof.comm_c.into(),
            root_r_old: first.proof_r_old.root().into(),
            root_r_new: first.proof_r_new.root().into(),
            apex_leafs: proof.apex_leafs.iter().map(|&l| l.into()).collect(),
            challenges: proof
                .challenge_proofs
                .iter()
                .map(|c| SnapChallenge {
                    leaf_r_old: c.proof_r_old.leaf().into(),
                    path_r_old: siblings(&c.proof_r_old),
                    leaf_d_new: c.proof_d_new.leaf().into(),
                    path_d_new: siblings(&c.proof_d_new),
                    leaf_r_new: c.proof_r_new.leaf().into(),
                    path_r_new: siblings(&c.proof_r_new),
                })
                .collect(),
        })
    }
}

/// A Merkle proof's siblings, level by level (the circuit ignores the proof's positions).
fn siblings<P: MerkleProofTrait>(proof: &P) -> Vec<Vec<Scalar>> {
    proof
        .path()
        .into_iter()
        .map(|(level, _)| level.into_iter().map(Into::into).collect())
        .collect()
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapAssignments for SnapCircuits<Tree> {
    fn partitions(&self) -> usize {
        self.partitions.len()
    }

    fn values(&self, k: usize) -> Result<SnapPartition> {
        self.partition_values(k)
    }

    fn native_of(&self, values: &SnapPartition, threads: usize) -> Result<Assignment> {
        native::snap_assignment::<Tree>(&self.public_params, values, threads, pool::current_pool())
    }

    fn witness_only(&self, k: usize, like: &Assignment) -> Result<Assignment> {
        let (inputs, aux) = (like.inputs.len(), like.aux.len());
        Assignment::of_circuit(self.circuit(k)?, None, inputs, aux)
            .with_context(|| format!("synthesizing partition {k}"))
    }

    fn layout(&self, k: usize) -> Result<SnapLayout> {
        native::snap_layout::<Tree>(&self.public_params, &self.partition_values(k)?)
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> PartitionedCircuit
    for SnapCircuits<Tree>
{
    gadget_circuit_methods!(|k| format!("synthesizing partition {k}"));

    fn partitions(&self) -> usize {
        self.partitions.len()
    }

    /// Native, a job's partitions sharing the synthesis pool's threads: the engine runs them
    /// side by side (16 at 32 GiB, one per core on the GPU box), so each takes its share, and
    /// a one-partition sector (2 KiB) takes them all.
    fn assign(&self, k: usize, matrices: Arc<ConstraintMatrices>) -> Result<Witness> {
        let threads = rayon::current_num_threads().div_ceil(self.partitions.len().max(1));
        Ok(Witness::from_assignment(
            self.native(k, threads)?,
            matrices,
        )?)
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>> {
        <Compound<Tree> as CompoundProof<Scheme<Tree>, Circuit<Tree>>>::generate_public_inputs(
            &self.public_inputs,
            &self.public_params,
            Some(k),
        )
    }
}
