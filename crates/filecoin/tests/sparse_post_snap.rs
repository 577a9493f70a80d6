//! Sparse PoSt and SnapDeals fixtures: at 2 KiB zkforge proves them and filecoin-proofs-api's
//! verifiers accept the proofs; at 32 GiB they pass storage-proofs' vanilla verifiers (a full
//! WinningPoSt, a WindowPoSt of a few sectors — the full 2,349-sector partition is measured by
//! hand, see docs/perf.md — and all 16 SnapDeals partitions).

mod common;

use zkforge_filecoin::post::post_circuits;
use zkforge_filecoin::snap::{snap_circuits, SnapRequest};
use zkforge_filecoin::ProofKind;
use zkforge_fixtures::sparse::{make_post, make_snap};
use zkforge_fixtures::{self as fixtures, read_base64_list, unhex32};

#[test]
fn sparse_2kib_post_inputs_prove_and_filecoin_proofs_accepts_them() {
    common::param_dir();
    let out = tempfile::tempdir().unwrap();
    let kinds = [ProofKind::WinningPost, ProofKind::WindowPost];
    let m = fixtures::make_sparse(common::SIZE_2K, out.path(), 31, &kinds, &()).unwrap();
    assert!(m.snap.is_none());
    for (seed, (kind, p)) in (4..).zip([
        (ProofKind::WinningPost, m.winning_post().unwrap()),
        (ProofKind::WindowPost, m.window_post().unwrap()),
    ]) {
        let config = p.registered_proof.as_v1_config();
        assert_eq!(
            p.sectors.len(),
            config.sector_count,
            "{kind}: a full partition"
        );
        let circuits = post_circuits(common::post_request(out.path(), &m, p)).unwrap();
        let proof = common::prove(circuits, seed);
        let verified = match kind {
            ProofKind::WinningPost => m.verify_winning_post(&proof),
            _ => m.verify_window_post(&proof),
        };
        assert!(
            verified.unwrap(),
            "filecoin-proofs accepts the sparse {kind}"
        );
        let mut bad = proof.clone();
        bad[7] ^= 1;
        let rejected = match kind {
            ProofKind::WinningPost => m.verify_winning_post(&bad),
            _ => m.verify_window_post(&bad),
        };
        assert!(!rejected.unwrap_or(false), "a damaged {kind} proof");
    }
}

#[test]
fn sparse_32gib_post_vanilla_proofs_pass_the_vanilla_verifier() {
    use filecoin_proofs_api::RegisteredPoStProof::*;
    let prover_id = fixtures::sparse::KeyedFr::new(b"test prover", 1).bytes(0);
    // make_post checks every proof with storage-proofs' verifier before returning.
    let winning = make_post(StackedDrgWinning32GiBV1, 1, prover_id, 5, &()).unwrap();
    assert_eq!(winning.vanilla.len(), 1);
    let window = make_post(StackedDrgWindow32GiBV1_2, 12, prover_id, 5, &()).unwrap();
    assert_eq!(window.vanilla.len(), 12);
    assert_eq!(window.sectors.len(), 12);

    // zkforge's own request path takes them (it lays out and verifies the partition again).
    for made in [&winning, &window] {
        let req = made.request(prover_id, 0);
        assert_eq!(post_circuits(req).unwrap().partitions(), 1);
    }

    // Deterministic, and the sector count is checked.
    let again = make_post(StackedDrgWindow32GiBV1_2, 12, prover_id, 5, &()).unwrap();
    assert_eq!(again.vanilla, window.vanilla);
    let err = make_post(StackedDrgWindow32GiBV1_2, 2350, prover_id, 5, &())
        .err()
        .unwrap();
    assert!(format!("{err:#}").contains("1 to 2349 sectors"), "{err:#}");
}

#[test]
fn sparse_2kib_snap_inputs_prove_and_filecoin_proofs_accepts_them() {
    common::param_dir();
    let out = tempfile::tempdir().unwrap();
    let m = fixtures::make_sparse(
        common::SIZE_2K,
        out.path(),
        32,
        &[ProofKind::SnapDeals],
        &(),
    )
    .unwrap();
    let s = m.snap().unwrap();
    let req = SnapRequest {
        registered_proof: s.registered_proof,
        vanilla_proofs: read_base64_list(&std::fs::read(out.path().join(&s.vanilla)).unwrap())
            .unwrap(),
        comm_r_old: unhex32(&s.comm_r_old).unwrap(),
        comm_r_new: unhex32(&s.comm_r_new).unwrap(),
        comm_d_new: unhex32(&s.comm_d_new).unwrap(),
    };
    let circuits = snap_circuits(req).unwrap();
    let proof = common::prove(circuits, 6);
    assert!(
        m.verify_snap(&proof).unwrap(),
        "filecoin-proofs accepts the sparse SnapDeals"
    );
    let mut bad = proof.clone();
    bad[9] ^= 1;
    assert!(!m.verify_snap(&bad).unwrap_or(false));
}

#[test]
fn sparse_32gib_snap_partition_proofs_pass_the_vanilla_verifier() {
    use filecoin_proofs_api::RegisteredUpdateProof::StackedDrg32GiBV1;
    // make_snap checks all 16 partitions with storage-proofs' verifier and the apex paths.
    let made = make_snap(StackedDrg32GiBV1, 3, &()).unwrap();
    assert_eq!(made.vanilla.len(), 16);
    assert_ne!(made.comm_r_old, made.comm_r_new);
    let again = make_snap(StackedDrg32GiBV1, 3, &()).unwrap();
    assert_eq!(again.vanilla, made.vanilla, "deterministic");
    assert_eq!(snap_circuits(made.request()).unwrap().partitions(), 16);
}
