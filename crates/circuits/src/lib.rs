//! Circuits zkforge proves and the job interface the engine schedules: synthetic circuits for
//! tests and benchmarks here, Filecoin's in `zkforge-filecoin`.

mod job;
mod replay;
mod synthetic;

pub use job::{cached_matrices, format_sector_size, ParamsId, PartitionedCircuit, ProofKind};
pub use replay::{porep_shaped_witness, ReplayJob};
pub use synthetic::{SyntheticCircuit, SyntheticJob};
