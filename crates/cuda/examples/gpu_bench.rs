//! Device correctness checks and timings for zkforge-cuda; run by scripts/gpu-check.sh.
//! Usage: gpu_bench check|bench [OUT_DIR] | gpu_bench hog [LEAVE_MIB] [SECONDS]

// Device buffers free their memory on drop with `cuda`; the stub build's types are plain.
#![allow(clippy::drop_non_drop)]

mod common;

use common::*;
use std::io::Write;
use zkforge_cuda::{CudaDevice, NttDirection};

fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
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
        "check" => check(&dev, seed, &out_dir),
        "bench" => bench(
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

fn check(dev: &CudaDevice, seed: u64, out_dir: &str) {
    let mut res = Vec::new();
    let only = std::env::var("ZKFORGE_CHECK").unwrap_or_default();
    let want = |k: &str| only.is_empty() || only.split(',').any(|x| x == k);
    if want("ntt") {
        for l in [10, 16, 20, 24] {
            check_ntt(dev, l, seed ^ l as u64, &mut res);
        }
    }
    if want("h") {
        for l in [1, 10, 16, 20] {
            check_h(dev, l, seed ^ 0x4800 ^ l as u64, &mut res);
        }
    }
    if want("g1") {
        for n in [1usize, 2, 3] {
            check_msm_g1(dev, n, &["random", "edge"], seed ^ n as u64, &mut res);
        }
        check_msm_g1(
            dev,
            1000,
            &["random", "edge", "bits", "same", "sparse"],
            seed ^ 1000,
            &mut res,
        );
        check_msm_g1(
            dev,
            1 << 16,
            &["random", "edge", "bits", "same", "sparse"],
            seed ^ 0x10000,
            &mut res,
        );
        check_msm_g1(
            dev,
            1 << 20,
            &["random", "sparse", "same"],
            seed ^ 0x100000,
            &mut res,
        );
        check_msm_prefix(dev, seed, &mut res);
    }
    if want("g2") {
        for n in [1usize, 2, 3] {
            check_msm_g2(dev, n, &["random", "edge"], seed ^ n as u64, &mut res);
        }
        check_msm_g2(
            dev,
            1000,
            &["random", "edge", "bits", "same", "sparse"],
            seed ^ 1000,
            &mut res,
        );
        check_msm_g2(
            dev,
            1 << 16,
            &["random", "edge", "sparse"],
            seed ^ 0x10000,
            &mut res,
        );
        check_msm_g2(dev, 1 << 20, &["random"], seed ^ 0x100000, &mut res);
    }
    let fails = res.iter().filter(|c| !c.ok).count();
    let mut f = std::fs::File::create(format!("{out_dir}/check.md")).unwrap();
    writeln!(f, "| check | result |\n|---|---|").unwrap();
    for c in &res {
        writeln!(
            f,
            "| {} {} | {} |",
            c.name,
            c.detail,
            if c.ok { "PASS" } else { "FAIL" }
        )
        .unwrap();
    }
    println!(
        "CHECKS: {} passed, {} failed (seed {seed})",
        res.len() - fails,
        fails
    );
    if fails > 0 {
        std::process::exit(1);
    }
}

fn bench(dev: &CudaDevice, seed: u64, out_dir: &str, what: &str) {
    let mut rows: Vec<(String, f32, String)> = Vec::new();
    let mut f = std::fs::File::create(format!("{out_dir}/bench.md")).unwrap();
    let mut emit =
        |rows: &mut Vec<(String, f32, String)>, name: String, v: Vec<f32>, note: String| {
            let m = median(v.clone());
            println!("BENCH {name}: median {m:.2} ms  runs {v:?} {note}");
            writeln!(f, "| {name} | {m:.2} | {note} |").unwrap();
            f.flush().unwrap();
            rows.push((name, m, note));
        };
    let want = |k: &str| {
        (what == "all" && k != "sweep" && k != "g1big") || what.split(',').any(|x| x == k)
    };
    if want("ntt") {
        for l in [20u32, 24, 27] {
            let x = random_scalars(1 << l, seed);
            let mut d = dev.upload_scalars(&x).unwrap();
            let v = time_ms(dev, 5, |dv| {
                dv.ntt_resident(&mut d, NttDirection::Forward, false)
                    .unwrap()
            });
            emit(
                &mut rows,
                format!("NTT fwd 2^{l} (resident)"),
                v,
                String::new(),
            );
            let v = time_ms(dev, 3, |dv| {
                dv.ntt_resident(&mut d, NttDirection::Inverse, true)
                    .unwrap()
            });
            emit(
                &mut rows,
                format!("NTT coset inv 2^{l} (resident)"),
                v,
                String::new(),
            );
            drop(d);
            if l == 27 {
                let b = random_scalars(1 << l, seed ^ 1);
                let c = random_scalars(1 << l, seed ^ 2);
                let v = time_ms(dev, 2, |dv| dv.h_coefficients(&x, &b, &c).unwrap());
                emit(
                    &mut rows,
                    format!("h_coefficients 2^{l} (host in/out)"),
                    v,
                    String::new(),
                );
            }
        }
    }
    if want("g1") {
        let distinct = random_g1(1 << 20, seed);
        let mut bases = Vec::with_capacity(1 << 26);
        while bases.len() < 1 << 26 {
            bases.extend_from_slice(&distinct);
        }
        let db = dev.upload_g1(&bases).unwrap();
        drop(bases);
        for l in [20u32, 22, 24, 26] {
            let s = random_scalars(1 << l, seed ^ l as u64);
            let ds = dev.upload_scalars(&s).unwrap();
            let v = time_ms(dev, 5, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
            emit(
                &mut rows,
                format!("G1 MSM 2^{l} random (resident)"),
                v,
                String::new(),
            );
            if l == 24 {
                let s = scalar_mix("same", 1 << l, seed);
                let ds = dev.upload_scalars(&s).unwrap();
                let v = time_ms(dev, 3, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
                emit(
                    &mut rows,
                    format!("G1 MSM 2^{l} all-equal scalars (resident)"),
                    v,
                    String::new(),
                );
            }
            if l == 26 {
                let v = time_ms(dev, 3, |dv| dv.msm_g1(&db, &s).unwrap());
                emit(
                    &mut rows,
                    format!("G1 MSM 2^{l} random (host scalars)"),
                    v,
                    String::new(),
                );
                drop(ds);
                let s = bit_scalars(1 << l, seed ^ 0xb);
                let ds = dev.upload_scalars(&s).unwrap();
                let v = time_ms(dev, 5, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
                emit(
                    &mut rows,
                    format!("G1 MSM 2^{l} 0/1 scalars (resident)"),
                    v,
                    String::new(),
                );
                let s = scalar_mix("sparse", 1 << l, seed ^ 0xc);
                let ds = dev.upload_scalars(&s).unwrap();
                let v = time_ms(dev, 3, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
                emit(
                    &mut rows,
                    format!("G1 MSM 2^{l} 60% 0, 30% 1, 10% random (resident)"),
                    v,
                    String::new(),
                );
            }
        }
    }
    if want("sweep") {
        // Window-width sweep with per-phase profiles (stderr), to tune window_bits().
        let distinct = random_g1(1 << 20, seed);
        let mut bases = Vec::with_capacity(1 << 26);
        while bases.len() < 1 << 26 {
            bases.extend_from_slice(&distinct);
        }
        let db = dev.upload_g1(&bases).unwrap();
        drop(bases);
        for l in [24u32, 26] {
            let s = random_scalars(1 << l, seed ^ l as u64);
            let ds = dev.upload_scalars(&s).unwrap();
            for c in [13u32, 15, 16, 17, 18, 19, 20] {
                std::env::set_var("ZKFORGE_MSM_C", c.to_string());
                std::env::set_var("ZKFORGE_MSM_PROFILE", "1");
                dev.msm_g1_resident(&db, &ds).unwrap();
                std::env::remove_var("ZKFORGE_MSM_PROFILE");
                let v = time_ms(dev, 2, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
                emit(
                    &mut rows,
                    format!("G1 MSM 2^{l} random c={c}"),
                    v,
                    String::new(),
                );
            }
            std::env::remove_var("ZKFORGE_MSM_C");
        }
        drop(db);
        let distinct = random_g2(1 << 20, seed);
        let mut bases = Vec::with_capacity(1 << 24);
        while bases.len() < 1 << 24 {
            bases.extend_from_slice(&distinct);
        }
        let db = dev.upload_g2(&bases).unwrap();
        let s = random_scalars(1 << 24, seed ^ 24);
        let ds = dev.upload_scalars(&s).unwrap();
        for c in [16u32, 17, 18, 19] {
            std::env::set_var("ZKFORGE_MSM_C", c.to_string());
            std::env::set_var("ZKFORGE_MSM_PROFILE", "1");
            dev.msm_g2_resident(&db, &ds).unwrap();
            std::env::remove_var("ZKFORGE_MSM_PROFILE");
            let v = time_ms(dev, 1, |dv| dv.msm_g2_resident(&db, &ds).unwrap());
            emit(
                &mut rows,
                format!("G2 MSM 2^24 random c={c}"),
                v,
                String::new(),
            );
        }
        std::env::remove_var("ZKFORGE_MSM_C");
    }
    if want("g1big") {
        // The PoRep 32 GiB partition's size: dense random, and 90% bits like its L/A queries.
        let l = 27u32;
        let distinct = random_g1(1 << 20, seed);
        let bases: Vec<_> = distinct.iter().copied().cycle().take(1 << l).collect();
        let db = dev.upload_g1(&bases).unwrap();
        drop(bases);
        let random = random_scalars(1 << l, seed ^ 0x27);
        let ds = dev.upload_scalars(&random).unwrap();
        let v = time_ms(dev, 3, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
        emit(
            &mut rows,
            format!("G1 MSM 2^{l} random (resident)"),
            v,
            String::new(),
        );
        drop(ds);
        let mut porep = bit_scalars(1 << l, seed ^ 0x28);
        for (i, s) in porep.iter_mut().enumerate().step_by(10) {
            *s = random[i];
        }
        drop(random);
        let ds = dev.upload_scalars(&porep).unwrap();
        let v = time_ms(dev, 3, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
        emit(
            &mut rows,
            format!("G1 MSM 2^{l} 90% 0/1, 10% random (resident)"),
            v,
            String::new(),
        );
    }
    if want("g2") {
        let distinct = random_g2(1 << 20, seed);
        let mut bases = Vec::with_capacity(1 << 24);
        while bases.len() < 1 << 24 {
            bases.extend_from_slice(&distinct);
        }
        let db = dev.upload_g2(&bases).unwrap();
        drop(bases);
        for l in [20u32, 22, 24] {
            let s = random_scalars(1 << l, seed ^ l as u64);
            let ds = dev.upload_scalars(&s).unwrap();
            let v = time_ms(dev, 3, |dv| dv.msm_g2_resident(&db, &ds).unwrap());
            emit(
                &mut rows,
                format!("G2 MSM 2^{l} random (resident)"),
                v,
                String::new(),
            );
        }
    }
    println!("\n| benchmark | median ms |\n|---|---|");
    for (n, m, _) in &rows {
        println!("| {n} | {m:.2} |");
    }
}
