//! Our verifier against bellperson's, side by side in one run, on a proof with many public
//! inputs (a 32 GiB WindowPoSt partition has 23,490: Σ xᵢ·ICᵢ is then most of the check).
//!
//! `cargo bench -p zkforge-groth16 --bench verify -- [INPUTS ...] [--runs N]`
//! Medians after one warm-up; both must accept the proof and reject it with one input changed.

use std::path::Path;
use std::time::{Duration, Instant};

use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use rand_core::SeedableRng;
use zkforge_circuits::SyntheticCircuit;
use zkforge_groth16::generator::generate_random_keys;
use zkforge_groth16::verify::verify;
use zkforge_groth16::{prover, synthesize, CpuBackend, ProofRandomness, ProvingKey, ReadOptions};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let (mut sizes, mut runs) = (Vec::new(), 5usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => runs = it.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            v => sizes.push(v.parse::<usize>().expect("input counts are integers")),
        }
    }
    if sizes.is_empty() {
        sizes = vec![16, 1024, 23_490];
    }
    println!(
        "threads: {}, runs: {runs} (median after 1 warm-up)",
        rayon::current_num_threads()
    );
    println!(
        "{:>7} {:>14} {:>16} {:>8}",
        "inputs", "zkforge (ms)", "bellperson (ms)", "ratio"
    );
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    for inputs in sizes {
        // Constraints enough for the inputs' own; the proof's size does not change the check.
        let circuit = SyntheticCircuit::new((inputs + 64).next_power_of_two(), inputs, 0.5, 7);
        let pk = generate_random_keys(circuit.clone(), &mut rng, &()).unwrap();
        let mut bytes = Vec::new();
        pk.write(&mut bytes).unwrap();
        let params = bp::Parameters::<Bls12>::read(&bytes[..], false).unwrap();
        let pvk = bp::prepare_verifying_key(&params.vk);
        let pk =
            ProvingKey::from_bytes(&bytes, Path::new("bench"), ReadOptions::default()).unwrap();
        let w = synthesize(circuit.clone()).unwrap();
        let proof = prover::prove(
            &CpuBackend::new(),
            &pk,
            w,
            ProofRandomness::random(&mut rng),
        )
        .unwrap();
        let theirs_proof = bp::Proof::<Bls12>::read(&proof.to_bytes()[..]).unwrap();
        let x: Vec<Scalar> = circuit.public_values();
        let mut wrong = x.clone();
        wrong[inputs / 2] += Scalar::from(1u64);
        assert!(verify(&pk.vk, &proof, &x).unwrap());
        assert!(!verify(&pk.vk, &proof, &wrong).unwrap());
        assert!(bp::verify_proof(&pvk, &theirs_proof, &x).unwrap());
        assert!(!bp::verify_proof(&pvk, &theirs_proof, &wrong).unwrap());

        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for run in 0..=runs {
            let t = Instant::now();
            assert!(verify(&pk.vk, &proof, &x).unwrap());
            let dt_ours = t.elapsed();
            let t = Instant::now();
            assert!(bp::verify_proof(&pvk, &theirs_proof, &x).unwrap());
            let dt_theirs = t.elapsed();
            if run > 0 {
                ours.push(dt_ours);
                theirs.push(dt_theirs);
            }
        }
        let (o, t) = (median(ours), median(theirs));
        println!("{inputs:>7} {o:>14.2} {t:>16.2} {:>7.2}x", t / o);
    }
}
