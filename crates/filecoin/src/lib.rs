//! Filecoin's SNARK circuits from the official crates, turned into zkforge witnesses one
//! partition at a time, plus the parameter files and test fixtures around them.
//!
//! A client request (a PoRep C1 output, PoSt or SnapDeals vanilla proofs) becomes a
//! [`PartitionedCircuit`]: the unit list the engine schedules. Each partition synthesizes into
//! a [`Witness`] that any prover backend proves against the circuit's `.params`.

pub mod fixtures;
pub mod params;
pub mod porep;
pub mod post;
pub mod prove;
pub mod registry;
pub mod shape;
pub mod snap;

use anyhow::Result;
use blstrs::Scalar;
use zkforge_groth16::Witness;

pub use params::ParamsId;
pub use prove::prove_all;

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
