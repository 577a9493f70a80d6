//! `WitnessBuilder`: a bellpepper `ConstraintSystem` that records what the prover needs.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

use std::sync::Arc;

use super::Density;
use crate::exec::pool::{self, ScalarPool};
use crate::r1cs::ConstraintMatrices;
use crate::{Error, Result};

/// A synthesized circuit: per-constraint evaluations of the A, B and C linear combinations, the
/// variable assignment, and which variables the A and B queries touch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Witness {
    pub evaluations: Evaluations,
    /// Public inputs, `inputs[0]` being the constant ONE.
    pub inputs: Vec<Scalar>,
    pub aux: Vec<Scalar>,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
    /// Where a, b, c and aux go back to when the witness is dropped.
    pub recycle: Recycle,
}

/// a, b, c: computed, or left to the prover (see `prover::EvaluationSite` for who decides).
#[derive(Clone, Debug, PartialEq)]
pub enum Evaluations {
    /// One value per constraint each.
    Evaluated {
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    },
    /// Still to compute: these matrices times (inputs ‖ aux). A GPU backend computes them on
    /// its device, so only the assignment crosses PCIe; [`Witness::evaluate`] does it on the
    /// CPU.
    Deferred(Arc<ConstraintMatrices>),
}

impl Default for Evaluations {
    fn default() -> Self {
        Self::Evaluated {
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
        }
    }
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
            if let Evaluations::Evaluated { a, b, c } = &mut self.evaluations {
                for v in [a, b, c] {
                    pool.give(std::mem::take(v));
                }
            }
            pool.give(std::mem::take(&mut self.aux));
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
            a_aux_density: matrices.a_aux_density.clone(),
            b_input_density: matrices.b_input_density.clone(),
            b_aux_density: matrices.b_aux_density.clone(),
            evaluations: Evaluations::Deferred(matrices),
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
        match &self.evaluations {
            Evaluations::Deferred(m) => m.num_constraints(),
            Evaluations::Evaluated { a, .. } => a.len(),
        }
    }

    /// a, b, c when computed; `None` while deferred.
    pub fn evaluated(&self) -> Option<[&[Scalar]; 3]> {
        match &self.evaluations {
            Evaluations::Evaluated { a, b, c } => Some([a, b, c]),
            Evaluations::Deferred(_) => None,
        }
    }

    /// Computes deferred evaluations on the CPU (into the witness's pool, if any), a no-op when
    /// they are already here; returns a, b, c.
    pub fn evaluate(&mut self) -> Result<[&mut Vec<Scalar>; 3]> {
        if let Evaluations::Deferred(m) = &self.evaluations {
            let m = m.clone();
            let pool = self.recycle.0.clone();
            let mut abc: [Vec<Scalar>; 3] = Default::default();
            if let Some(p) = &pool {
                // The domain's length, which the prover pads them to: what the partition's
                // memory reservation counted for each (`PartitionPlan::pooled_buffers`).
                let rows = m.num_constraints();
                let domain = crate::poly::Domain::for_len(rows).map_or(rows, |d| d.n);
                abc = [(); 3].map(|_| p.take_exact(domain));
            }
            let [a, b, c] = &mut abc;
            let computed = m.evaluate(&self.inputs, &self.aux, [a, b, c], pool.as_deref());
            // Set before the error returns, so that the buffers go back to the pool.
            let [a, b, c] = abc;
            self.evaluations = Evaluations::Evaluated { a, b, c };
            computed?;
        }
        match &mut self.evaluations {
            Evaluations::Evaluated { a, b, c } => Ok([a, b, c]),
            Evaluations::Deferred(_) => unreachable!("evaluated just above"),
        }
    }

    /// Bytes held by this witness; what the engine reserves from its memory budget.
    pub fn heap_bytes(&self) -> usize {
        let scalars = match &self.evaluations {
            Evaluations::Evaluated { a, b, c } => a.capacity() + b.capacity() + c.capacity(),
            Evaluations::Deferred(_) => 0,
        };
        let vars = self.inputs.capacity() + self.aux.capacity();
        (scalars + vars) * std::mem::size_of::<Scalar>()
            + (self.aux.len() * 2 + self.inputs.len()) / 8
    }

    /// A copy whose big vectors come from the pool installed on this thread (if any), copied
    /// in parallel: how benchmarks replay one prepared witness as many partitions.
    pub fn copy_pooled(&self) -> Witness {
        use rayon::prelude::*;
        let pool = pool::current_pool();
        let copy = |src: &[Scalar]| {
            let mut dst = pool
                .as_ref()
                .map(|p| p.take_exact(src.len()))
                .unwrap_or_default();
            pool::reserve(&mut dst, src.len(), pool.as_deref());
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
            dst
        };
        let evaluations = match &self.evaluations {
            Evaluations::Evaluated { a, b, c } => Evaluations::Evaluated {
                a: copy(a),
                b: copy(b),
                c: copy(c),
            },
            Evaluations::Deferred(m) => Evaluations::Deferred(m.clone()),
        };
        Witness {
            evaluations,
            inputs: self.inputs.clone(),
            aux: copy(&self.aux),
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
            recycle: Recycle(pool.clone()),
        }
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
            evaluations: Evaluations::Evaluated {
                a: Vec::with_capacity(constraints + inputs),
                b: Vec::with_capacity(constraints + inputs),
                c: Vec::with_capacity(constraints + inputs),
            },
            inputs: Vec::with_capacity(inputs),
            aux: Vec::with_capacity(aux),
            a_aux_density: Density::with_capacity(aux),
            b_input_density: Density::with_capacity(inputs),
            b_aux_density: Density::with_capacity(aux),
            recycle: Recycle(None),
        };
        Self { w, fault: None }
    }

    /// Draws a, b, c and aux from `pool`; the witness gives them back when dropped.
    pub fn pooled(pool: Arc<ScalarPool>) -> Self {
        let mut w = Witness::default();
        w.evaluations = Evaluations::Evaluated {
            a: pool.take(),
            b: pool.take(),
            c: pool.take(),
        };
        w.aux = pool.take();
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
        input_density: Option<&mut Density>,
        aux_density: Option<&mut Density>,
    ) -> Scalar {
        let mut acc = Scalar::ZERO;
        if let Some(i) = add_terms(&mut acc, lc.iter_inputs(), &self.w.inputs, input_density) {
            self.record_fault("input", i, self.w.inputs.len());
        }
        if let Some(i) = add_terms(&mut acc, lc.iter_aux(), &self.w.aux, aux_density) {
            self.record_fault("aux", i, self.w.aux.len());
        }
        acc
    }

    fn record_fault(&mut self, kind: &str, index: usize, len: usize) {
        self.fault.get_or_insert_with(|| {
            format!(
                "constraint {} uses {kind} variable {index}, but only {len} exist",
                self.w.num_constraints()
            )
        });
    }
}

/// One half of [`WitnessBuilder::eval`]: adds the `terms` over `values` (the inputs or the aux)
/// to `acc`, marking their indices in `density`. An index past `values` is skipped; the first
/// is returned for the caller's fault, which keeps only the first anyway.
#[inline]
fn add_terms<'a>(
    acc: &mut Scalar,
    terms: impl Iterator<Item = (&'a usize, &'a Scalar)>,
    values: &[Scalar],
    mut density: Option<&mut Density>,
) -> Option<usize> {
    let mut missing = None;
    for (&i, coeff) in terms {
        if coeff.is_zero_vartime() {
            continue;
        }
        let Some(value) = values.get(i) else {
            missing.get_or_insert(i);
            continue;
        };
        *acc += if *coeff == Scalar::ONE {
            *value
        } else {
            *value * coeff
        };
        if let Some(d) = density.as_deref_mut() {
            d.mark(i);
        }
    }
    missing
}

impl ConstraintSystem<Scalar> for WitnessBuilder {
    nameless_root!();

    fn new() -> Self {
        Self::default()
    }

    // Bounds only on the arguments used: names are ignored.
    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
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
    {
        self.w.inputs.push(f()?);
        self.w.b_input_density.push(false);
        Ok(Variable(Index::Input(self.w.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
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
        // A builder's witness is always evaluated: it is made so and never deferred.
        if let Evaluations::Evaluated { a, b, c } = &mut self.w.evaluations {
            pool::push(a, va, pool);
            pool::push(b, vb, pool);
            pool::push(c, vc, pool);
        }
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
        let append = |mine: &mut Vec<Scalar>, theirs: &[Scalar]| {
            pool::reserve(mine, theirs.len(), pool);
            mine.extend_from_slice(theirs);
        };
        if let (
            Evaluations::Evaluated { a, b, c },
            Evaluations::Evaluated {
                a: a2,
                b: b2,
                c: c2,
            },
        ) = (&mut self.w.evaluations, &other.w.evaluations)
        {
            append(a, a2);
            append(b, b2);
            append(c, c2);
        }
        append(&mut self.w.aux, &other.w.aux);
        self.w
            .inputs
            .extend_from_slice(other.w.inputs.get(1..).unwrap_or_default());
        if self.fault.is_none() {
            self.fault.clone_from(&other.fault);
        }
    }
}
