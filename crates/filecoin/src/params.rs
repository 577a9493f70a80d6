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
/// them (minutes for 2 KiB PoRep on 2 cores) only when missing.
pub fn ensure_test_params(
    kind: ProofKind,
    sector_size: u64,
    dir: &Path,
    progress: &dyn GenProgress,
) -> Result<ParamsId> {
    let id = crate::registry::params_id(kind, sector_size)?;
    if !id.params_path(dir).exists() || !id.vk_path(dir).exists() {
        tracing::info!(dir = %dir.display(), "generating {} test parameters", id.circuit_id());
        let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::from_entropy();
        let pk = crate::registry::random_keys(kind, sector_size, &mut rng, progress)?;
        write(&id, &pk, dir, true)?;
    }
    Ok(id)
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

/// Writes `.params`, `.vk` and `.meta` for `id` into `dir`, as storage-proofs would.
pub fn write(id: &ParamsId, pk: &ProvingKey, dir: &Path, force: bool) -> Result<()> {
    check_writable(id, dir, force)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    pk.write_file(&id.params_path(dir))?;
    pk.vk.write_file(&id.vk_path(dir))?;
    let meta = format!("{{\"sector_size\":{}}}", id.sector_size);
    let meta_path = id.meta_path(dir);
    std::fs::write(&meta_path, meta).with_context(|| format!("writing {}", meta_path.display()))?;
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
