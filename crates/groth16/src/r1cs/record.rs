//! `MatrixRecorder`: a constraint system that records A, B and C without any witness.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{ConstraintMatrices, Entry, SparseMatrix, COEFF_MINUS_ONE, COEFF_ONE};
use crate::synthesis::Density;
use crate::{Error, Result};

/// Marks an aux column while recording (its final column depends on the final input count).
pub(super) const AUX_TAG: u32 = 1 << 31;

/// Hashes a coefficient's limbs with one multiply per limb: coefficients are looked up once per
/// matrix entry (hundreds of millions for a large circuit), where SipHash would dominate.
#[derive(Default)]
pub(super) struct LimbHasher(u64);

impl Hasher for LimbHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// Coefficient value (its limbs) → index into a coefficient table.
pub(super) type Interned = HashMap<[u64; 4], u32, BuildHasherDefault<LimbHasher>>;

/// Records a circuit's R1CS as [`ConstraintMatrices`]; values are never computed (allocation
/// closures are not called).
pub struct MatrixRecorder {
    m: ConstraintMatrices,
    /// Coefficient value (its limbs) → index into `m.coefficients`.
    interned: Interned,
    minus_one: Scalar,
    /// The first problem seen by `enforce`, which cannot return an error itself.
    fault: Option<String>,
    /// Constraints the circuit has enforced so far, recorded or not.
    rows_seen: usize,
    /// The rows this recording keeps (None: all); see `super::sliced`.
    share: Option<Share>,
}

/// One of `slices` interleaved shares of a circuit's rows: blocks of `block` rows, block `b`
/// kept by slice `b % slices`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Share {
    pub slice: usize,
    pub slices: usize,
    pub block: usize,
}

impl Share {
    pub fn keeps(&self, row: usize) -> bool {
        (row / self.block) % self.slices == self.slice
    }
}

impl Default for MatrixRecorder {
    fn default() -> Self {
        let minus_one = -Scalar::ONE;
        let empty = || SparseMatrix {
            row_starts: vec![0],
            entries: Vec::new(),
        };
        Self {
            m: ConstraintMatrices {
                num_inputs: 0,
                num_aux: 0,
                a: empty(),
                b: empty(),
                c: empty(),
                coefficients: vec![Scalar::ONE, minus_one],
                a_aux_density: Density::default(),
                b_input_density: Density::default(),
                b_aux_density: Density::default(),
            },
            interned: HashMap::default(),
            minus_one,
            fault: None,
            rows_seen: 0,
            share: None,
        }
    }
}

fn limbs(s: &Scalar) -> [u64; 4] {
    // Only used as a map key: any injective view of the value will do.
    let bytes = s.to_bytes_le();
    std::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap()))
}

impl MatrixRecorder {
    /// Records `circuit` the way the prover synthesizes it: ONE as input 0, the circuit, then
    /// the per-input rows.
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<ConstraintMatrices> {
        Self::recording(circuit)?.finish()
    }

    /// `circuit` recorded but not finished: aux columns still tagged, no per-input rows.
    pub(super) fn recording<C: Circuit<Scalar>>(circuit: C) -> Result<Self> {
        Self::recording_share(circuit, None)
    }

    /// `circuit` recorded, keeping only the rows of `share` (all with None).
    pub(super) fn recording_share<C: Circuit<Scalar>>(
        circuit: C,
        share: Option<Share>,
    ) -> Result<Self> {
        let mut r = Self {
            share,
            ..Self::default()
        };
        r.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut r)?;
        Ok(r)
    }

    /// The matrices recorded so far (unfinished).
    pub(super) fn matrices(&self) -> &ConstraintMatrices {
        &self.m
    }

    /// The recording's parts, for `super::sliced` to join: the rows the circuit enforced (kept
    /// or not), the matrices and the first fault.
    pub(super) fn into_parts(self) -> (usize, ConstraintMatrices, Option<String>) {
        (self.rows_seen, self.m, self.fault)
    }

    /// A whole recording from joined matrices (aux columns still tagged), the map that interned
    /// their coefficients (`intern_into`), and the first fault.
    pub(super) fn from_parts(
        m: ConstraintMatrices,
        interned: Interned,
        fault: Option<String>,
    ) -> Self {
        Self {
            rows_seen: m.a.rows(),
            m,
            interned,
            fault,
            ..Self::default()
        }
    }

    /// The coefficient table's index of `coeff`, added if new (as a recording interns it).
    pub(super) fn intern_into(
        coefficients: &mut Vec<Scalar>,
        seen: &mut Interned,
        coeff: &Scalar,
    ) -> u32 {
        let next = coefficients.len() as u32;
        let id = *seen.entry(limbs(coeff)).or_insert(next);
        if id == next {
            coefficients.push(*coeff);
        }
        id
    }

    /// This recording with its matrices replaced by `m`, which must use the same coefficient
    /// table (so that `finish` can add rows to it).
    pub(super) fn with_matrices(mut self, m: ConstraintMatrices) -> Self {
        debug_assert!(m.coefficients == self.m.coefficients);
        self.m = m;
        self
    }

    /// Adds one `x_i · 0 = 0` row per public input (A is then never zero at an input, which
    /// keeps the input side of the A query dense), and returns the matrices.
    pub fn finish(mut self) -> Result<ConstraintMatrices> {
        for i in 0..self.m.num_inputs {
            self.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
        }
        if let Some(f) = self.fault {
            return Err(Error::Synthesis(f));
        }
        let num_inputs = self.m.num_inputs as u64;
        if num_inputs + self.m.num_aux as u64 > u32::MAX as u64 {
            return Err(Error::Synthesis(format!(
                "{} inputs and {} aux variables: more columns than a matrix can index",
                num_inputs, self.m.num_aux
            )));
        }
        for m in [&mut self.m.a, &mut self.m.b, &mut self.m.c] {
            m.entries.par_iter_mut().for_each(|e| {
                if e.column & AUX_TAG != 0 {
                    e.column = (e.column & !AUX_TAG) + num_inputs as u32;
                }
            });
        }
        Ok(self.m)
    }

    fn intern(&mut self, coeff: Scalar) -> u32 {
        if coeff == Scalar::ONE {
            return COEFF_ONE;
        }
        if coeff == self.minus_one {
            return COEFF_MINUS_ONE;
        }
        Self::intern_into(&mut self.m.coefficients, &mut self.interned, &coeff)
    }

    /// Appends one row of `lc` to the matrix `which`, marking densities.
    fn row(
        &mut self,
        lc: &LinearCombination<Scalar>,
        which: Matrix,
    ) -> std::result::Result<(), String> {
        // The matrix is moved out while its row is appended, so that interning (which needs
        // `self`) can run inside the loop without a per-row buffer.
        let mut m = std::mem::take(self.matrix(which));
        let appended = self.append(&mut m, lc, which);
        let end = u32::try_from(m.entries.len())
            .map_err(|_| "more than 2^32 non-zero entries in one matrix".to_string());
        if let Ok(end) = end {
            m.row_starts.push(end);
        }
        *self.matrix(which) = m;
        appended.and(end.map(|_| ()))
    }

    fn append(
        &mut self,
        m: &mut SparseMatrix,
        lc: &LinearCombination<Scalar>,
        which: Matrix,
    ) -> std::result::Result<(), String> {
        let (num_inputs, num_aux) = (self.m.num_inputs, self.m.num_aux);
        debug_assert!(num_inputs < AUX_TAG as usize);
        for (&i, coeff) in lc.iter_inputs() {
            if coeff.is_zero_vartime() {
                continue;
            }
            if i >= num_inputs {
                return Err(format!("uses input {i}, but only {num_inputs} exist"));
            }
            if which == Matrix::B {
                self.m.b_input_density.mark(i);
            }
            let coeff = self.intern(*coeff);
            m.entries.push(Entry {
                column: i as u32,
                coeff,
            });
        }
        for (&i, coeff) in lc.iter_aux() {
            if coeff.is_zero_vartime() {
                continue;
            }
            if i >= num_aux {
                return Err(format!("uses aux {i}, but only {num_aux} exist"));
            }
            match which {
                Matrix::A => self.m.a_aux_density.mark(i),
                Matrix::B => self.m.b_aux_density.mark(i),
                Matrix::C => true,
            };
            // Inputs may still be allocated after this row: aux columns are tagged now and
            // placed after the final input count in `finish`.
            let column = u32::try_from(i)
                .ok()
                .filter(|&c| c < AUX_TAG)
                .ok_or_else(|| format!("aux {i} beyond the 2^31 a recording can index"))?;
            let coeff = self.intern(*coeff);
            m.entries.push(Entry {
                column: column | AUX_TAG,
                coeff,
            });
        }
        Ok(())
    }

    fn matrix(&mut self, which: Matrix) -> &mut SparseMatrix {
        match which {
            Matrix::A => &mut self.m.a,
            Matrix::B => &mut self.m.b,
            Matrix::C => &mut self.m.c,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Matrix {
    A,
    B,
    C,
}

impl ConstraintSystem<Scalar> for MatrixRecorder {
    nameless_root!();

    // Bounds only on the arguments used: recording ignores names and values.
    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError> {
        self.m.num_aux += 1;
        self.m.a_aux_density.push(false);
        self.m.b_aux_density.push(false);
        Ok(Variable(Index::Aux(self.m.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError> {
        self.m.num_inputs += 1;
        self.m.b_input_density.push(false);
        Ok(Variable(Index::Input(self.m.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let row = self.rows_seen;
        self.rows_seen += 1;
        if self.share.is_some_and(|s| !s.keeps(row)) {
            // Another slice records this row: its linear combinations are never built.
            return;
        }
        for (lc, which) in [
            (a(LinearCombination::zero()), Matrix::A),
            (b(LinearCombination::zero()), Matrix::B),
            (c(LinearCombination::zero()), Matrix::C),
        ] {
            if let Err(e) = self.row(&lc, which) {
                self.fault
                    .get_or_insert_with(|| format!("constraint {row}, {which:?}: {e}"));
            }
        }
    }
}
