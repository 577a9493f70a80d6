//! `gpu_bench check`: every kernel against the CPU on fresh random inputs.

use std::io::Write;

use blstrs::{G1Projective, G2Projective, Scalar};
use zkforge_cuda::host::{Accumulate, MsmOptions};
use zkforge_cuda::CudaDevice;

use super::*;

pub(crate) fn check(dev: &CudaDevice, seed: u64, out_dir: &str) {
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
            check_msm::<G1Projective>(dev, n, &all, seed ^ 0x77 ^ n as u64, &o, &mut res);
        }
        check_msm::<G1Projective>(dev, 1 << 20, &big, seed ^ 0x78, &width(22), &mut res);
        let batched = MsmOptions {
            windows_per_batch: Some(3),
            ..width(9)
        };
        check_msm::<G1Projective>(dev, (1 << 16) + 1, &all, seed ^ 0x79, &batched, &mut res);
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
                check_msm::<G1Projective>(dev, n, kinds, seed ^ 0x7a ^ n as u64, &o, &mut res);
            }
        }
    }
    if want("big") {
        // 2^25: one batch of all 13 windows. The default takes batch-affine with chunks
        // shortened to ~101 entries (64 a thread, as the H MSM's 2^27 gets); below it is forced
        // with the XYZZ accumulation's chunks (256, 26 a thread), as `affine_slots` 0 cuts
        // them. The smaller checks above force it with few chunks. PoRep's mix adds 15 M ones
        // (summed by one wave of threads, a partial each) to a tail of 3.4 M scalars.
        check_msm_g1(dev, 1 << 25, &["random"], seed ^ 0x2000000, &mut res);
        let o = MsmOptions {
            affine_slots: 0,
            ..acc(Accumulate::Affine, None)
        };
        check_msm::<G1Projective>(dev, 1 << 25, &["random"], seed ^ 0x2000002, &o, &mut res);
        check_msm::<G1Projective>(dev, 1 << 25, &["porep"], seed ^ 0x2000003, &o, &mut res);
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
            check_msm::<G2Projective>(dev, n, &all, seed ^ 0x77 ^ n as u64, &o, &mut res);
        }
        for a in [xyzz, affine] {
            for (n, c) in [(1000, None), (4097, Some(3)), ((1 << 16) + 5, None)] {
                let o = acc(a, c);
                check_msm::<G2Projective>(dev, n, &all, seed ^ 0x7b ^ n as u64, &o, &mut res);
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
