//! Device correctness checks and timings for zkforge-cuda; run by scripts/gpu-check.sh.
//! Usage: gpu_bench check|bench [OUT_DIR] | gpu_bench hog [LEAVE_MIB] [SECONDS]

// Device buffers free their memory on drop with `cuda`; the stub build's types are plain.
#![allow(clippy::drop_non_drop)]

mod common;

use blstrs::Scalar;
use common::*;
use std::io::Write;
use zkforge_cuda::host::{Accumulate, MsmOptions};
use zkforge_cuda::{CudaDevice, NttDirection};

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

/// `o` with batch-affine accumulation at 4 blocks an SM (registers capped).
fn dense(o: MsmOptions) -> MsmOptions {
    MsmOptions {
        affine_dense: true,
        ..o
    }
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
    // Each MSM size and scalar mix under the default cut (signed digits, the cost model's
    // window), then the plain digits and fixed widths: narrow (many windows), the widest, and
    // several batches of windows (`windows_per_batch`), on odd sizes too.
    let all = ["random", "edge", "bits", "same", "sparse", "small", "high"];
    let plain = MsmOptions {
        signed: false,
        ..MsmOptions::default()
    };
    let width = |c| MsmOptions {
        window_bits: Some(c),
        ..MsmOptions::default()
    };
    // Both accumulations named explicitly (the default picks one per curve and size).
    let acc = |a, c| MsmOptions {
        window_bits: c,
        accumulate: a,
        ..MsmOptions::default()
    };
    let (xyzz, affine) = (Accumulate::Xyzz, Accumulate::Affine);
    if want("g1") {
        for n in [1usize, 2, 3] {
            check_msm_g1(dev, n, &["random", "edge"], seed ^ n as u64, &mut res);
        }
        check_msm_g1(dev, 1000, &all, seed ^ 1000, &mut res);
        check_msm_g1(dev, 4097, &all, seed ^ 4097, &mut res);
        check_msm_g1(dev, (1 << 16) + 3, &all, seed ^ 0x10003, &mut res);
        let big = ["random", "sparse", "same", "porep"];
        check_msm_g1(dev, 1 << 20, &big, seed ^ 0x100000, &mut res);
        check_msm_g1(
            dev,
            (1 << 20) - 1,
            &["random", "high"],
            seed ^ 0xfffff,
            &mut res,
        );
        for (n, o) in [
            (1000, plain),
            (1 << 16, plain),
            (4097, width(3)),
            (1000, width(22)),
        ] {
            check_msm_g1_with(dev, n, &all, seed ^ 0x77 ^ n as u64, &o, &mut res);
        }
        check_msm_g1_with(dev, 1 << 20, &big, seed ^ 0x78, &width(22), &mut res);
        let batched = MsmOptions {
            windows_per_batch: Some(3),
            ..width(9)
        };
        check_msm_g1_with(dev, (1 << 16) + 1, &all, seed ^ 0x79, &batched, &mut res);
        check_msm_prefix(dev, seed, &mut res);
        let some = ["random", "edge", "same", "porep"];
        for a in [xyzz, affine] {
            for (n, c, kinds) in [
                (1000, None, &all[..]),
                (4097, Some(3), &all[..]),
                (4097, Some(22), &all[..]),
                ((1 << 16) + 3, None, &some[..]),
                ((1 << 20) - 3, None, &["random", "sparse"][..]),
            ] {
                let o = acc(a, c);
                check_msm_g1_with(dev, n, kinds, seed ^ 0x7a ^ n as u64, &o, &mut res);
            }
        }
        // Batch-affine with its registers capped (4 blocks an SM): the same sums. Forced at
        // 2^25 too ("big"): there a thread gets 26 chunks, under the default's 32.
        for (n, kinds) in [(4097, &all[..]), ((1 << 20) - 3, &["random", "sparse"][..])] {
            let o = dense(acc(affine, None));
            check_msm_g1_with(dev, n, kinds, seed ^ 0x7c ^ n as u64, &o, &mut res);
        }
    }
    if want("big") {
        // Large enough that the default takes batch-affine with ≥ 32 chunks a thread (the H
        // MSM's regime; the smaller checks above force it with few).
        check_msm_g1(dev, 1 << 25, &["random"], seed ^ 0x2000000, &mut res);
        let o = dense(acc(Accumulate::Affine, None));
        check_msm_g1_with(dev, 1 << 25, &["random"], seed ^ 0x2000001, &o, &mut res);
    }
    if want("g2") {
        for n in [1usize, 2, 3] {
            check_msm_g2(dev, n, &["random", "edge"], seed ^ n as u64, &mut res);
        }
        check_msm_g2(dev, 1000, &all, seed ^ 1000, &mut res);
        check_msm_g2(dev, 4097, &all, seed ^ 4097, &mut res);
        let mid = ["random", "edge", "sparse", "small", "high", "porep"];
        check_msm_g2(dev, (1 << 16) + 3, &mid, seed ^ 0x10003, &mut res);
        check_msm_g2(dev, 1 << 20, &["random"], seed ^ 0x100000, &mut res);
        for (n, o) in [(1000, plain), (4097, width(3)), (1000, width(22))] {
            check_msm_g2_with(dev, n, &all, seed ^ 0x77 ^ n as u64, &o, &mut res);
        }
        for a in [xyzz, affine] {
            for (n, c) in [(1000, None), (4097, Some(3)), ((1 << 16) + 5, None)] {
                let o = acc(a, c);
                check_msm_g2_with(dev, n, &all, seed ^ 0x7b ^ n as u64, &o, &mut res);
            }
        }
    }
    if want("spmv") {
        for (name, ok) in common::spmv::checks(dev, seed) {
            res.push(rec_check(name, ok));
        }
    }
    if want("h") {
        // The earlier natural-order chain, kept for benchmarks, against the same reference.
        for l in [1u32, 10, 16] {
            let m = 1usize << l;
            let [a, b, c] = [0u64, 1, 2].map(|k| random_scalars(m, seed ^ 0x4900 ^ k));
            let up = |v: &[Scalar]| dev.upload_scalars(v).unwrap();
            let ok = dev
                .h_from_device_with(up(&a), up(&b), up(&c), true)
                .and_then(|h| dev.download_scalars(&h))
                .map(|h| h == cpu_h(&a, &b, &c));
            res.push(rec_check(format!("h natural chain 2^{l}"), ok));
        }
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
        (what == "all" && !["sweep", "g1big", "porep", "hchain"].contains(&k))
            || what.split(',').any(|x| x == k)
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
    if want("spmv") {
        for (name, v) in common::spmv::bench_porep(dev, seed, |f| time_ms(dev, 5, f)) {
            emit(&mut rows, name, v, String::new());
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
                let (cut, with_profile) = width_profiled(c);
                dev.msm_g1_resident_with(&db, &ds, &with_profile).unwrap();
                let v = time_ms(dev, 2, |dv| {
                    dv.msm_g1_resident_with(&db, &ds, &cut).unwrap()
                });
                emit(
                    &mut rows,
                    format!("G1 MSM 2^{l} random c={c}"),
                    v,
                    String::new(),
                );
            }
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
            let (cut, with_profile) = width_profiled(c);
            dev.msm_g2_resident_with(&db, &ds, &with_profile).unwrap();
            let v = time_ms(dev, 1, |dv| {
                dv.msm_g2_resident_with(&db, &ds, &cut).unwrap()
            });
            emit(
                &mut rows,
                format!("G2 MSM 2^24 random c={c}"),
                v,
                String::new(),
            );
        }
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
    if want("hchain") {
        // The h step at 2^27 on the device: the earlier natural-order chain (seven bit
        // reversals) against DIF/DIT pairs, interleaved; a, b, c copied on the device per call.
        let l = 27u32;
        let up = |k: u64| {
            dev.upload_scalars(&random_scalars(1 << l, seed ^ 0x4a00 ^ k))
                .unwrap()
        };
        let (a, b, c) = (up(0), up(1), up(2));
        for natural in [true, false, true, false] {
            let mut v = Vec::new();
            for rep in 0..4 {
                let cp = |x| dev.copy_scalars(x).unwrap();
                let (a2, b2, c2) = (cp(&a), cp(&b), cp(&c));
                let t = dev.timed(|d| d.h_from_device_with(a2, b2, c2, natural).unwrap());
                if rep > 0 {
                    v.push(t.unwrap().1);
                }
            }
            let chain = if natural {
                "natural order"
            } else {
                "DIF/DIT pairs"
            };
            emit(
                &mut rows,
                format!("h step 2^{l} on device, {chain} (7 NTTs)"),
                v,
                String::new(),
            );
        }
    }
    if want("porep") {
        bench_porep(dev, seed, &mut rows, &mut emit);
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

type Emit<'a> = dyn FnMut(&mut Vec<(String, f32, String)>, String, Vec<f32>, String) + 'a;

/// The five MSMs of a 32 GiB PoRep partition, shaped like its witness: H over 2^27 − 1 random
/// scalars; L over the aux assignment (130,148,591), A over 99.7% of it, B_G1 and B_G2 over
/// 25.4%, each 45% zeros, 45% ones, 10% random. Bases: 2^20 distinct points repeated.
fn bench_porep(
    dev: &CudaDevice,
    seed: u64,
    rows: &mut Vec<(String, f32, String)>,
    emit: &mut Emit,
) {
    let (n_h, n_l, n_a, n_b) = ((1usize << 27) - 1, 130_148_591, 129_758_145, 33_057_742);
    let distinct = random_g1(1 << 20, seed);
    let bases: Vec<_> = distinct.iter().copied().cycle().take(1 << 27).collect();
    let g1 = dev.upload_g1(&bases).unwrap();
    drop(bases);
    let distinct = random_g2(1 << 20, seed);
    let bases: Vec<_> = distinct.iter().copied().cycle().take(n_b).collect();
    let g2 = dev.upload_g2(&bases).unwrap();
    drop(bases);
    let h = dev
        .upload_scalars(&random_scalars(n_h, seed ^ 0x27))
        .unwrap();
    let up = |n, k| dev.upload_scalars(&porep_scalars(n, seed ^ k)).unwrap();
    let (l, a, b) = (up(n_l, 0x28), up(n_a, 0x29), up(n_b, 0x2a));
    let cut = |a| MsmOptions {
        accumulate: a,
        ..MsmOptions::default()
    };
    let (xyzz, affine) = (Accumulate::Xyzz, Accumulate::Affine);
    for o in [cut(xyzz), cut(affine), dense(MsmOptions::default())] {
        dev.msm_g1_resident_with(&g1, &h, &profiled(o)).unwrap();
        let v = time_ms(dev, 3, |d| d.msm_g1_resident_with(&g1, &h, &o).unwrap());
        emit(
            rows,
            format!("H 2^27 random, {}", opts_label(&o)),
            v,
            String::new(),
        );
    }
    // The partition's MSM phase under the default cut, each MSM's phases on stderr first.
    let five = |d: &CudaDevice, o: &MsmOptions| {
        d.msm_g1_resident_with(&g1, &h, o).unwrap();
        d.msm_g1_resident_with(&g1, &l, o).unwrap();
        d.msm_g1_resident_with(&g1, &a, o).unwrap();
        d.msm_g1_resident_with(&g1, &b, o).unwrap();
        d.msm_g2_resident_with(&g2, &b, o).unwrap();
    };
    five(dev, &profiled(MsmOptions::default()));
    for (name, s) in [("L", &l), ("A", &a), ("B_G1", &b)] {
        let v = time_ms(dev, 3, |d| d.msm_g1_resident(&g1, s).unwrap());
        emit(
            rows,
            format!("PoRep {name} ({} scalars)", s.len()),
            v,
            String::new(),
        );
    }
    let v = time_ms(dev, 3, |d| d.msm_g2_resident(&g2, &b).unwrap());
    emit(
        rows,
        format!("PoRep B_G2 ({} scalars)", b.len()),
        v,
        String::new(),
    );
    for o in [cut(xyzz), cut(affine)] {
        let v = time_ms(dev, 3, |d| d.msm_g1_resident_with(&g1, &l, &o).unwrap());
        emit(
            rows,
            format!("PoRep L, {}", opts_label(&o)),
            v,
            String::new(),
        );
        let v = time_ms(dev, 3, |d| d.msm_g2_resident_with(&g2, &b, &o).unwrap());
        emit(
            rows,
            format!("PoRep B_G2, {}", opts_label(&o)),
            v,
            String::new(),
        );
    }
    for o in [MsmOptions::default(), dense(MsmOptions::default())] {
        let v = time_ms(dev, 3, |d| five(d, &o));
        let name = format!("PoRep MSM phase (5 MSMs), {}", opts_label(&o));
        emit(rows, name, v, String::new());
    }
}
