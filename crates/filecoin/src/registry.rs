//! One entry point per proof kind and sector size: the parameter set and the recorded circuit.

use anyhow::Result;
use zkforge_groth16::ConstraintMatrices;

use crate::fixtures::{seal_proof_for, update_proof_for, window_post_for, winning_post_for};
use crate::{porep, post, snap, ParamsId, ProofKind};

/// The parameter set of the current registered proof of `kind` for `sector_size`.
pub fn params_id(kind: ProofKind, sector_size: u64) -> Result<ParamsId> {
    match kind {
        ProofKind::PoRep => porep::porep_params_id(seal_proof_for(sector_size)?),
        ProofKind::WinningPost => post::post_params_id(winning_post_for(sector_size)?),
        ProofKind::WindowPost => post::post_params_id(window_post_for(sector_size)?),
        ProofKind::SnapDeals => {
            snap::snap_params_id(update_proof_for(seal_proof_for(sector_size)?)?)
        }
    }
}

/// The recorded constraints of the current registered proof of `kind` for `sector_size`: what
/// its keys are generated from.
pub fn matrices(kind: ProofKind, sector_size: u64) -> Result<ConstraintMatrices> {
    match kind {
        ProofKind::PoRep => porep::porep_matrices(seal_proof_for(sector_size)?),
        ProofKind::WinningPost => post::post_matrices(winning_post_for(sector_size)?),
        ProofKind::WindowPost => post::post_matrices(window_post_for(sector_size)?),
        ProofKind::SnapDeals => {
            snap::snap_matrices(update_proof_for(seal_proof_for(sector_size)?)?)
        }
    }
}
