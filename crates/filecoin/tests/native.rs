//! The native PoRep assignment equals, value for value, the inputs and aux that synthesizing
//! the reference circuit through `WitnessBuilder` produces; malformed inputs are named errors.

mod common;

use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::sha256::Sha256Hasher;
use filecoin_proofs::{parameters::public_params, SectorShape2KiB};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use storage_proofs_porep::stacked::Proof;
use zkforge_filecoin::native::{self, ChallengeSource, CircuitShape, PartitionValues};
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

/// Sparse C1 outputs (made in seconds, without sealing): longer tree paths and more
/// challenges than 2 KiB. 512 MiB and 32 GiB are checked by hand with `zkforge bench synthesis
/// --reference` (the 32 GiB reference needs ~17 GB).
#[test]
fn native_assignment_equals_the_reference_on_a_sparse_8mib_c1() {
    let sparse = zkforge_fixtures::sparse::make_c1(8 << 20, 5, &()).unwrap();
    let circuits = porep::porep_native(sparse.c1).unwrap();
    let reference = circuits.circuits().synthesize(0).unwrap();
    let ours = circuits.assignment(0, 2).unwrap();
    assert_same("inputs", &ours.inputs, &reference.inputs);
    assert_same("aux", &ours.aux, &reference.aux);
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
        let proofs: Vec<Vec<Proof<SectorShape2KiB, Sha256Hasher>>> =
            serde_json::from_value::<filecoin_proofs_api::seal::VanillaSealProof>(v)
                .unwrap()
                .try_into()
                .unwrap();
        let msg = format!(
            "{:#}",
            native::assignment::<SectorShape2KiB>(
                &id,
                &values,
                &ChallengeSource::vanilla(&proofs[0], shape),
                2,
                None
            )
            .unwrap_err()
        );
        assert!(
            msg.contains("challenge 1") && msg.contains(expected),
            "{edit}: {msg}"
        );
    }
}

/// The registered sectors this suite can seal (2 KiB) have 2 layers; a real 32 GiB circuit
/// has 11 (column hashes over 11 rows, expander parents in 10 layers). A 64-node sector
/// replicated with 11 layers, two partitions, checks those against the reference too.
#[test]
fn eleven_layer_circuits_equal_the_reference() {
    use filecoin_hashers::poseidon::PoseidonHasher;
    use storage_proofs_core::api_version::ApiVersion;
    use storage_proofs_core::compound_proof::CompoundProof;
    use storage_proofs_core::drgraph::BASE_DEGREE;
    use storage_proofs_core::merkle::DiskTree;
    use storage_proofs_core::proof::ProofScheme;
    use storage_proofs_core::test_helper::setup_replica;
    use storage_proofs_porep::stacked::{
        Challenges, PrivateInputs, PublicInputs, SetupParams, StackedCompound, StackedDrg,
        TemporaryAuxCache, EXP_DEGREE,
    };
    use typenum::{U0, U8};
    use zkforge_filecoin::{ParamsId, ProofKind};

    type Tree = DiskTree<PoseidonHasher, U8, U0, U0>;
    let nodes = 64;
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..nodes as u64)
        .flat_map(|i| {
            (Scalar::from(i + 7) * Scalar::from(0x9e37_79b9u64).pow_vartime([i])).to_bytes_le()
        })
        .collect();
    let replica_path = dir.path().join("replica");
    let mut replica = setup_replica(&data, &replica_path);
    let pp = StackedDrg::<Tree, Sha256Hasher>::setup(&SetupParams {
        nodes,
        degree: BASE_DEGREE,
        expansion_degree: EXP_DEGREE,
        porep_id: [7; 32],
        challenges: Challenges::new_interactive(1),
        num_layers: 11,
        api_version: ApiVersion::V1_1_0,
        api_features: vec![],
    })
    .unwrap();
    let replica_id = Scalar::from(0x1234_5678u64).square();
    let (labels, _) =
        StackedDrg::<Tree, Sha256Hasher>::replicate_phase1(&pp, &replica_id.into(), dir.path())
            .unwrap();
    let (tau, (p_aux, t_aux)) = StackedDrg::<Tree, Sha256Hasher>::replicate_phase2(
        &pp,
        labels,
        replica.as_mut().into(),
        None,
        dir.path().to_path_buf(),
        replica_path.clone(),
    )
    .unwrap();
    drop(replica);
    let public = PublicInputs {
        replica_id: replica_id.into(),
        seed: Some([9; 32]),
        tau: Some(tau.clone()),
        k: None,
    };
    let private = PrivateInputs::<Tree, Sha256Hasher> {
        p_aux,
        t_aux: TemporaryAuxCache::new(&t_aux, replica_path, false).unwrap(),
    };
    let proofs =
        StackedDrg::<Tree, Sha256Hasher>::prove_all_partitions(&pp, &public, &private, 2).unwrap();
    assert!(
        StackedDrg::<Tree, Sha256Hasher>::verify_all_partitions(&pp, &public, &proofs).unwrap()
    );

    let id = ParamsId {
        kind: ProofKind::PoRep,
        sector_size: 0,
        stem: "test-64-nodes-11-layers".into(),
    };
    let shape = CircuitShape::of(&pp).unwrap();
    for (k, partition) in proofs.iter().enumerate() {
        let circuit = <StackedCompound<Tree, Sha256Hasher> as CompoundProof<_, _>>::circuit(
            &public,
            (),
            partition,
            &pp,
            Some(k),
        )
        .unwrap();
        let reference = zkforge_groth16::synthesize(circuit).unwrap();
        let values = PartitionValues {
            replica_id,
            comm_d: tau.comm_d.into(),
            comm_r: tau.comm_r.into(),
            comm_r_last: partition[0].comm_r_last().into(),
            comm_c: partition[0].comm_c().into(),
        };
        let challenges = ChallengeSource::vanilla(partition, shape);
        let ours = native::assignment::<Tree>(&id, &values, &challenges, 2, None).unwrap();
        assert_same("inputs", &ours.inputs, &reference.inputs);
        assert_same("aux", &ours.aux, &reference.aux);
    }
}
