//! Checks that a proving key was made for the circuit of a witness.

use super::{ProvingKey, QueryLengths};
use crate::poly::Domain;
use crate::{Error, Result, Witness};

impl QueryLengths {
    /// Compares every query length with what the witness needs, naming the first mismatch.
    pub fn check_fits(&self, w: &Witness) -> Result<()> {
        let domain = Domain::for_len(w.num_constraints())?;
        let b = w.b_input_density.count() + w.b_aux_density.count();
        let checks = [
            ("ic (public inputs)", self.ic, w.inputs.len()),
            ("h (domain size - 1)", self.h, domain.n - 1),
            ("l (aux variables)", self.l, w.aux.len()),
            (
                "a (inputs + A-dense aux)",
                self.a,
                w.inputs.len() + w.a_aux_density.count(),
            ),
            ("b_g1 (B-dense variables)", self.b_g1, b),
            ("b_g2 (B-dense variables)", self.b_g2, b),
        ];
        for (what, params, circuit) in checks {
            if params != circuit {
                return Err(Error::ShapeMismatch {
                    what,
                    params,
                    circuit,
                });
            }
        }
        Ok(())
    }
}

impl ProvingKey {
    /// See [`QueryLengths::check_fits`].
    pub fn check_fits(&self, w: &Witness) -> Result<()> {
        self.lengths().check_fits(w)
    }
}
