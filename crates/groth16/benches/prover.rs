//! Our CPU prover against bellperson's, side by side in one run, on synthetic circuits.
//!
//! `cargo bench -p zkforge-groth16 --bench prover -- [LOG2 ...] [--runs N] [--bits F]`
//! Keys come from our generator; bellperson reads the same bytes. Medians after one warm-up.

use std::path::Path;
use std::time::{Duration, Instant};

use bellperson::groth16 as bp;
use blstrs::Bls12;
use rand_core::SeedableRng;
use zkforge_circuits::SyntheticCircuit;
use zkforge_groth16::generator::generate_random_keys;
use zkforge_groth16::{prover, synthesize, CpuBackend, ProofRandomness, ProvingKey, ReadOptions};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mut logs = Vec::new();
    let (mut runs, mut bits) = (3usize, 0.9f64);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => runs = it.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--bits" => bits = it.next().and_then(|v| v.parse().ok()).expect("--bits F"),
            v => logs.push(v.parse::<u32>().expect("log2 sizes are integers")),
        }
    }
    if logs.is_empty() {
        logs = vec![16, 18, 20];
    }
    println!(
        "threads: {}, bits: {bits}, runs: {runs} (median after 1 warm-up)",
        rayon::current_num_threads()
    );
    println!(
        "{:>5} {:>14} {:>14} {:>14} {:>8}",
        "log2", "zkforge (s)", "bellperson (s)", "keygen (s)", "ratio"
    );
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    for log in logs {
        let circuit = SyntheticCircuit::new(1 << log, 8, bits, 3);
        let t = Instant::now();
        let pk = generate_random_keys(circuit.clone(), &mut rng, &()).unwrap();
        let keygen = t.elapsed().as_secs_f64();
        let mut bytes = Vec::new();
        pk.write(&mut bytes).unwrap();
        let params = bp::Parameters::<Bls12>::read(&bytes[..], false).unwrap();
        let pk =
            ProvingKey::from_bytes(&bytes, Path::new("bench"), ReadOptions::default()).unwrap();
        drop(bytes);

        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for run in 0..=runs {
            let rnd = ProofRandomness::random(&mut rng);
            let t = Instant::now();
            let w = synthesize(circuit.clone()).unwrap();
            let a = prover::prove(&CpuBackend::new(), &pk, w, rnd).unwrap();
            let dt_ours = t.elapsed();
            let t = Instant::now();
            let b = bp::create_proof(circuit.clone(), &params, rnd.r, rnd.s).unwrap();
            let dt_theirs = t.elapsed();
            let mut b_bytes = Vec::new();
            b.write(&mut b_bytes).unwrap();
            assert_eq!(a.to_bytes().as_slice(), b_bytes.as_slice(), "proofs differ");
            if run > 0 {
                ours.push(dt_ours);
                theirs.push(dt_theirs);
            }
        }
        let (o, t) = (median(ours), median(theirs));
        println!(
            "{log:>5} {o:>14.3} {t:>14.3} {keygen:>14.2} {:>7.2}x",
            t / o
        );
    }
}
