//! SnapDeals (empty sector update): one EmptySectorUpdate circuit per partition proof.

use std::sync::Arc;

use anyhow::{ensure, Context, Result};
use blstrs::Scalar;
use filecoin_hashers::Domain;
use filecoin_proofs::{
    as_safe_commitment, DefaultPieceDomain, MerkleTreeTrait, PoRepConfig, SectorUpdateConfig,
    TreeRHasher,
};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_update::constants::TreeRDomain;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams,
};
use zkforge_groth16::{ConstraintMatrices, MatrixRecorder, Witness};

use crate::params::params_id;
use crate::shape::with_tree;
use crate::untrusted::refusing_panics;
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

pub fn snap_params_id(proof: RegisteredUpdateProof) -> Result<ParamsId> {
    let size = u64::from(proof.sector_size());
    with_tree!(size, params_id_for_tree, &proof.as_v1_config())
}

/// The recorded constraints of a registered SnapDeals proof's circuit.
pub fn snap_matrices(proof: RegisteredUpdateProof) -> Result<ConstraintMatrices> {
    let size = u64::from(proof.sector_size());
    with_tree!(size, matrices_for_tree, &proof.as_v1_config())
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

fn blank_matrices<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &PublicParams,
) -> Result<ConstraintMatrices> {
    let circuit = <Compound<Tree> as CompoundProof<Scheme<Tree>, Circuit<Tree>>>::blank_circuit(pp);
    Ok(MatrixRecorder::record(circuit)?)
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
    let config = req.registered_proof.as_v1_config();
    let update = SectorUpdateConfig::from_porep_config(&config);
    let expected = usize::from(update.update_partitions);
    ensure!(
        req.vanilla_proofs.len() == expected,
        "{:?} needs {expected} partition proofs, the request has {}",
        req.registered_proof,
        req.vanilla_proofs.len()
    );
    let partitions: Vec<PartitionProof<Tree>> = req
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize(b).with_context(|| {
                format!(
                    "vanilla proof {i} is not a {:?} partition proof",
                    req.registered_proof
                )
            })
        })
        .collect::<Result<_>>()?;
    let public_inputs = PublicInputs {
        k: expected,
        comm_r_old: as_safe_commitment::<TreeRDomain, _>(&req.comm_r_old, "comm_r_old")?,
        comm_d_new: DefaultPieceDomain::try_from_bytes(&req.comm_d_new).context("comm_d_new")?,
        comm_r_new: as_safe_commitment::<TreeRDomain, _>(&req.comm_r_new, "comm_r_new")?,
        h: update.h,
    };
    Ok(Box::new(SnapCircuits::<Tree> {
        params_id: params_id_for_tree::<Tree>(&config)?,
        public_params: PublicParams::from_sector_size(u64::from(config.sector_size)),
        public_inputs,
        partitions,
    }))
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
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> PartitionedCircuit
    for SnapCircuits<Tree>
{
    fn kind(&self) -> ProofKind {
        ProofKind::SnapDeals
    }

    fn params_id(&self) -> &ParamsId {
        &self.params_id
    }

    fn partitions(&self) -> usize {
        self.partitions.len()
    }

    fn synthesize(&self, k: usize) -> Result<Witness> {
        zkforge_groth16::synthesize(self.circuit(k)?)
            .with_context(|| format!("synthesizing partition {k}"))
    }

    fn record_matrices(&self) -> Result<Option<ConstraintMatrices>> {
        blank_matrices::<Tree>(&self.public_params).map(Some)
    }

    fn assign(&self, k: usize, matrices: Arc<ConstraintMatrices>) -> Result<Witness> {
        zkforge_groth16::assign(self.circuit(k)?, matrices)
            .with_context(|| format!("synthesizing partition {k}"))
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>> {
        <Compound<Tree> as CompoundProof<Scheme<Tree>, Circuit<Tree>>>::generate_public_inputs(
            &self.public_inputs,
            &self.public_params,
            Some(k),
        )
    }
}
