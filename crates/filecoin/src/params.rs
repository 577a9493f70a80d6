//! Filecoin parameter files: where they live, writing them under a lock, and random test
//! generation (a set's name comes from [`crate::registered_proof::params_id`]).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use zkforge_groth16::generator::{
    write_params_files, CpuFixedBase, FixedBaseBackend, GenProgress, Setup,
};
use zkforge_groth16::ProvingKey;

use crate::{param_digest, ParamsId, ProofKind};

/// Where Filecoin keeps parameters when nothing else is said.
pub const DEFAULT_DIR: &str = "/var/tmp/filecoin-proof-parameters";

/// The directory to use: `explicit`, else `$FIL_PROOFS_PARAMETER_CACHE`, else [`DEFAULT_DIR`].
pub fn parameter_dir(explicit: Option<&Path>) -> PathBuf {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
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
    if is_complete(&id, dir) && param_digest::record_path(&id, dir).exists() {
        return Ok(id);
    }
    let _lock = ParamsLock::acquire(&id, dir)?;
    // Another generator may have finished while this one waited for the lock.
    if !is_complete(&id, dir) {
        tracing::info!(dir = %dir.display(), "generating {} test parameters", id.circuit_id());
        generate_locked(&id, dir, &CpuFixedBase, None, progress)?;
    } else if !param_digest::record_path(&id, dir).exists()
        && !param_digest::vk_is_published(&id, dir)
    {
        // Test parameters generated before generation kept a record of their digests: record
        // them now (a set whose .vk is the published one is a download and gets none).
        param_digest::write_record(&id, dir)?;
    }
    Ok(id)
}

/// What one parameter generation did, for the command's summary.
#[derive(Clone, Debug)]
pub struct Generated {
    pub id: ParamsId,
    pub constraints: usize,
    pub nonzeros: usize,
    /// Recording the circuit's constraints.
    pub record_secs: f64,
    /// Computing the points and writing the files.
    pub keys_secs: f64,
    pub params_bytes: u64,
}

/// Generates random (test-only) parameters of `kind` for `sector_size` into `dir`, holding the
/// set's [`ParamsLock`]: records the circuit once (also kept beside them as `<stem>.r1cs`, so
/// the prover need not record it again), then streams `.params` and `.vk` through `backend`.
/// A `seed` fixes τ, α, β, γ, δ and the generators, hence every byte, whatever the backend.
pub fn generate(
    kind: ProofKind,
    sector_size: u64,
    dir: &Path,
    backend: &dyn FixedBaseBackend,
    seed: Option<u64>,
    progress: &dyn GenProgress,
) -> Result<Generated> {
    let id = crate::registry::params_id(kind, sector_size)?;
    let _lock = ParamsLock::acquire(&id, dir)?;
    generate_locked(&id, dir, backend, seed, progress)
}

/// [`generate`] for a caller that holds the lock, of the set `id` names (its kind and sector
/// size); `.meta`, `.r1cs` and `.vk` are in place before `.params` (see [`is_complete`]).
fn generate_locked(
    id: &ParamsId,
    dir: &Path,
    backend: &dyn FixedBaseBackend,
    seed: Option<u64>,
    progress: &dyn GenProgress,
) -> Result<Generated> {
    use rand_core::SeedableRng;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // A record of earlier files would vouch for files about to be replaced.
    param_digest::remove_record(id, dir)?;
    let t = std::time::Instant::now();
    let m = crate::registry::matrices(id.kind, id.sector_size)?;
    let record_secs = t.elapsed().as_secs_f64();
    tracing::info!(
        circuit = %id.circuit_id(),
        constraints = m.num_constraints(),
        nonzeros = m.nonzeros(),
        secs = record_secs,
        "circuit recorded"
    );
    m.write_file(&id.matrices_path(dir))?;
    write_meta(id, dir)?;
    let mut rng = match seed {
        Some(s) => rand_chacha::ChaCha20Rng::seed_from_u64(s),
        None => rand_chacha::ChaCha20Rng::from_entropy(),
    };
    let setup = Setup::random(&mut rng);
    let t = std::time::Instant::now();
    let params_path = id.params_path(dir);
    write_params_files(
        &m,
        &setup,
        backend,
        &params_path,
        &id.vk_path(dir),
        progress,
    )?;
    let keys_secs = t.elapsed().as_secs_f64();
    // The digests of what was written, so that `params verify` tells this test key from a
    // damaged download of the published file of the same name (re-read from the page cache).
    let t = std::time::Instant::now();
    param_digest::write_record(id, dir)?;
    tracing::info!(
        secs = t.elapsed().as_secs_f64(),
        "test key's digests recorded"
    );
    Ok(Generated {
        constraints: m.num_constraints(),
        nonzeros: m.nonzeros(),
        record_secs,
        keys_secs,
        params_bytes: std::fs::metadata(&params_path)
            .map(|m| m.len())
            .unwrap_or(0),
        id: id.clone(),
    })
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
    param_digest::remove_record(id, dir)?;
    pk.vk.write_file(&id.vk_path(dir))?;
    write_meta(id, dir)?;
    pk.write_file(&id.params_path(dir))?;
    param_digest::write_record(id, dir)?;
    Ok(())
}

/// The `.meta` file storage-proofs writes beside a parameter set.
fn write_meta(id: &ParamsId, dir: &Path) -> Result<()> {
    let meta = format!("{{\"sector_size\":{}}}", id.sector_size);
    let meta_path = id.meta_path(dir);
    std::fs::write(&meta_path, meta).with_context(|| format!("writing {}", meta_path.display()))
}
