//! Damaged parameter files give errors that name the file and the problem, never a panic.

use std::path::Path;

use rand_core::SeedableRng;
use zkforge_circuits::SyntheticCircuit;
use zkforge_groth16::{
    prover, synthesize, verify::verify, CpuBackend, Error, G1Affine, G2Affine, ProofRandomness,
    ProvingKey, ReadOptions,
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
    // The point and where it starts: the last of b_g2's 192-byte points.
    let offset = bytes.len() - 192;
    assert!(
        msg.contains("b_g2[")
            && msg.contains(&format!("at offset {offset}"))
            && msg.contains("not on the curve"),
        "{msg}"
    );

    // The file path's decode (read piece by piece, not mapped) names the same point.
    let msg = zkforge_groth16::ParamsFile::open(&path)
        .unwrap()
        .decode(ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("test.params")
            && msg.contains("b_g2[")
            && msg.contains(&format!("at offset {offset}"))
            && msg.contains("not on the curve"),
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

    assert_eq!(file.decode(ReadOptions::default()).unwrap(), pk);

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

/// A key of many decoding pieces (2^17 points a query: 32 pieces of 2^12) decodes from its
/// file, piece by piece, to the key that was written; a point damaged in a later piece is
/// named by its own index and offset.
#[test]
fn a_large_key_decodes_piece_by_piece() {
    use zkforge_groth16::srs::Query;
    use zkforge_groth16::ParamsFile;
    let w = synthesize(SyntheticCircuit::new((1 << 17) - 8, 2, 0.5, 9)).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let pk = zkforge_groth16::generator::tiled_key_for(&w, &mut rng).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.params");
    pk.write_file(&path).unwrap();
    let file = ParamsFile::open(&path).unwrap();
    assert!(file.section(Query::H).len > 16 * (1 << 12));
    assert_eq!(file.decode(ReadOptions::default()).unwrap(), pk);

    let index = 5 * (1 << 12) + 3;
    let at = file.point_offset(Query::L, index);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[at as usize + 50] ^= 0x5a;
    std::fs::write(&path, &bytes).unwrap();
    let msg = ParamsFile::open(&path)
        .unwrap()
        .decode(ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains(&format!("l[{index}] at offset {at}")) && msg.contains("not on the curve"),
        "{msg}"
    );
}

/// A point replaced by another valid point decodes on every load path (the file cannot tell);
/// what keeps such a key from yielding a proof is the self-check every proof gets before it is
/// returned (the engine's: `verify` against the key's own verifying key).
/// Each point the prover or the verifier reads, replaced in turn, fails it.
#[test]
fn a_valid_point_in_the_wrong_place_never_yields_an_accepted_proof() {
    use group::prime::PrimeCurveAffine;
    let circuit = SyntheticCircuit::new(300, 2, 0.5, 1);
    let bytes = params_bytes(&circuit);
    let pk = ProvingKey::from_bytes(&bytes, Path::new("k.params"), ReadOptions::default()).unwrap();
    let (g1, g2) = (G1Affine::generator(), G2Affine::generator());
    type Edit = fn(&mut ProvingKey, G1Affine, G2Affine);
    let edits: [(&str, Edit); 13] = [
        ("alpha_g1", |k, g, _| k.vk.alpha_g1 = g),
        ("beta_g1", |k, g, _| k.vk.beta_g1 = g),
        ("beta_g2", |k, _, g| k.vk.beta_g2 = g),
        ("gamma_g2", |k, _, g| k.vk.gamma_g2 = g),
        ("delta_g1", |k, g, _| k.vk.delta_g1 = g),
        ("delta_g2", |k, _, g| k.vk.delta_g2 = g),
        ("ic[0]", |k, g, _| k.vk.ic[0] = g),
        ("ic[1]", |k, g, _| k.vk.ic[1] = g),
        ("h[0]", |k, g, _| k.h[0] = g),
        ("l[0]", |k, g, _| k.l[0] = g),
        ("a[0]", |k, g, _| k.a[0] = g),
        ("b_g1[0]", |k, g, _| k.b_g1[0] = g),
        ("b_g2[0]", |k, _, g| k.b_g2[0] = g),
    ];
    let rnd = || ProofRandomness::random(&mut rand_chacha::ChaCha8Rng::seed_from_u64(11));
    let good = prover::prove(
        &CpuBackend::new(),
        &pk,
        synthesize(circuit.clone()).unwrap(),
        rnd(),
    )
    .unwrap();
    assert!(verify(&pk.vk, &good, &circuit.public_values()).unwrap());
    for (name, edit) in edits {
        let mut bad = pk.clone();
        edit(&mut bad, g1, g2);
        // Written and read back: the file decodes as a key like any other.
        let mut file = Vec::new();
        bad.write(&mut file).unwrap();
        let read = ProvingKey::from_bytes(&file, Path::new("k.params"), ReadOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let w = synthesize(circuit.clone()).unwrap();
        let accepted = match prover::prove(&CpuBackend::new(), &read, w, rnd()) {
            Ok(proof) => verify(&read.vk, &proof, &circuit.public_values()).unwrap_or(false),
            Err(_) => false,
        };
        assert!(
            !accepted,
            "{name} replaced: the self-check accepted the proof"
        );
    }
}
