//! Device correctness checks and timings for zkforge-cuda; run by scripts/gpu-check.sh.
//! Usage: gpu_bench check|bench [OUT_DIR] | gpu_bench hog [LEAVE_MIB] [SECONDS]

// Device buffers free their memory on drop with `cuda`; the stub build's types are plain.
#![allow(clippy::drop_non_drop)]

mod bench;
mod check;
#[path = "../common/mod.rs"]
mod common;

use std::io::Write;

use common::*;
use zkforge_cuda::host::MsmOptions;
use zkforge_cuda::CudaDevice;

/// A check's record from a result: Ok(true) passes, anything else fails with its reason.
fn rec_check(name: String, r: Result<bool, zkforge_cuda::CudaError>) -> Check {
    let ok = matches!(r, Ok(true));
    let detail = match r {
        Err(e) => format!("error {e}"),
        _ => String::new(),
    };
    println!("{} {name} {detail}", if ok { "PASS" } else { "FAIL" });
    Check { name, ok, detail }
}

fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// `o`, printing each MSM's phase times to stderr.
fn profiled(o: MsmOptions) -> MsmOptions {
    MsmOptions { profile: true, ..o }
}

/// The default cut at window width `c`, plain and profiled (a sweep's two runs).
fn width_profiled(c: u32) -> (MsmOptions, MsmOptions) {
    let cut = MsmOptions {
        window_bits: Some(c),
        ..MsmOptions::default()
    };
    (cut, profiled(cut))
}

fn time_ms<R>(dev: &CudaDevice, reps: usize, mut f: impl FnMut(&CudaDevice) -> R) -> Vec<f32> {
    f(dev); // warm-up
    (0..reps)
        .map(|_| {
            dev.timed(|d| {
                f(d);
            })
            .unwrap()
            .1
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("check");
    let out_dir = args.get(2).cloned().unwrap_or_else(|| ".".into());
    if !CudaDevice::available() {
        println!(
            "SKIP: no CUDA device or driver (built with cuda: {})",
            zkforge_cuda::built_with_cuda()
        );
        return;
    }
    let dev = CudaDevice::open(0).expect("open GPU 0");
    println!("device: {} ({} MiB)", dev.name(), dev.vram_total() >> 20);
    let (_, seed) = fresh_rng();
    println!("seed: {seed} (set ZKFORGE_SEED to replay)");
    match mode {
        "check" => check::check(&dev, seed, &out_dir),
        "bench" => bench::bench(
            &dev,
            seed,
            &out_dir,
            args.get(3).map(String::as_str).unwrap_or("all"),
        ),
        "hog" => hog(
            &dev,
            args.get(2).and_then(|a| a.parse().ok()).unwrap_or(256),
            args.get(3).and_then(|a| a.parse().ok()).unwrap_or(20),
        ),
        _ => panic!("mode must be check, bench or hog"),
    }
}

/// Holds all of GPU 0's free memory but `leave_mib` MiB for `secs` seconds, then gives it back:
/// another process taking VRAM in the middle of a daemon's run (scripts/gpu-faults.sh).
fn hog(dev: &CudaDevice, leave_mib: usize, secs: u64) {
    let target = dev.vram_free().unwrap().saturating_sub(leave_mib << 20);
    let mut held = Vec::new();
    let mut bytes = 0usize;
    for chunk in [1usize << 30, 64 << 20, 4 << 20] {
        while bytes + chunk <= target {
            match dev.alloc_scalars(chunk / 32) {
                Ok(b) => held.push(b),
                Err(_) => break,
            }
            bytes += chunk;
        }
    }
    dev.synchronize().unwrap();
    println!(
        "HOG holding {} MiB, {} MiB free",
        bytes >> 20,
        dev.vram_free().unwrap() >> 20
    );
    std::io::stdout().flush().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(secs));
    drop(held);
    dev.synchronize().unwrap();
    println!("HOG released, {} MiB free", dev.vram_free().unwrap() >> 20);
}
