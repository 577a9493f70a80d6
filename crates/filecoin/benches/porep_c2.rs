//! 2 KiB PoRep C2: zkforge's CPU prover against filecoin-proofs' `seal_commit_phase2`
//! (bellperson), same machine, same parameters, one run.
//!
//! `cargo bench -p zkforge-filecoin --bench porep_c2 -- [--runs N]`. Parameters come from
//! `$ZKFORGE_CACHE/params` (default `~/.cache/zkforge/params`), generated if missing. Both sides
//! are timed after one warm-up, with parameters already in memory (ours resident in the
//! engine, as in the daemon); both include synthesis and the final verification.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zkforge_engine::{Engine, EngineConfig, JobOutcome, JobRequest, ParamsDir};
use zkforge_filecoin::{params, porep, ProofKind};
use zkforge_fixtures as fixtures;
use zkforge_groth16::CpuBackend;

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
    params::ensure_test_params(ProofKind::PoRep, 2048, &dir, &()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let m = fixtures::make(2048, tmp.path(), 7).unwrap();
    let c1 = porep::parse_c1(&std::fs::read(tmp.path().join(&m.c1_raw)).unwrap()).unwrap();
    let prover_id = fixtures::unhex32(&m.prover_id).unwrap();
    let sector = filecoin_proofs_api::SectorId::from(m.sector_id);

    // The product path: the engine, with the key and the circuit's recording (cached beside
    // the parameters) resident after the warm-up, per proof only the assignment.
    let engine = Engine::start(
        EngineConfig::default(),
        Arc::new(CpuBackend::new()),
        Box::new(ParamsDir(dir.clone())),
    )
    .unwrap();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for run in 0..=runs {
        let t = Instant::now();
        let circuits = porep::porep_circuits(c1.clone()).unwrap();
        let job = engine.submit(JobRequest::new(Arc::from(circuits))).unwrap();
        let done = engine.wait(job, Some(Duration::from_secs(3600))).unwrap();
        let proof = match done.expect("proved within the hour").outcome {
            JobOutcome::Completed(proof) => proof,
            other => panic!("the engine did not prove it: {other:?}"),
        };
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
