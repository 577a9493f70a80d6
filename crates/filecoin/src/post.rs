//! WinningPoSt and WindowPoSt: vanilla sector proofs (bincode, as Curio sends them) become
//! one FallbackPoSt circuit; a WindowPoSt request is one partition (`partition_index`).
//!
//! Everything a request says is checked before it sizes anything ([`crate::limits`]): the
//! partition index, then the number of vanilla proofs, then each proof's shape once decoded,
//! then the proofs themselves with storage-proofs' verifier, so that a proof of another sector
//! size or for other randomness is refused at submission rather than failing a job later.

use std::sync::Arc;

use anyhow::{ensure, Context, Result};
use blstrs::Scalar;
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::{
    as_safe_commitment, FallbackPoStSectorProof, MerkleTreeTrait, PoStConfig, PoStType,
};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::util::NODE_SIZE;
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector, SectorProof,
};
use zkforge_groth16::exec::pool;
use zkforge_groth16::r1cs::record_repeated;
use zkforge_groth16::{Assignment, ConstraintMatrices, Witness};

use crate::limits::MAX_PARTITIONS_PER_DEADLINE;
use crate::native;
use crate::post_partition::{partition_public_inputs, verify_partition, Domain};
use crate::registered_proof::params_id;
use crate::shape::{format_sector_size, with_proof_tree, with_tree};
use crate::untrusted::{decode_each, refusing_panics};
use crate::{ParamsId, PartitionedCircuit, ProofKind};

/// A PoSt proving request, as the cuzk API carries it.
#[derive(Clone, Debug)]
pub struct PostRequest {
    pub registered_proof: RegisteredPoStProof,
    pub randomness: [u8; 32],
    pub prover_id: [u8; 32],
    /// bincode of `FallbackPoStSectorProof`, one per sector: WinningPoSt exactly its sector
    /// count (1), WindowPoSt 1 to its sector count ([`crate::max_vanilla_proofs`]).
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// WindowPoSt: which partition of the deadline's sectors these proofs form, below
    /// [`MAX_PARTITIONS_PER_DEADLINE`]. WinningPoSt: 0, it has one partition.
    pub partition_index: usize,
    /// WinningPoSt: when given, the sector its vanilla proof must be for. WindowPoSt ignores
    /// it: a partition holds many sectors, and each vanilla proof names its own.
    pub sector_number: Option<u64>,
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

/// WinningPoSt or WindowPoSt: which one a registered PoSt proof is.
pub fn post_kind(proof: RegisteredPoStProof) -> ProofKind {
    kind(&proof.as_v1_config())
}

pub fn post_params_id(proof: RegisteredPoStProof) -> Result<ParamsId> {
    with_proof_tree!(proof, params_id_for_tree)
}

/// The recorded constraints of a registered PoSt proof's circuit.
pub fn post_matrices(proof: RegisteredPoStProof) -> Result<ConstraintMatrices> {
    with_proof_tree!(proof, matrices_for_tree)
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

/// The blank circuit is identical sectors (2,349 for a 32 GiB WindowPoSt partition): recorded
/// from one ([`record_repeated`]) instead of through the gadgets of every sector (minutes).
fn blank_matrices<Tree: 'static + MerkleTreeTrait>(
    pp: &fallback::PublicParams,
) -> Result<ConstraintMatrices> {
    let with_sectors = |k| FallbackPoStCircuit::<Tree> {
        prover_id: None,
        sectors: (0..k)
            .map(|_| fallback::Sector::blank_circuit(pp))
            .collect(),
    };
    Ok(record_repeated(with_sectors, pp.sector_count)?)
}

/// One partition of a PoSt request, parsed and checked.
struct PostCircuits<Tree: 'static + MerkleTreeTrait> {
    params_id: ParamsId,
    public_params: fallback::PublicParams,
    /// The partition's own public sectors (WinningPoSt: its sector once per challenge, as
    /// filecoin-proofs' verifier lists it) and `k`, the partition index.
    public_inputs: fallback::PublicInputs<Domain<Tree>>,
    /// One proof of exactly one sector proof per public sector, not padded to the circuit's
    /// sector count: a short partition's repeats are made when a circuit needs them, so a
    /// request holds about its own bytes.
    proofs: Vec<fallback::Proof<<Tree as MerkleTreeTrait>::Proof>>,
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

/// The partition index and the number of vanilla proofs against the protocol's bounds: both
/// come from the client and are checked before anything is decoded or sized from them.
fn check_counts(req: &PostRequest, config: &PoStConfig) -> Result<()> {
    let (k, proof, got, n) = (
        req.partition_index,
        req.registered_proof,
        req.vanilla_proofs.len(),
        config.sector_count,
    );
    match config.typ {
        PoStType::Winning => {
            ensure!(
                k == 0,
                "partition_index {k} is out of range: WinningPoSt has a single partition (0)"
            );
            ensure!(
                got != 0,
                "no vanilla proofs in the request: {proof:?} takes exactly {n}"
            );
            ensure!(
                got == n,
                "{proof:?} takes exactly {n} vanilla proof(s) (its sector count), the request \
                 has {got}"
            );
        }
        PoStType::Window => {
            ensure!(
                k < MAX_PARTITIONS_PER_DEADLINE,
                "partition_index {k} is out of range: a WindowPoSt deadline holds at most \
                 {MAX_PARTITIONS_PER_DEADLINE} partitions (0 to {})",
                MAX_PARTITIONS_PER_DEADLINE - 1
            );
            ensure!(
                got != 0,
                "no vanilla proofs in the request: a {proof:?} partition takes 1 to {n}"
            );
            ensure!(
                got <= n,
                "a {proof:?} partition holds at most {n} sectors, the request has {got} \
                 vanilla proofs"
            );
        }
    }
    Ok(())
}

/// A sector proof's shape: as many inclusion proofs as challenges, each path as long as the
/// sector size's tree has levels. A proof of another sector size fails here, named.
fn check_shape<P: MerkleProofTrait>(
    what: &dyn Fn() -> String,
    proof: &SectorProof<P>,
    challenges: usize,
    sector_size: u64,
) -> Result<()> {
    let size = format_sector_size(sector_size);
    ensure!(
        proof.inclusion_proofs.len() == challenges,
        "{} has {} inclusion proofs, a {size} sector's has one per challenge ({challenges})",
        what(),
        proof.inclusion_proofs.len()
    );
    let leaves = sector_size as usize / NODE_SIZE;
    for (c, p) in proof.inclusion_proofs.iter().enumerate() {
        let (got, want) = (p.path().len(), p.expected_len(leaves));
        ensure!(
            got == want,
            "{}: challenge {c}'s path has {got} levels, a {size} sector's has {want} (a proof \
             for another sector size?)",
            what()
        );
    }
    Ok(())
}

type Partition<Tree> = (
    Vec<PublicSector<Domain<Tree>>>,
    Vec<fallback::Proof<<Tree as MerkleTreeTrait>::Proof>>,
);

/// WinningPoSt's one partition as filecoin-proofs lays it out: each challenge of the sector is
/// a "sector" of one challenge (its public parameters have 66 sectors of 1 challenge).
fn winning_partition<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    pp: &fallback::PublicParams,
    sector_number: Option<u64>,
    vanilla: Vec<FallbackPoStSectorProof<Tree>>,
) -> Result<Partition<Tree>> {
    let proof = match <[_; 1]>::try_from(vanilla) {
        Ok([proof]) => proof,
        Err(v) => anyhow::bail!("WinningPoSt proves one sector, the request has {}", v.len()),
    };
    let id = u64::from(proof.sector_id);
    if let Some(number) = sector_number {
        ensure!(
            number == id,
            "sector_number {number} does not match the WinningPoSt vanilla proof's sector {id}"
        );
    }
    let mut sectors = proof.vanilla_proof.sectors;
    ensure!(
        sectors.len() == 1,
        "the WinningPoSt vanilla proof holds {} sector proofs, not 1",
        sectors.len()
    );
    let sector = sectors.remove(0);
    let name = || "the WinningPoSt vanilla proof".to_string();
    check_shape(&name, &sector, config.challenge_count, pp.sector_size)?;
    ensure!(
        pp.challenge_count == 1 && pp.sector_count == config.challenge_count,
        "unexpected WinningPoSt parameters: {} sectors of {} challenges",
        pp.sector_count,
        pp.challenge_count
    );
    let public = PublicSector {
        id: proof.sector_id,
        comm_r: proof.comm_r,
    };
    let (comm_c, comm_r_last) = (sector.comm_c, sector.comm_r_last);
    let proofs = sector
        .inclusion_proofs
        .into_iter()
        .map(|p| fallback::Proof {
            sectors: vec![SectorProof {
                inclusion_proofs: vec![p],
                comm_c,
                comm_r_last,
            }],
        })
        .collect();
    Ok((vec![public; pp.sector_count], proofs))
}

/// A WindowPoSt partition: the sectors in the request's order, each with its own proof.
fn window_partition<Tree: 'static + MerkleTreeTrait>(
    pp: &fallback::PublicParams,
    vanilla: Vec<FallbackPoStSectorProof<Tree>>,
) -> Result<Partition<Tree>> {
    let mut sectors = Vec::with_capacity(vanilla.len());
    let mut proofs = Vec::with_capacity(vanilla.len());
    for (i, v) in vanilla.into_iter().enumerate() {
        let name = || format!("vanilla proof {i} (sector {})", u64::from(v.sector_id));
        ensure!(
            v.vanilla_proof.sectors.len() == 1,
            "{} holds {} sector proofs, a WindowPoSt sector's holds 1",
            name(),
            v.vanilla_proof.sectors.len()
        );
        check_shape(
            &name,
            &v.vanilla_proof.sectors[0],
            pp.challenge_count,
            pp.sector_size,
        )?;
        sectors.push(PublicSector {
            id: v.sector_id,
            comm_r: v.comm_r,
        });
        proofs.push(v.vanilla_proof);
    }
    Ok((sectors, proofs))
}

fn parse_request<Tree: 'static + MerkleTreeTrait>(req: PostRequest) -> Result<PostCircuits<Tree>> {
    let config = req.registered_proof.as_v1_config();
    check_counts(&req, &config)?;
    let proof_type = req.registered_proof;
    let vanilla: Vec<FallbackPoStSectorProof<Tree>> = decode_each(req.vanilla_proofs, |i| {
        format!("vanilla proof {i} is not a {proof_type:?} sector proof")
    })?;
    let public_params = public_params::<Tree>(&config)?;
    let randomness = as_safe_commitment(&req.randomness, "randomness")?;
    let prover_id = as_safe_commitment(&req.prover_id, "prover_id")?;

    let (sectors, proofs) = match config.typ {
        PoStType::Winning => {
            winning_partition::<Tree>(&config, &public_params, req.sector_number, vanilla)?
        }
        PoStType::Window => window_partition::<Tree>(&public_params, vanilla)?,
    };
    let partition = req.partition_index;
    let public_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors,
        k: Some(partition),
    };
    let name = |i: usize| match config.typ {
        PoStType::Winning => format!("the vanilla proof's challenge {i}"),
        PoStType::Window => format!("vanilla proof {i}"),
    };
    verify_partition::<Tree>(&public_params, &public_inputs, &proofs, &name).with_context(
        || format!("the vanilla proofs are refused as {proof_type:?}, partition {partition}"),
    )?;
    Ok(PostCircuits::<Tree> {
        params_id: params_id_for_tree::<Tree>(&config)?,
        public_params,
        public_inputs,
        proofs,
        partition,
    })
}

impl<Tree: 'static + MerkleTreeTrait> PostCircuits<Tree> {
    /// Position `i` of the circuit's sectors, as `FallbackPoStCompound::circuit` lays them out:
    /// a partition short of sectors repeats its last one.
    fn sector(
        &self,
        i: usize,
    ) -> (
        &PublicSector<Domain<Tree>>,
        &SectorProof<<Tree as MerkleTreeTrait>::Proof>,
    ) {
        let j = i.min(self.proofs.len() - 1);
        // Parsing made every proof hold exactly one sector proof, and one per public sector.
        (&self.public_inputs.sectors[j], &self.proofs[j].sectors[0])
    }

    fn sector_inputs(&self) -> Vec<native::SectorInputs> {
        (0..self.public_params.sector_count)
            .map(|i| {
                let (public, proof) = self.sector(i);
                native::SectorInputs::from_vanilla(public.comm_r.into(), proof)
            })
            .collect()
    }

    fn circuit(&self, k: usize) -> Result<FallbackPoStCircuit<Tree>> {
        ensure!(k == 0, "a PoSt request has one partition");
        // The circuit takes the sector proofs padded to its sector count: made here, for as
        // long as the circuit is synthesized, rather than held by the queued request.
        let padded = fallback::Proof {
            sectors: (0..self.public_params.sector_count)
                .map(|i| self.sector(i).1.clone())
                .collect(),
        };
        // As filecoin-proofs does: the circuit sees this partition's sectors as chunk 0.
        <Compound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::circuit(
            &self.public_inputs,
            Default::default(),
            &padded,
            &self.public_params,
            Some(0),
        )
        .context("building the PoSt circuit")
    }
}

impl<Tree: 'static + MerkleTreeTrait> PartitionedCircuit for PostCircuits<Tree> {
    gadget_circuit_methods!(|k| "synthesizing the PoSt circuit");

    fn partitions(&self) -> usize {
        1
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
        partition_public_inputs::<Tree>(
            &self.public_params,
            &self.public_inputs.randomness,
            &self.public_inputs.sectors,
            self.partition,
        )
    }
}

impl<Tree: 'static + MerkleTreeTrait> PostAssignments for PostCircuits<Tree> {
    fn native(&self, threads: usize) -> Result<Assignment> {
        let sectors = self.sector_inputs();
        let leaves = self.public_params.sector_size as usize / NODE_SIZE;
        native::post_assignment::<Tree>(&sectors, leaves, threads, pool::current_pool())
            .context("native assignment of the PoSt circuit")
    }

    fn witness_only(&self, like: &Assignment) -> Result<Assignment> {
        let (inputs, aux) = (like.inputs.len(), like.aux.len());
        Ok(Assignment::of_circuit(self.circuit(0)?, None, inputs, aux)?)
    }
}
