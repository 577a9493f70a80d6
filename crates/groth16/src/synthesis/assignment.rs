//! `Assignment`: the values of a circuit's variables (public inputs and aux) and nothing else,
//! filled by [`AssignmentWriter`], a witness-only constraint system.
//!
//! Producing a, b, c at every `enforce` (what [`WitnessBuilder`](super::WitnessBuilder) does)
//! costs more than the values themselves. When the constraint matrices are known, a, b, c are
//! A·z, B·z, C·z for z = (inputs, aux), so synthesis only has to produce z: `enforce` never
//! calls its closures, namespaces are no-ops, and native code (e.g. a SHA-256 witness) can
//! write values straight into the buffer next to gadgets that allocate through the trait.
//!
//! Buffers are sized up front (the aux buffer from a [`ScalarPool`], reused and possibly
//! pinned), so the hot path never grows a vector or faults in fresh pages. Independent parts of
//! a circuit whose variable counts are known can be written by several threads, each into its
//! own region of the one buffer ([`Assignment::append_regions`]).

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bellpepper_core::{ConstraintSystem, Index, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use super::witness::{Recycle, Witness};
use crate::exec::pool::{self, ScalarPool};
use crate::r1cs::ConstraintMatrices;
use crate::{Error, Result};

/// The product path's synthesis: `circuit`'s assignment (through the gadgets, in an
/// [`AssignmentWriter`]) paired with its recorded `matrices`, a witness whose a, b, c the
/// prover computes. The aux buffer comes from the pool installed with [`pool::with_pool`].
pub fn assign<C: bellpepper_core::Circuit<Scalar>>(
    circuit: C,
    matrices: Arc<ConstraintMatrices>,
) -> Result<Witness> {
    let (inputs, aux) = matrices.assignment_shape();
    let a = Assignment::of_circuit(circuit, pool::current_pool(), inputs, aux)?;
    Witness::from_assignment(a, matrices)
}

/// The variable values of one circuit, in bellperson's order: `inputs[0]` is ONE, then the
/// public inputs in allocation order; `aux` holds the private variables in allocation order.
#[derive(Debug, Default)]
pub struct Assignment {
    pub inputs: Vec<Scalar>,
    pub aux: Vec<Scalar>,
    /// Where `aux` goes back to when the assignment is dropped (take it out to keep it).
    pub recycle: Recycle,
}

impl Drop for Assignment {
    fn drop(&mut self) {
        if let Some(pool) = self.recycle.0.take() {
            pool.give(std::mem::take(&mut self.aux));
        }
    }
}

/// How many input and aux values one part of a circuit allocates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Region {
    pub inputs: usize,
    pub aux: usize,
}

impl Assignment {
    /// An empty assignment with room for exactly `inputs` and `aux` values; the aux buffer comes
    /// from `pool` when one is given (and goes back to it when the assignment is dropped).
    pub fn with_capacity(pool: Option<Arc<ScalarPool>>, inputs: usize, aux: usize) -> Self {
        // Exactly `aux`: what the partition's memory reservation counted for it.
        let buf = match &pool {
            Some(p) => p.take_exact(aux),
            None => Vec::with_capacity(aux),
        };
        Self {
            inputs: Vec::with_capacity(inputs),
            aux: buf,
            recycle: Recycle(pool),
        }
    }

    /// Runs `f` on a writer that appends to this assignment within its capacity; whatever `f`
    /// wrote stays, even when it fails. Returns what `f` wrote.
    /// `circuit`'s values through its gadgets (ONE first), in room for `inputs` and `aux`
    /// values with the aux buffer from `pool`.
    pub fn of_circuit<C: bellpepper_core::Circuit<Scalar>>(
        circuit: C,
        pool: Option<Arc<ScalarPool>>,
        inputs: usize,
        aux: usize,
    ) -> Result<Self> {
        let mut a = Self::with_capacity(pool, inputs, aux);
        a.append(|w| {
            w.alloc_input(|| "one", || Ok(Scalar::ONE))?;
            Ok(circuit.synthesize(w)?)
        })?;
        Ok(a)
    }

    pub fn append<R>(
        &mut self,
        f: impl FnOnce(&mut AssignmentWriter<'_>) -> Result<R>,
    ) -> Result<(R, Region)> {
        let (input_base, aux_base) = (self.inputs.len(), self.aux.len());
        let mut w = AssignmentWriter::new(
            Sink::new(self.inputs.spare_capacity_mut(), input_base, false),
            Sink::new(self.aux.spare_capacity_mut(), aux_base, false),
        );
        let result = f(&mut w);
        let written = w.written();
        let fault = w.fault.take();
        // SAFETY: the writer initialized exactly the first `written` spare elements of each.
        unsafe {
            self.inputs.set_len(input_base + written.inputs);
            self.aux.set_len(aux_base + written.aux);
        }
        match (fault, result) {
            (Some(f), _) => Err(Error::Synthesis(f)),
            (None, r) => Ok((r?, written)),
        }
    }

    /// Appends `regions.len()` parts of a circuit, part `i` written by `f(i, writer)` into its
    /// own region of exactly `regions[i]` values, on up to `threads` threads. Nothing is
    /// appended unless every part fills its region exactly.
    pub fn append_regions(
        &mut self,
        regions: &[Region],
        threads: usize,
        f: impl Fn(usize, &mut AssignmentWriter<'_>) -> Result<()> + Sync,
    ) -> Result<()> {
        let total = regions.iter().fold(Region::default(), |t, r| Region {
            inputs: t.inputs + r.inputs,
            aux: t.aux + r.aux,
        });
        let room = Region {
            inputs: self.inputs.capacity() - self.inputs.len(),
            aux: self.aux.capacity() - self.aux.len(),
        };
        if total.inputs > room.inputs || total.aux > room.aux {
            return Err(Error::Synthesis(format!(
                "{} regions need {} inputs and {} aux values, the assignment has room for {} and {}",
                regions.len(),
                total.inputs,
                total.aux,
                room.inputs,
                room.aux
            )));
        }
        let (mut input_base, mut aux_base) = (self.inputs.len(), self.aux.len());
        let mut inputs = &mut self.inputs.spare_capacity_mut()[..total.inputs];
        let mut aux = &mut self.aux.spare_capacity_mut()[..total.aux];
        let mut writers = Vec::with_capacity(regions.len());
        for r in regions {
            let (i, rest_i) = std::mem::take(&mut inputs).split_at_mut(r.inputs);
            let (a, rest_a) = std::mem::take(&mut aux).split_at_mut(r.aux);
            (inputs, aux) = (rest_i, rest_a);
            writers.push(Mutex::new(Some(AssignmentWriter::new(
                Sink::new(i, input_base, false),
                Sink::new(a, aux_base, false),
            ))));
            input_base += r.inputs;
            aux_base += r.aux;
        }

        let next = AtomicUsize::new(0);
        let results: Vec<Mutex<Option<Result<()>>>> =
            regions.iter().map(|_| Mutex::new(None)).collect();
        let work = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = writers.get(i) else { break };
            let taken = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            let Some(mut w) = taken else { continue };
            let outcome = f(i, &mut w);
            let outcome = match (w.fault.take(), outcome) {
                (Some(fault), _) => Err(Error::Synthesis(fault)),
                (None, Err(e)) => Err(e),
                (None, Ok(())) if w.written() != regions[i] => Err(Error::Synthesis(format!(
                    "part {i} allocated {:?}, its region holds {:?}",
                    w.written(),
                    regions[i]
                ))),
                (None, Ok(())) => Ok(()),
            };
            *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        };
        let threads = threads.clamp(1, regions.len().max(1));
        if threads == 1 {
            work();
        } else {
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(work);
                }
            });
        }
        for (i, r) in results.into_iter().enumerate() {
            match r.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(Ok(())) => {}
                Some(Err(e)) => return Err(e),
                None => return Err(Error::Synthesis(format!("part {i} was not written"))),
            }
        }
        // SAFETY: every region was filled exactly (checked above), so the first `total` spare
        // elements of each vector are initialized.
        unsafe {
            self.inputs.set_len(self.inputs.len() + total.inputs);
            self.aux.set_len(self.aux.len() + total.aux);
        }
        Ok(())
    }

    /// Runs `f` on a writer that keeps no values and returns how many it allocated: how a
    /// caller learns a region's size from one run of a part whose layout does not depend on its
    /// values.
    pub fn count<R>(f: impl FnOnce(&mut AssignmentWriter<'_>) -> Result<R>) -> Result<(R, Region)> {
        // The scratch is reused round-robin; it only has to hold one native write at a time.
        let mut inputs = vec![MaybeUninit::uninit(); 1 << 8];
        let mut aux = vec![MaybeUninit::uninit(); 1 << 12];
        let mut w = AssignmentWriter::new(
            Sink::new(&mut inputs, 0, true),
            Sink::new(&mut aux, 0, true),
        );
        let r = f(&mut w)?;
        Ok((r, w.written()))
    }
}

/// Where one kind of value (inputs or aux) goes: a slice and how much of it is written.
struct Sink<'a> {
    buf: &'a mut [MaybeUninit<Scalar>],
    len: usize,
    /// Index of `buf[0]` in the whole vector.
    base: usize,
    /// Counting mode: a full buffer wraps around instead of failing; `wrapped` values were
    /// discarded so far.
    wraps: bool,
    wrapped: usize,
}

impl<'a> Sink<'a> {
    fn new(buf: &'a mut [MaybeUninit<Scalar>], base: usize, wraps: bool) -> Self {
        Self {
            buf,
            len: 0,
            base,
            wraps,
            wrapped: 0,
        }
    }

    fn written(&self) -> usize {
        self.wrapped + self.len
    }

    /// Room for `n` more values, or false when the region is full.
    #[inline]
    fn room(&mut self, n: usize) -> bool {
        if self.buf.len() - self.len >= n {
            return true;
        }
        if self.wraps && n <= self.buf.len() {
            self.wrapped += self.len;
            self.len = 0;
            return true;
        }
        false
    }

    /// Appends one value, or false when the region is full.
    #[inline]
    fn push(&mut self, value: Scalar) -> bool {
        if !self.room(1) {
            return false;
        }
        self.buf[self.len].write(value);
        self.len += 1;
        true
    }
}

/// A witness-only `ConstraintSystem` writing into one region of an [`Assignment`]: `alloc`
/// and `alloc_input` store values, `enforce` does nothing. Native code appends values with
/// [`push`](Self::push) and [`push_bits`](Self::push_bits).
pub struct AssignmentWriter<'a> {
    inputs: Sink<'a>,
    aux: Sink<'a>,
    /// The first overflow, reported instead of whatever error a gadget made of it.
    fault: Option<String>,
}

const ZERO: Scalar = Scalar::ZERO;
const ONE: Scalar = Scalar::ONE;
/// 0 and 1 by index: a table load compiles to two plain 16-byte moves per value, where a
/// `match`/`if` on the bit went through the stack.
static BITS: [Scalar; 2] = [ZERO, ONE];

impl<'a> AssignmentWriter<'a> {
    fn new(inputs: Sink<'a>, aux: Sink<'a>) -> Self {
        Self {
            inputs,
            aux,
            fault: None,
        }
    }

    /// The values written so far.
    pub fn written(&self) -> Region {
        Region {
            inputs: self.inputs.written(),
            aux: self.aux.written(),
        }
    }

    #[cold]
    fn overflow(&mut self, what: &str, n: usize) -> SynthesisError {
        let sink = if what == "input" {
            &self.inputs
        } else {
            &self.aux
        };
        let msg = format!(
            "{n} more {what} values do not fit: the region holds {} and {} are written",
            sink.buf.len(),
            sink.len
        );
        self.fault.get_or_insert(msg);
        SynthesisError::Unsatisfiable
    }

    /// Appends one aux value.
    #[inline]
    pub fn push(&mut self, value: Scalar) -> Result<(), SynthesisError> {
        if self.aux.push(value) {
            return Ok(());
        }
        Err(self.overflow("aux", 1))
    }

    /// Appends one aux bit (0 or 1).
    #[inline]
    pub fn push_bit(&mut self, bit: bool) -> Result<(), SynthesisError> {
        self.push(BITS[usize::from(bit)])
    }

    /// Appends, lowest first, the bits of `bits` at the positions set in `mask`, as 0/1 values.
    #[inline]
    pub fn push_bits(&mut self, bits: u64, mask: u64) -> Result<(), SynthesisError> {
        let n = mask.count_ones() as usize;
        if !self.aux.room(n) {
            return Err(self.overflow("aux", n));
        }
        let dst = &mut self.aux.buf[self.aux.len..self.aux.len + n];
        if mask & mask.wrapping_add(1) == 0 {
            // A run of low bits, the common case: no mask walking.
            for (i, d) in dst.iter_mut().enumerate() {
                d.write(BITS[((bits >> i) & 1) as usize]);
            }
        } else {
            let mut m = mask;
            for d in dst.iter_mut() {
                d.write(BITS[((bits >> m.trailing_zeros()) & 1) as usize]);
                m &= m - 1;
            }
        }
        self.aux.len += n;
        Ok(())
    }

    /// Appends the 32 bit pairs (a_i, b_i), i = 0..32, as 0/1 values: a_0, b_0, a_1, b_1, ...
    #[inline]
    pub fn push_bit_pairs(&mut self, a: u32, b: u32) -> Result<(), SynthesisError> {
        if !self.aux.room(64) {
            return Err(self.overflow("aux", 64));
        }
        let dst = &mut self.aux.buf[self.aux.len..self.aux.len + 64];
        for (i, pair) in dst.chunks_exact_mut(2).enumerate() {
            pair[0].write(BITS[((a >> i) & 1) as usize]);
            pair[1].write(BITS[((b >> i) & 1) as usize]);
        }
        self.aux.len += 64;
        Ok(())
    }

    /// Appends one public input.
    pub fn push_input(&mut self, value: Scalar) -> Result<(), SynthesisError> {
        if self.inputs.push(value) {
            return Ok(());
        }
        Err(self.overflow("input", 1))
    }

    fn next_aux(&self) -> Variable {
        Variable::new_unchecked(Index::Aux(self.aux.base + self.aux.written()))
    }
}

impl ConstraintSystem<Scalar> for AssignmentWriter<'_> {
    nameless_root!();

    // Bounds only on the arguments used: names are ignored.
    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
    {
        let var = self.next_aux();
        self.push(f()?)?;
        Ok(var)
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
    {
        let var = Variable::new_unchecked(Index::Input(self.inputs.base + self.inputs.written()));
        self.push_input(f()?)?;
        Ok(var)
    }

    /// Nothing to check: the constraints are recorded once, elsewhere, and multiplied by the
    /// assignment later.
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::num::AllocatedNum;

    fn values(n: u64) -> Vec<Scalar> {
        (0..n).map(Scalar::from).collect()
    }

    /// Allocates `aux` values 0.. (plus `inputs` inputs) through the trait, as a gadget would.
    fn part(w: &mut AssignmentWriter<'_>, from: u64, inputs: u64, aux: u64) -> Result<()> {
        for i in 0..inputs {
            w.alloc_input(|| "", || Ok(Scalar::from(1000 + from + i)))?;
        }
        for i in 0..aux {
            AllocatedNum::alloc(&mut *w, || Ok(Scalar::from(from + i)))?;
        }
        Ok(())
    }

    #[test]
    fn regions_written_in_parallel_equal_a_sequential_run() {
        let regions = [Region { inputs: 1, aux: 5 }; 7];
        let mut seq = Assignment::with_capacity(None, 7, 35);
        for i in 0..7u64 {
            seq.append(|w| part(w, i * 5, 1, 5)).unwrap();
        }
        for threads in [1, 3, 8] {
            let mut par = Assignment::with_capacity(None, 7, 35);
            par.append_regions(&regions, threads, |i, w| part(w, i as u64 * 5, 1, 5))
                .unwrap();
            assert_eq!(par.aux, seq.aux, "{threads} threads");
            assert_eq!(par.inputs, seq.inputs, "{threads} threads");
        }
        assert_eq!(seq.aux, values(35));
    }

    #[test]
    fn a_part_that_does_not_fill_its_region_appends_nothing() {
        let mut a = Assignment::with_capacity(None, 0, 10);
        let err = a
            .append_regions(&[Region { inputs: 0, aux: 5 }; 2], 2, |i, w| {
                part(w, 0, 0, 5 - i as u64)
            })
            .unwrap_err()
            .to_string();
        assert!(err.contains("part 1 allocated"), "{err}");
        assert!(a.aux.is_empty());
    }

    #[test]
    fn overflow_is_a_named_error_and_keeps_what_fit() {
        let mut a = Assignment::with_capacity(None, 1, 4);
        let err = a.append(|w| part(w, 0, 0, 6)).unwrap_err().to_string();
        assert!(err.contains("1 more aux values do not fit"), "{err}");
        assert_eq!(a.aux, values(4));
        let err = a
            .append_regions(&[Region { inputs: 2, aux: 0 }], 1, |_, _| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("room for 1 and 0"), "{err}");
    }

    #[test]
    fn native_bits_land_in_allocation_order() {
        let mut a = Assignment::with_capacity(None, 0, 200);
        a.append(|w| {
            w.push_bits(0b1011, 0b1111)?;
            w.push_bits(0b1010_0000, 0b1110_0000)?;
            w.push_bit_pairs(0b01, 0b10)?;
            Ok(())
        })
        .unwrap();
        let bits: Vec<u8> = a.aux.iter().map(|v| u8::from(*v == ONE)).collect();
        assert_eq!(bits[..7], [1, 1, 0, 1, 1, 0, 1]);
        assert_eq!(bits[7..11], [1, 0, 0, 1]);
        assert!(bits[11..71].iter().all(|&b| b == 0));
        assert_eq!(a.aux.len(), 71);
    }

    #[test]
    fn counting_keeps_no_values_but_counts_them_all() {
        let ((), r) = Assignment::count(|w| {
            for _ in 0..1000 {
                w.push_bits(!0, !0)?;
            }
            part(w, 0, 3, 7)
        })
        .unwrap();
        assert_eq!(
            r,
            Region {
                inputs: 3,
                aux: 64_007
            }
        );
    }

    #[test]
    fn pooled_buffers_go_back_when_dropped_and_serve_their_own_size_only() {
        let pool = ScalarPool::new(None, usize::MAX);
        let a = Assignment::with_capacity(Some(pool.clone()), 1, 1 << 16);
        let addr = a.aux.as_ptr();
        drop(a);
        assert_eq!(pool.idle_bytes(), 32 << 16, "given back");
        // A smaller assignment does not hold the larger buffer: its memory reservation counts
        // its own size only.
        let small = Assignment::with_capacity(Some(pool.clone()), 1, 1 << 15);
        assert_eq!(small.aux.capacity(), 1 << 15);
        assert_eq!(pool.idle_bytes(), 32 << 16, "the larger stays idle");
        let again = Assignment::with_capacity(Some(pool.clone()), 1, 1 << 16);
        assert_eq!(again.aux.as_ptr(), addr, "the buffer is reused at its size");
    }
}
