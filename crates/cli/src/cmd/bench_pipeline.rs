//! `zkforge bench pipeline`: many partitions through the engine on the chosen backend, with 1,
//! 2, ... prover workers per device side by side; GPU busy fraction and per-phase times come
//! from the TIMELINE's device-event phases.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use clap::{Args, ValueEnum};
use rand::SeedableRng;
use zkforge_circuits::{
    porep_shaped_witness, PartitionedCircuit, ProofKind, ReplayJob, SyntheticCircuit, SyntheticJob,
};
use zkforge_cuda::CudaOptions;
use zkforge_engine::{Engine, EngineConfig, JobOutcome, JobRequest, StageEvent, TimelineEvent};
use zkforge_groth16::{generator::tiled_key_for, ProverBackend, ProvingKey};

use super::backend::{select_with, BackendArg};
use super::bench_engine::{check_run_size, prove_window};
use super::keys::{default_cache_dir, synthetic_key, OneKey};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Shape {
    /// Replayed witness shaped like a 32 GiB PoRep partition; tiled key, proofs not checked.
    Porep,
    /// The synthetic circuit with a real key: every proof is verified.
    Synthetic,
}

#[derive(Args)]
pub struct PipelineArgs {
    #[arg(long, value_enum, default_value = "porep")]
    shape: Shape,
    /// log2 of the domain (porep) or of the constraints (synthetic) per partition.
    #[arg(long, default_value_t = 20)]
    log_size: u32,
    #[arg(long, default_value_t = 4)]
    jobs: usize,
    #[arg(long, default_value_t = 4)]
    partitions: usize,
    /// GPU counts to compare (CUDA), e.g. "1,2" (GPUs 0..n); empty: every GPU.
    #[arg(long, value_delimiter = ',')]
    gpus: Vec<usize>,
    /// Prover workers per device to compare, one engine each, e.g. "1,2".
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    prover_workers: Vec<usize>,
    #[arg(long, default_value_t = 4)]
    synthesis_workers: usize,
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// [gpu] params_residency: auto, vram or host.
    #[arg(long, default_value = "auto")]
    params_residency: String,
    /// [gpu] vram_margin, e.g. "2GiB"; a large margin shrinks the VRAM budget.
    #[arg(long, default_value = "2GiB")]
    vram_margin: String,
    /// [gpu] staging_pool: idle pinned witness buffers kept.
    #[arg(long, default_value = "16GiB")]
    staging_pool: String,
    /// [engine] memory_budget ("auto" or a size); big partitions need it below RAM minus the
    /// benchmark's own copy of the key and witness.
    #[arg(long, default_value = "auto")]
    memory_budget: String,
    /// Write each run's TIMELINE as `timeline-g<gpus>-w<workers>.log` here (`zkforge timeline`).
    #[arg(long)]
    timeline_dir: Option<PathBuf>,
}

/// What one run measured.
struct RunReport {
    gpus: usize,
    workers: usize,
    wall_s: f64,
    units: usize,
    busy_fraction: f64,
    gpu_ms: f64,
    h2d_ms: f64,
    lock_wait_ms: f64,
    prove_ms: f64,
}

type JobMaker = Box<dyn Fn() -> Arc<dyn PartitionedCircuit>>;

pub fn run(args: PipelineArgs) -> Result<()> {
    check_run_size(args.log_size, 4..=27, args.jobs, args.partitions)?;
    let base = CudaOptions {
        vram_margin: zkforge_engine::parse_bytes(&args.vram_margin).context("--vram-margin")?,
        residency: args.params_residency.parse().map_err(anyhow::Error::msg)?,
        staging_pool_bytes: zkforge_engine::parse_bytes(&args.staging_pool)
            .context("--staging-pool")?,
        ..Default::default()
    };
    // The budget is fixed before the benchmark's own key and witness take memory, so that
    // "auto" (MemAvailable − margin) covers them too; both are then reserved from it.
    let budget = EngineConfig {
        memory_budget: args.memory_budget.clone(),
        ..Default::default()
    }
    .budget_on(zkforge_engine::MemInfo::now()?)
    .context("--memory-budget")?;
    let (key, make_job, verify, template_bytes) = prepare(&args)?;
    println!(
        "{} jobs × {} partitions, shape {:?} 2^{}, {} synthesis workers",
        args.jobs, args.partitions, args.shape, args.log_size, args.synthesis_workers
    );
    let gpu_sets: Vec<Vec<usize>> = match args.gpus.as_slice() {
        [] => vec![Vec::new()],
        counts => counts.iter().map(|&n| (0..n).collect()).collect(),
    };
    let mut reports = Vec::new();
    for devices in gpu_sets {
        // One run's numbers per GPU set; busy is averaged over the set's GPUs below.
        let options = CudaOptions {
            devices,
            ..base.clone()
        };
        let backend = select_with(args.backend, 0, &options)?;
        let gpus = backend.devices().len().max(1);
        for &w in &args.prover_workers {
            let mut r = run_once(
                &args,
                &backend,
                &key,
                &make_job,
                verify,
                w,
                (template_bytes, budget),
            )?;
            r.gpus = gpus;
            r.busy_fraction /= gpus as f64;
            reports.push(r);
        }
        print_devices(backend.as_ref());
    }
    print_table(&reports);
    let (_, peak) = zkforge_engine::process_memory();
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    println!(
        "peak resident memory (VmHWM) {:.2} GiB, memory budget {:.2} GiB",
        gib(peak),
        gib(budget)
    );
    Ok(())
}

fn print_devices(backend: &dyn ProverBackend) {
    for d in backend.devices() {
        println!(
            "device {} ({}): VRAM reserved peak {:.2} GiB of a {:.2} GiB budget; params {}",
            d.ordinal,
            d.name,
            d.reserved_peak_bytes as f64 / (1u64 << 30) as f64,
            d.budget_bytes as f64 / (1u64 << 30) as f64,
            d.residency
        );
    }
}

/// The key, the job maker, whether proofs verify, and the bytes of the benchmark's own witness
/// (which the engine's budget must also cover).
fn prepare(args: &PipelineArgs) -> Result<(Arc<ProvingKey>, JobMaker, bool, u64)> {
    let partitions = args.partitions;
    Ok(match args.shape {
        Shape::Porep => {
            let t = Instant::now();
            let w = Arc::new(porep_shaped_witness(args.log_size, 7));
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
            let key = Arc::new(tiled_key_for(&w, &mut rng)?);
            tracing::info!(
                secs = t.elapsed().as_secs_f64(),
                "witness and tiled key ready"
            );
            let stem = format!("porep-shaped-2^{}", args.log_size);
            let bytes = w.heap_bytes() as u64;
            let make: JobMaker =
                Box::new(move || Arc::new(ReplayJob::new(w.clone(), partitions, &stem)));
            (key, make, false, bytes)
        }
        Shape::Synthetic => {
            let circuit = SyntheticCircuit::new(1 << args.log_size, 8, 0.9, 7);
            let key = Arc::new(synthetic_key(&circuit, &default_cache_dir())?);
            let make: JobMaker = Box::new(move || {
                Arc::new(SyntheticJob::new(
                    circuit.clone(),
                    partitions,
                    ProofKind::PoRep,
                ))
            });
            (key, make, true, 0)
        }
    })
}

fn run_once(
    args: &PipelineArgs,
    backend: &Arc<dyn ProverBackend>,
    key: &Arc<ProvingKey>,
    make_job: &JobMaker,
    verify: bool,
    workers: usize,
    (template_bytes, budget): (u64, u64),
) -> Result<RunReport> {
    let config = EngineConfig {
        synthesis_workers: args.synthesis_workers,
        prover_workers_per_device: workers,
        prove_queue_depth: 2 * workers,
        verify_proofs: verify,
        memory_budget: budget.to_string(),
        ..Default::default()
    };
    let engine = Engine::start(config, backend.clone(), Box::new(OneKey(key.clone())))?;
    // The replayed template lives beside the engine's partitions: its bytes come out of the
    // same budget, so that key, template and partitions in flight together stay within it.
    let _template = engine.budget().try_reserve(template_bytes).with_context(|| {
        format!(
            "the memory budget ({} bytes) cannot hold the benchmark's own witness ({template_bytes} bytes)",
            engine.budget().total()
        )
    })?;
    // Warm-up job, not measured: the key is loaded and its bases uploaded, witness buffers
    // pinned and pooled.
    let warm_up = submit_and_wait(&engine, make_job, 1)?;
    let t = Instant::now();
    submit_and_wait(&engine, make_job, args.jobs)?;
    let wall_s = t.elapsed().as_secs_f64();
    let events: Vec<TimelineEvent> = engine
        .timeline()
        .into_iter()
        .filter(|e| e.job > warm_up)
        .collect();
    if let Some(dir) = &args.timeline_dir {
        write_timeline(dir, workers, &events)?;
    }
    engine.shutdown();
    Ok(measure(
        &events,
        workers,
        wall_s,
        args.jobs * args.partitions,
    ))
}

/// Submits `jobs` jobs at once, waits for all; returns the last job id.
fn submit_and_wait(engine: &Engine, make_job: &JobMaker, jobs: usize) -> Result<u64> {
    let ids = (0..jobs)
        .map(|_| Ok(engine.submit(JobRequest::new(make_job()))?))
        .collect::<Result<Vec<_>>>()?;
    for &id in &ids {
        let r = engine.wait(id, None)?.context("no result")?;
        ensure!(
            matches!(r.outcome, JobOutcome::Completed(_)),
            "job {id}: {:?}",
            r.outcome
        );
    }
    Ok(ids.last().copied().unwrap_or(0))
}

fn write_timeline(dir: &std::path::Path, workers: usize, events: &[TimelineEvent]) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let gpus = events
        .iter()
        .filter_map(|e| e.device)
        .max()
        .map_or(1, |d| d + 1);
    let path = dir.join(format!("timeline-g{gpus}-w{workers}.log"));
    let text: String = events
        .iter()
        .map(|e| {
            format!(
                "TIMELINE {}\n",
                serde_json::to_string(e).unwrap_or_default()
            )
        })
        .collect();
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Busy fraction: device phase time (ntt + msm) over first PROVE_START .. last PROVE_END;
/// the rest are medians per partition.
fn measure(events: &[TimelineEvent], workers: usize, wall_s: f64, units: usize) -> RunReport {
    let of = |e: StageEvent| events.iter().filter(move |x| x.event == e);
    let phase = |name: &'static str| {
        of(StageEvent::GpuPhase)
            .filter(move |x| x.phase == Some(name))
            .filter_map(|x| x.duration_ms)
    };
    let (window, prove_busy) = prove_window(events);
    let mut kernels: f64 = phase("ntt").chain(phase("msm")).sum();
    if kernels == 0.0 {
        // No device phases (CPU backend): the whole prove call is the busy time.
        kernels = prove_busy;
    }
    let per_unit = |name| median(phase(name).collect());
    RunReport {
        gpus: 1,
        workers,
        wall_s,
        units,
        busy_fraction: kernels / window.max(1e-9),
        gpu_ms: per_unit("ntt") + per_unit("msm"),
        h2d_ms: per_unit("h2d"),
        lock_wait_ms: median(
            of(StageEvent::ProveEnd)
                .filter_map(|e| e.lock_wait_ms)
                .collect(),
        ),
        prove_ms: median(
            of(StageEvent::ProveEnd)
                .filter_map(|e| e.duration_ms)
                .collect(),
        ),
    }
}

fn print_table(reports: &[RunReport]) {
    println!(
        "{:>4} {:>7} {:>9} {:>12} {:>10} {:>10} {:>12} {:>10} {:>12} {:>11}",
        "gpus",
        "workers",
        "wall (s)",
        "partitions/s",
        "s/part",
        "GPU busy",
        "GPU ms/part",
        "h2d ms",
        "lock wait ms",
        "prove ms"
    );
    for r in reports {
        println!(
            "{:>4} {:>7} {:>9.2} {:>12.3} {:>10.3} {:>9.1}% {:>12.1} {:>10.1} {:>12.1} {:>11.1}",
            r.gpus,
            r.workers,
            r.wall_s,
            r.units as f64 / r.wall_s,
            r.wall_s / r.units as f64,
            r.busy_fraction * 100.0,
            r.gpu_ms,
            r.h2d_ms,
            r.lock_wait_ms,
            r.prove_ms
        );
    }
}
