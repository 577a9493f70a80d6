//! What the engine schedules: a request's circuits, one per partition, and the parameter set
//! they are proved against.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use blstrs::Scalar;
use zkforge_groth16::{ProvingKey, ReadOptions, VerifyingKey, Witness};

/// The proof kinds of the cuzk.v1 API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProofKind {
    PoRep,
    SnapDeals,
    WindowPost,
    WinningPost,
}

impl std::fmt::Display for ProofKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProofKind::PoRep => "porep",
            ProofKind::SnapDeals => "snap",
            ProofKind::WindowPost => "window-post",
            ProofKind::WinningPost => "winning-post",
        })
    }
}

/// One parameter set: the circuit it belongs to and its file stem (for Filecoin,
/// `v28-<prefix>-<sha256 of the public params identifier>`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParamsId {
    pub kind: ProofKind,
    pub sector_size: u64,
    pub stem: String,
}

impl ParamsId {
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

/// "2KiB", "32GiB"...
pub fn format_sector_size(size: u64) -> String {
    match size {
        s if s >= 1 << 30 => format!("{}GiB", s >> 30),
        s if s >= 1 << 20 => format!("{}MiB", s >> 20),
        s => format!("{}KiB", s >> 10),
    }
}

/// One request's circuits, one per partition, all sharing one parameter set.
pub trait PartitionedCircuit: Send + Sync {
    fn kind(&self) -> ProofKind;
    /// The parameter set every partition is proved against.
    fn params_id(&self) -> &ParamsId;
    fn partitions(&self) -> usize;
    /// Synthesizes partition `k` (the expensive CPU step).
    fn synthesize(&self, k: usize) -> Result<Witness>;
    /// The public inputs of partition `k`, without the leading ONE, for self-verification.
    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>>;
}
