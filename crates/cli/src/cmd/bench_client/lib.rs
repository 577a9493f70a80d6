//! The zkforge bench client: `zkforge bench single|batch|sweep` against a cuzk.v1 daemon.
//! This directory is the `zkforge-cli` package's library target (see its Cargo.toml) so that
//! tests call [`fleet::run_batch`] and [`fleet::run_fleet`] directly, without spawning
//! processes.

pub mod address;
pub mod batch;
pub mod cli;
pub mod fleet;
pub mod input;
pub mod report;
pub mod sweep;

pub use address::{connect, DaemonAddr};
pub use batch::{BatchConfig, BatchReport, ProofRecord};
pub use fleet::{run_batch, run_fleet, FleetReport};
pub use input::{InputSpec, ProofInput, ProofType};
