//! Our prover against bellperson's: equal proof bytes for equal r, s; keys that round-trip.

use std::path::Path;

use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use ff::Field;
use rand_core::SeedableRng;
use zkforge_circuits::SyntheticCircuit;
use zkforge_groth16::{
    prover, synthesize, verify, CpuBackend, Proof, ProofRandomness, ProvingKey, ReadOptions,
};

fn rng(seed: u64) -> rand_chacha::ChaCha8Rng {
    rand_chacha::ChaCha8Rng::seed_from_u64(seed)
}

fn bellperson_params(circuit: &SyntheticCircuit) -> (bp::Parameters<Bls12>, Vec<u8>) {
    let params =
        bp::generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng(circuit.seed))
            .expect("bellperson generates parameters");
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    (params, bytes)
}

fn our_proof(circuit: &SyntheticCircuit, pk: &ProvingKey, rnd: ProofRandomness) -> Proof {
    let witness = synthesize(circuit.clone()).expect("synthesis");
    prover::prove(&CpuBackend::new(), pk, witness, rnd).expect("our prover")
}

#[test]
fn proofs_equal_bellperson_bytes_and_verify() {
    let shapes = [
        SyntheticCircuit::new(1, 0, 0.0, 1),
        SyntheticCircuit::new(100, 3, 0.5, 2),
        SyntheticCircuit::new(1000, 1, 0.9, 3),
        SyntheticCircuit::new(3000, 17, 0.0, 4),
        SyntheticCircuit::new(5000, 8, 0.99, 5),
        SyntheticCircuit::new(1 << 14, 40, 0.9, 6),
    ];
    for circuit in shapes {
        let (params, bytes) = bellperson_params(&circuit);
        let pk = ProvingKey::from_bytes(&bytes, Path::new("<bellperson>"), ReadOptions::default())
            .expect("we read bellperson's parameters");
        let rnd = ProofRandomness::random(&mut rng(circuit.seed + 1000));

        let theirs = bp::create_proof(circuit.clone(), &params, rnd.r, rnd.s).unwrap();
        let mut their_bytes = Vec::new();
        theirs.write(&mut their_bytes).unwrap();
        let ours = our_proof(&circuit, &pk, rnd);
        assert_eq!(
            ours.to_bytes().as_slice(),
            their_bytes.as_slice(),
            "{circuit:?}"
        );

        let pvk = bp::prepare_verifying_key(&params.vk);
        let inputs = circuit.public_values();
        let decoded = bp::Proof::<Bls12>::read(&ours.to_bytes()[..]).unwrap();
        assert!(
            bp::verify_proof(&pvk, &decoded, &inputs).unwrap(),
            "bellperson accepts ours"
        );
        assert!(
            verify::verify(&pk.vk, &ours, &inputs).unwrap(),
            "our verifier accepts ours"
        );
    }
}

#[test]
fn tampered_proofs_and_wrong_inputs_are_rejected() {
    let circuit = SyntheticCircuit::new(500, 2, 0.8, 11);
    let (params, bytes) = bellperson_params(&circuit);
    let pk =
        ProvingKey::from_bytes(&bytes, Path::new("<bellperson>"), ReadOptions::default()).unwrap();
    let proof = our_proof(&circuit, &pk, ProofRandomness::random(&mut rng(12)));
    let pvk = bp::prepare_verifying_key(&params.vk);
    let inputs = circuit.public_values();

    let mut wrong = inputs.clone();
    wrong[1] += Scalar::ONE;
    let decoded = bp::Proof::<Bls12>::read(&proof.to_bytes()[..]).unwrap();
    assert!(!bp::verify_proof(&pvk, &decoded, &wrong).unwrap());
    assert!(!verify::verify(&pk.vk, &proof, &wrong).unwrap());

    // Swap A and C: still valid points, no longer a valid proof.
    let swapped = Proof {
        a: proof.c,
        b: proof.b,
        c: proof.a,
    };
    assert!(!verify::verify(&pk.vk, &swapped, &inputs).unwrap());
    let decoded = bp::Proof::<Bls12>::read(&swapped.to_bytes()[..]).unwrap();
    assert!(!bp::verify_proof(&pvk, &decoded, &inputs).unwrap());

    // Flip a byte: either not a point any more or a wrong one.
    let mut bytes = proof.to_bytes();
    bytes[150] ^= 0x01;
    match Proof::from_bytes(&bytes) {
        Err(e) => assert!(e.to_string().contains("C"), "{e}"),
        Ok(p) => assert!(!verify::verify(&pk.vk, &p, &inputs).unwrap()),
    }
}

#[test]
fn keys_round_trip_byte_for_byte() {
    let circuit = SyntheticCircuit::new(2000, 5, 0.7, 21);
    let (params, bytes) = bellperson_params(&circuit);
    let pk = ProvingKey::from_bytes(
        &bytes,
        Path::new("<bellperson>"),
        ReadOptions {
            check_subgroup: true,
        },
    )
    .unwrap();
    let mut ours = Vec::new();
    pk.write(&mut ours).unwrap();
    assert_eq!(ours, bytes, "we write what bellperson wrote");
    let back = bp::Parameters::<Bls12>::read(&ours[..], true).expect("bellperson reads ours");
    assert_eq!(back.h.len(), pk.h.len());

    let mut vk_bytes = Vec::new();
    params.vk.write(&mut vk_bytes).unwrap();
    let vk = zkforge_groth16::VerifyingKey::from_bytes(&vk_bytes, Path::new("<vk>")).unwrap();
    let mut vk_ours = Vec::new();
    vk.write(&mut vk_ours).unwrap();
    assert_eq!(vk_ours, vk_bytes);
    assert_eq!(vk, pk.vk);
}
