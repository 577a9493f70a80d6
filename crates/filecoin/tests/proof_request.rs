//! The typed request every front end translates into: the current registered proof of each
//! kind and size, its parameter set equal to the circuits', and a PoSt request whose registered
//! proof is of the other PoSt kind refused by name. Sparse 2 KiB inputs: no parameters needed.

use filecoin_proofs_api::RegisteredPoStProof::StackedDrgWinning2KiBV1;
use zkforge_filecoin::post::PostRequest;
use zkforge_filecoin::{registry, ProofKind, ProofRequest, RegisteredProof};
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
