//! Filecoin's registered proofs as facts: which one is current for a proof kind and sector
//! size, the kind and size each one is for, and how its parameter set is named. Requests (the daemon's, `zkforge prove`'s),
//! the protocol's bounds and the parameter registry all start from here; nothing here builds a
//! circuit, so every other module may import it.

use anyhow::Result;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

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
