//! `WitnessOnly`: a constraint system that keeps the assignment and nothing else.
//!
//! With a circuit's matrices recorded once, a proof needs only the values of its variables:
//! `enforce` never calls its closures (no linear combination is built or evaluated), and the
//! aux vector is a reused, preallocated buffer, so no page is zeroed or copied while it grows.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
use std::sync::Arc;

use super::pool::{self, ScalarPool};
use super::witness::{Recycle, Witness};
use crate::r1cs::ConstraintMatrices;
use crate::Result;

/// The assignment of a circuit: public inputs (ONE first) and aux values.
pub struct WitnessOnly {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
    pool: Option<Arc<ScalarPool>>,
}

impl WitnessOnly {
    /// Synthesizes `circuit`'s assignment and pairs it with its recorded `matrices`; the aux
    /// buffer comes from the pool installed with [`pool::with_pool`], if any.
    pub fn synthesize<C: Circuit<Scalar>>(
        circuit: C,
        matrices: Arc<ConstraintMatrices>,
    ) -> Result<Witness> {
        let pool = pool::current_pool();
        let mut aux = pool.as_ref().map(|p| p.take()).unwrap_or_default();
        pool::reserve(&mut aux, matrices.num_aux, pool.as_deref());
        let mut cs = WitnessOnly {
            inputs: Vec::with_capacity(matrices.num_inputs),
            aux,
            pool,
        };
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        let WitnessOnly { inputs, aux, pool } = cs;
        Witness::deferred(inputs, aux, matrices, Recycle(pool))
    }
}

impl ConstraintSystem<Scalar> for WitnessOnly {
    type Root = Self;

    fn new() -> Self {
        Self {
            inputs: Vec::new(),
            aux: Vec::new(),
            pool: None,
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        pool::push(&mut self.aux, f()?, self.pool.as_deref());
        Ok(Variable(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
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
