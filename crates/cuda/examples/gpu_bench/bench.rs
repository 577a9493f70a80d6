//! `gpu_bench bench`: medians of device-event timings after a warm-up, written as a table.

use std::io::Write;

use zkforge_cuda::host::{Accumulate, MsmOptions};
use zkforge_cuda::{CudaDevice, DeviceBasesG1, DeviceBasesG2, DeviceScalars, NttDirection};

use super::*;

pub(crate) fn bench(dev: &CudaDevice, seed: u64, out_dir: &str, what: &str) {
    let mut rows = Table::create(&format!("{out_dir}/bench.md"));
    let want = |k: &str| {
        (what == "all" && !["sweep", "g1big", "porep", "hchain", "chunks"].contains(&k))
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
            rows.add(format!("NTT fwd 2^{l} (resident)"), v);
            let v = time_ms(dev, 3, |dv| {
                dv.ntt_resident(&mut d, NttDirection::Inverse, true)
                    .unwrap()
            });
            rows.add(format!("NTT coset inv 2^{l} (resident)"), v);
            drop(d);
            if l == 27 {
                let b = random_scalars(1 << l, seed ^ 1);
                let c = random_scalars(1 << l, seed ^ 2);
                let v = time_ms(dev, 2, |dv| dv.h_coefficients(&x, &b, &c).unwrap());
                rows.add(format!("h_coefficients 2^{l} (host in/out)"), v);
            }
        }
    }
    if want("spmv") {
        for (name, v) in common::spmv::bench_porep(dev, seed, |f| time_ms(dev, 5, f)) {
            rows.add(name, v);
        }
    }
    if want("g1") {
        let bases = repeated(&random_g1(1 << 20, seed), 1 << 26);
        let db = dev.upload_g1(&bases).unwrap();
        drop(bases);
        for l in [20u32, 22, 24, 26] {
            let s = random_scalars(1 << l, seed ^ l as u64);
            let ds = dev.upload_scalars(&s).unwrap();
            let v = time_ms(dev, 5, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
            rows.add(format!("G1 MSM 2^{l} random (resident)"), v);
            if l == 24 {
                let s = scalar_mix("same", 1 << l, seed);
                let ds = dev.upload_scalars(&s).unwrap();
                let v = time_ms(dev, 3, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
                rows.add(format!("G1 MSM 2^{l} all-equal scalars (resident)"), v);
            }
            if l == 26 {
                let v = time_ms(dev, 3, |dv| dv.msm_g1(&db, &s).unwrap());
                rows.add(format!("G1 MSM 2^{l} random (host scalars)"), v);
                drop(ds);
                let s = bit_scalars(1 << l, seed ^ 0xb);
                let ds = dev.upload_scalars(&s).unwrap();
                let v = time_ms(dev, 5, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
                rows.add(format!("G1 MSM 2^{l} 0/1 scalars (resident)"), v);
                let s = scalar_mix("sparse", 1 << l, seed ^ 0xc);
                let ds = dev.upload_scalars(&s).unwrap();
                let v = time_ms(dev, 3, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
                rows.add(
                    format!("G1 MSM 2^{l} 60% 0, 30% 1, 10% random (resident)"),
                    v,
                );
            }
        }
    }
    if want("sweep") {
        // Window-width sweep with per-phase profiles (stderr), to tune window_bits().
        let bases = repeated(&random_g1(1 << 20, seed), 1 << 26);
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
                rows.add(format!("G1 MSM 2^{l} random c={c}"), v);
            }
        }
        drop(db);
        let bases = repeated(&random_g2(1 << 20, seed), 1 << 24);
        let db = dev.upload_g2(&bases).unwrap();
        let s = random_scalars(1 << 24, seed ^ 24);
        let ds = dev.upload_scalars(&s).unwrap();
        for c in [16u32, 17, 18, 19] {
            let (cut, with_profile) = width_profiled(c);
            dev.msm_g2_resident_with(&db, &ds, &with_profile).unwrap();
            let v = time_ms(dev, 1, |dv| {
                dv.msm_g2_resident_with(&db, &ds, &cut).unwrap()
            });
            rows.add(format!("G2 MSM 2^24 random c={c}"), v);
        }
    }
    if want("g1big") {
        // The PoRep 32 GiB partition's size: dense random, and 90% bits like its L/A queries.
        let l = 27u32;
        let bases = repeated(&random_g1(1 << 20, seed), 1 << l);
        let db = dev.upload_g1(&bases).unwrap();
        drop(bases);
        let random = random_scalars(1 << l, seed ^ 0x27);
        let ds = dev.upload_scalars(&random).unwrap();
        let v = time_ms(dev, 3, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
        rows.add(format!("G1 MSM 2^{l} random (resident)"), v);
        drop(ds);
        let mut porep = bit_scalars(1 << l, seed ^ 0x28);
        for (i, s) in porep.iter_mut().enumerate().step_by(10) {
            *s = random[i];
        }
        drop(random);
        let ds = dev.upload_scalars(&porep).unwrap();
        let v = time_ms(dev, 3, |dv| dv.msm_g1_resident(&db, &ds).unwrap());
        rows.add(format!("G1 MSM 2^{l} 90% 0/1, 10% random (resident)"), v);
    }
    if want("hchain") {
        // The h step at 2^27 on the device: the earlier natural-order chain (seven NTTs, seven bit
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
                "natural order (7 NTTs)"
            } else {
                "DIF/DIT pairs (6 NTTs)"
            };
            rows.add(format!("h step 2^{l} on device, {chain}"), v);
        }
    }
    if want("chunks") {
        bench_chunks(dev, seed, &mut rows);
    }
    if want("porep") {
        bench_porep(dev, seed, &mut rows);
    }
    if want("g2") {
        let bases = repeated(&random_g2(1 << 20, seed), 1 << 24);
        let db = dev.upload_g2(&bases).unwrap();
        drop(bases);
        for l in [20u32, 22, 24] {
            let s = random_scalars(1 << l, seed ^ l as u64);
            let ds = dev.upload_scalars(&s).unwrap();
            let v = time_ms(dev, 3, |dv| dv.msm_g2_resident(&db, &ds).unwrap());
            rows.add(format!("G2 MSM 2^{l} random (resident)"), v);
        }
    }
    rows.print();
}

/// The benchmark's rows: each printed as it is taken and appended to a markdown file (so that
/// a run cut short keeps what it measured), then all of them as one table.
struct Table {
    file: std::fs::File,
    rows: Vec<(String, f32)>,
}

impl Table {
    fn create(path: &str) -> Self {
        Self {
            file: std::fs::File::create(path).unwrap(),
            rows: Vec::new(),
        }
    }

    /// A row of the median of `runs` (ms).
    fn add(&mut self, name: String, runs: Vec<f32>) {
        let m = median(runs.clone());
        println!("BENCH {name}: median {m:.2} ms  runs {runs:?}");
        writeln!(self.file, "| {name} | {m:.2} | |").unwrap();
        self.file.flush().unwrap();
        self.rows.push((name, m));
    }

    fn print(&self) {
        println!("\n| benchmark | median ms |\n|---|---|");
        for (n, m) in &self.rows {
            println!("| {n} | {m:.2} |");
        }
    }
}

/// `distinct` repeated to `n` points: bases for an MSM larger than the points worth generating.
fn repeated<T: Copy>(distinct: &[T], n: usize) -> Vec<T> {
    distinct.iter().copied().cycle().take(n).collect()
}

/// The inputs of a 32 GiB PoRep partition's five MSMs, on the device, shaped like its witness:
/// H over 2^27 − 1 random scalars; L over the aux assignment (130,148,591), A over 99.7% of
/// it, B_G1 and B_G2 over 25.4%, each 45% zeros, 45% ones, 10% random. Bases: 2^20 distinct
/// points repeated.
struct PorepMsms {
    g1: DeviceBasesG1,
    g2: DeviceBasesG2,
    h: DeviceScalars,
    l: DeviceScalars,
    a: DeviceScalars,
    b: DeviceScalars,
}

impl PorepMsms {
    fn upload(dev: &CudaDevice, seed: u64) -> Self {
        let (n_h, n_l, n_a, n_b) = ((1usize << 27) - 1, 130_148_591, 129_758_145, 33_057_742);
        let bases = repeated(&random_g1(1 << 20, seed), 1 << 27);
        let g1 = dev.upload_g1(&bases).unwrap();
        drop(bases);
        let bases = repeated(&random_g2(1 << 20, seed), n_b);
        let g2 = dev.upload_g2(&bases).unwrap();
        drop(bases);
        let h = dev
            .upload_scalars(&random_scalars(n_h, seed ^ 0x27))
            .unwrap();
        let up = |n, k| dev.upload_scalars(&porep_scalars(n, seed ^ k)).unwrap();
        let (l, a, b) = (up(n_l, 0x28), up(n_a, 0x29), up(n_b, 0x2a));
        PorepMsms { g1, g2, h, l, a, b }
    }
}

/// The five MSMs of a 32 GiB PoRep partition ([`PorepMsms`]), whole, under each cut.
fn bench_porep(dev: &CudaDevice, seed: u64, rows: &mut Table) {
    let PorepMsms { g1, g2, h, l, a, b } = PorepMsms::upload(dev, seed);
    let cut = |a| MsmOptions {
        accumulate: a,
        ..MsmOptions::default()
    };
    let (xyzz, affine) = (Accumulate::Xyzz, Accumulate::Affine);
    for o in [cut(xyzz), cut(affine)] {
        dev.msm_g1_resident_with(&g1, &h, &profiled(o)).unwrap();
        let v = time_ms(dev, 3, |d| d.msm_g1_resident_with(&g1, &h, &o).unwrap());
        rows.add(format!("H 2^27 random, {}", opts_label(&o)), v);
    }
    // The partition's MSM phase under the default cut, each MSM's phases on stderr first.
    let five = |d: &CudaDevice, o: &MsmOptions| {
        d.msm_g1_resident_with(&g1, &h, o).unwrap();
        d.msm_g1_resident_with(&g1, &l, o).unwrap();
        d.msm_g1_resident_with(&g1, &a, o).unwrap();
        d.msm_g1_resident_with(&g1, &b, o).unwrap();
        d.msm_g2_resident_with(&g2, &b, o).unwrap();
    };
    for o in [MsmOptions::default(), cut(xyzz), cut(affine)] {
        five(dev, &profiled(o));
    }
    for (name, s) in [("L", &l), ("A", &a), ("B_G1", &b)] {
        let v = time_ms(dev, 3, |d| d.msm_g1_resident(&g1, s).unwrap());
        rows.add(format!("PoRep {name} ({} scalars)", s.len()), v);
    }
    let v = time_ms(dev, 3, |d| d.msm_g2_resident(&g2, &b).unwrap());
    rows.add(format!("PoRep B_G2 ({} scalars)", b.len()), v);
    for o in [cut(xyzz), cut(affine)] {
        let v = time_ms(dev, 3, |d| d.msm_g1_resident_with(&g1, &l, &o).unwrap());
        rows.add(format!("PoRep L, {}", opts_label(&o)), v);
        let v = time_ms(dev, 3, |d| d.msm_g2_resident_with(&g2, &b, &o).unwrap());
        rows.add(format!("PoRep B_G2, {}", opts_label(&o)), v);
    }
    for o in [MsmOptions::default(), cut(affine)] {
        let v = time_ms(dev, 3, |d| five(d, &o));
        let name = format!("PoRep MSM phase (5 MSMs), {}", opts_label(&o));
        rows.add(name, v);
    }
    // Batch-affine's chunks sized for this many slots a thread (0: the XYZZ chunks).
    for slots in [0u32, 32, 64] {
        let o = MsmOptions {
            affine_slots: slots,
            ..MsmOptions::default()
        };
        five(dev, &profiled(o));
        for (name, s) in [("H", &h), ("L", &l), ("B_G1", &b)] {
            let v = time_ms(dev, 3, |d| d.msm_g1_resident_with(&g1, s, &o).unwrap());
            rows.add(format!("PoRep {name}, {}", opts_label(&o)), v);
        }
        let v = time_ms(dev, 3, |d| five(d, &o));
        rows.add(format!("PoRep MSM phase (5 MSMs), {}", opts_label(&o)), v);
    }
}

/// The phased order's MSMs (backend/phased.rs): PoRep's five ([`PorepMsms`]), each
/// summed in chunks of 4 to 64 Mi points against whole, every chunked sum checked
/// equal to the whole one. What a chunk costs decides the chunk size a card can afford.
fn bench_chunks(dev: &CudaDevice, seed: u64, rows: &mut Table) {
    let PorepMsms { g1, g2, h, l, a, b } = PorepMsms::upload(dev, seed);
    let whole = (
        dev.msm_g1_resident(&g1, &h).unwrap(),
        dev.msm_g1_resident(&g1, &l).unwrap(),
        dev.msm_g2_resident(&g2, &b).unwrap(),
    );
    // A G2 chunk holds half the points of a G1 chunk of the same bytes.
    let five = |d: &CudaDevice, k: usize| {
        (
            d.msm_g1_resident_chunked(&g1, &h, k).unwrap(),
            d.msm_g1_resident_chunked(&g1, &l, k).unwrap(),
            d.msm_g1_resident_chunked(&g1, &a, k).unwrap(),
            d.msm_g1_resident_chunked(&g1, &b, k).unwrap(),
            d.msm_g2_resident_chunked(&g2, &b, k / 2).unwrap(),
        )
    };
    for lg in [22u32, 23, 24, 25, 26, 27] {
        let k = 1usize << lg;
        let (sh, sl, _, _, sb2) = five(dev, k);
        assert!(
            (sh, sl, sb2) == whole,
            "chunks of 2^{lg}: a chunked sum differs from the whole MSM's"
        );
        let v = time_ms(dev, 3, |d| d.msm_g1_resident_chunked(&g1, &h, k).unwrap());
        rows.add(format!("H 2^27 in chunks of 2^{lg}"), v);
        let v = time_ms(dev, 3, |d| {
            five(d, k);
        });
        rows.add(format!("PoRep MSM phase (5 MSMs) in chunks of 2^{lg}"), v);
    }
}
