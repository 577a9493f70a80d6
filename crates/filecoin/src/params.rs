//! Filecoin parameter files: names, lookup, loading, and random test generation.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use bellpepper_core::Circuit;
use blstrs::Scalar;
use rand_core::RngCore;
use zkforge_groth16::generator::{generate_random_keys, GenProgress};
use zkforge_groth16::ProvingKey;

use crate::{ParamsId, ProofKind};

/// Where Filecoin keeps parameters when nothing else is said.
pub const DEFAULT_DIR: &str = "/var/tmp/filecoin-proof-parameters";

/// The directory to use: `explicit`, else `$FIL_PROOFS_PARAMETER_CACHE`, else [`DEFAULT_DIR`].
pub fn parameter_dir(explicit: Option<&Path>) -> PathBuf {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

/// The parameter set named by storage-proofs' cache identifier.
pub fn params_id(kind: ProofKind, sector_size: u64, cache_identifier: &str) -> ParamsId {
    let stem = format!(
        "v{}-{cache_identifier}",
        storage_proofs_core::parameter_cache::VERSION
    );
    ParamsId {
        kind,
        sector_size,
        stem,
    }
}

/// The cache the demo, tests and benchmarks share: `$ZKFORGE_CACHE`, else
/// `$XDG_CACHE_HOME/zkforge`, else `~/.cache/zkforge`.
pub fn zkforge_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ZKFORGE_CACHE") {
        return dir.into();
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("zkforge")
}

/// Makes sure random test parameters of `kind` for `sector_size` exist in `dir`, generating
/// them (minutes for 2 KiB PoRep on 2 cores) only when missing. Concurrent callers (threads or
/// processes sharing `dir`) wait for the one generating: one set is generated, all see it.
pub fn ensure_test_params(
    kind: ProofKind,
    sector_size: u64,
    dir: &Path,
    progress: &dyn GenProgress,
) -> Result<ParamsId> {
    let id = crate::registry::params_id(kind, sector_size)?;
    if is_complete(&id, dir) {
        return Ok(id);
    }
    let _lock = ParamsLock::acquire(&id, dir)?;
    // Another generator may have finished while this one waited for the lock.
    if !is_complete(&id, dir) {
        tracing::info!(dir = %dir.display(), "generating {} test parameters", id.circuit_id());
        let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::from_entropy();
        let pk = crate::registry::random_keys(kind, sector_size, &mut rng, progress)?;
        write_files(&id, &pk, dir)?;
    }
    Ok(id)
}

/// True when the set's `.params` exists. [`write`] puts it in place last, so its presence
/// means `.vk` and `.meta` are there too.
fn is_complete(id: &ParamsId, dir: &Path) -> bool {
    id.params_path(dir).exists() && id.vk_path(dir).exists()
}

/// An exclusive lock on one parameter set in a directory (`<stem>.lock`, `flock`), held while
/// its files are generated or written: concurrent writers wait for one another. The kernel
/// drops it when the holder exits, even by SIGKILL, so a stale lock file is harmless.
pub struct ParamsLock {
    _file: std::fs::File,
}

impl ParamsLock {
    /// Waits for the lock of `id` in `dir` (created if missing).
    pub fn acquire(id: &ParamsId, dir: &Path) -> Result<Self> {
        use fs2::FileExt;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(format!("{}.lock", id.stem));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        if file.try_lock_exclusive().is_err() {
            tracing::info!(lock = %path.display(), "waiting for another writer of these parameters");
            file.lock_exclusive()
                .with_context(|| format!("locking {}", path.display()))?;
        }
        Ok(Self { _file: file })
    }
}

/// Refuses to overwrite existing parameter files unless `force`.
pub fn check_writable(id: &ParamsId, dir: &Path, force: bool) -> Result<()> {
    if !force {
        for p in [id.params_path(dir), id.vk_path(dir)] {
            if p.exists() {
                bail!("{} exists; pass --force to overwrite it", p.display());
            }
        }
    }
    Ok(())
}

/// Writes `.params`, `.vk` and `.meta` for `id` into `dir`, as storage-proofs would, holding
/// the set's [`ParamsLock`]. Each file goes through a temporary name of its own and a rename.
pub fn write(id: &ParamsId, pk: &ProvingKey, dir: &Path, force: bool) -> Result<()> {
    let _lock = ParamsLock::acquire(id, dir)?;
    check_writable(id, dir, force)?;
    write_files(id, pk, dir)
}

/// `.vk` and `.meta` first, `.params` last (see [`is_complete`]); the caller holds the lock.
fn write_files(id: &ParamsId, pk: &ProvingKey, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    pk.vk.write_file(&id.vk_path(dir))?;
    let meta = format!("{{\"sector_size\":{}}}", id.sector_size);
    let meta_path = id.meta_path(dir);
    std::fs::write(&meta_path, meta).with_context(|| format!("writing {}", meta_path.display()))?;
    pk.write_file(&id.params_path(dir))?;
    Ok(())
}

/// Random test keys for a blank circuit.
pub(crate) fn random_keys<C: Circuit<Scalar>>(
    circuit: C,
    rng: &mut dyn RngCore,
    progress: &dyn GenProgress,
) -> Result<ProvingKey> {
    Ok(generate_random_keys(circuit, rng, progress)?)
}
