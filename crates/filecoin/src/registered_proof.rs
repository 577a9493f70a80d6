//! Filecoin's registered proofs as facts: which one is current for a proof kind and sector
//! size, the kind and size each one is for, and how its parameter set is named. Requests (the daemon's, `zkforge prove`'s),
//! the protocol's bounds and the parameter registry all start from here; nothing here builds a
//! circuit, so every other module may import it.

use anyhow::Result;
use filecoin_proofs_api::{
    ApiFeature, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof,
};

use crate::shape::by_size;
use crate::{ParamsId, ProofKind};

/// A registered proof (filecoin-proofs-api's enums) together with the kind it proves. A PoSt
/// registered proof names WinningPoSt or WindowPoSt itself; the variant says which one a
/// request asked for, so that the two can be checked to agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisteredProof {
    PoRep(RegisteredSealProof),
    WinningPost(RegisteredPoStProof),
    WindowPost(RegisteredPoStProof),
    SnapDeals(RegisteredUpdateProof),
}

impl RegisteredProof {
    /// The current (latest API version) registered proof of `kind` for `sector_size`; an
    /// unsupported size is an error naming it.
    pub fn current(kind: ProofKind, sector_size: u64) -> Result<Self> {
        Ok(match kind {
            ProofKind::PoRep => RegisteredProof::PoRep(seal_proof_for(sector_size)?),
            ProofKind::WinningPost => RegisteredProof::WinningPost(winning_post_for(sector_size)?),
            ProofKind::WindowPost => RegisteredProof::WindowPost(window_post_for(sector_size)?),
            ProofKind::SnapDeals => {
                RegisteredProof::SnapDeals(update_proof_for(seal_proof_for(sector_size)?)?)
            }
        })
    }

    pub fn kind(self) -> ProofKind {
        match self {
            RegisteredProof::PoRep(_) => ProofKind::PoRep,
            RegisteredProof::WinningPost(_) => ProofKind::WinningPost,
            RegisteredProof::WindowPost(_) => ProofKind::WindowPost,
            RegisteredProof::SnapDeals(_) => ProofKind::SnapDeals,
        }
    }

    pub fn sector_size(self) -> u64 {
        u64::from(match self {
            RegisteredProof::PoRep(p) => p.sector_size(),
            RegisteredProof::WinningPost(p) | RegisteredProof::WindowPost(p) => p.sector_size(),
            RegisteredProof::SnapDeals(p) => p.sector_size(),
        })
    }
}

/// The parameter set of a registered proof's circuit, named by storage-proofs' cache identifier
/// (a digest of the circuit's public parameters) as filecoin-proofs names its files.
pub fn params_id(kind: ProofKind, sector_size: u64, cache_identifier: &str) -> ParamsId {
    let stem = format!(
        "v{}-{cache_identifier}",
        storage_proofs_core::parameter_cache::VERSION
    );
    ParamsId {
        kind,
        sector_size,
        stem,
    }
}

/// A registered seal proof zkforge does not prove, and what it would need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnsupportedSealProof {
    /// NI-PoRep: filecoin-proofs' `seal_commit_phase2` answers it with a SnarkPack aggregate
    /// of the partition proofs (`aggregate_seal_commit_proofs`, with the inner-product SRS),
    /// and `verify_seal` expects that aggregate. zkforge proves partitions and concatenates
    /// them, which the chain would reject: the request is refused instead.
    #[error(
        "registered proof {0:?} (non-interactive PoRep) is not supported: its proof is a \
         SnarkPack aggregate of the partition proofs, and aggregation is not supported by \
         zkforge (the partition proofs concatenated would fail verify_seal and the chain)"
    )]
    NeedsAggregation(RegisteredSealProof),
}

/// Whether zkforge proves `proof`'s seals: every interactive and synthetic PoRep type (one
/// Groth16 proof per partition, concatenated), not NI-PoRep ([`UnsupportedSealProof`]).
/// Every front end asks before any circuit is built.
pub fn check_seal_proof_supported(proof: RegisteredSealProof) -> Result<(), UnsupportedSealProof> {
    // By feature rather than by name: a later NI-PoRep type (another size or API version)
    // carries the same feature and is refused the same way.
    if proof.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Err(UnsupportedSealProof::NeedsAggregation(proof));
    }
    Ok(())
}

/// The registered seal proof (latest API version) for a sector size.
pub fn seal_proof_for(sector_size: u64) -> Result<RegisteredSealProof> {
    use RegisteredSealProof::*;
    let all = [
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
    ];
    by_size(sector_size, all)
}

/// The synthetic PoRep seal proof (`V1_1_Feat_SyntheticPoRep`) for a sector size: the
/// interactive circuit and parameters, challenges drawn from the pre-generated synthetic set.
pub fn synthetic_seal_proof_for(sector_size: u64) -> Result<RegisteredSealProof> {
    use RegisteredSealProof::*;
    let all = [
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
    ];
    by_size(sector_size, all)
}

/// The non-interactive PoRep seal proof (`V1_2_Feat_NonInteractivePoRep`) for a sector size
/// (named so that it can be refused: [`check_seal_proof_supported`]).
pub fn non_interactive_seal_proof_for(sector_size: u64) -> Result<RegisteredSealProof> {
    use RegisteredSealProof::*;
    let all = [
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ];
    by_size(sector_size, all)
}

/// The current WinningPoSt proof type for a sector size.
pub fn winning_post_for(sector_size: u64) -> Result<RegisteredPoStProof> {
    use RegisteredPoStProof::*;
    let all = [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
    ];
    by_size(sector_size, all)
}

/// The current WindowPoSt proof type (V1_2) for a sector size.
pub fn window_post_for(sector_size: u64) -> Result<RegisteredPoStProof> {
    use RegisteredPoStProof::*;
    let all = [
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ];
    by_size(sector_size, all)
}

/// The update proof registered for a seal proof's sector size.
pub fn update_proof_for(seal_proof: RegisteredSealProof) -> Result<RegisteredUpdateProof> {
    use RegisteredUpdateProof::*;
    let all = [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ];
    by_size(u64::from(seal_proof.sector_size()), all)
}
