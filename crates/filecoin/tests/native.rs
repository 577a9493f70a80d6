//! The native PoRep assignment equals, value for value, the inputs and aux that synthesizing
//! the reference circuit through `WitnessBuilder` produces; malformed inputs are named errors.

mod common;

use blstrs::Scalar;
use filecoin_proofs::{parameters::public_params, SectorShape2KiB};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use zkforge_filecoin::native::{self, CircuitShape, PartitionValues};
use zkforge_filecoin::{porep, PartitionedCircuit};

fn c1(seed: u64) -> (tempfile::TempDir, Vec<u8>) {
    let (dir, m) = common::sector(seed);
    let raw = std::fs::read(dir.path().join(&m.c1_raw)).unwrap();
    (dir, raw)
}

fn assert_same(what: &str, ours: &[Scalar], reference: &[Scalar]) {
    if let Some(i) = (0..ours.len().min(reference.len())).find(|&i| ours[i] != reference[i]) {
        panic!(
            "{what}[{i}] differs: native {:?}, reference {:?}",
            ours[i], reference[i]
        );
    }
    assert_eq!(ours.len(), reference.len(), "{what} lengths");
}

/// Two sectors (different data, ids, seeds, so different challenges and values): every
/// partition, one and several threads.
#[test]
fn native_assignment_equals_the_reference_witness_at_2kib() {
    for seed in [31, 32] {
        let (_dir, raw) = c1(seed);
        let circuits =
            porep::PoRepCircuits::<SectorShape2KiB>::new(porep::parse_c1(&raw).unwrap()).unwrap();
        for k in 0..circuits.partitions() {
            let reference = circuits.synthesize(k).unwrap();
            for threads in [1, 3] {
                let ours = circuits.assignment(k, threads).unwrap();
                assert_same("inputs", &ours.inputs, &reference.inputs);
                assert_same("aux", &ours.aux, &reference.aux);
            }
        }
    }
}

#[test]
fn bad_partitions_and_vanilla_proofs_are_named_errors() {
    let (_dir, raw) = c1(33);
    let c1 = porep::parse_c1(&raw).unwrap();
    let circuits = porep::porep_native(c1.clone()).unwrap();
    let msg = format!("{:#}", circuits.assignment(7, 1).unwrap_err());
    assert!(msg.contains("partition 7 does not exist"), "{msg}");

    // Vanilla proofs that disagree with the public values never reach synthesis.
    let mut v: serde_json::Value = serde_json::to_value(&c1).unwrap();
    v["comm_d"][5] = 1.into();
    let bad: SealCommitPhase1Output = serde_json::from_value(v).unwrap();
    let msg = format!("{:#}", porep::porep_native(bad).err().unwrap());
    assert!(
        msg.contains("do not verify against its public values"),
        "{msg}"
    );

    // Inside the native generator: a challenge whose column misses a row, or whose tree D
    // path lost a level, fails with an error naming the challenge and what is wrong.
    let config = c1.registered_proof.as_v1_config();
    let pp = public_params::<SectorShape2KiB>(&config).unwrap();
    let shape = CircuitShape::of(&pp).unwrap();
    let values = PartitionValues {
        replica_id: Scalar::from(1u64),
        comm_d: Scalar::from(2u64),
        comm_r: Scalar::from(3u64),
        comm_r_last: Scalar::from(4u64),
        comm_c: Scalar::from(5u64),
    };
    let id = circuits.circuits().params_id().clone();
    for (edit, expected) in [
        ("rows", "rows, the circuit has"),
        ("comm_d", "the comm_d path has"),
    ] {
        let mut v = serde_json::to_value(&c1.vanilla_proofs).unwrap();
        let proof = &mut v["StackedDrg2KiBV1"][0][1];
        if edit == "rows" {
            let rows = proof["replica_column_proofs"]["drg_parents"][2]["column"]["rows"]
                .as_array_mut()
                .unwrap();
            rows.pop();
        } else {
            let path = proof["comm_d_proofs"]["data"]["Single"]["path"]["path"]
                .as_array_mut()
                .unwrap();
            path.pop();
        }
        let proofs: Vec<Vec<_>> =
            serde_json::from_value::<filecoin_proofs_api::seal::VanillaSealProof>(v)
                .unwrap()
                .try_into()
                .unwrap();
        let msg = format!(
            "{:#}",
            native::assignment::<SectorShape2KiB, _>(&id, shape, &values, &proofs[0], 2, None)
                .unwrap_err()
        );
        assert!(
            msg.contains("challenge 1") && msg.contains(expected),
            "{edit}: {msg}"
        );
    }
}
