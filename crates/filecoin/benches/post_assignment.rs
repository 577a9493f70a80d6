//! The PoSt circuit's assignment, native against the gadgets run through the witness-only
//! constraint system (the product path before the native one), on a sparse vanilla partition
//! of a real sector size; the two are checked equal, value for value.
//!
//! `cargo bench -p zkforge-filecoin --bench post_assignment -- [--size 32GiB] [--kind window]
//! [--sectors 2349] [--runs 3] [--threads N]`. `--kind winning` for WinningPoSt. Each side runs
//! once to warm up, then `--runs` times; medians are printed.

mod common;

use common::arg;

use std::time::{Duration, Instant};

use filecoin_proofs_api::RegisteredPoStProof;
use zkforge_filecoin::post::post_assignments;
use zkforge_filecoin::shape::parse_sector_size;
use zkforge_fixtures::sparse::{make_post, KeyedFr};
use zkforge_groth16::Assignment;

fn proof(kind: &str, size: u64) -> RegisteredPoStProof {
    use RegisteredPoStProof::*;
    match (kind, size >> 30) {
        ("winning", 32) => StackedDrgWinning32GiBV1,
        ("winning", 64) => StackedDrgWinning64GiBV1,
        ("window", 32) => StackedDrgWindow32GiBV1_2,
        ("window", 64) => StackedDrgWindow64GiBV1_2,
        _ => panic!("--kind winning|window with --size 32GiB|64GiB"),
    }
}

/// Median of `runs` timed calls after one warm-up; returns it and the last result.
fn timed(runs: usize, mut f: impl FnMut() -> Assignment) -> (Duration, Assignment) {
    let mut last = f();
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        drop(last);
        let t = Instant::now();
        last = f();
        times.push(t.elapsed());
    }
    times.sort();
    (times[times.len() / 2], last)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size = parse_sector_size(&arg(&args, "--size", "32GiB".to_string())).unwrap();
    let kind: String = arg(&args, "--kind", "window".to_string());
    let sectors = arg(&args, "--sectors", if kind == "window" { 2349 } else { 1 });
    let runs = arg(&args, "--runs", 3usize).max(1);
    let threads = arg(&args, "--threads", rayon::current_num_threads());

    let prover_id = KeyedFr::new(b"bench prover", 1).bytes(0);
    let t = Instant::now();
    let made = make_post(proof(&kind, size), sectors, prover_id, 11, &()).unwrap();
    println!(
        "{kind} PoSt {}GiB, {sectors} sector(s): sparse vanilla proofs made and verified in {:.1} s",
        size >> 30,
        t.elapsed().as_secs_f64()
    );
    let paths = post_assignments(made.request(prover_id, 0)).unwrap();

    let (native_t, native) = timed(runs, || paths.native(threads).unwrap());
    let (gadgets_t, gadgets) = timed(runs, || paths.witness_only(&native).unwrap());
    assert_eq!(native.inputs, gadgets.inputs, "inputs differ");
    assert!(native.aux == gadgets.aux, "aux differs");
    println!(
        "{} inputs, {} aux values, equal; median of {runs} after a warm-up:\n  \
         native ({threads} threads)  {:8.3} s\n  gadgets (1 thread)   {:8.3} s\n  ratio {:.1}x",
        native.inputs.len(),
        native.aux.len(),
        native_t.as_secs_f64(),
        gadgets_t.as_secs_f64(),
        gadgets_t.as_secs_f64() / native_t.as_secs_f64()
    );
}
