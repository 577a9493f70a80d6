//! `zkforge bench engine`: jobs of a multi-partition synthetic circuit through the engine,
//! against proving the same partitions one by one, in one run.

use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{ensure, Result};
use clap::Args;
use zkforge_circuits::{ProofKind, SyntheticCircuit, SyntheticJob};
use zkforge_engine::{Engine, EngineConfig, JobOutcome, JobRequest, StageEvent, TimelineEvent};
use zkforge_groth16::{prover, CpuBackend, ProofRandomness};

use super::keys::{default_cache_dir, synthetic_key, OneKey};

#[derive(Args)]
pub struct EngineArgs {
    /// log2 of the constraints per partition.
    #[arg(long, default_value_t = 18)]
    log_size: u32,
    #[arg(long, default_value_t = 8)]
    jobs: usize,
    #[arg(long, default_value_t = 4)]
    partitions: usize,
    #[arg(long, default_value_t = 2)]
    synthesis_workers: usize,
    /// Fraction of witness values that are bits.
    #[arg(long, default_value_t = 0.9)]
    bit_fraction: f64,
}

/// The run-size flags the engine benchmarks share (`bench engine`, `bench pipeline`), checked
/// alike: `--log-size` within `sizes`, and some jobs of some partitions.
pub(super) fn check_run_size(
    log_size: u32,
    sizes: RangeInclusive<u32>,
    jobs: usize,
    partitions: usize,
) -> Result<()> {
    ensure!(
        sizes.contains(&log_size),
        "--log-size must lie in {}..={}",
        sizes.start(),
        sizes.end()
    );
    ensure!(
        jobs > 0 && partitions > 0,
        "--jobs and --partitions must be positive"
    );
    Ok(())
}

pub fn run(args: EngineArgs) -> Result<()> {
    check_run_size(args.log_size, 1..=26, args.jobs, args.partitions)?;
    let circuit = SyntheticCircuit::new(1 << args.log_size, 8, args.bit_fraction, 7);
    let pk = synthetic_key(&circuit, &default_cache_dir())?;
    let units = args.jobs * args.partitions;
    println!(
        "{} jobs × {} partitions of 2^{} constraints ({} units), CPU backend, {} threads",
        args.jobs,
        args.partitions,
        args.log_size,
        units,
        rayon::current_num_threads()
    );

    let t = Instant::now();
    let mut rng = rand::thread_rng();
    for _ in 0..units {
        let w = zkforge_groth16::synthesize(circuit.clone())?;
        prover::prove(
            &CpuBackend::new(),
            &pk,
            w,
            ProofRandomness::random(&mut rng),
        )?;
    }
    let serial = t.elapsed().as_secs_f64();

    let config = EngineConfig {
        synthesis_workers: args.synthesis_workers,
        ..Default::default()
    };
    let engine = Engine::start(
        config,
        Arc::new(CpuBackend::new()),
        Box::new(OneKey(Arc::new(pk))),
    )?;
    let t = Instant::now();
    let ids = (0..args.jobs)
        .map(|_| {
            let job = SyntheticJob::new(circuit.clone(), args.partitions, ProofKind::PoRep);
            Ok(engine.submit(JobRequest::new(Arc::new(job)))?)
        })
        .collect::<Result<Vec<_>>>()?;
    for id in ids {
        let r = engine.wait(id, None)?.expect("no timeout");
        ensure!(
            matches!(r.outcome, JobOutcome::Completed(_)),
            "job {id}: {:?}",
            r.outcome
        );
    }
    let pipelined = t.elapsed().as_secs_f64();

    let (window, busy) = prove_window(&engine.timeline());
    let busy_fraction = busy / window;

    println!(
        "{:<12} {:>10} {:>14} {:>12}",
        "mode", "wall (s)", "s / partition", "jobs / min"
    );
    for (mode, wall) in [("one by one", serial), ("engine", pipelined)] {
        println!(
            "{mode:<12} {wall:>10.2} {:>14.3} {:>12.2}",
            wall / units as f64,
            args.jobs as f64 * 60.0 / wall
        );
    }
    println!(
        "engine: prover busy {:.1}% from first to last proof (TIMELINE)",
        busy_fraction * 100.0
    );
    Ok(())
}

/// From TIMELINE events: ms from the first PROVE_START to the last PROVE_END, and the summed
/// length of the prove calls.
pub(super) fn prove_window(events: &[TimelineEvent]) -> (f64, f64) {
    let of = |e: StageEvent| events.iter().filter(move |x| x.event == e);
    let first = of(StageEvent::ProveStart)
        .map(|e| e.t_ms)
        .fold(f64::MAX, f64::min);
    let last = of(StageEvent::ProveEnd).map(|e| e.t_ms).fold(0.0, f64::max);
    let busy = of(StageEvent::ProveEnd).filter_map(|e| e.duration_ms).sum();
    (last - first, busy)
}
