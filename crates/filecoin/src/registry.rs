//! One entry point per registered proof: its parameter set and its recorded circuit.

use anyhow::Result;
use zkforge_groth16::ConstraintMatrices;

use crate::registered_proof::RegisteredProof;
use crate::{porep, post, snap, ParamsId, ProofKind};

/// The parameter set of the current registered proof of `kind` for `sector_size`.
pub fn params_id(kind: ProofKind, sector_size: u64) -> Result<ParamsId> {
    params_id_of(RegisteredProof::current(kind, sector_size)?)
}

/// The recorded constraints of the current registered proof of `kind` for `sector_size`: what
/// its keys are generated from.
pub fn matrices(kind: ProofKind, sector_size: u64) -> Result<ConstraintMatrices> {
    matrices_of(RegisteredProof::current(kind, sector_size)?)
}

/// The parameter set of a registered proof.
pub fn params_id_of(proof: RegisteredProof) -> Result<ParamsId> {
    match proof {
        RegisteredProof::PoRep(p) => porep::porep_params_id(p),
        RegisteredProof::WinningPost(p) | RegisteredProof::WindowPost(p) => post::post_params_id(p),
        RegisteredProof::SnapDeals(p) => snap::snap_params_id(p),
    }
}

/// The recorded constraints of a registered proof's circuit.
pub fn matrices_of(proof: RegisteredProof) -> Result<ConstraintMatrices> {
    match proof {
        RegisteredProof::PoRep(p) => porep::porep_matrices(p),
        RegisteredProof::WinningPost(p) | RegisteredProof::WindowPost(p) => post::post_matrices(p),
        RegisteredProof::SnapDeals(p) => snap::snap_matrices(p),
    }
}
