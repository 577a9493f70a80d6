//! Shared test setup: 2 KiB test parameters, generated once and cached across runs under
//! `$ZKFORGE_CACHE/params` (default `~/.cache/zkforge/params`), and a fresh sealed sector.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use rand_core::SeedableRng;
use zkforge_filecoin::fixtures::{self, Manifest};
use zkforge_filecoin::{params, registry, ParamsId, ProofKind};

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

/// Makes sure the 2 KiB parameters of `kind` exist (minutes on 2 cores for PoRep and SnapDeals,
/// the first time only) and loads their proving key.
pub fn params(kind: ProofKind) -> (PathBuf, ParamsId) {
    static LOCK: Mutex<()> = Mutex::new(());
    let dir = param_dir();
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let id = registry::params_id(kind, SIZE_2K).unwrap();
    if !id.params_path(&dir).exists() || !id.vk_path(&dir).exists() {
        eprintln!(
            "generating 2 KiB {kind} test parameters in {}",
            dir.display()
        );
        let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
        let pk = registry::random_keys(kind, SIZE_2K, &mut rng, &()).unwrap();
        params::write(&id, &pk, &dir, true).unwrap();
    }
    (dir, id)
}

pub fn porep_params() -> (PathBuf, ParamsId) {
    params(ProofKind::PoRep)
}

/// A freshly sealed 2 KiB sector and its inputs, in a temporary directory.
pub fn sector(seed: u64) -> (tempfile::TempDir, Manifest) {
    param_dir();
    let dir = tempfile::tempdir().unwrap();
    let m = fixtures::make(SIZE_2K, dir.path(), seed).unwrap();
    (dir, m)
}
