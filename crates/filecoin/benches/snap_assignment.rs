//! The SnapDeals circuit's assignment, native against the gadgets run through the witness-only
//! constraint system (the product path before the native one), on sparse vanilla partition
//! proofs of a real sector size; the two are checked equal, value for value, partition by
//! partition.
//!
//! `cargo bench -p zkforge-filecoin --bench snap_assignment -- [--size 32GiB]
//! [--partitions 0|0,5|all] [--runs 1] [--warmup 1] [--threads N] [--jobs 1] [--native-only]`.
//! Each side runs `--warmup` times untimed, then `--runs` times; medians are printed. The
//! native side takes its buffers from a pool, as the engine's synthesis does (a warm run does
//! not pay the page faults of a fresh buffer); the gadgets' side allocates its own.
//! `--jobs J` works on J partitions at once (each native on `--threads` threads, the gadgets on
//! one): the whole-sector check on a many-core box is
//! `--partitions all --jobs 8 --threads 1 --warmup 0`.

mod common;

use common::arg;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use filecoin_proofs_api::RegisteredUpdateProof;
use zkforge_filecoin::shape::parse_sector_size;
use zkforge_filecoin::snap::{snap_assignments, SnapAssignments};
use zkforge_fixtures::sparse::make_snap;
use zkforge_groth16::exec::pool::with_pool;
use zkforge_groth16::{Assignment, Scalar, ScalarPool};

fn proof(size: u64) -> RegisteredUpdateProof {
    use RegisteredUpdateProof::*;
    match size {
        2048 => StackedDrg2KiBV1,
        s if s == 8 << 20 => StackedDrg8MiBV1,
        s if s == 512 << 20 => StackedDrg512MiBV1,
        s if s == 32 << 30 => StackedDrg32GiBV1,
        s if s == 64 << 30 => StackedDrg64GiBV1,
        _ => panic!("--size 2KiB|8MiB|512MiB|32GiB|64GiB"),
    }
}

/// CPU seconds this process has used, all threads (utime + stime of /proc/self/stat, in
/// USER_HZ ticks of 10 ms); 0 where unreadable.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis start at the 3rd; utime is the 14th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse::<u64>().ok())
        .sum();
    ticks as f64 / 100.0
}

/// A side's median wall time and median CPU time (all of the process's threads: meaningful
/// with one job at a time).
#[derive(Clone, Copy)]
struct Time {
    wall: f64,
    cpu: f64,
}

/// Medians of `runs` timed calls after `warmup` untimed ones, and the last result.
fn timed(warmup: usize, runs: usize, mut f: impl FnMut() -> Assignment) -> (Time, Assignment) {
    for _ in 0..warmup {
        drop(f());
    }
    let (mut walls, mut cpus) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    let mut last = None;
    for _ in 0..runs {
        drop(last.take());
        let (t, c) = (Instant::now(), cpu_seconds());
        last = Some(f());
        walls.push(t.elapsed().as_secs_f64());
        cpus.push(cpu_seconds() - c);
    }
    walls.sort_by(f64::total_cmp);
    cpus.sort_by(f64::total_cmp);
    let time = Time {
        wall: walls[runs / 2],
        cpu: cpus[runs / 2],
    };
    (time, last.expect("runs >= 1"))
}

fn first_difference(a: &[Scalar], b: &[Scalar]) -> Option<usize> {
    (a.len() != b.len())
        .then_some(a.len().min(b.len()))
        .or_else(|| (0..a.len()).find(|&i| a[i] != b[i]))
}

struct Opts {
    /// Where the native side's aux buffers come from and go back to, as in the engine: warm
    /// runs write into pages already faulted in.
    pool: std::sync::Arc<ScalarPool>,
    runs: usize,
    warmup: usize,
    threads: usize,
    native_only: bool,
}

/// One partition: native time, gadgets time if run.
fn partition(paths: &dyn SnapAssignments, k: usize, o: &Opts) -> (Time, Option<Time>) {
    let (native_t, native) = timed(o.warmup, o.runs, || {
        with_pool(Some(o.pool.clone()), || paths.native(k, o.threads).unwrap())
    });
    if o.native_only {
        return (native_t, None);
    }
    let (gadgets_t, gadgets) = timed(o.warmup, o.runs, || paths.witness_only(k, &native).unwrap());
    if let Some(i) = first_difference(&native.inputs, &gadgets.inputs) {
        panic!("partition {k}: inputs differ at {i}");
    }
    if let Some(i) = first_difference(&native.aux, &gadgets.aux) {
        panic!("partition {k}: aux differs at {i} of {}", gadgets.aux.len());
    }
    (native_t, Some(gadgets_t))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size = parse_sector_size(&arg(&args, "--size", "32GiB".to_string())).unwrap();
    let o = Opts {
        pool: ScalarPool::new(None, usize::MAX),
        runs: arg(&args, "--runs", 1usize).max(1),
        warmup: arg(&args, "--warmup", 1usize),
        threads: arg(&args, "--threads", rayon::current_num_threads()),
        native_only: args.iter().any(|a| a == "--native-only"),
    };
    let jobs = arg(&args, "--jobs", 1usize).max(1);

    let t = Instant::now();
    let made = make_snap(proof(size), 5, &()).unwrap();
    println!(
        "SnapDeals {size} bytes: sparse vanilla proofs made and verified in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let paths = snap_assignments(made.request()).unwrap();
    let l = paths.layout(0).unwrap();
    let total = l.total();
    println!(
        "layout: prefix {} inputs + {} aux; apex tree {} x {} aux; suffix {} aux; \
         {} challenges x {} aux; total {} inputs, {} aux",
        l.prefix.inputs,
        l.prefix.aux,
        l.apex_hashes,
        l.apex_hash.aux,
        l.suffix.aux,
        l.challenges,
        l.challenge.aux,
        total.inputs,
        total.aux
    );

    let list: String = arg(&args, "--partitions", "0".to_string());
    let ks: Vec<usize> = if list == "all" {
        (0..paths.partitions()).collect()
    } else {
        list.split(',').map(|k| k.trim().parse().unwrap()).collect()
    };
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..jobs.min(ks.len()) {
            s.spawn(|| {
                while let Some(&k) = ks.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let (n, g) = partition(paths.as_ref(), k, &o);
                    let line = match g {
                        Some(g) => format!(
                            "partition {k:2}: equal; native ({} threads) {:.3} s (CPU {:.2} s), \
                         gadgets (1 thread) {:.3} s (CPU {:.2} s), ratio {:.1}x",
                            o.threads,
                            n.wall,
                            n.cpu,
                            g.wall,
                            g.cpu,
                            g.wall / n.wall
                        ),
                        None => format!(
                            "partition {k:2}: native ({} threads) {:.3} s (CPU {:.2} s)",
                            o.threads, n.wall, n.cpu
                        ),
                    };
                    println!("{line}");
                    results.lock().unwrap().push((n, g));
                }
            });
        }
    });
    let results: Vec<(Time, Option<Time>)> = results.into_inner().unwrap();
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    println!(
        "{} partition(s), {jobs} at a time, in {:.1} s; medians of {} run(s) after {} \
         warm-up(s); mean native {:.3} s{}",
        results.len(),
        started.elapsed().as_secs_f64(),
        o.runs,
        o.warmup,
        mean(results.iter().map(|r| r.0.wall).collect()).unwrap_or(0.0),
        mean(results.iter().filter_map(|r| r.1.map(|g| g.wall)).collect())
            .map(|g| format!(", mean gadgets {g:.3} s"))
            .unwrap_or_default()
    );
}
