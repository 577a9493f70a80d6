//! PoRep C2 of 2 KiB sectors: our proofs verify with filecoin-proofs, match bellperson's bytes
//! for the same r and s, and bad inputs fail with errors that say what is wrong.

mod common;

use bellperson::groth16 as bp;
use blstrs::Bls12;
use ff::Field;
use rand_core::SeedableRng;
use zkforge_filecoin::{porep, prove_all};
use zkforge_groth16::{prover, CpuBackend, ProofRandomness, ReadOptions};

fn read(dir: &std::path::Path, name: &std::path::Path) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap()
}

#[test]
fn proofs_from_both_c1_formats_verify_with_filecoin_proofs() {
    let (dir, id) = common::porep_params();
    let pk = id.load(&dir, ReadOptions::default()).unwrap();
    let (fixture, m) = common::sector(11);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    for file in [&m.c1_wrapper, &m.c1_raw] {
        let c1 = porep::parse_c1(&read(fixture.path(), file)).unwrap();
        let circuits = porep::porep_circuits(c1).unwrap();
        assert_eq!(circuits.partitions(), 1);
        let matrices = common::matrices(circuits.as_ref());
        let report = prove_all(
            circuits.as_ref(),
            Some(&matrices),
            &CpuBackend::new(),
            &pk,
            &mut rng,
        )
        .unwrap();
        assert_eq!(report.proof.len(), 192);
        assert!(
            m.verify_porep(&report.proof).unwrap(),
            "verify_seal accepts {file:?}"
        );

        let mut bad = report.proof.clone();
        bad[10] ^= 1;
        assert!(
            !m.verify_porep(&bad).unwrap_or(false),
            "a damaged proof is rejected"
        );
    }
}

#[test]
fn proof_bytes_equal_bellperson_for_the_same_randomness() {
    let (dir, id) = common::porep_params();
    let bytes = std::fs::read(id.params_path(&dir)).unwrap();
    let params = bp::Parameters::<Bls12>::read(&bytes[..], false).unwrap();
    let pk = zkforge_groth16::ProvingKey::from_bytes(
        &bytes,
        &id.params_path(&dir),
        ReadOptions::default(),
    )
    .unwrap();
    drop(bytes);
    let (fixture, m) = common::sector(12);
    let c1 = porep::parse_c1(&read(fixture.path(), &m.c1_raw)).unwrap();
    let circuit = porep::PoRepCircuits::<filecoin_proofs::SectorShape2KiB>::new(c1.clone())
        .unwrap()
        .circuit(0)
        .unwrap();
    let circuits = porep::porep_circuits(c1).unwrap();

    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
    let rnd = ProofRandomness {
        r: blstrs::Scalar::random(&mut rng),
        s: blstrs::Scalar::random(&mut rng),
    };
    // The product path: the assignment only, a, b, c from the recorded matrices.
    let matrices = common::matrices(circuits.as_ref());
    let ours = prover::prove(
        &CpuBackend::new(),
        &pk,
        circuits.assign(0, matrices).unwrap(),
        rnd,
    )
    .unwrap();
    let theirs = bp::create_proof(circuit, &params, rnd.r, rnd.s).unwrap();
    let mut their_bytes = Vec::new();
    theirs.write(&mut their_bytes).unwrap();
    assert_eq!(ours.to_bytes().as_slice(), their_bytes.as_slice());
}

#[test]
fn bad_inputs_fail_with_errors_that_name_the_problem() {
    let (dir, _) = common::porep_params();
    let (fixture, m) = common::sector(13);
    let wrapper = read(fixture.path(), &m.c1_wrapper);
    let raw = read(fixture.path(), &m.c1_raw);
    let err = |bytes: &[u8]| match porep::parse_c1(bytes) {
        Ok(_) => panic!("bad input accepted"),
        Err(e) => format!("{e:#}"),
    };

    assert!(err(&wrapper[..wrapper.len() / 2]).contains("not valid JSON"));
    assert!(
        err(b"{\"SectorNum\":1,\"Phase1Out\":\"!!!not base64\",\"SectorSize\":2048}")
            .contains("base64")
    );
    let mut v: serde_json::Value = serde_json::from_slice(&wrapper).unwrap();
    v["SectorSize"] = 8_388_608u64.into();
    assert!(err(&serde_json::to_vec(&v).unwrap()).contains("SectorSize 8388608 does not match"));
    assert!(err(b"{\"hello\":1}").contains("neither a C1 wrapper nor a SealCommitPhase1Output"));

    // A 2 KiB C1 relabelled as 8 MiB: the vanilla proofs give it away.
    let mut v: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    v["registered_proof"] = "StackedDrg8MiBV1_1".into();
    let c1 = porep::parse_c1(&serde_json::to_vec(&v).unwrap()).unwrap();
    let msg = format!("{:#}", porep::porep_circuits(c1).err().unwrap());
    assert!(
        msg.contains("do not verify against its public values"),
        "{msg}"
    );

    // A damaged vanilla proof is caught before synthesis.
    let mut v: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    v["comm_r"][3] = 7.into();
    let c1 = porep::parse_c1(&serde_json::to_vec(&v).unwrap()).unwrap();
    let msg = format!("{:#}", porep::porep_circuits(c1).err().unwrap());
    assert!(
        msg.contains("do not verify against its public values"),
        "{msg}"
    );

    // Parameters missing for the circuit: the error names the file and how to make it.
    let c1 = porep::parse_c1(&raw).unwrap();
    let circuits = porep::porep_circuits(c1).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let msg = format!(
        "{:#}",
        circuits
            .params_id()
            .load(empty.path(), ReadOptions::default())
            .unwrap_err()
    );
    assert!(
        msg.contains("missing parameters for porep-2KiB") && msg.contains(".params"),
        "{msg}"
    );
    assert!(circuits.params_id().params_path(&dir).exists());
}
