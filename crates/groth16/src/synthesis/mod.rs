//! Circuit synthesis: our constraint system and the witness it produces.

mod density;
pub mod pool;
mod witness;
mod witness_only;

pub use density::Density;
pub use pool::{HostPinner, ScalarPool};
pub use witness::{synthesize, Recycle, Witness, WitnessBuilder};
pub use witness_only::WitnessOnly;
