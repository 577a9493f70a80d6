//! The typed request every front end translates into: the current registered proof of each
//! kind and size, its parameter set equal to the circuits', and a PoSt request whose registered
//! proof is of the other PoSt kind refused by name; synthetic PoRep's parameter file is the one
//! filecoin-proofs names, NI-PoRep is refused by name. Sparse 2 KiB inputs or a 2 KiB seal: no
//! parameters needed.

use filecoin_proofs_api::RegisteredPoStProof::StackedDrgWinning2KiBV1;
use zkforge_filecoin::post::PostRequest;
use zkforge_filecoin::registered_proof::{
    check_seal_proof_supported, non_interactive_seal_proof_for, seal_proof_for,
    synthetic_seal_proof_for, UnsupportedSealProof,
};
use zkforge_filecoin::{porep, registry, ProofKind, ProofRequest, RegisteredProof};
use zkforge_fixtures::sparse::{make_post, KeyedFr};

const KINDS: [ProofKind; 4] = [
    ProofKind::PoRep,
    ProofKind::WinningPost,
    ProofKind::WindowPost,
    ProofKind::SnapDeals,
];

fn winning_request() -> PostRequest {
    let prover_id = KeyedFr::new(b"proof request prover", 1).bytes(0);
    make_post(StackedDrgWinning2KiBV1, 1, prover_id, 3, &())
        .unwrap()
        .request(prover_id, 0)
}

#[test]
fn current_registered_proofs_keep_their_kind_and_size() {
    for kind in KINDS {
        for size in [2 << 10, 32 << 30] {
            let proof = RegisteredProof::current(kind, size).unwrap();
            assert_eq!(
                (proof.kind(), proof.sector_size()),
                (kind, size),
                "{proof:?}"
            );
            let id = registry::params_id_of(proof).unwrap();
            assert_eq!((id.kind, id.sector_size), (kind, size), "{proof:?}");
        }
        let err = RegisteredProof::current(kind, 4096).unwrap_err();
        assert!(
            format!("{err:#}").contains("unsupported sector size 4096"),
            "{err:#}"
        );
    }
}

#[test]
fn a_request_proves_with_the_parameter_set_it_names() {
    let request = ProofRequest::WinningPost(winning_request());
    assert_eq!(request.kind(), ProofKind::WinningPost);
    let id = request.params_id().unwrap();
    let circuits = request.circuits().unwrap();
    assert_eq!(circuits.params_id(), &id);
    assert_eq!(circuits.kind(), ProofKind::WinningPost);
}

#[test]
fn a_post_request_of_the_other_post_kind_is_refused_by_name() {
    let err = ProofRequest::WindowPost(winning_request())
        .circuits()
        .err()
        .expect("a WinningPoSt proof type asked as WindowPoSt");
    let err = format!("{err:#}");
    assert!(
        err.contains("StackedDrgWinning2KiBV1") && err.contains("not window-post"),
        "{err}"
    );
}

/// Synthetic PoRep proves with the parameter file filecoin-proofs names for it, which is the
/// interactive PoRep's: its cache identifier holds the graph, layers, challenges per partition
/// and tree shape, not the porep_id or the kind of challenge. Were zkforge to name another
/// file, a synthetic proof would need a download that does not exist.
#[test]
fn synthetic_porep_uses_the_parameter_file_filecoin_proofs_names_for_it() {
    let dir = std::path::Path::new("/params");
    for size in [2 << 10, 32 << 30] {
        let synthetic = synthetic_seal_proof_for(size).unwrap();
        let ours = porep::porep_params_id(synthetic).unwrap();
        let file = |p: std::path::PathBuf| p.file_name().unwrap().to_owned();
        assert_eq!(
            file(ours.params_path(dir)),
            file(synthetic.cache_params_path().unwrap()),
            "{synthetic:?}"
        );
        assert_eq!(
            file(ours.vk_path(dir)),
            file(synthetic.cache_verifying_key_path().unwrap()),
            "{synthetic:?}"
        );
        let interactive = seal_proof_for(size).unwrap();
        assert_eq!(ours, porep::porep_params_id(interactive).unwrap());
        assert_eq!(
            synthetic.cache_params_path().unwrap(),
            interactive.cache_params_path().unwrap()
        );
    }
    // The file named in docs/operations.md (filecoin-proofs' published 32 GiB PoRep set).
    assert_eq!(
        porep::porep_params_id(synthetic_seal_proof_for(32 << 30).unwrap())
            .unwrap()
            .stem,
        "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-\
         82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820"
    );
}

/// NI-PoRep is refused when its circuits are asked for (`zkforge prove porep` and the
/// daemon alike), naming the type and what is missing, though its partitions would fit the
/// interactive parameter file: the concatenation of its partition proofs is not what
/// verify_seal accepts for it.
#[test]
fn ni_porep_is_refused_by_name_before_any_circuit_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let ni = non_interactive_seal_proof_for(2048).unwrap();
    let m = zkforge_fixtures::make_porep(ni, dir.path(), 7).unwrap();
    let c1 = porep::parse_c1(&std::fs::read(dir.path().join(&m.c1_raw)).unwrap()).unwrap();
    assert_eq!(c1.registered_proof, ni);
    assert_eq!(
        porep::porep_params_id(ni).unwrap(),
        porep::porep_params_id(seal_proof_for(2048).unwrap()).unwrap(),
        "the partitions alone would find a parameter file"
    );
    let err = ProofRequest::PoRep(c1)
        .circuits()
        .err()
        .expect("NI-PoRep refused");
    let err = format!("{err:#}");
    for words in [
        "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep",
        "aggregation is not supported",
    ] {
        assert!(err.contains(words), "{err}");
    }
    for proof in [
        seal_proof_for(2048).unwrap(),
        synthetic_seal_proof_for(2048).unwrap(),
    ] {
        assert_eq!(check_seal_proof_supported(proof), Ok(()));
    }
    assert_eq!(
        check_seal_proof_supported(ni),
        Err(UnsupportedSealProof::NeedsAggregation(ni))
    );
}
