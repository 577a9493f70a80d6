//! `KeyAssembly`: a constraint system that records the R1CS matrices, for key generation.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::synthesis::Density;

/// One non-zero matrix entry: variable `var` has coefficient `coeff` in constraint `row`.
#[derive(Clone, Copy)]
pub(super) struct Entry {
    pub var: u32,
    pub row: u32,
    pub coeff: Scalar,
}

/// The A, B and C matrices, split by variable kind; values are never evaluated.
#[derive(Default)]
pub(super) struct KeyAssembly {
    pub num_inputs: usize,
    pub num_aux: usize,
    pub num_constraints: usize,
    /// Index 0: inputs, 1: aux; each of A, B, C.
    pub a: [Vec<Entry>; 2],
    pub b: [Vec<Entry>; 2],
    pub c: [Vec<Entry>; 2],
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
}

impl KeyAssembly {
    /// Adds the per-input `x * 0 = 0` constraints, as the prover does.
    pub fn finish(mut self) -> Self {
        for i in 0..self.num_inputs {
            self.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
        }
        self
    }
}

fn record(
    lc: &LinearCombination<Scalar>,
    row: usize,
    out: &mut [Vec<Entry>; 2],
    densities: [Option<&mut Density>; 2],
) {
    let [mut input_density, mut aux_density] = densities;
    for (&var, coeff) in lc.iter_inputs() {
        if !coeff.is_zero_vartime() {
            out[0].push(Entry {
                var: var as u32,
                row: row as u32,
                coeff: *coeff,
            });
            if let Some(d) = input_density.as_deref_mut() {
                d.mark(var);
            }
        }
    }
    for (&var, coeff) in lc.iter_aux() {
        if !coeff.is_zero_vartime() {
            out[1].push(Entry {
                var: var as u32,
                row: row as u32,
                coeff: *coeff,
            });
            if let Some(d) = aux_density.as_deref_mut() {
                d.mark(var);
            }
        }
    }
}

impl ConstraintSystem<Scalar> for KeyAssembly {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        // Key generation needs no witness: the value closure is never called.
        self.num_aux += 1;
        self.a_aux_density.push(false);
        self.b_aux_density.push(false);
        Ok(Variable(Index::Aux(self.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_inputs += 1;
        self.b_input_density.push(false);
        Ok(Variable(Index::Input(self.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let row = self.num_constraints;
        record(
            &a(LinearCombination::zero()),
            row,
            &mut self.a,
            [None, Some(&mut self.a_aux_density)],
        );
        record(
            &b(LinearCombination::zero()),
            row,
            &mut self.b,
            [
                Some(&mut self.b_input_density),
                Some(&mut self.b_aux_density),
            ],
        );
        record(
            &c(LinearCombination::zero()),
            row,
            &mut self.c,
            [None, None],
        );
        self.num_constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}
