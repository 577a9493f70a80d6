//! `zkforge bench synthesis`: the native PoRep assignment against the reference synthesis
//! (`WitnessBuilder`, one thread per partition) on the same C1 output, in one run: time per
//! partition, throughput and memory, and whether the two agree value for value.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use blstrs::Scalar;
use clap::Args;
use filecoin_proofs_api::RegisteredSealProof;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use zkforge_filecoin::native::{self, PoRepLayout, SyntheticPoRep};
use zkforge_filecoin::porep::{self, NativePoRep};
use zkforge_filecoin::{registered_proof::seal_proof_for, shape::parse_sector_size};
use zkforge_groth16::{exec::pool, Assignment, ConstraintMatrices, ScalarPool};

#[derive(Args)]
pub struct SynthesisArgs {
    /// The C1 output (Curio's wrapper or the raw JSON).
    #[arg(
        long,
        required_unless_present = "synthetic",
        conflicts_with = "synthetic"
    )]
    c1: Option<PathBuf>,
    /// Instead of a C1: a made-up partition with the real circuit shape of this sector size
    /// (e.g. 32GiB), native path only (nothing can check its values).
    #[arg(long)]
    synthetic: Option<String>,
    /// Partitions to synthesize (the first N; with --synthetic, N runs); all by default.
    #[arg(long)]
    partitions: Option<usize>,
    /// Index of the first partition to synthesize (C1 only).
    #[arg(long, default_value_t = 0)]
    first: usize,
    /// Threads per native partition (challenges in parallel); the number of CPUs by default.
    #[arg(long)]
    threads: Option<usize>,
    /// Native partitions in flight at once.
    #[arg(long, default_value_t = 1)]
    in_flight: usize,
    /// Also run the reference (`WitnessBuilder`, one thread per partition, as many partitions
    /// at once as memory allows) and compare its inputs and aux with the native ones.
    #[arg(long)]
    reference: bool,
    /// With --reference: the circuit's recorded matrices (`<params stem>.r1cs`, written by
    /// `params generate` or the daemon); a, b, c = A·z, B·z, C·z of the native assignment (the
    /// product path) are then compared with the reference's too, and the densities.
    #[arg(long, requires = "reference")]
    matrices: Option<PathBuf>,
}

/// Values per digest chunk: the two witnesses are compared chunk by chunk, never both held.
const CHUNK: usize = 1 << 20;

/// Per-chunk digests of vectors, one after the other (the first vector in one chunk).
fn digests(first: &[Scalar], rest: &[&[Scalar]]) -> Vec<u64> {
    let chunk = |c: &[Scalar]| {
        let mut h = DefaultHasher::new();
        for v in c {
            v.to_bytes_le().hash(&mut h);
        }
        h.finish()
    };
    let mut d = vec![chunk(first)];
    for v in rest {
        d.extend(v.par_chunks(CHUNK).map(chunk).collect::<Vec<_>>());
    }
    d
}

/// The native side of the comparison: the assignment, and with the matrices the product
/// path's a, b, c (computed on all cores, as the CPU backend does) and densities.
fn native_digests_of(a: &Assignment, m: Option<&ConstraintMatrices>) -> Result<Vec<u64>> {
    let Some(m) = m else {
        return Ok(digests(&a.inputs, &[&a.aux]));
    };
    let (mut x, mut y, mut z) = (Vec::new(), Vec::new(), Vec::new());
    let t = Instant::now();
    m.evaluate(&a.inputs, &a.aux, [&mut x, &mut y, &mut z], None)?;
    tracing::info!(secs = t.elapsed().as_secs_f64(), "A·z, B·z, C·z on the CPU");
    Ok(digests(&a.inputs, &[&a.aux, &x, &y, &z]))
}

/// Peak resident memory since the last reset, in bytes (Linux `VmHWM`).
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// CPU seconds (user + system) this process has used so far, all threads: on a shared
/// machine a steadier measure of the work than wall time.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return f64::NAN;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Starts a new peak-memory window (writing 5 to `clear_refs` resets `VmHWM`).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

struct Row {
    path: &'static str,
    partitions: usize,
    threads: String,
    per_partition: Vec<f64>,
    wall: f64,
    cpu: f64,
    buffer_bytes: u64,
    peak_rss: Option<u64>,
}

fn bar(len: usize, msg: &str) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} partitions (eta {eta})",
        )
        .expect("valid template"),
    );
    bar.set_message(msg.to_string());
    bar
}

/// Runs `work(k)` for k in 0..n, `parallel` at a time; returns per-partition seconds.
fn timed_parallel(
    n: usize,
    parallel: usize,
    bar: &ProgressBar,
    work: impl Fn(usize) -> Result<()> + Sync,
) -> Result<Vec<f64>> {
    let next = AtomicUsize::new(0);
    let times = Mutex::new(vec![0.0; n]);
    let failure = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..parallel.clamp(1, n) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= n {
                    break;
                }
                let t = Instant::now();
                if let Err(e) = work(k) {
                    failure.lock().unwrap().get_or_insert(e);
                    break;
                }
                times.lock().unwrap()[k] = t.elapsed().as_secs_f64();
                bar.inc(1);
            });
        }
    });
    if let Some(e) = failure.into_inner().unwrap() {
        return Err(e);
    }
    Ok(times.into_inner().unwrap())
}

/// What is synthesized: a real C1 output's partitions, or a made-up partition.
enum Source {
    C1(Box<dyn NativePoRep>),
    Synthetic(Box<dyn SyntheticPoRep>),
}

impl Source {
    fn open(args: &SynthesisArgs) -> Result<(Self, RegisteredSealProof)> {
        if let Some(size) = &args.synthetic {
            let proof = seal_proof_for(parse_sector_size(size)?)?;
            return Ok((Self::Synthetic(native::synthetic_porep(proof, 1)?), proof));
        }
        let path = args
            .c1
            .as_ref()
            .context("--c1 or --synthetic is required")?;
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let c1 = porep::parse_c1(&bytes)?;
        let proof = c1.registered_proof;
        Ok((Self::C1(porep::porep_native(c1)?), proof))
    }

    fn partitions(&self, asked: Option<usize>) -> usize {
        match self {
            Self::C1(c) => c.circuits().partitions(),
            Self::Synthetic(_) => asked.unwrap_or(1),
        }
    }

    fn layout(&self) -> Result<PoRepLayout> {
        match self {
            Self::C1(c) => c.layout(0),
            Self::Synthetic(s) => s.layout(),
        }
    }

    fn assignment(&self, k: usize, threads: usize, pool: &Arc<ScalarPool>) -> Result<Assignment> {
        match self {
            Self::C1(c) => pool::with_pool(Some(pool.clone()), || c.assignment(k, threads)),
            Self::Synthetic(s) => s.assignment(threads, Some(pool.clone())),
        }
    }
}

pub fn run(args: SynthesisArgs) -> Result<()> {
    let (source, proof) = Source::open(&args)?;
    ensure!(
        !(args.reference && args.synthetic.is_some()),
        "--reference needs a C1 output: a synthetic partition has no reference to compare with"
    );
    let total = source.partitions(args.partitions);
    let first = if args.synthetic.is_some() {
        0
    } else {
        args.first
    };
    ensure!(
        first < total,
        "--first must be below the {total} partitions"
    );
    let n = args.partitions.unwrap_or(total - first);
    ensure!(
        (1..=total - first).contains(&n),
        "--partitions must lie in 1..={}",
        total - first
    );
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    ensure!(
        threads > 0 && args.in_flight > 0,
        "--threads and --in-flight must be positive"
    );

    // The layout is learned once per parameter set (one challenge counted): not part of the
    // per-partition time, as in a long-running daemon.
    let t = Instant::now();
    let layout = source.layout()?;
    let layout_s = t.elapsed().as_secs_f64();
    let size = layout.total();
    let bytes_per = (size.aux + size.inputs) as u64 * 32;
    println!(
        "{proof:?}: {n} of {total} partitions from {first}, {} inputs + {} aux per partition ({} challenges \
         of {} aux); layout counted in {layout_s:.2} s",
        size.inputs, size.aux, layout.challenges, layout.challenge.aux
    );

    let mut rows = Vec::new();
    // Buffers reused across partitions, as the engine's pool does; one untimed partition
    // first, so the timed ones write into memory that is already mapped (steady state).
    let scalar_pool = ScalarPool::new(None, args.in_flight * bytes_per as usize);
    let assign = |i: usize| source.assignment(first + i, threads, &scalar_pool);
    let t = Instant::now();
    drop(assign(0)?);
    println!(
        "warm-up partition (faults in the buffer): {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let b = bar(n, &format!("native, {threads} threads"));
    reset_peak_rss();
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let per_partition = timed_parallel(n, args.in_flight, &b, |k| assign(k).map(drop))?;
    b.finish_and_clear();
    let wall = t.elapsed().as_secs_f64();
    rows.push(Row {
        path: "native",
        partitions: n,
        threads: format!("{threads} × {}", args.in_flight),
        per_partition,
        wall,
        cpu: cpu_seconds() - cpu,
        buffer_bytes: bytes_per,
        peak_rss: peak_rss(),
    });
    // Digests for the comparison, from another (untimed) native pass.
    let matrices = match &args.matrices {
        Some(p) => Some(ConstraintMatrices::read_file(p)?),
        None => None,
    };
    let mut native_digests = Vec::new();
    if args.reference {
        for k in 0..n {
            native_digests.push(native_digests_of(&assign(k)?, matrices.as_ref())?);
        }
    }
    drop(scalar_pool);

    let mismatch = Mutex::new(None);
    if let (true, Source::C1(native)) = (args.reference, &source) {
        // The reference holds a, b, c, aux and densities, plus what the gadgets build.
        let per = (4 * size.aux as u64 + size.inputs as u64) * 32;
        let fit = available_memory().map_or(1, |m| (m * 8 / 10 / per.max(1)) as usize);
        let parallel = fit.clamp(1, n.min(threads.max(1)));
        let b = bar(n, &format!("reference, {parallel} at once"));
        reset_peak_rss();
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let per_partition = timed_parallel(n, parallel, &b, |k| {
            let w = native.circuits().synthesize(first + k)?;
            let d = match &matrices {
                None => digests(&w.inputs, &[&w.aux]),
                Some(m) => {
                    let same = m.a_aux_density == w.a_aux_density
                        && m.b_input_density == w.b_input_density
                        && m.b_aux_density == w.b_aux_density;
                    ensure!(
                        same,
                        "partition {}: the recorded densities differ",
                        first + k
                    );
                    let [a, b, c] = w
                        .evaluated()
                        .context("the reference synthesis evaluates a, b, c")?;
                    digests(&w.inputs, &[&w.aux, a, b, c])
                }
            };
            if d != native_digests[k] {
                let chunk = d.iter().zip(&native_digests[k]).position(|(a, b)| a != b);
                let found = (first + k, chunk, d.len(), native_digests[k].len());
                mismatch.lock().unwrap().get_or_insert(found);
            }
            Ok(())
        })?;
        b.finish_and_clear();
        let wall = t.elapsed().as_secs_f64();
        rows.push(Row {
            path: "reference",
            partitions: n,
            threads: format!("1 × {parallel}"),
            per_partition,
            wall,
            cpu: cpu_seconds() - cpu,
            buffer_bytes: per,
            peak_rss: peak_rss(),
        });
    }

    println!(
        "{:<10} {:>10} {:>9} {:>13} {:>13} {:>13} {:>14} {:>16} {:>13}",
        "path",
        "partitions",
        "threads",
        "s/partition",
        "(min..max)",
        "CPU s/part.",
        "partitions/s",
        "buffers GB/part",
        "peak RSS GB"
    );
    for r in &rows {
        let mean = r.per_partition.iter().sum::<f64>() / r.per_partition.len() as f64;
        let min = r.per_partition.iter().copied().fold(f64::MAX, f64::min);
        let max = r.per_partition.iter().copied().fold(0.0, f64::max);
        println!(
            "{:<10} {:>10} {:>9} {:>13.3} {:>13} {:>13.3} {:>14.3} {:>16.2} {:>13}",
            r.path,
            r.partitions,
            r.threads,
            mean,
            format!("{min:.2}..{max:.2}"),
            r.cpu / r.partitions as f64,
            r.partitions as f64 / r.wall,
            r.buffer_bytes as f64 / 1e9,
            r.peak_rss
                .map_or("-".to_string(), |b| format!("{:.2}", b as f64 / 1e9)),
        );
    }
    if args.reference {
        match mismatch.into_inner().unwrap() {
            None => println!(
                "native == reference: inputs and aux{} equal in all {n} partitions ({} chunks \
                 of {CHUNK} values compared per partition)",
                if matrices.is_some() {
                    ", a, b, c (A·z, B·z, C·z from the recorded matrices) and densities"
                } else {
                    ""
                },
                native_digests[0].len()
            ),
            Some((k, chunk, theirs, ours)) => bail!(
                "partition {k}: native and reference differ (first differing digest chunk: \
                 {chunk:?}, {ours} vs {theirs} chunks; chunk 0 is the inputs)"
            ),
        }
    }
    Ok(())
}
