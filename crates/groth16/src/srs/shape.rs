//! Checks that a proving key was made for the circuit of a witness.

use super::ProvingKey;
use crate::poly::Domain;
use crate::{Error, Result, Witness};

impl ProvingKey {
    /// Compares every query length with what the witness needs, naming the first mismatch.
    pub fn check_fits(&self, w: &Witness) -> Result<()> {
        let domain = Domain::for_len(w.num_constraints())?;
        let b = w.b_input_density.count() + w.b_aux_density.count();
        let checks = [
            ("ic (public inputs)", self.vk.ic.len(), w.inputs.len()),
            ("h (domain size - 1)", self.h.len(), domain.n - 1),
            ("l (aux variables)", self.l.len(), w.aux.len()),
            (
                "a (inputs + A-dense aux)",
                self.a.len(),
                w.inputs.len() + w.a_aux_density.count(),
            ),
            ("b_g1 (B-dense variables)", self.b_g1.len(), b),
            ("b_g2 (B-dense variables)", self.b_g2.len(), b),
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
