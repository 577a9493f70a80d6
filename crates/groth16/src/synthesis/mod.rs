//! Circuit synthesis: our constraint system and the witness it produces.

mod density;
pub mod pool;
mod witness;

pub use density::Density;
pub use pool::{HostPinner, ScalarPool};
pub use witness::{synthesize, Recycle, Witness, WitnessBuilder};
