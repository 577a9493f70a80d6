//! `zkforge doctor`: what this host will do, before any proof. The GPUs (doctor_gpu.rs), the
//! backend the daemon would choose with the same configuration, host memory and the budget
//! it would take, the parameter sets found (doctor_params.rs), and for each set the placement
//! plan and the model's seconds a proof on each card, or why it cannot be proved and what to
//! change. Nothing is written: the engine is started to ask it, as the daemon would, and
//! stopped.
//!
//! Exit codes: 0 when at least one parameter set found can be proved with the configured
//! backend (what cannot, or will be slow, is listed); 1 when the doctor could not run (a
//! configuration that does not parse); 2 when nothing can prove here: no parameter set found,
//! none that fits, or `backend = "cuda"` and no GPU that runs this binary's kernels.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use clap::{Args, ValueEnum};
use zkforge_engine::{Engine, HostReading, MemInfo, ParamsDir, RecordingsApart};
use zkforge_filecoin::{params, ParamsId, ProofKind, RegisteredProof};
use zkforge_groth16::prover::placement::KeyPlacement;
use zkforge_groth16::ProverBackend;

use super::backend::{self, BackendArg};
use super::config::Config;
use super::doctor_gpu;
use super::doctor_params::{self, FoundSet};

/// At least one parameter set found can be proved here.
pub const EXIT_READY: u8 = 0;
/// Nothing can prove here (no parameters, none fits, no usable GPU where one is required).
pub const EXIT_NOTHING_CAN_PROVE: u8 = 2;

#[derive(Args)]
pub struct DoctorArgs {
    /// The daemon's configuration (native or cuzk's): its parameter directory, backend,
    /// memory and GPU settings are the ones examined.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Parameter directory [config: daemon.params].
    #[arg(long)]
    params: Option<PathBuf>,
    /// Prover backend [config: daemon.backend].
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Hash every parameter file against the published digests (`params verify`; minutes
    /// for 32 GiB sets) instead of checking headers only.
    #[arg(long)]
    verify: bool,
}

pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// What `doctor` found wrong, and what it prints at the end.
#[derive(Default)]
struct Findings {
    problems: Vec<String>,
}

pub fn run(args: DoctorArgs) -> Result<ExitCode> {
    let (config, _) = Config::read(args.config.as_deref())?;
    let explicit = args.params.or_else(|| {
        (!config.daemon.params.is_empty()).then(|| PathBuf::from(&config.daemon.params))
    });
    let dir = params::parameter_dir(explicit.as_deref());
    let backend_arg = match args.backend {
        Some(b) => b,
        None => BackendArg::from_str(&config.daemon.backend, true)
            .map_err(|e| anyhow::anyhow!("daemon.backend = {:?}: {e}", config.daemon.backend))?,
    };
    let gpu_options = config.gpu.options()?;
    let mut found = Findings::default();
    println!(
        "zkforge {} doctor: what this host will do, before any proof",
        env!("CARGO_PKG_VERSION")
    );

    // The backend the daemon would take, opened as it opens it (the CUDA backend measures
    // each card's link), and each card the driver reports.
    let (backend, why) = choose_backend(backend_arg, config.engine.prover_threads, &gpu_options);
    let opened = backend.as_ref().map(|b| b.devices()).unwrap_or_default();
    println!("\nGPUs");
    let mut gpu_runs = false;
    match zkforge_cuda::probe_gpus() {
        Ok(cards) if cards.is_empty() => println!("  none: the driver reports no GPU"),
        Ok(cards) => {
            for card in &cards {
                let info = opened.iter().find(|d| d.ordinal as usize == card.ordinal);
                let r = doctor_gpu::report(card, info, Path::new("/sys/bus/pci/devices"));
                for line in &r.lines {
                    println!("  {line}");
                }
                gpu_runs |= r.runs;
                found.problems.extend(r.problems);
            }
        }
        Err(e) => println!("  {}", doctor_gpu::no_gpus(&e)),
    }
    println!("\nbackend");
    println!("  {why}");
    if !gpu_runs && backend.as_ref().is_some_and(|b| b.name() == "cpu") {
        found.problems.push(
            "no GPU proves here: the CPU backend proves every kind, far slower than a GPU".into(),
        );
    }

    println!("\nhost memory");
    let budget = host_memory(&config.engine);
    if let Err(e) = &budget {
        found.problems.push(format!("no memory budget: {e:#}"));
    }

    println!("\nparameters in {}", dir.display());
    let sets = doctor_params::scan(&dir, args.verify);
    if let Some(e) = &sets.unreadable {
        println!("  cannot be listed: {e}");
    }
    for s in &sets.sets {
        println!("  {}", s.describe());
    }
    for name in &sets.unknown {
        println!("  {name}: not a set this zkforge proves (another release's, or another size)");
    }
    if sets.sets.is_empty() {
        println!(
            "  no parameter set: fetch them (`curio fetch-params 32GiB`, into this directory or \
             daemon.params), or make test keys (`zkforge params generate`)"
        );
        found
            .problems
            .push(format!("no parameter set in {}", dir.display()));
    }

    let mut provable = 0;
    if let (Some(backend), Ok(_), false) = (&backend, &budget, sets.sets.is_empty()) {
        println!("\nplans (the daemon's placement at start; s/proof from the placement model)");
        let recordings = params::zkforge_cache_dir().join("r1cs");
        let source = Box::new(RecordingsApart {
            keys: ParamsDir(dir.clone()),
            recordings,
        });
        match Engine::start(config.engine.clone(), backend.clone(), source) {
            Ok(engine) => {
                for s in &sets.sets {
                    if plan_set(&engine, s, &mut found) {
                        provable += 1;
                    }
                }
                // Its workers are idle: they end as soon as the queues close.
                engine.shutdown();
            }
            Err(e) => found
                .problems
                .push(format!("the engine does not start: {e:#}")),
        }
    }

    println!("\nverdict");
    for p in &found.problems {
        println!("  - {p}");
    }
    let code = if provable > 0 {
        println!(
            "  ready: {provable} of {} parameter set(s) can be proved here (exit {EXIT_READY})",
            sets.sets.len()
        );
        EXIT_READY
    } else {
        println!("  nothing can prove here (exit {EXIT_NOTHING_CAN_PROVE})");
        EXIT_NOTHING_CAN_PROVE
    };
    Ok(ExitCode::from(code))
}

/// The backend `arg` gives, opened, and a line saying which and why; None where it cannot
/// be opened (`cuda` without a usable GPU).
fn choose_backend(
    arg: BackendArg,
    cpu_threads: usize,
    gpu: &zkforge_cuda::CudaOptions,
) -> (Option<Arc<dyn ProverBackend>>, String) {
    let cuda = backend::select_with(BackendArg::Cuda, cpu_threads, gpu);
    let cpu = || backend::select_with(BackendArg::Cpu, cpu_threads, gpu).ok();
    match (arg, cuda) {
        (BackendArg::Cpu, _) => (cpu(), "cpu (daemon.backend = \"cpu\")".into()),
        (_, Ok(b)) => {
            let n = b.devices().len();
            (
                Some(b),
                format!("cuda, on {n} GPU(s) (gpu.devices = the ones opened)"),
            )
        }
        (BackendArg::Auto, Err(e)) => (
            cpu(),
            format!("cpu: daemon.backend = \"auto\" and the CUDA backend does not open ({e:#})"),
        ),
        (BackendArg::Cuda, Err(e)) => (
            None,
            format!("NONE: daemon.backend = \"cuda\" and the CUDA backend does not open ({e:#})"),
        ),
    }
}

/// Prints the machine's memory and the budget the engine would take; the budget in bytes.
fn host_memory(engine: &zkforge_engine::EngineConfig) -> Result<u64> {
    let reading = HostReading::now()?;
    let mem = MemInfo::now()?;
    let cgroup = reading.cgroup.map_or(String::new(), |c| {
        format!(" (a memory cgroup limits this process to {})", gib(c.max))
    });
    println!(
        "  {} of memory, {} available now{cgroup}",
        gib(mem.total),
        gib(mem.available)
    );
    let margin = engine.margin_bytes(mem.total)?;
    let budget = engine.budget_on(mem);
    match &budget {
        Ok(b) => println!(
            "  budget the daemon would take: {} (engine.memory_budget = {:?}, \
             engine.memory_margin = {:?}: {})",
            gib(*b),
            engine.memory_budget,
            engine.memory_margin,
            gib(margin)
        ),
        Err(e) => println!("  NO BUDGET: {e:#}"),
    }
    budget
}

/// Partitions in one proof of the set's kind: PoRep's and SnapDeals' by the registered proof;
/// a PoSt request is one partition.
fn partitions_per_proof(id: &ParamsId) -> usize {
    match RegisteredProof::current(id.kind, id.sector_size) {
        Ok(RegisteredProof::PoRep(p)) => usize::from(p.as_v1_config().partitions),
        Ok(RegisteredProof::SnapDeals(_)) => {
            zkforge_filecoin::max_vanilla_proofs(ProofKind::SnapDeals, id.sector_size).unwrap_or(1)
        }
        _ => 1,
    }
}

/// Prints the set's plan on each device, or why it cannot be proved and what to change; true
/// when it can be proved.
fn plan_set(engine: &Engine, s: &FoundSet, found: &mut Findings) -> bool {
    let name = s.id.circuit_id();
    if !s.usable() {
        println!("  {name}: not examined: its files failed their check (above)");
        found
            .problems
            .push(format!("{name}: parameter files failed their check"));
        return false;
    }
    // The devices' plans first (the daemon's placement at start), then the host budget's
    // say, as a job's first load has it: each refusal has its own remedy.
    let refused = |e: anyhow::Error, remedy: &str, found: &mut Findings| {
        println!("  {name}: CANNOT BE PROVED HERE: {e:#}");
        found.problems.push(format!("{name}: {remedy}"));
        false
    };
    if let Err(e) = engine.placement(&s.id) {
        return refused(
            e,
            "does not fit a GPU: a card with more VRAM free, a smaller gpu.vram_margin, or \
             free what other processes hold on it",
            found,
        );
    }
    let placement: KeyPlacement = match engine.placement_for_a_job(&s.id) {
        Ok(p) => p,
        Err(e) => {
            return refused(
                e,
                "does not fit the host's memory budget: more memory, fewer other processes, \
                 or a larger engine.memory_budget (smaller engine.memory_margin)",
                found,
            )
        }
    };
    let n = partitions_per_proof(&s.id);
    if placement.devices.is_empty() {
        println!(
            "  {name}: fits the memory budget; {n} partition(s) a proof on the CPU backend (its \
             speed is not modelled: `zkforge bench local` measures this host)"
        );
    }
    for (device, plan) in placement.devices.iter().enumerate() {
        let s_proof = plan.gpu_s_per_partition * n as f64;
        println!("  {name} on GPU {device}: {plan}");
        println!("    model: {s_proof:.1} s a proof ({n} partition(s))");
        if !plan.streamed.is_empty() && n > 1 {
            found.problems.push(format!(
                "{name} on GPU {device}: {} streamed from host memory ({:.1} GB over PCIe a \
                 partition): a card with more VRAM free, or less held by others, keeps more \
                 resident and is faster",
                plan.streamed
                    .iter()
                    .map(|i| i.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                plan.h2d_bytes_per_partition as f64 / 1e9
            ));
        }
    }
    if placement.streams_from_file() {
        found.problems.push(format!(
            "{name}: the decoded key does not fit the memory budget beside its matrices and a \
             partition, so it is read from its file at every pass: more host memory (or a \
             larger engine.memory_budget) keeps it decoded"
        ));
    }
    true
}
