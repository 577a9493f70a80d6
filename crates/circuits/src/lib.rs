//! Circuits zkforge proves. For now the synthetic family used by tests and benchmarks; the
//! Filecoin circuits come from the official storage-proofs crates.

mod synthetic;

pub use synthetic::SyntheticCircuit;
