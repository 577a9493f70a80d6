//! A SubmitProofRequest becomes the circuits of one job; bad fields are INVALID_ARGUMENT with
//! the field named.

use std::sync::Arc;

use tonic::Status;
use zkforge_circuits::PartitionedCircuit;
use zkforge_filecoin::fixtures::{
    read_base64_list, seal_proof_for, update_proof_for, window_post_for, winning_post_for,
};
use zkforge_filecoin::post::{post_circuits, prover_id_from_miner, PostRequest};
use zkforge_filecoin::snap::{snap_circuits, SnapRequest};
use zkforge_filecoin::{porep, ProofKind};

use crate::pb;

/// Longest message a Status carries. It travels in an HTTP/2 header (grpc-message): a parser
/// error that quotes the client's input (serde names the unknown variant it read) could
/// otherwise outgrow the header limit and reach the client as a bare protocol error.
const MAX_STATUS_MESSAGE: usize = 1024;

/// `msg`, cut to [`MAX_STATUS_MESSAGE`] bytes on a character boundary, saying so.
pub(crate) fn bounded(msg: impl std::fmt::Display) -> String {
    let mut msg = msg.to_string();
    if msg.len() > MAX_STATUS_MESSAGE {
        let total = msg.len();
        let mut cut = MAX_STATUS_MESSAGE;
        while !msg.is_char_boundary(cut) {
            cut -= 1;
        }
        msg.truncate(cut);
        msg.push_str(&format!("… ({} more bytes)", total - cut));
    }
    msg
}

fn invalid(e: impl std::fmt::Display) -> Status {
    Status::invalid_argument(bounded(e))
}

fn bytes32(field: &str, b: &[u8]) -> Result<[u8; 32], Status> {
    b.try_into()
        .map_err(|_| invalid(format!("{field} must be 32 bytes, got {}", b.len())))
}

pub fn kind_of(k: i32) -> Result<ProofKind, Status> {
    match pb::ProofKind::try_from(k) {
        Ok(pb::ProofKind::PorepSealCommit) => Ok(ProofKind::PoRep),
        Ok(pb::ProofKind::SnapDealsUpdate) => Ok(ProofKind::SnapDeals),
        Ok(pb::ProofKind::WindowPostPartition) => Ok(ProofKind::WindowPost),
        Ok(pb::ProofKind::WinningPost) => Ok(ProofKind::WinningPost),
        _ => Err(invalid(format!("proof_kind {k} is not one of 1 (PoRep), 2 (SnapDeals), 3 (WindowPoSt), 4 (WinningPoSt)"))),
    }
}

/// PoSt and SnapDeals vanilla proofs: `vanilla_proofs`, or one `vanilla_proof` holding the
/// JSON array of base64 strings.
fn vanilla_list(r: &pb::SubmitProofRequest) -> Result<Vec<Vec<u8>>, Status> {
    if !r.vanilla_proofs.is_empty() {
        return Ok(r.vanilla_proofs.clone());
    }
    if r.vanilla_proof.is_empty() {
        return Err(invalid(
            "no vanilla proofs: set vanilla_proofs (or vanilla_proof as a JSON array of base64)",
        ));
    }
    read_base64_list(&r.vanilla_proof).map_err(|e| invalid(format!("vanilla_proof: {e:#}")))
}

fn sector_size(r: &pb::SubmitProofRequest) -> Result<u64, Status> {
    match r.sector_size {
        0 => Err(invalid("sector_size is required for this proof kind")),
        s => Ok(s),
    }
}

/// The circuits a request asks for.
pub fn circuits(r: &pb::SubmitProofRequest) -> Result<Arc<dyn PartitionedCircuit>, Status> {
    let kind = kind_of(r.proof_kind)?;
    let circuits = match kind {
        ProofKind::PoRep => {
            let c1 = porep::parse_c1(&r.vanilla_proof)
                .map_err(|e| invalid(format!("vanilla_proof: {e:#}")))?;
            let declared = u64::from(c1.registered_proof.sector_size());
            if r.sector_size != 0 && r.sector_size != declared {
                return Err(invalid(format!(
                    "sector_size {} does not match the C1 output ({declared})",
                    r.sector_size
                )));
            }
            porep::porep_circuits(c1)
        }
        ProofKind::WinningPost | ProofKind::WindowPost => {
            let size = sector_size(r)?;
            let proof = if kind == ProofKind::WinningPost {
                winning_post_for(size)
            } else {
                window_post_for(size)
            };
            let req = PostRequest {
                registered_proof: proof.map_err(invalid)?,
                randomness: bytes32("randomness", &r.randomness)?,
                prover_id: prover_id_from_miner(r.miner_id),
                vanilla_proofs: vanilla_list(r)?,
                partition_index: r.partition_index as usize,
                sector_number: None,
            };
            post_circuits(req)
        }
        ProofKind::SnapDeals => {
            let size = sector_size(r)?;
            let proof = seal_proof_for(size)
                .and_then(update_proof_for)
                .map_err(invalid)?;
            let req = SnapRequest {
                registered_proof: proof,
                vanilla_proofs: vanilla_list(r)?,
                comm_r_old: bytes32("comm_r_old", &r.comm_r_old)?,
                comm_r_new: bytes32("comm_r_new", &r.comm_r_new)?,
                comm_d_new: bytes32("comm_d_new", &r.comm_d_new)?,
            };
            snap_circuits(req)
        }
    };
    circuits
        .map(Arc::from)
        .map_err(|e| invalid(format!("{e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        assert_eq!(bounded("short"), "short");
        let long = "é".repeat(1000);
        let cut = bounded(&long);
        assert!(cut.len() < MAX_STATUS_MESSAGE + 32, "{}", cut.len());
        assert!(cut.ends_with("(976 more bytes)"), "{cut}");
    }
}
