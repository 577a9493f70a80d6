//! Circuit synthesis: our constraint systems and what they produce (the full witness, or
//! only the variable assignment).

mod assignment;
mod density;
mod witness;

pub use assignment::{assign, Assignment, AssignmentWriter, Region};
pub use density::Density;
pub use witness::{synthesize, Evaluations, Recycle, Witness, WitnessBuilder};
