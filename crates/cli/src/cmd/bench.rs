//! `zkforge bench`: `local` (our CPU prover on synthetic circuits, stage by stage), `engine`,
//! `pipeline`, `synthesis` (PoRep witness generation), and the daemon client
//! `single`/`batch`/`sweep` (in `bench_client/`).

use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use rand::SeedableRng;
use zkforge_circuits::SyntheticCircuit;
use zkforge_groth16::{prover, synthesize, CpuBackend, ProofRandomness};

use super::keys::{default_cache_dir, synthetic_key};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Synthesize and prove synthetic circuits in this process, no daemon.
    Local(LocalArgs),
    /// Multi-partition jobs through the engine vs one partition after another.
    Engine(super::bench_engine::EngineArgs),
    /// Many partitions through the engine (GPU: 1 vs 2 workers per device), busy fraction and
    /// per-phase times from the TIMELINE.
    Pipeline(super::bench_pipeline::PipelineArgs),
    /// PoRep witness generation: the native assignment against the reference synthesis on
    /// one C1 output (time, throughput, memory, and a value-for-value comparison).
    Synthesis(super::bench_synthesis::SynthesisArgs),
    /// One proof through a running daemon: status and timings.
    Single(Box<zkforge_bench_client::cli::SingleArgs>),
    /// COUNT proofs through a daemon, CONCURRENCY in flight: per-proof timings, throughput.
    Batch(Box<zkforge_bench_client::cli::BatchArgs>),
    /// Batches over COUNTxCONCURRENCY points, optionally one local daemon per config file.
    Sweep(Box<zkforge_bench_client::cli::SweepArgs>),
}

#[derive(Args)]
pub struct LocalArgs {
    /// log2 of the constraint counts to run.
    #[arg(long, value_delimiter = ',', default_value = "16,18")]
    log_sizes: Vec<u32>,
    /// Fraction of witness values that are bits.
    #[arg(long, default_value_t = 0.9)]
    bit_fraction: f64,
    /// Timed runs per size (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

pub fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    let args = match cmd {
        BenchCommand::Local(args) => args,
        BenchCommand::Engine(args) => return super::bench_engine::run(args),
        BenchCommand::Pipeline(args) => return super::bench_pipeline::run(args),
        BenchCommand::Synthesis(args) => return super::bench_synthesis::run(args),
        BenchCommand::Single(args) => return zkforge_bench_client::cli::run_single(*args),
        BenchCommand::Batch(args) => return zkforge_bench_client::cli::run_batch_command(*args),
        BenchCommand::Sweep(args) => return zkforge_bench_client::cli::run_sweep_command(*args),
    };
    anyhow::ensure!(args.runs > 0, "--runs must be positive");
    let cache = default_cache_dir();
    println!(
        "{:>6} {:>12} {:>12} {:>12}",
        "log2", "synth (s)", "prove (s)", "total (s)"
    );
    for log in args.log_sizes {
        anyhow::ensure!(
            (1..=26).contains(&log),
            "--log-sizes entries must lie in 1..=26"
        );
        let circuit = SyntheticCircuit::new(1 << log, 8, args.bit_fraction, 7);
        let pk = synthetic_key(&circuit, &cache)?;
        let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
        let mut samples = Vec::new();
        for run in 0..=args.runs {
            let t = Instant::now();
            let w = synthesize(circuit.clone())?;
            let synth = t.elapsed();
            let t = Instant::now();
            prover::prove(
                &CpuBackend::new(),
                &pk,
                w,
                ProofRandomness::random(&mut rng),
            )?;
            if run > 0 {
                samples.push((synth, t.elapsed()));
            }
        }
        let synth = median(samples.iter().map(|s| s.0).collect());
        let prove = median(samples.iter().map(|s| s.1).collect());
        println!(
            "{log:>6} {:>12.3} {:>12.3} {:>12.3}",
            synth.as_secs_f64(),
            prove.as_secs_f64(),
            (synth + prove).as_secs_f64()
        );
    }
    Ok(())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}
