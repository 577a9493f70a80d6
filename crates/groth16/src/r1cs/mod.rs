//! The recorded constraint system: A, B and C as sparse matrices over z = (inputs ‖ aux).
//!
//! A circuit's constraints do not depend on its witness, so they are recorded once per circuit
//! (see [`MatrixRecorder`]) and kept (see [`ConstraintMatrices::write_file`]). Then a proof
//! needs only the assignment z: the constraint evaluations are the products
//! a = A·z, b = B·z, c = C·z ([`ConstraintMatrices::evaluate`] on the CPU, a kernel on a GPU),
//! and the query densities are properties of the matrices, not of the witness.
//!
//! Rows are bellperson's: the circuit's constraints in order, then one `x_i · 0 = 0` row per
//! public input (added by the recorder in one place, [`MatrixRecorder::finish`]). Column `j` is
//! input `j` for `j < num_inputs`, else aux `j − num_inputs`. Each entry names its coefficient
//! by an index into one table of distinct values, whose first two are 1 and −1, so the common
//! ±1 terms cost an addition, not a multiplication.

mod evaluate;
mod file;
mod record;
mod repeat;
mod sliced;

pub use record::MatrixRecorder;
pub use repeat::record_repeated;
pub use sliced::{record_sliced, record_sliced_in_blocks};

use blstrs::Scalar;

use crate::synthesis::Density;

/// Index of the coefficient 1 in [`ConstraintMatrices::coefficients`].
pub const COEFF_ONE: u32 = 0;
/// Index of the coefficient −1.
pub const COEFF_MINUS_ONE: u32 = 1;

/// One non-zero entry of a row: `coefficients[coeff] · z[column]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Entry {
    pub column: u32,
    pub coeff: u32,
}

// SAFETY: two u32 under repr(C): no padding, every bit pattern is an entry (indices are
// checked after reading).
unsafe impl crate::exec::bulk_read::Plain for Entry {}

/// A matrix in compressed sparse rows: row `r`'s entries are
/// `entries[row_starts[r] .. row_starts[r + 1]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SparseMatrix {
    pub row_starts: Vec<u32>,
    pub entries: Vec<Entry>,
}

impl SparseMatrix {
    pub fn rows(&self) -> usize {
        self.row_starts.len().saturating_sub(1)
    }

    pub fn nonzeros(&self) -> usize {
        self.entries.len()
    }

    pub fn row(&self, r: usize) -> &[Entry] {
        &self.entries[self.row_starts[r] as usize..self.row_starts[r + 1] as usize]
    }

    fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&self.row_starts[..]) + std::mem::size_of_val(&self.entries[..])
    }
}

/// The R1CS of one circuit, as the prover and the key generator need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstraintMatrices {
    /// Public inputs, ONE included.
    pub num_inputs: usize,
    pub num_aux: usize,
    pub a: SparseMatrix,
    pub b: SparseMatrix,
    pub c: SparseMatrix,
    /// The distinct coefficient values; `[0]` is 1 and `[1]` is −1.
    pub coefficients: Vec<Scalar>,
    /// Aux variables with a non-zero coefficient somewhere in A (inputs are all dense in A
    /// through their `x · 0 = 0` rows).
    pub a_aux_density: Density,
    /// Inputs and aux variables with a non-zero coefficient somewhere in B.
    pub b_input_density: Density,
    pub b_aux_density: Density,
}

impl ConstraintMatrices {
    /// Constraints, the per-input rows included.
    pub fn num_constraints(&self) -> usize {
        self.a.rows()
    }

    /// Non-zero entries of A, B and C together.
    pub fn nonzeros(&self) -> usize {
        self.a.nonzeros() + self.b.nonzeros() + self.c.nonzeros()
    }

    /// Bytes of memory the matrices occupy.
    pub fn heap_bytes(&self) -> usize {
        self.a.heap_bytes()
            + self.b.heap_bytes()
            + self.c.heap_bytes()
            + std::mem::size_of_val(&self.coefficients[..])
            + (self.a_aux_density.words().len()
                + self.b_input_density.words().len()
                + self.b_aux_density.words().len())
                * 8
    }

    /// The counts a placement is planned with (also read from a recording's header alone,
    /// [`read_shape`](Self::read_shape)).
    pub fn shape(&self) -> MatricesShape {
        MatricesShape {
            num_inputs: self.num_inputs,
            num_aux: self.num_aux,
            b_dense_inputs: self.b_input_density.count(),
            rows: self.num_constraints(),
            coefficients: self.coefficients.len(),
            nonzeros: [&self.a, &self.b, &self.c].map(SparseMatrix::nonzeros),
        }
    }

    /// `(inputs, aux)` counts a circuit must have to be described by these matrices.
    pub fn assignment_shape(&self) -> (usize, usize) {
        (self.num_inputs, self.num_aux)
    }
}

/// What a placement needs to know of recorded matrices: their counts, not their entries. A
/// daemon plans with it at start from a recording's header, before the matrices (gigabytes at
/// 32 GiB) are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatricesShape {
    /// Public inputs, ONE included.
    pub num_inputs: usize,
    pub num_aux: usize,
    /// Inputs with a non-zero coefficient somewhere in B.
    pub b_dense_inputs: usize,
    /// Constraints, the per-input rows included.
    pub rows: usize,
    /// Distinct coefficient values.
    pub coefficients: usize,
    /// Non-zero entries of A, B and C.
    pub nonzeros: [usize; 3],
}

impl MatricesShape {
    /// Host bytes of matrices of this shape: [`ConstraintMatrices::heap_bytes`] exactly.
    pub fn host_bytes(&self) -> u64 {
        let rows = 3 * (self.rows as u64 + 1) * 4;
        let entries: u64 = self.nonzeros.iter().map(|&n| n as u64 * 8).sum();
        let words = |bits: usize| bits.div_ceil(64) as u64 * 8;
        rows + entries
            + self.coefficients as u64 * 32
            + 2 * words(self.num_aux)
            + words(self.num_inputs)
    }
}

#[cfg(test)]
mod tests;
