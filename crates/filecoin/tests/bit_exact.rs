//! The product path's witness equals the reference constraint system's, at 2 KiB for all four
//! proof kinds and at 32 and 64 GiB for WinningPoSt (the PoSt sector circuit on the real trees,
//! with sub and top levels): the assignment (native for all four kinds), and a, b, c from the
//! recorded matrices, row for row; the densities from the recording. SnapDeals' native
//! assignment is also held to the reference on more threads, shown to catch one wrong value,
//! and compared with the gadgets on every partition of a sparse 8 MiB sector.

mod common;

use zkforge_filecoin::post::{post_circuits, PostRequest};
use zkforge_filecoin::snap::{snap_assignments, snap_circuits, SnapRequest};
use zkforge_filecoin::{porep, PartitionedCircuit};
use zkforge_fixtures::sparse::{make_post, make_snap, KeyedFr};
use zkforge_fixtures::{read_base64_list, unhex32};
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
        assert!(
            ours.evaluated().is_none(),
            "{name}: the product path defers a, b, c"
        );
        ours.evaluate().unwrap();
        let [a, b, c] = ours.evaluated().unwrap();
        let [ref_a, ref_b, ref_c] = reference.evaluated().unwrap();
        for (what, x, y) in [
            ("inputs", &ours.inputs[..], &reference.inputs[..]),
            ("aux", &ours.aux, &reference.aux),
            ("a", a, ref_a),
            ("b", b, ref_b),
            ("c", c, ref_c),
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
            reference.num_constraints() > 1000,
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
    let circuits = snap_circuits(req.clone()).unwrap();
    assert_bit_exact("SnapDeals", circuits.as_ref());
    snap_native_is_the_reference_and_a_wrong_value_is_caught(req, circuits.as_ref());
}

/// The native SnapDeals assignment directly (not through `assign`) on 1 and 3 threads, against
/// the reference witness; its layout adds up to the reference's shape; and one sibling off by
/// one in a challenge's opening is found at exactly its place, so the comparisons above fail on
/// a mismatch.
fn snap_native_is_the_reference_and_a_wrong_value_is_caught(
    req: SnapRequest,
    circuits: &dyn PartitionedCircuit,
) {
    let paths = snap_assignments(req).unwrap();
    let reference = circuits.synthesize(0).unwrap();
    for threads in [1, 3] {
        let native = paths.native(0, threads).unwrap();
        assert_eq!(native.inputs, reference.inputs, "{threads} threads: inputs");
        assert_eq!(
            first_difference(&native.aux, &reference.aux),
            None,
            "{threads} threads: aux"
        );
    }
    let l = paths.layout(0).unwrap();
    assert_eq!(l.total().inputs, reference.inputs.len());
    assert_eq!(l.total().aux, reference.aux.len());
    assert_eq!(
        (l.apex_hashes, l.challenges),
        (7, 10),
        "2 KiB: 8 apex leaves, 10 challenges"
    );

    let mut values = paths.values(0).unwrap();
    let c = 3;
    values.challenges[c].path_r_old[1][2] += Scalar::from(1u64);
    let wrong = paths.native_of(&values, 2).unwrap();
    let i = first_difference(&wrong.aux, &reference.aux).expect("a wrong sibling is seen");
    let start = l.prefix.aux + l.apex_hashes * l.apex_hash.aux + l.suffix.aux;
    let region = start + c * l.challenge.aux..start + (c + 1) * l.challenge.aux;
    assert!(
        region.contains(&i),
        "{i} lies in challenge {c}'s values {region:?}"
    );
    assert_eq!(wrong.aux[i], reference.aux[i] + Scalar::from(1u64));
    assert_eq!(wrong.aux[..i], reference.aux[..i]);
}

#[test]
fn native_post_witnesses_equal_the_reference_at_32_and_64_gib() {
    use filecoin_proofs_api::RegisteredPoStProof::*;
    let prover_id = KeyedFr::new(b"test prover", 1).bytes(0);
    for proof in [StackedDrgWinning32GiBV1, StackedDrgWinning64GiBV1] {
        let made = make_post(proof, 1, prover_id, 7, &()).unwrap();
        let req = made.request(prover_id, 0);
        assert_bit_exact(&format!("{proof:?}"), post_circuits(req).unwrap().as_ref());
    }
}

/// Every partition of a sparse 8 MiB SnapDeals sector (4 partitions: the partition bits and
/// path, production `h` values, 128 apex leaves): the native assignment equals the gadgets' in
/// the witness-only constraint system value for value; and another partition's values do not.
#[test]
fn native_snap_assignments_equal_the_gadgets_on_every_8_mib_partition() {
    let made = make_snap(
        filecoin_proofs_api::RegisteredUpdateProof::StackedDrg8MiBV1,
        3,
        &(),
    )
    .unwrap();
    let paths = snap_assignments(made.request()).unwrap();
    assert_eq!(paths.partitions(), 4);
    let mut previous = None;
    for k in 0..4 {
        let native = paths.native(k, 2).unwrap();
        let gadgets = paths.witness_only(k, &native).unwrap();
        assert_eq!(native.inputs, gadgets.inputs, "partition {k}: inputs");
        if let Some(i) = first_difference(&native.aux, &gadgets.aux) {
            panic!("partition {k}: aux differs at {i} of {}", gadgets.aux.len());
        }
        if let Some(other) = previous.replace(gadgets) {
            // k_and_h_select, the first aux value, differs between partitions.
            assert_eq!(first_difference(&native.aux, &other.aux), Some(0));
        }
    }
}
