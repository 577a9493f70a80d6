//! The product path's witness equals the reference constraint system's, at 2 KiB for all four
//! proof kinds and at 32 and 64 GiB for WinningPoSt (the PoSt sector circuit on the real trees,
//! with sub and top levels): the assignment (native for PoRep and PoSt, the witness-only
//! constraint system for SnapDeals), and a, b, c from the recorded matrices, row for row; the
//! densities from the recording.

mod common;

use zkforge_filecoin::fixtures::sparse::{make_post, KeyedFr};
use zkforge_filecoin::fixtures::{read_base64_list, unhex32};
use zkforge_filecoin::post::{post_circuits, PostRequest};
use zkforge_filecoin::snap::{snap_circuits, SnapRequest};
use zkforge_filecoin::{porep, PartitionedCircuit};
use zkforge_groth16::Scalar;

fn first_difference(a: &[Scalar], b: &[Scalar]) -> Option<usize> {
    (a.len() != b.len())
        .then_some(a.len().min(b.len()))
        .or_else(|| (0..a.len()).find(|&i| a[i] != b[i]))
}

fn assert_bit_exact(name: &str, circuits: &dyn PartitionedCircuit) {
    let matrices = common::matrices(circuits);
    for k in 0..circuits.partitions() {
        let reference = circuits.synthesize(k).unwrap();
        let mut ours = circuits.assign(k, matrices.clone()).unwrap();
        assert!(ours.a.is_empty(), "{name}: the product path defers a, b, c");
        ours.evaluate().unwrap();
        for (what, x, y) in [
            ("inputs", &ours.inputs, &reference.inputs),
            ("aux", &ours.aux, &reference.aux),
            ("a", &ours.a, &reference.a),
            ("b", &ours.b, &reference.b),
            ("c", &ours.c, &reference.c),
        ] {
            if let Some(i) = first_difference(x, y) {
                panic!(
                    "{name} partition {k}: {what} differs at {i} of {} (ours {:?}, reference {:?})",
                    y.len(),
                    x.get(i),
                    y.get(i)
                );
            }
        }
        assert_eq!(
            ours.a_aux_density, reference.a_aux_density,
            "{name}: A-aux density"
        );
        assert_eq!(
            ours.b_input_density, reference.b_input_density,
            "{name}: B-input density"
        );
        assert_eq!(
            ours.b_aux_density, reference.b_aux_density,
            "{name}: B-aux density"
        );
        assert!(
            reference.a.len() > 1000,
            "{name}: a real circuit, not an empty one"
        );
    }
}

#[test]
fn product_witnesses_equal_the_reference_for_all_four_kinds() {
    let (fixture, m) = common::sector(21);
    let dir = fixture.path();
    let c1 = porep::parse_c1(&std::fs::read(dir.join(&m.c1_raw)).unwrap()).unwrap();
    assert_bit_exact("PoRep", porep::porep_circuits(c1).unwrap().as_ref());

    for (name, p) in [
        ("WinningPoSt", m.winning_post().unwrap()),
        ("WindowPoSt", m.window_post().unwrap()),
    ] {
        let req = PostRequest {
            registered_proof: p.registered_proof,
            randomness: unhex32(&p.randomness).unwrap(),
            prover_id: unhex32(&m.prover_id).unwrap(),
            vanilla_proofs: read_base64_list(&std::fs::read(dir.join(&p.vanilla)).unwrap())
                .unwrap(),
            partition_index: p.partition_index,
            sector_number: None,
        };
        assert_bit_exact(name, post_circuits(req).unwrap().as_ref());
    }

    let s = m.snap().unwrap();
    let req = SnapRequest {
        registered_proof: s.registered_proof,
        comm_r_old: unhex32(&s.comm_r_old).unwrap(),
        comm_r_new: unhex32(&s.comm_r_new).unwrap(),
        comm_d_new: unhex32(&s.comm_d_new).unwrap(),
        vanilla_proofs: read_base64_list(&std::fs::read(dir.join(&s.vanilla)).unwrap()).unwrap(),
    };
    assert_bit_exact("SnapDeals", snap_circuits(req).unwrap().as_ref());
}

#[test]
fn native_post_witnesses_equal_the_reference_at_32_and_64_gib() {
    use filecoin_proofs_api::RegisteredPoStProof::*;
    let prover_id = KeyedFr::new(b"test prover", 1).bytes(0);
    for proof in [StackedDrgWinning32GiBV1, StackedDrgWinning64GiBV1] {
        let made = make_post(proof, 1, prover_id, 7, &()).unwrap();
        let req = PostRequest {
            registered_proof: made.registered_proof,
            randomness: made.randomness,
            prover_id,
            vanilla_proofs: made.vanilla,
            partition_index: 0,
            sector_number: None,
        };
        assert_bit_exact(&format!("{proof:?}"), post_circuits(req).unwrap().as_ref());
    }
}
