//! a = A·z, b = B·z, c = C·z on the CPU: one pass over each matrix, rows in parallel.

use std::mem::MaybeUninit;

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{ConstraintMatrices, SparseMatrix, COEFF_MINUS_ONE, COEFF_ONE};
use crate::exec::pool::{reserve, ScalarPool};
use crate::{Error, Result};

/// Rows per parallel task: large enough to amortise scheduling, small enough to balance
/// matrices whose long rows (packed equalities, hash rounds) cluster.
const ROWS_PER_TASK: usize = 1 << 13;

impl ConstraintMatrices {
    /// Checks that an assignment has the matrices' shape.
    pub fn check_assignment(&self, inputs: &[Scalar], aux: &[Scalar]) -> Result<()> {
        if inputs.len() != self.num_inputs {
            return Err(Error::ShapeMismatch {
                what: "public inputs",
                params: self.num_inputs,
                circuit: inputs.len(),
            });
        }
        if aux.len() != self.num_aux {
            return Err(Error::ShapeMismatch {
                what: "aux variables",
                params: self.num_aux,
                circuit: aux.len(),
            });
        }
        Ok(())
    }

    /// Computes A·z, B·z and C·z for z = (inputs ‖ aux) into `a`, `b`, `c` (replacing their
    /// contents). Pooled buffers grow by the pool's rule (never reallocated in place).
    pub fn evaluate(
        &self,
        inputs: &[Scalar],
        aux: &[Scalar],
        [a, b, c]: [&mut Vec<Scalar>; 3],
        pool: Option<&ScalarPool>,
    ) -> Result<()> {
        self.check_assignment(inputs, aux)?;
        let rows = self.num_constraints();
        for (m, out) in [(&self.a, a), (&self.b, b), (&self.c, c)] {
            out.clear();
            reserve(out, rows, pool);
            product(
                m,
                &self.coefficients,
                inputs,
                aux,
                &mut out.spare_capacity_mut()[..rows],
            );
            // SAFETY: `product` wrote every one of the first `rows` elements.
            unsafe { out.set_len(rows) };
        }
        Ok(())
    }
}

/// out[r] = Σ coefficients[e.coeff] · z[e.column] over row r's entries.
fn product(
    m: &SparseMatrix,
    coefficients: &[Scalar],
    inputs: &[Scalar],
    aux: &[Scalar],
    out: &mut [MaybeUninit<Scalar>],
) {
    let n_in = inputs.len();
    out.par_chunks_mut(ROWS_PER_TASK)
        .enumerate()
        .for_each(|(task, chunk)| {
            let first = task * ROWS_PER_TASK;
            for (i, slot) in chunk.iter_mut().enumerate() {
                let mut acc = Scalar::ZERO;
                for e in m.row(first + i) {
                    let col = e.column as usize;
                    let v = if col < n_in {
                        inputs[col]
                    } else {
                        aux[col - n_in]
                    };
                    match e.coeff {
                        COEFF_ONE => acc += v,
                        COEFF_MINUS_ONE => acc -= v,
                        id => acc += v * coefficients[id as usize],
                    }
                }
                slot.write(acc);
            }
        });
}
