//! A proving request, typed. The daemon (from protobuf, `zkforge-server`'s `request.rs`) and
//! `zkforge prove` (from files and flags) only translate their input into a [`ProofRequest`];
//! turning one into the circuits the engine schedules happens here, once for every front end.

use anyhow::{ensure, Result};
use filecoin_proofs_api::seal::SealCommitPhase1Output;

use crate::post::PostRequest;
use crate::registered_proof::RegisteredProof;
use crate::snap::SnapRequest;
use crate::{porep, post, registry, snap, ParamsId, PartitionedCircuit, ProofKind};

/// What one job proves, with the inputs of its kind.
#[derive(Clone, Debug)]
pub enum ProofRequest {
    /// PoRep C2 from a C1 output (the registered proof and vanilla proofs are inside it).
    PoRep(SealCommitPhase1Output),
    WinningPost(PostRequest),
    /// One partition of a WindowPoSt deadline.
    WindowPost(PostRequest),
    SnapDeals(SnapRequest),
}

impl ProofRequest {
    /// The registered proof the request names, with the kind it was asked as.
    pub fn registered_proof(&self) -> RegisteredProof {
        match self {
            ProofRequest::PoRep(c1) => RegisteredProof::PoRep(c1.registered_proof),
            ProofRequest::WinningPost(r) => RegisteredProof::WinningPost(r.registered_proof),
            ProofRequest::WindowPost(r) => RegisteredProof::WindowPost(r.registered_proof),
            ProofRequest::SnapDeals(r) => RegisteredProof::SnapDeals(r.registered_proof),
        }
    }

    pub fn kind(&self) -> ProofKind {
        self.registered_proof().kind()
    }

    /// The parameter set that proves the request.
    pub fn params_id(&self) -> Result<ParamsId> {
        registry::params_id_of(self.registered_proof())
    }

    /// The request's partition circuits; malformed inputs (and what the official crates would
    /// panic on) are named errors. Taken by value so that vanilla proofs move into the
    /// circuits instead of being copied.
    pub fn circuits(self) -> Result<Box<dyn PartitionedCircuit>> {
        match self {
            ProofRequest::PoRep(c1) => porep::porep_circuits(c1),
            ProofRequest::WinningPost(r) => post_circuits(r, ProofKind::WinningPost),
            ProofRequest::WindowPost(r) => post_circuits(r, ProofKind::WindowPost),
            ProofRequest::SnapDeals(r) => snap::snap_circuits(r),
        }
    }
}

/// A PoSt registered proof names its kind itself: one of the other kind would be proved, and
/// answered, as what it names rather than what was asked for.
fn post_circuits(r: PostRequest, asked: ProofKind) -> Result<Box<dyn PartitionedCircuit>> {
    let named = post::post_kind(r.registered_proof);
    ensure!(
        named == asked,
        "registered proof {:?} is a {named} proof type, not {asked}",
        r.registered_proof
    );
    post::post_circuits(r)
}
