//! `zkforge demo`: the README's main job. Makes (or reuses) 2 KiB test parameters and a sealed
//! 2 KiB sector, proves its PoRep C2 on the CPU, verifies with filecoin-proofs, prints timings.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{ensure, Context};
use clap::Args;
use zkforge_filecoin::{hex, params, porep, registry, ProofKind, ProofRequest};
use zkforge_fixtures as fixtures;

use super::backend::{self, BackendArg};
use super::keys::default_cache_dir;
use super::prove::prove;
use crate::progress::WorkBar;

#[derive(Args)]
pub struct DemoArgs {
    /// Where test parameters and fixtures are cached [default: $ZKFORGE_CACHE or ~/.cache/zkforge].
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Prover backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    backend: BackendArg,
}

pub fn run(args: DemoArgs) -> anyhow::Result<()> {
    let backend = backend::select(
        args.backend,
        zkforge_engine::EngineConfig::default().prover_threads,
    )?;
    let cache = args.cache.unwrap_or_else(default_cache_dir);
    let param_dir = cache.join("params");
    // filecoin-proofs reads this once, at its first use: set it before anything else.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &param_dir);
    println!(
        "zkforge demo: PoRep C2 of a 2 KiB sector, CPU backend (cache: {})",
        cache.display()
    );

    let size = 2 << 10;
    let t = Instant::now();
    let id = registry::params_id(ProofKind::PoRep, size)?;
    if !id.params_path(&param_dir).exists() || !id.vk_path(&param_dir).exists() {
        println!("generating 2 KiB PoRep test parameters (first run only)...");
    }
    let bar = WorkBar::new("parameters");
    params::ensure_test_params(ProofKind::PoRep, size, &param_dir, &bar)?;
    bar.finish();
    let params_time = t.elapsed();

    let t = Instant::now();
    let fixture_dir = cache.join("fixtures-2KiB");
    let manifest = match fixtures::load(&fixture_dir) {
        Ok(m) => m,
        Err(_) => fixtures::make(size, &fixture_dir, 1)?,
    };
    let c1_path = fixture_dir.join(&manifest.c1_wrapper);
    let c1 =
        porep::parse_c1(&std::fs::read(&c1_path).with_context(|| c1_path.display().to_string())?)?;
    let fixture_time = t.elapsed();

    let circuits = ProofRequest::PoRep(c1).circuits()?;
    let (proof, timings) = prove(circuits, &param_dir, backend.clone())?;

    let t = Instant::now();
    let ok = manifest
        .verify_porep(&proof)
        .context("filecoin-proofs verify_seal")?;
    let verify_time = t.elapsed();
    ensure!(ok, "filecoin-proofs rejected the proof");

    println!("proof       {}", hex(&proof));
    println!("params      {:>8.3} s", params_time.as_secs_f64());
    println!("fixture     {:>8.3} s", fixture_time.as_secs_f64());
    let s = |ms: f64| ms / 1e3;
    println!("srs load    {:>8.3} s", s(timings.srs_load_ms));
    println!("synthesis   {:>8.3} s", s(timings.synthesis_sum_ms));
    println!("prove       {:>8.3} s", s(timings.prove_ms));
    println!(
        "job total   {:>8.3} s  (engine: queue, load, synthesis, prove, self-check)",
        s(timings.total_ms)
    );
    println!(
        "verify_seal {:>8.3} s  ok (filecoin-proofs)",
        verify_time.as_secs_f64()
    );
    Ok(())
}
