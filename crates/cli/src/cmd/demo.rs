//! `zkforge demo`: the README's main job, end to end on the CPU backend.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::ensure;
use clap::Args;
use rand::SeedableRng;
use zkforge_circuits::SyntheticCircuit;
use zkforge_groth16::{prover, synthesize, verify::verify, CpuBackend, ProofRandomness};

use super::keys::{default_cache_dir, synthetic_key};

#[derive(Args)]
pub struct DemoArgs {
    /// Constraints of the synthetic demo circuit.
    #[arg(long, default_value_t = 1 << 16)]
    constraints: usize,
    /// Fraction of witness values that are bits, as in Filecoin's circuits.
    #[arg(long, default_value_t = 0.9)]
    bit_fraction: f64,
    /// Where generated test keys are cached [default: $ZKFORGE_CACHE or ~/.cache/zkforge].
    #[arg(long)]
    cache: Option<PathBuf>,
}

pub fn run(args: DemoArgs) -> anyhow::Result<()> {
    ensure!(
        (0.0..=1.0).contains(&args.bit_fraction),
        "--bit-fraction must lie in [0, 1]"
    );
    ensure!(args.constraints > 0, "--constraints must be positive");
    let cache = args.cache.unwrap_or_else(default_cache_dir);
    let circuit = SyntheticCircuit::new(args.constraints, 8, args.bit_fraction, 1);
    println!(
        "zkforge demo: synthetic circuit, {} constraints, {:.0}% bits, CPU backend",
        circuit.constraints,
        circuit.bit_fraction * 100.0
    );

    let t = Instant::now();
    let pk = synthetic_key(&circuit, &cache)?;
    let keys = t.elapsed();

    let t = Instant::now();
    let witness = synthesize(circuit.clone())?;
    let synth = t.elapsed();

    let t = Instant::now();
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    let proof = prover::prove(
        &CpuBackend::new(),
        &pk,
        witness,
        ProofRandomness::random(&mut rng),
    )?;
    let prove = t.elapsed();

    let t = Instant::now();
    let ok = verify(&pk.vk, &proof, &circuit.public_values())?;
    let check = t.elapsed();
    ensure!(ok, "the proof did not verify");

    println!("proof   {}", hex(&proof.to_bytes()));
    println!("keys    {:>9.3} s", keys.as_secs_f64());
    println!("synth   {:>9.3} s", synth.as_secs_f64());
    println!("prove   {:>9.3} s", prove.as_secs_f64());
    println!("verify  {:>9.3} s  ok", check.as_secs_f64());
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
