//! WinningPoSt and WindowPoSt: vanilla sector proofs (bincode, as Curio sends them) become
//! one FallbackPoSt circuit; a WindowPoSt request is one partition (`partition_index`).

use std::sync::Arc;

use anyhow::{ensure, Context, Result};
use blstrs::Scalar;
use filecoin_hashers::Hasher;
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, single_partition_vanilla_proofs,
    FallbackPoStSectorProof, MerkleTreeTrait, PoStConfig, PoStType,
};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::util::NODE_SIZE;
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound,
};
use zkforge_groth16::synthesis::pool;
use zkforge_groth16::{Assignment, ConstraintMatrices, MatrixRecorder, Witness};

use crate::native;
use crate::params::params_id;
use crate::shape::with_tree;
use crate::untrusted::refusing_panics;
use crate::{ParamsId, PartitionedCircuit, ProofKind};

/// A PoSt proving request, as the cuzk API carries it.
#[derive(Clone, Debug)]
pub struct PostRequest {
    pub registered_proof: RegisteredPoStProof,
    pub randomness: [u8; 32],
    pub prover_id: [u8; 32],
    /// bincode of `FallbackPoStSectorProof`, one per sector.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// WindowPoSt only: which partition of the deadline's sectors these proofs form.
    pub partition_index: usize,
}

/// Filecoin's prover id for a miner actor id: the id address payload (unsigned LEB128),
/// zero-padded to 32 bytes.
pub fn prover_id_from_miner(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let (mut v, mut i) = (miner_id, 0);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        out[i] = if v == 0 { byte } else { byte | 0x80 };
        i += 1;
        if v == 0 {
            return out;
        }
    }
}

pub fn post_circuits(req: PostRequest) -> Result<Box<dyn PartitionedCircuit>> {
    let size = u64::from(req.registered_proof.sector_size());
    refusing_panics("the PoSt vanilla proofs", || {
        with_tree!(size, post_for_tree, req)
    })
}

/// A PoSt request's two ways to its assignment, side by side: the native one the product path
/// takes, and the circuit run through the witness-only constraint system (the gadgets).
pub trait PostAssignments: Send + Sync {
    /// Native: the sectors written in parallel on up to `threads` threads.
    fn native(&self, threads: usize) -> Result<Assignment>;
    /// The gadgets, one sector after another, in a buffer sized like `native`'s output.
    fn witness_only(&self, like: &Assignment) -> Result<Assignment>;
}

/// [`PostAssignments`] of a request, for any sector size.
pub fn post_assignments(req: PostRequest) -> Result<Box<dyn PostAssignments>> {
    let size = u64::from(req.registered_proof.sector_size());
    refusing_panics("the PoSt vanilla proofs", || {
        with_tree!(size, assignments_for_tree, req)
    })
}

pub fn post_params_id(proof: RegisteredPoStProof) -> Result<ParamsId> {
    let size = u64::from(proof.sector_size());
    with_tree!(size, params_id_for_tree, &proof.as_v1_config())
}

/// The recorded constraints of a registered PoSt proof's circuit.
pub fn post_matrices(proof: RegisteredPoStProof) -> Result<ConstraintMatrices> {
    let size = u64::from(proof.sector_size());
    with_tree!(size, matrices_for_tree, &proof.as_v1_config())
}

fn kind(config: &PoStConfig) -> ProofKind {
    match config.typ {
        PoStType::Winning => ProofKind::WinningPost,
        PoStType::Window => ProofKind::WindowPost,
    }
}

fn params_id_for_tree<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig) -> Result<ParamsId> {
    let id = config.get_cache_identifier::<Tree>()?;
    Ok(params_id(kind(config), u64::from(config.sector_size), &id))
}

fn public_params<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
) -> Result<fallback::PublicParams> {
    match config.typ {
        PoStType::Winning => winning_post_public_params::<Tree>(config),
        PoStType::Window => window_post_public_params::<Tree>(config),
    }
}

type Compound<Tree> = FallbackPoStCompound<Tree>;

fn matrices_for_tree<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
) -> Result<ConstraintMatrices> {
    blank_matrices::<Tree>(&public_params::<Tree>(config)?)
}

fn blank_matrices<Tree: 'static + MerkleTreeTrait>(
    pp: &fallback::PublicParams,
) -> Result<ConstraintMatrices> {
    let circuit = <Compound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::blank_circuit(pp);
    Ok(MatrixRecorder::record(circuit)?)
}

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

struct PostCircuits<Tree: 'static + MerkleTreeTrait> {
    params_id: ParamsId,
    public_params: fallback::PublicParams,
    public_inputs: fallback::PublicInputs<Domain<Tree>>,
    /// The public inputs as the verifier sees them: the partition's sectors placed at their
    /// position in the full sector list, so challenge derivation uses the global index.
    verifier_inputs: fallback::PublicInputs<Domain<Tree>>,
    proof: fallback::Proof<<Tree as MerkleTreeTrait>::Proof>,
    partition: usize,
}

fn post_for_tree<Tree: 'static + MerkleTreeTrait>(
    req: PostRequest,
) -> Result<Box<dyn PartitionedCircuit>> {
    Ok(Box::new(parse_request::<Tree>(req)?))
}

fn assignments_for_tree<Tree: 'static + MerkleTreeTrait>(
    req: PostRequest,
) -> Result<Box<dyn PostAssignments>> {
    Ok(Box::new(parse_request::<Tree>(req)?))
}

fn parse_request<Tree: 'static + MerkleTreeTrait>(req: PostRequest) -> Result<PostCircuits<Tree>> {
    let config = req.registered_proof.as_v1_config();
    ensure!(
        !req.vanilla_proofs.is_empty(),
        "no vanilla proofs in the request"
    );
    let vanilla: Vec<FallbackPoStSectorProof<Tree>> = req
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize(b).with_context(|| {
                format!(
                    "vanilla proof {i} is not a {:?} sector proof",
                    req.registered_proof
                )
            })
        })
        .collect::<Result<_>>()?;
    let public_params = public_params::<Tree>(&config)?;
    let per_partition = public_params.sector_count;
    let sectors: Vec<fallback::PublicSector<Domain<Tree>>> = vanilla
        .iter()
        .map(|p| fallback::PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect();
    let randomness = as_safe_commitment(&req.randomness, "randomness")?;
    let prover_id = as_safe_commitment(&req.prover_id, "prover_id")?;

    let (public_inputs, proof, partition) = match config.typ {
        PoStType::Winning => {
            ensure!(
                req.partition_index == 0,
                "WinningPoSt has a single partition"
            );
            ensure!(
                vanilla.len() == config.sector_count,
                "WinningPoSt needs {} vanilla proof(s), got {}",
                config.sector_count,
                vanilla.len()
            );
            let pi = fallback::PublicInputs {
                randomness,
                prover_id,
                sectors: sectors.clone(),
                k: None,
            };
            let mut parts = partition_vanilla_proofs(&config, &public_params, &pi, 1, &vanilla)?;
            (pi, parts.remove(0), 0)
        }
        PoStType::Window => {
            ensure!(
                vanilla.len() <= per_partition,
                "a WindowPoSt partition holds at most {per_partition} sectors, got {}",
                vanilla.len()
            );
            let k = req.partition_index;
            let pi = fallback::PublicInputs {
                randomness,
                prover_id,
                sectors: sectors.clone(),
                k: Some(k),
            };
            let proof = single_partition_vanilla_proofs(&config, &public_params, &pi, &vanilla)?;
            (pi, proof, k)
        }
    };
    let verifier_sectors = match config.typ {
        // WinningPoSt treats each challenge as a "sector": the verifier lists the sector once
        // per challenge so that every challenge index is derived.
        PoStType::Winning => sectors
            .iter()
            .cycle()
            .take(per_partition * sectors.len())
            .cloned()
            .collect(),
        PoStType::Window => {
            let mut padded = vec![sectors[0].clone(); partition * per_partition];
            padded.extend(sectors);
            padded
        }
    };
    let verifier_inputs = fallback::PublicInputs {
        sectors: verifier_sectors,
        ..public_inputs.clone()
    };
    Ok(PostCircuits::<Tree> {
        params_id: params_id_for_tree::<Tree>(&config)?,
        public_params,
        public_inputs,
        verifier_inputs,
        proof,
        partition,
    })
}

impl<Tree: 'static + MerkleTreeTrait> PostCircuits<Tree> {
    /// The circuit's sectors, as `FallbackPoStCompound::circuit` lays them out for chunk 0: a
    /// partition short of sectors repeats its last public sector.
    fn sector_inputs(&self) -> Result<Vec<native::SectorInputs>> {
        let n = self.public_params.sector_count;
        ensure!(
            self.proof.sectors.len() == n,
            "the partition's vanilla proof has {} sectors, the circuit {n}",
            self.proof.sectors.len()
        );
        let public = &self.public_inputs.sectors[..n.min(self.public_inputs.sectors.len())];
        let last = public.len().checked_sub(1).context("no public sectors")?;
        Ok(self
            .proof
            .sectors
            .iter()
            .enumerate()
            .map(|(i, p)| native::SectorInputs::from_vanilla(public[i.min(last)].comm_r.into(), p))
            .collect())
    }

    fn circuit(&self, k: usize) -> Result<FallbackPoStCircuit<Tree>> {
        ensure!(k == 0, "a PoSt request has one partition");
        // As filecoin-proofs does: the circuit sees this partition's sectors as chunk 0.
        <Compound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::circuit(
            &self.public_inputs,
            Default::default(),
            &self.proof,
            &self.public_params,
            Some(0),
        )
        .context("building the PoSt circuit")
    }
}

impl<Tree: 'static + MerkleTreeTrait> PartitionedCircuit for PostCircuits<Tree> {
    fn kind(&self) -> ProofKind {
        self.params_id.kind
    }

    fn params_id(&self) -> &ParamsId {
        &self.params_id
    }

    fn partitions(&self) -> usize {
        1
    }

    fn synthesize(&self, k: usize) -> Result<Witness> {
        zkforge_groth16::synthesize(self.circuit(k)?).context("synthesizing the PoSt circuit")
    }

    fn record_matrices(&self) -> Result<Option<ConstraintMatrices>> {
        blank_matrices::<Tree>(&self.public_params).map(Some)
    }

    /// Native: the sectors written in parallel on the synthesis pool's threads (a PoSt request
    /// is one partition, so its own sectors are the parallelism there is).
    fn assign(&self, k: usize, matrices: Arc<ConstraintMatrices>) -> Result<Witness> {
        ensure!(k == 0, "a PoSt request has one partition");
        let a = self.native(rayon::current_num_threads())?;
        Ok(Witness::from_assignment(a, matrices)?)
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>> {
        ensure!(k == 0, "a PoSt request has one partition");
        <Compound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::generate_public_inputs(
            &self.verifier_inputs,
            &self.public_params,
            Some(self.partition),
        )
    }
}

impl<Tree: 'static + MerkleTreeTrait> PostAssignments for PostCircuits<Tree> {
    fn native(&self, threads: usize) -> Result<Assignment> {
        let sectors = self.sector_inputs()?;
        let leaves = self.public_params.sector_size as usize / NODE_SIZE;
        native::post_assignment::<Tree>(&sectors, leaves, threads, pool::current_pool())
            .context("native assignment of the PoSt circuit")
    }

    fn witness_only(&self, like: &Assignment) -> Result<Assignment> {
        let (inputs, aux) = (like.inputs.len(), like.aux.len());
        Ok(Assignment::of_circuit(self.circuit(0)?, None, inputs, aux)?)
    }
}
