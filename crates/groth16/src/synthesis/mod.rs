//! Circuit synthesis: our constraint system and the witness it produces.

mod density;
mod witness;

pub use density::Density;
pub use witness::{synthesize, Witness, WitnessBuilder};
