//! `WitnessBuilder`: a bellpepper `ConstraintSystem` that records what the prover needs.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

use std::sync::Arc;

use super::pool::{self, ScalarPool};
use super::Density;
use crate::r1cs::ConstraintMatrices;
use crate::{Error, Result};

/// A synthesized circuit: per-constraint evaluations of the A, B and C linear combinations, the
/// variable assignment, and which variables the A and B queries touch.
///
/// The evaluations are either here (`a`, `b`, `c`) or still to be computed from the circuit's
/// recorded matrices (`matrices` set, `a`, `b`, `c` empty): a GPU backend then computes them
/// on the device, so only the assignment crosses PCIe; [`Witness::evaluate`] does it on the CPU.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Witness {
    pub a: Vec<Scalar>,
    pub b: Vec<Scalar>,
    pub c: Vec<Scalar>,
    /// Set while a, b, c are not computed: they are these matrices times (inputs ‖ aux).
    pub matrices: Option<Arc<ConstraintMatrices>>,
    /// Public inputs, `inputs[0]` being the constant ONE.
    pub inputs: Vec<Scalar>,
    pub aux: Vec<Scalar>,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
    /// Where a, b, c and aux go back to when the witness is dropped.
    pub recycle: Recycle,
}

/// The pool a witness's buffers came from; compares equal whatever it holds.
#[derive(Clone, Default)]
pub struct Recycle(pub Option<Arc<ScalarPool>>);

impl PartialEq for Recycle {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Recycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "pooled" } else { "owned" })
    }
}

impl Drop for Witness {
    fn drop(&mut self) {
        if let Some(pool) = self.recycle.0.take() {
            for v in [&mut self.a, &mut self.b, &mut self.c, &mut self.aux] {
                pool.give(std::mem::take(v));
            }
        }
    }
}

impl Witness {
    /// A witness whose evaluations are left to the prover: the assignment, and the matrices
    /// (which also give the densities).
    pub fn deferred(
        inputs: Vec<Scalar>,
        aux: Vec<Scalar>,
        matrices: Arc<ConstraintMatrices>,
        recycle: Recycle,
    ) -> Result<Self> {
        matrices.check_assignment(&inputs, &aux)?;
        Ok(Witness {
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
            a_aux_density: matrices.a_aux_density.clone(),
            b_input_density: matrices.b_input_density.clone(),
            b_aux_density: matrices.b_aux_density.clone(),
            matrices: Some(matrices),
            inputs,
            aux,
            recycle,
        })
    }

    /// [`deferred`](Self::deferred) from an [`Assignment`](super::Assignment), whose aux
    /// buffer (and its way back to the pool) the witness takes over.
    pub fn from_assignment(
        mut a: super::Assignment,
        matrices: Arc<ConstraintMatrices>,
    ) -> Result<Self> {
        let (inputs, aux) = (std::mem::take(&mut a.inputs), std::mem::take(&mut a.aux));
        let recycle = std::mem::take(&mut a.recycle);
        Self::deferred(inputs, aux, matrices, recycle)
    }

    /// Number of constraints, the per-input `x * 0 = 0` constraints included.
    pub fn num_constraints(&self) -> usize {
        match &self.matrices {
            Some(m) => m.num_constraints(),
            None => self.a.len(),
        }
    }

    /// Computes deferred evaluations on the CPU (into the witness's pool, if any); a no-op when
    /// they are already here.
    pub fn evaluate(&mut self) -> Result<()> {
        let Some(m) = self.matrices.take() else {
            return Ok(());
        };
        let pool = self.recycle.0.clone();
        for v in [&mut self.a, &mut self.b, &mut self.c] {
            if let Some(p) = &pool {
                *v = p.take();
            }
        }
        m.evaluate(
            &self.inputs,
            &self.aux,
            [&mut self.a, &mut self.b, &mut self.c],
            pool.as_deref(),
        )
    }

    /// Bytes held by this witness; what the engine reserves from its memory budget.
    pub fn heap_bytes(&self) -> usize {
        let scalars = self.a.capacity() + self.b.capacity() + self.c.capacity();
        let vars = self.inputs.capacity() + self.aux.capacity();
        (scalars + vars) * std::mem::size_of::<Scalar>()
            + (self.aux.len() * 2 + self.inputs.len()) / 8
    }

    /// A copy whose big vectors come from the pool installed on this thread (if any), copied
    /// in parallel: how benchmarks replay one prepared witness as many partitions.
    pub fn copy_pooled(&self) -> Witness {
        use rayon::prelude::*;
        let pool = pool::current_pool();
        let mut w = Witness::default();
        for (dst, src) in [
            (&mut w.a, &self.a),
            (&mut w.b, &self.b),
            (&mut w.c, &self.c),
            (&mut w.aux, &self.aux),
        ] {
            if let Some(p) = &pool {
                *dst = p.take();
            }
            pool::reserve(dst, src.len(), pool.as_deref());
            dst.spare_capacity_mut()[..src.len()]
                .par_chunks_mut(1 << 16)
                .zip(src.par_chunks(1 << 16))
                .for_each(|(d, s)| {
                    for (d, s) in d.iter_mut().zip(s) {
                        d.write(*s);
                    }
                });
            // SAFETY: the first src.len() elements were just written.
            unsafe { dst.set_len(src.len()) };
        }
        w.inputs.clone_from(&self.inputs);
        w.a_aux_density = self.a_aux_density.clone();
        w.b_input_density = self.b_input_density.clone();
        w.b_aux_density = self.b_aux_density.clone();
        w.matrices.clone_from(&self.matrices);
        w.recycle = Recycle(pool);
        w
    }

    /// Bytes a witness of this shape occupies, for reserving memory before synthesis:
    /// `constraints` evaluations of each of a, b, c (0 when deferred) and the assignment.
    pub fn estimated_bytes(constraints: usize, inputs: usize, aux: usize) -> usize {
        (3 * constraints + inputs + aux) * std::mem::size_of::<Scalar>() + (2 * aux + inputs) / 8
    }
}

/// Synthesizes `circuit` the way bellperson's prover does: ONE as input 0, the circuit, then one
/// `input * 0 = 0` constraint per public input (so A is never zero at an input).
///
/// The big vectors come from the pool installed with [`pool::with_pool`], if any.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<Witness> {
    let mut cs = match pool::current_pool() {
        Some(p) => WitnessBuilder::pooled(p),
        None => WitnessBuilder::new(),
    };
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    cs.finish()
}

/// The constraint system that produces a [`Witness`].
#[derive(Debug, Default)]
pub struct WitnessBuilder {
    w: Witness,
    /// The first bad variable reference seen by `enforce`, which cannot return an error itself.
    fault: Option<String>,
}

impl WitnessBuilder {
    /// Preallocates for a circuit of known shape, so synthesis never reallocates.
    pub fn with_capacity(constraints: usize, inputs: usize, aux: usize) -> Self {
        let w = Witness {
            a: Vec::with_capacity(constraints + inputs),
            b: Vec::with_capacity(constraints + inputs),
            c: Vec::with_capacity(constraints + inputs),
            inputs: Vec::with_capacity(inputs),
            aux: Vec::with_capacity(aux),
            a_aux_density: Density::with_capacity(aux),
            b_input_density: Density::with_capacity(inputs),
            b_aux_density: Density::with_capacity(aux),
            matrices: None,
            recycle: Recycle(None),
        };
        Self { w, fault: None }
    }

    /// Draws a, b, c and aux from `pool`; the witness gives them back when dropped.
    pub fn pooled(pool: Arc<ScalarPool>) -> Self {
        let mut w = Witness::default();
        for v in [&mut w.a, &mut w.b, &mut w.c, &mut w.aux] {
            *v = pool.take();
        }
        w.recycle = Recycle(Some(pool));
        Self { w, fault: None }
    }

    /// Adds the per-input constraints and returns the witness.
    pub fn finish(mut self) -> Result<Witness> {
        for i in 0..self.w.inputs.len() {
            self.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
        }
        match self.fault {
            Some(f) => Err(Error::Synthesis(f)),
            None => Ok(std::mem::take(&mut self.w)),
        }
    }

    /// Evaluates `lc`, marking the variables with non-zero coefficients in the given densities.
    fn eval(
        &mut self,
        lc: &LinearCombination<Scalar>,
        mut input_density: Option<&mut Density>,
        mut aux_density: Option<&mut Density>,
    ) -> Scalar {
        let mut acc = Scalar::ZERO;
        for (&i, coeff) in lc.iter_inputs() {
            if coeff.is_zero_vartime() {
                continue;
            }
            let Some(value) = self.w.inputs.get(i) else {
                self.record_fault("input", i, self.w.inputs.len());
                continue;
            };
            acc += if *coeff == Scalar::ONE {
                *value
            } else {
                *value * coeff
            };
            if let Some(d) = input_density.as_deref_mut() {
                d.mark(i);
            }
        }
        for (&i, coeff) in lc.iter_aux() {
            if coeff.is_zero_vartime() {
                continue;
            }
            let Some(value) = self.w.aux.get(i) else {
                self.record_fault("aux", i, self.w.aux.len());
                continue;
            };
            acc += if *coeff == Scalar::ONE {
                *value
            } else {
                *value * coeff
            };
            if let Some(d) = aux_density.as_deref_mut() {
                d.mark(i);
            }
        }
        acc
    }

    fn record_fault(&mut self, kind: &str, index: usize, len: usize) {
        self.fault.get_or_insert_with(|| {
            format!(
                "constraint {} uses {kind} variable {index}, but only {len} exist",
                self.w.a.len()
            )
        });
    }
}

impl ConstraintSystem<Scalar> for WitnessBuilder {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        pool::push(&mut self.w.aux, value, self.w.recycle.0.as_deref());
        self.w.a_aux_density.push(false);
        self.w.b_aux_density.push(false);
        Ok(Variable(Index::Aux(self.w.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.w.inputs.push(f()?);
        self.w.b_input_density.push(false);
        Ok(Variable(Index::Input(self.w.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());

        // Inputs are dense in A through their `x * 0 = 0` constraints: no tracker for them.
        let mut a_aux = std::mem::take(&mut self.w.a_aux_density);
        let mut b_in = std::mem::take(&mut self.w.b_input_density);
        let mut b_aux = std::mem::take(&mut self.w.b_aux_density);
        let va = self.eval(&a, None, Some(&mut a_aux));
        let vb = self.eval(&b, Some(&mut b_in), Some(&mut b_aux));
        let vc = self.eval(&c, None, None);
        self.w.a_aux_density = a_aux;
        self.w.b_input_density = b_in;
        self.w.b_aux_density = b_aux;

        let pool = self.w.recycle.0.as_deref();
        pool::push(&mut self.w.a, va, pool);
        pool::push(&mut self.w.b, vb, pool);
        pool::push(&mut self.w.c, vc, pool);
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

    fn is_extensible() -> bool {
        true
    }

    /// Appends a sub-circuit synthesized in its own builder (whose input 0 is its own ONE).
    fn extend(&mut self, other: &Self) {
        self.w.a_aux_density.extend(&other.w.a_aux_density, false);
        self.w
            .b_input_density
            .extend(&other.w.b_input_density, true);
        self.w.b_aux_density.extend(&other.w.b_aux_density, false);
        let pool = self.w.recycle.0.as_deref();
        for (mine, theirs) in [
            (&mut self.w.a, &other.w.a),
            (&mut self.w.b, &other.w.b),
            (&mut self.w.c, &other.w.c),
            (&mut self.w.aux, &other.w.aux),
        ] {
            pool::reserve(mine, theirs.len(), pool);
            mine.extend_from_slice(theirs);
        }
        self.w
            .inputs
            .extend_from_slice(other.w.inputs.get(1..).unwrap_or_default());
        if self.fault.is_none() {
            self.fault.clone_from(&other.fault);
        }
    }
}
