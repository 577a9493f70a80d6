//! Polynomials over the scalar field: the radix-2 domain, the NTT, and Groth16's quotient h.

mod domain;
mod h;
mod ntt;
mod par;

pub use domain::Domain;
pub use h::{h_coefficients, h_from_padded};
pub use ntt::{coset_forward, coset_inverse, distribute_powers, forward, inverse, Twiddles};
