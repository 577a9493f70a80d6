use bellperson::groth16 as bp;
use blstrs::Bls12;
use rand_core::SeedableRng;
use zkforge_circuits::SyntheticCircuit;

use super::generate_random_keys;
use crate::{prover, synthesize, verify::verify, CpuBackend, ProofRandomness};

#[test]
fn generated_keys_prove_and_verify_with_us_and_bellperson() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    for circuit in [
        SyntheticCircuit::new(700, 4, 0.8, 1),
        SyntheticCircuit::new(4096, 1, 0.2, 2),
    ] {
        let pk = generate_random_keys(circuit.clone(), &mut rng, &()).unwrap();
        let w = synthesize(circuit.clone()).unwrap();
        let proof = prover::prove(
            &CpuBackend::new(),
            &pk,
            w,
            ProofRandomness::random(&mut rng),
        )
        .unwrap();
        let inputs = circuit.public_values();
        assert!(verify(&pk.vk, &proof, &inputs).unwrap());

        // bellperson reads our key and proves with it; its proof verifies too.
        let mut bytes = Vec::new();
        pk.write(&mut bytes).unwrap();
        let params = bp::Parameters::<Bls12>::read(&bytes[..], true).unwrap();
        let theirs = bp::create_random_proof(circuit.clone(), &params, &mut rng).unwrap();
        let pvk = bp::prepare_verifying_key(&params.vk);
        assert!(bp::verify_proof(&pvk, &theirs, &inputs).unwrap());
        let ours = bp::Proof::<Bls12>::read(&proof.to_bytes()[..]).unwrap();
        assert!(bp::verify_proof(&pvk, &ours, &inputs).unwrap());
    }
}
