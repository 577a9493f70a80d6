//! One entry point per proof kind and sector size: the parameter set and test keys.

use anyhow::Result;
use rand_core::RngCore;
use zkforge_groth16::generator::GenProgress;
use zkforge_groth16::ProvingKey;

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

/// Random (test-only) keys for the current registered proof of `kind` for `sector_size`.
pub fn random_keys(
    kind: ProofKind,
    sector_size: u64,
    rng: &mut dyn RngCore,
    progress: &dyn GenProgress,
) -> Result<ProvingKey> {
    match kind {
        ProofKind::PoRep => porep::porep_random_keys(seal_proof_for(sector_size)?, rng, progress),
        ProofKind::WinningPost => {
            post::post_random_keys(winning_post_for(sector_size)?, rng, progress)
        }
        ProofKind::WindowPost => {
            post::post_random_keys(window_post_for(sector_size)?, rng, progress)
        }
        ProofKind::SnapDeals => snap::snap_random_keys(
            update_proof_for(seal_proof_for(sector_size)?)?,
            rng,
            progress,
        ),
    }
}
