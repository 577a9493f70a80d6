//! A SubmitProofRequest becomes a [`ProofRequest`], whose circuits are one job; bad fields are
//! INVALID_ARGUMENT with the field named. What the protobuf says (0 for unset, ffi's numbers,
//! a C1 wrapper's sector number) is read here; building the circuits is the product's.

use std::sync::Arc;

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredUpdateProof};
use tonic::Status;
use zkforge_circuits::PartitionedCircuit;
use zkforge_filecoin::post::{prover_id_from_miner, PostRequest};
use zkforge_filecoin::registered_proof::{
    check_seal_proof_supported, seal_proof_for, update_proof_for, window_post_for, winning_post_for,
};
use zkforge_filecoin::snap::SnapRequest;
use zkforge_filecoin::{decode_base64_list, max_vanilla_proofs};
use zkforge_filecoin::{porep, ProofKind, ProofRequest};

use crate::{pb, status, wire};
use zkforge_engine::{FailureKind, Priority};

fn invalid(e: impl std::fmt::Display) -> Status {
    status::failure(FailureKind::InvalidInput, e)
}

fn bytes32(field: &str, b: &[u8]) -> Result<[u8; 32], Status> {
    b.try_into()
        .map_err(|_| invalid(format!("{field} must be 32 bytes, got {}", b.len())))
}

/// The proof kind cuzk.v1's `ProofKind` names. Exhaustive: a kind added to the protocol does
/// not compile until it is mapped, and with it classified urgent or not by its default
/// priority ([`Priority::default_for`]) for every gate, the receive reserve's included.
pub fn kind_of(k: i32) -> Result<ProofKind, Status> {
    match pb::ProofKind::try_from(k) {
        Ok(pb::ProofKind::PorepSealCommit) => Ok(ProofKind::PoRep),
        Ok(pb::ProofKind::SnapDealsUpdate) => Ok(ProofKind::SnapDeals),
        Ok(pb::ProofKind::WindowPostPartition) => Ok(ProofKind::WindowPost),
        Ok(pb::ProofKind::WinningPost) => Ok(ProofKind::WinningPost),
        Ok(pb::ProofKind::Unspecified) | Err(_) => Err(invalid(format!(
            "proof_kind {k} is not one of 1 (PoRep), 2 (SnapDeals), 3 (WindowPoSt), 4 (WinningPoSt)"
        ))),
    }
}

/// The job's priority from cuzk.v1's `Priority`: LOW (1) to CRITICAL (4), a higher one runs
/// first; PRIORITY_DEFAULT (0, or unset) is the kind's ([`Priority::default_for`]: WinningPoSt
/// CRITICAL, WindowPoSt HIGH, sealing NORMAL).
pub fn priority_of(p: i32, kind: ProofKind) -> Result<Priority, Status> {
    match pb::Priority::try_from(p) {
        Ok(pb::Priority::Default) => Ok(Priority::default_for(kind)),
        Ok(pb::Priority::Low) => Ok(Priority::Low),
        Ok(pb::Priority::Normal) => Ok(Priority::Normal),
        Ok(pb::Priority::High) => Ok(Priority::High),
        Ok(pb::Priority::Critical) => Ok(Priority::Critical),
        Err(_) => Err(invalid(format!("priority {p} is not 0..=4"))),
    }
}

/// The kind and priority of a SubmitProofRequest's `proof_kind` and `priority` fields: how the
/// service reads them for the queues, the parse workers and the waiters, and how the receive
/// reserve reads them from a message's first bytes (`codec::urgent_head`), so that all of them
/// agree on which requests are urgent.
pub fn kind_and_priority(proof_kind: i32, priority: i32) -> Result<(ProofKind, Priority), Status> {
    let kind = kind_of(proof_kind)?;
    Ok((kind, priority_of(priority, kind)?))
}

/// PoSt and SnapDeals vanilla proofs: `vanilla_proofs` (moved out of the request, not
/// copied), or one `vanilla_proof` holding the JSON array of base64 strings, whose entries are
/// counted against `max` before any is decoded.
fn vanilla_list(r: &mut pb::SubmitProofRequest, max: usize) -> Result<Vec<Vec<u8>>, Status> {
    if !r.vanilla_proofs.is_empty() {
        return Ok(std::mem::take(&mut r.vanilla_proofs));
    }
    if r.vanilla_proof.is_empty() {
        return Err(invalid(
            "no vanilla proofs: set vanilla_proofs (or vanilla_proof as a JSON array of base64)",
        ));
    }
    decode_base64_list(&r.vanilla_proof, max).map_err(|e| invalid(format!("vanilla_proof: {e:#}")))
}

/// The registered proof a PoSt or SnapDeals request names: `registered_proof` when set (it
/// also picks the version, e.g. WindowPoSt V1 against V1_2), else the current type of
/// `sector_size`. Proto3 cannot tell 0 from unset: with a `sector_size`, 0 means unset;
/// without one it is ffi's 0, the 2 KiB type of WinningPoSt and SnapDeals (Curio's ProofShare
/// SnapDeals requests carry only `registered_proof`, and a 2 KiB one is 0). A set value must be
/// of the request's kind and agree with a set `sector_size`.
fn registered<P: Copy + std::fmt::Debug>(
    r: &pb::SubmitProofRequest,
    kind: ProofKind,
    from_wire: impl Fn(u64) -> Option<P>,
    sector_size_of: impl Fn(P) -> u64,
    current_for: impl Fn(u64) -> anyhow::Result<P>,
) -> Result<P, Status> {
    if r.registered_proof == 0 {
        return match r.sector_size {
            0 => from_wire(0).ok_or_else(|| {
                invalid("sector_size (or registered_proof) is required for this proof kind")
            }),
            size => current_for(size).map_err(invalid),
        };
    }
    let proof = from_wire(r.registered_proof).ok_or_else(|| {
        invalid(format!(
            "registered_proof {} is not a {kind} proof type (filecoin-ffi numbering)",
            r.registered_proof
        ))
    })?;
    let size = sector_size_of(proof);
    if r.sector_size != 0 && r.sector_size != size {
        return Err(invalid(format!(
            "sector_size {} does not match registered_proof {} ({proof:?}, {size} bytes)",
            r.sector_size, r.registered_proof
        )));
    }
    Ok(proof)
}

fn post_proof(r: &pb::SubmitProofRequest, kind: ProofKind) -> Result<RegisteredPoStProof, Status> {
    let window = kind == ProofKind::WindowPost;
    registered(
        r,
        kind,
        |n| wire::post_proof(n).filter(|&p| wire::is_window(p) == window),
        |p| u64::from(p.sector_size()),
        if window {
            window_post_for
        } else {
            winning_post_for
        },
    )
}

fn update_proof(r: &pb::SubmitProofRequest) -> Result<RegisteredUpdateProof, Status> {
    registered(
        r,
        ProofKind::SnapDeals,
        wire::update_proof,
        |p| u64::from(p.sector_size()),
        |size| seal_proof_for(size).and_then(update_proof_for),
    )
}

/// The circuits a request asks for. The request is taken by value so that its vanilla proofs
/// move into the circuits instead of being copied.
pub fn circuits(r: pb::SubmitProofRequest) -> Result<Arc<dyn PartitionedCircuit>, Status> {
    proof_request(r)?
        .circuits()
        .map(Arc::from)
        .map_err(|e| invalid(format!("{e:#}")))
}

/// The typed request the protobuf fields make, checked against each other.
fn proof_request(mut r: pb::SubmitProofRequest) -> Result<ProofRequest, Status> {
    let kind = kind_of(r.proof_kind)?;
    Ok(match kind {
        ProofKind::PoRep => {
            // Refused by the number Curio sends (the sector's proof type) before a C1 of
            // thousands of vanilla proofs is parsed; the C1's own type is checked again when
            // its circuits are built (`porep::PoRepCircuits::new`).
            if let Some(proof) = wire::seal_proof(r.registered_proof) {
                check_seal_proof_supported(proof).map_err(invalid)?;
            }
            let (c1, sector) = porep::parse_c1_with_sector(&r.vanilla_proof)
                .map_err(|e| invalid(format!("vanilla_proof: {e:#}")))?;
            if let Some(n) = sector.filter(|&n| r.sector_number != 0 && n != r.sector_number) {
                return Err(invalid(format!(
                    "sector_number {} does not match the C1 wrapper's SectorNum {n}",
                    r.sector_number
                )));
            }
            let declared = u64::from(c1.registered_proof.sector_size());
            if r.sector_size != 0 && r.sector_size != declared {
                return Err(invalid(format!(
                    "sector_size {} does not match the C1 output ({declared})",
                    r.sector_size
                )));
            }
            let number = wire::seal_proof_number(c1.registered_proof);
            if r.registered_proof != 0 && r.registered_proof != number {
                return Err(invalid(format!(
                    "registered_proof {} does not match the C1 output's {:?} ({number})",
                    r.registered_proof, c1.registered_proof
                )));
            }
            ProofRequest::PoRep(c1)
        }
        ProofKind::WinningPost | ProofKind::WindowPost => {
            let registered_proof = post_proof(&r, kind)?;
            let size = u64::from(registered_proof.sector_size());
            let max = max_vanilla_proofs(kind, size).map_err(invalid)?;
            let req = PostRequest {
                registered_proof,
                randomness: bytes32("randomness", &r.randomness)?,
                prover_id: prover_id_from_miner(r.miner_id),
                vanilla_proofs: vanilla_list(&mut r, max)?,
                partition_index: r.partition_index as usize,
                sector_number: (r.sector_number != 0).then_some(r.sector_number),
            };
            if kind == ProofKind::WindowPost {
                ProofRequest::WindowPost(req)
            } else {
                ProofRequest::WinningPost(req)
            }
        }
        ProofKind::SnapDeals => {
            let registered_proof = update_proof(&r)?;
            let size = u64::from(registered_proof.sector_size());
            let max = max_vanilla_proofs(kind, size).map_err(invalid)?;
            ProofRequest::SnapDeals(SnapRequest {
                registered_proof,
                vanilla_proofs: vanilla_list(&mut r, max)?,
                comm_r_old: bytes32("comm_r_old", &r.comm_r_old)?,
                comm_r_new: bytes32("comm_r_new", &r.comm_r_new)?,
                comm_d_new: bytes32("comm_d_new", &r.comm_d_new)?,
            })
        }
    })
}

/// SHA-256 of everything that makes a request what it is (not its id or priority): a
/// `request_id` submitted again must come with the same digest.
pub fn payload_digest(r: &pb::SubmitProofRequest) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut field = |tag: u8, bytes: &[u8]| {
        h.update([tag]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(2, &r.proof_kind.to_le_bytes());
    field(3, &r.sector_size.to_le_bytes());
    field(4, &r.registered_proof.to_le_bytes());
    field(10, &r.vanilla_proof);
    field(11, &(r.vanilla_proofs.len() as u64).to_le_bytes());
    for p in &r.vanilla_proofs {
        field(11, p);
    }
    field(20, &r.sector_number.to_le_bytes());
    field(21, &r.miner_id.to_le_bytes());
    field(22, &r.randomness);
    field(23, &r.partition_index.to_le_bytes());
    field(30, &r.comm_r_old);
    field(31, &r.comm_r_new);
    field(32, &r.comm_d_new);
    h.finalize().into()
}
