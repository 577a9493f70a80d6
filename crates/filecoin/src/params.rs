//! Filecoin parameter files: names, lookup, loading, and random test generation.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use bellpepper_core::Circuit;
use blstrs::Scalar;
use rand_core::RngCore;
use zkforge_groth16::generator::{generate_random_keys, GenProgress};
use zkforge_groth16::{ProvingKey, ReadOptions, VerifyingKey};

use crate::shape::format_sector_size;
use crate::ProofKind;

/// Where Filecoin keeps parameters when nothing else is said.
pub const DEFAULT_DIR: &str = "/var/tmp/filecoin-proof-parameters";

/// The directory to use: `explicit`, else `$FIL_PROOFS_PARAMETER_CACHE`, else [`DEFAULT_DIR`].
pub fn parameter_dir(explicit: Option<&Path>) -> PathBuf {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

/// One parameter set: the circuit it belongs to and its file stem
/// (`v28-<prefix>-<sha256 of the public params identifier>`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamsId {
    pub kind: ProofKind,
    pub sector_size: u64,
    pub stem: String,
}

impl ParamsId {
    pub fn new(kind: ProofKind, sector_size: u64, cache_identifier: &str) -> Self {
        let stem = format!(
            "v{}-{cache_identifier}",
            storage_proofs_core::parameter_cache::VERSION
        );
        Self {
            kind,
            sector_size,
            stem,
        }
    }

    /// A short name such as `porep-2KiB`.
    pub fn circuit_id(&self) -> String {
        format!("{}-{}", self.kind, format_sector_size(self.sector_size))
    }

    pub fn params_path(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}.params", self.stem))
    }

    pub fn vk_path(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}.vk", self.stem))
    }

    pub fn meta_path(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}.meta", self.stem))
    }

    /// Loads the proving key, saying how to get it when the file is missing.
    pub fn load(&self, dir: &Path, opts: ReadOptions) -> Result<ProvingKey> {
        let path = self.params_path(dir);
        if !path.exists() {
            bail!(
                "missing parameters for {}: {} does not exist (for tests: `zkforge params generate \
                 --proof {} --sector-size {} --out {}`)",
                self.circuit_id(),
                path.display(),
                self.kind,
                format_sector_size(self.sector_size),
                dir.display()
            );
        }
        Ok(ProvingKey::read_file(&path, opts)?)
    }

    pub fn load_vk(&self, dir: &Path) -> Result<VerifyingKey> {
        Ok(VerifyingKey::read_file(&self.vk_path(dir))?)
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
