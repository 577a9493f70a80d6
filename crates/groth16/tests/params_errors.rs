//! Damaged parameter files give errors that name the file and the problem, never a panic.

use std::path::Path;

use rand_core::SeedableRng;
use zkforge_circuits::SyntheticCircuit;
use zkforge_groth16::{
    prover, synthesize, CpuBackend, Error, ProofRandomness, ProvingKey, ReadOptions,
};

fn params_bytes(circuit: &SyntheticCircuit) -> Vec<u8> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(circuit.seed);
    let params = bellperson::groth16::generate_random_parameters::<blstrs::Bls12, _, _>(
        circuit.clone(),
        &mut rng,
    )
    .unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    bytes
}

#[test]
fn truncated_corrupt_and_missing_files_are_named_errors() {
    let bytes = params_bytes(&SyntheticCircuit::new(300, 2, 0.5, 1));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.params");

    for cut in [0, 10, 96 * 2 + 5, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let err = ProvingKey::read_file(&path, ReadOptions::default()).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("test.params") && msg.contains("truncated"),
            "cut {cut}: {msg}"
        );
    }

    let mut extra = bytes.clone();
    extra.extend_from_slice(&[0; 7]);
    std::fs::write(&path, &extra).unwrap();
    let msg = ProvingKey::read_file(&path, ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("7 unexpected bytes"), "{msg}");

    // Corrupt the last point of b_g2 (a G2 point is 192 bytes): its y coordinate.
    let mut bad = bytes.clone();
    let at = bad.len() - 10;
    bad[at] ^= 0x5a;
    std::fs::write(&path, &bad).unwrap();
    let msg = ProvingKey::read_file(&path, ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("b_g2[") && msg.contains("not on the curve"),
        "{msg}"
    );

    let missing = dir.path().join("missing.params");
    let err = ProvingKey::read_file(&missing, ReadOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Io { .. }) && err.to_string().contains("missing.params"));
}

#[test]
fn parameters_for_another_circuit_are_refused_before_proving() {
    let bytes = params_bytes(&SyntheticCircuit::new(300, 2, 0.5, 1));
    let pk =
        ProvingKey::from_bytes(&bytes, Path::new("small.params"), ReadOptions::default()).unwrap();
    let other = synthesize(SyntheticCircuit::new(300, 3, 0.5, 1)).unwrap();
    let rnd = ProofRandomness::random(&mut rand_chacha::ChaCha8Rng::seed_from_u64(3));
    let err = prover::prove(&CpuBackend::new(), &pk, other, rnd).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ShapeMismatch {
                what: "ic (public inputs)",
                params: 3,
                circuit: 4
            }
        ),
        "{err}"
    );
}

/// A key left in its file: the layout is located exactly (every section's points decode to
/// the decoded key's), and truncation or extra bytes are named errors.
#[test]
fn params_files_are_located_section_by_section() {
    use zkforge_groth16::srs::Query;
    use zkforge_groth16::ParamsFile;
    let circuit = SyntheticCircuit::new(500, 3, 0.5, 4);
    let bytes = params_bytes(&circuit);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key.params");
    std::fs::write(&path, &bytes).unwrap();
    let pk = ProvingKey::read_file(&path, ReadOptions::default()).unwrap();
    let file = ParamsFile::open(&path).unwrap();
    assert_eq!(file.vk, pk.vk);
    assert_eq!(file.lengths(), pk.lengths());
    assert_eq!(file.g1_points(Query::H, 0, pk.h.len()).unwrap(), pk.h);
    assert_eq!(file.g1_points(Query::L, 1, 5).unwrap(), pk.l[1..6]);
    assert_eq!(file.g1_points(Query::A, 0, pk.a.len()).unwrap(), pk.a);
    assert_eq!(file.g1_points(Query::BG1, 2, 3).unwrap(), pk.b_g1[2..5]);
    assert_eq!(file.g2_points(0, pk.b_g2.len()).unwrap(), pk.b_g2);
    assert!(
        file.g1_points(Query::L, pk.l.len() - 1, 2).is_err(),
        "past the end"
    );

    for cut in [100, bytes.len() / 3, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let msg = ParamsFile::open(&path).unwrap_err().to_string();
        assert!(msg.contains("truncated"), "cut {cut}: {msg}");
    }
    let mut extra = bytes.clone();
    extra.push(0);
    std::fs::write(&path, &extra).unwrap();
    let msg = ParamsFile::open(&path).unwrap_err().to_string();
    assert!(msg.contains("1 unexpected bytes"), "{msg}");
}
