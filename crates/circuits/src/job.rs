//! What the engine schedules: a request's circuits, one per partition, and the parameter set
//! they are proved against.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use blstrs::Scalar;
use zkforge_groth16::{ConstraintMatrices, ProvingKey, ReadOptions, VerifyingKey, Witness};

/// The proof kinds of the cuzk.v1 API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProofKind {
    PoRep,
    SnapDeals,
    WindowPost,
    WinningPost,
}

impl ProofKind {
    /// Every kind, in the order status and metrics list them.
    pub const ALL: [ProofKind; 4] = [
        ProofKind::PoRep,
        ProofKind::SnapDeals,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
    ];
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

/// Serialized as its display name ("porep", "window-post"...), as the status JSON shows it.
impl serde::Serialize for ProofKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
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

    /// zkforge's cache of the circuit's recorded constraint matrices, beside the parameters.
    pub fn matrices_path(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}.r1cs", self.stem))
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
    /// The parameter set every partition is proved against.
    fn params_id(&self) -> &ParamsId;
    /// What is proved: the parameter set says it.
    fn kind(&self) -> ProofKind {
        self.params_id().kind
    }
    fn partitions(&self) -> usize;
    /// Synthesizes partition `k` in full, a, b, c evaluated at every constraint (the reference
    /// path: tests, benchmarks, and circuits without recorded matrices).
    fn synthesize(&self, k: usize) -> Result<Witness>;
    /// Records the constraint matrices every partition shares, or `None` when this circuit is
    /// only synthesized in full.
    fn record_matrices(&self) -> Result<Option<ConstraintMatrices>> {
        Ok(None)
    }
    /// Partition `k`'s assignment paired with the recorded `matrices` (the product path: the
    /// prover computes a, b, c from them). Circuits without matrices synthesize in full.
    fn assign(&self, k: usize, matrices: std::sync::Arc<ConstraintMatrices>) -> Result<Witness> {
        let _ = matrices;
        self.synthesize(k)
    }
    /// The public inputs of partition `k`, without the leading ONE, for self-verification.
    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>>;
}

/// A circuit's recorded matrices: read from `cache` when it holds a readable recording, else
/// recorded and written there (a write failure only costs the next run a recording). `None`
/// when the circuit has no recording.
pub fn cached_matrices(
    circuit: &dyn PartitionedCircuit,
    cache: Option<&Path>,
) -> Result<Option<ConstraintMatrices>> {
    if let Some(path) = cache.filter(|p| p.exists()) {
        match ConstraintMatrices::read_file(path) {
            Ok(m) => return Ok(Some(m)),
            Err(e) => tracing::warn!(path = %path.display(), "recording again: {e}"),
        }
    }
    let t = std::time::Instant::now();
    let Some(m) = circuit.record_matrices()? else {
        return Ok(None);
    };
    tracing::info!(
        circuit = %circuit.params_id().circuit_id(),
        constraints = m.num_constraints(),
        nonzeros = m.nonzeros(),
        bytes = m.heap_bytes(),
        ms = t.elapsed().as_millis() as u64,
        "constraints recorded"
    );
    if let Some(path) = cache {
        if let Err(e) = m.write_file(path) {
            tracing::warn!(path = %path.display(), "not caching the recorded constraints: {e}");
        }
    }
    Ok(Some(m))
}
