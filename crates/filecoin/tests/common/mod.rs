//! Shared test setup: 2 KiB test parameters, generated once and cached across runs under
//! `$ZKFORGE_CACHE/params` (default `~/.cache/zkforge/params`), and a fresh sealed sector.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use rand_core::SeedableRng;
use zkforge_filecoin::fixtures::{self, seal_proof_for, Manifest};
use zkforge_filecoin::{params, porep, ParamsId};

pub const SIZE_2K: u64 = 2048;

pub fn cache_dir() -> PathBuf {
    std::env::var_os("ZKFORGE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/zkforge")
        })
}

/// The parameter directory, with FIL_PROOFS_PARAMETER_CACHE pointing at it before any
/// filecoin-proofs code reads its settings.
pub fn param_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = cache_dir().join("params");
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
        dir
    })
    .clone()
}

/// Makes sure the 2 KiB PoRep parameters exist (minutes on 2 cores, the first time only).
pub fn porep_params() -> (PathBuf, ParamsId) {
    static READY: OnceLock<ParamsId> = OnceLock::new();
    let dir = param_dir();
    let id = READY.get_or_init(|| {
        let proof = seal_proof_for(SIZE_2K).unwrap();
        let id = porep::porep_params_id(proof).unwrap();
        if !id.params_path(&dir).exists() || !id.vk_path(&dir).exists() {
            eprintln!(
                "generating 2 KiB PoRep test parameters in {}",
                dir.display()
            );
            let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
            let pk = porep::porep_random_keys(proof, &mut rng, &()).unwrap();
            params::write(&id, &pk, &dir, true).unwrap();
        }
        id
    });
    (dir, id.clone())
}

/// A freshly sealed 2 KiB sector and its inputs, in a temporary directory.
pub fn sector(seed: u64) -> (tempfile::TempDir, Manifest) {
    param_dir();
    let dir = tempfile::tempdir().unwrap();
    let m = fixtures::make(SIZE_2K, dir.path(), seed).unwrap();
    (dir, m)
}
