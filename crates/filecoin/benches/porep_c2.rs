//! 2 KiB PoRep C2: zkforge's CPU prover against filecoin-proofs' `seal_commit_phase2`
//! (bellperson), same machine, same parameters, one run.
//!
//! `cargo bench -p zkforge-filecoin --bench porep_c2 -- [--runs N]`. Parameters come from
//! `$ZKFORGE_CACHE/params` (default `~/.cache/zkforge/params`), generated if missing. Both sides
//! are timed after one warm-up, with parameters already in memory; both include synthesis and
//! the final verification.

use std::time::{Duration, Instant};

use rand_core::SeedableRng;
use zkforge_filecoin::{params, porep, prove_all, ProofKind};
use zkforge_fixtures as fixtures;
use zkforge_groth16::{CpuBackend, ReadOptions};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(2usize);
    let dir = params::zkforge_cache_dir().join("params");
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    let id = params::ensure_test_params(ProofKind::PoRep, 2048, &dir, &()).unwrap();
    let pk = id.load(&dir, ReadOptions::default()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let m = fixtures::make(2048, tmp.path(), 7).unwrap();
    let c1 = porep::parse_c1(&std::fs::read(tmp.path().join(&m.c1_raw)).unwrap()).unwrap();
    let prover_id = fixtures::unhex32(&m.prover_id).unwrap();
    let sector = filecoin_proofs_api::SectorId::from(m.sector_id);

    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    // The product path: the circuit's recording (cached beside the parameters, as the daemon
    // keeps it) and per proof only the assignment.
    let circuits = porep::porep_circuits(c1.clone()).unwrap();
    let matrices =
        zkforge_circuits::cached_matrices(circuits.as_ref(), Some(&id.matrices_path(&dir)))
            .unwrap()
            .map(std::sync::Arc::new);
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for run in 0..=runs {
        let t = Instant::now();
        let circuits = porep::porep_circuits(c1.clone()).unwrap();
        let proof = prove_all(
            circuits.as_ref(),
            matrices.as_ref(),
            &CpuBackend::new(),
            &pk,
            &mut rng,
        )
        .unwrap()
        .proof;
        let dt = t.elapsed();
        assert!(m.verify_porep(&proof).unwrap());

        let t = Instant::now();
        let out =
            filecoin_proofs_api::seal::seal_commit_phase2(c1.clone(), prover_id, sector).unwrap();
        let dt_theirs = t.elapsed();
        assert!(m.verify_porep(&out.proof).unwrap());
        if run > 0 {
            ours.push(dt);
            theirs.push(dt_theirs);
        }
    }
    let (o, t) = (median(ours), median(theirs));
    println!(
        "threads: {}, runs: {runs} (median after 1 warm-up)",
        rayon::current_num_threads()
    );
    println!(
        "2 KiB PoRep C2   zkforge {o:.2} s   filecoin-proofs {t:.2} s   ratio {:.2}x",
        t / o
    );
}
