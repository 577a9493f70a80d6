//! Registered proof types as numbers on the wire: `SubmitProofRequest.registered_proof` carries
//! filecoin-ffi's numbering (Go's `abi.RegisteredSealProof`, `RegisteredPoStProof`,
//! `RegisteredUpdateProof`), which is the declaration order of filecoin-proofs-api's enums —
//! except WindowPoSt: ffi's `StackedDrgWindow*V1_1` (10..=14) are proofs-api's `V1_2`, the
//! grindability fix.

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

/// ffi's number of a seal proof type.
pub fn seal_proof_number(p: RegisteredSealProof) -> u64 {
    p as u64
}

/// The seal proof type ffi numbers `n`: 0..=4 V1, 5..=9 V1_1, 10..=14 V1_1_Feat_SyntheticPoRep,
/// 15..=19 V1_2_Feat_NonInteractivePoRep (go-state-types' `abi.RegisteredSealProof`).
pub fn seal_proof(n: u64) -> Option<RegisteredSealProof> {
    use RegisteredSealProof::*;
    const ALL: [RegisteredSealProof; 20] = [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ];
    ALL.get(usize::try_from(n).ok()?).copied()
}

/// The PoSt proof type ffi numbers `n`.
pub fn post_proof(n: u64) -> Option<RegisteredPoStProof> {
    use RegisteredPoStProof::*;
    const ALL: [RegisteredPoStProof; 15] = [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ];
    ALL.get(usize::try_from(n).ok()?).copied()
}

/// True for a WindowPoSt type, false for WinningPoSt.
pub fn is_window(p: RegisteredPoStProof) -> bool {
    !matches!(
        p,
        RegisteredPoStProof::StackedDrgWinning2KiBV1
            | RegisteredPoStProof::StackedDrgWinning8MiBV1
            | RegisteredPoStProof::StackedDrgWinning512MiBV1
            | RegisteredPoStProof::StackedDrgWinning32GiBV1
            | RegisteredPoStProof::StackedDrgWinning64GiBV1
    )
}

/// The SnapDeals proof type ffi numbers `n`.
pub fn update_proof(n: u64) -> Option<RegisteredUpdateProof> {
    use RegisteredUpdateProof::*;
    const ALL: [RegisteredUpdateProof; 5] = [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ];
    ALL.get(usize::try_from(n).ok()?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ffi_numbers_map_to_the_proofs_api_types() {
        assert_eq!(
            seal_proof_number(RegisteredSealProof::StackedDrg32GiBV1_1),
            8
        );
        assert_eq!(
            post_proof(3),
            Some(RegisteredPoStProof::StackedDrgWinning32GiBV1)
        );
        assert_eq!(
            post_proof(13),
            Some(RegisteredPoStProof::StackedDrgWindow32GiBV1_2)
        );
        assert_eq!(
            seal_proof(13),
            Some(RegisteredSealProof::StackedDrg32GiBV1_1_Feat_SyntheticPoRep)
        );
        assert_eq!(
            seal_proof(18),
            Some(RegisteredSealProof::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep)
        );
        assert_eq!(seal_proof(20), None);
        for n in 0..20 {
            assert_eq!(seal_proof_number(seal_proof(n).unwrap()), n);
        }
        assert_eq!(post_proof(15), None);
        assert_eq!(post_proof(u64::MAX), None);
        assert!(is_window(post_proof(8).unwrap()) && !is_window(post_proof(4).unwrap()));
        assert_eq!(
            update_proof(3),
            Some(RegisteredUpdateProof::StackedDrg32GiBV1)
        );
        assert_eq!(update_proof(5), None);
    }
}
