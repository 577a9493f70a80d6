//! Recording a circuit that is a prefix followed by `n` identical parts — PoRep's challenges,
//! PoSt's sectors — from the prefix and one part, instead of running the gadgets `n` times.
//!
//! A 32 GiB PoRep partition's blank circuit is 18 identical challenges after a small prefix;
//! recording it through the gadgets took 95–109 s on one thread (722M non-zeros), which every
//! provider met at the first start with real parameter files. Here the circuit is recorded with
//! 0, 1 and 2 parts (side by side); part 1 is the difference between the first two; the matrices
//! of `n` parts are the prefix plus that part `n` times, each copy's new inputs and aux
//! variables moved past the previous copy's. The 2-part recording is the check: the prefix plus
//! the part twice must equal it entry for entry (rows, columns, coefficients, densities), else
//! the circuit is not made of identical parts and it is recorded whole, in slices on every core
//! ([`record_sliced`](super::record_sliced)).

use bellpepper_core::Circuit;
use blstrs::Scalar;
use rayon::prelude::*;

use super::record::{MatrixRecorder, AUX_TAG};
use super::{ConstraintMatrices, Entry, SparseMatrix};
use crate::synthesis::Density;
use crate::{Error, Result};

/// Records the circuit `with_parts(parts)` built of a prefix and `parts` identical parts
/// (`with_parts(k)` builds the same circuit with `k` of them), equal to
/// [`MatrixRecorder::record`]`(with_parts(parts))`.
pub fn record_repeated<C: Circuit<Scalar> + Send>(
    with_parts: impl Fn(usize) -> C + Sync,
    parts: usize,
) -> Result<ConstraintMatrices> {
    if parts < 3 {
        return MatrixRecorder::record(with_parts(parts));
    }
    let t = std::time::Instant::now();
    let (r0, (r1, r2)) = rayon::join(
        || MatrixRecorder::recording(with_parts(0)),
        || {
            rayon::join(
                || MatrixRecorder::recording(with_parts(1)),
                || MatrixRecorder::recording(with_parts(2)),
            )
        },
    );
    let (r0, r1, r2) = (r0?, r1?, r2?);
    let recorded = t.elapsed();
    let repeated = Part::between(r0.matrices(), r1.matrices()).filter(|part| {
        part.repeat(r1.matrices(), 2)
            .is_ok_and(|two| &two == r2.matrices())
    });
    match repeated {
        Some(part) => {
            let m = part.repeat(r1.matrices(), parts)?;
            let repeated = t.elapsed();
            let m = r1.with_matrices(m).finish()?;
            tracing::debug!(
                parts,
                recorded_s = recorded.as_secs_f64(),
                repeated_s = (repeated - recorded).as_secs_f64(),
                finished_s = (t.elapsed() - repeated).as_secs_f64(),
                "recorded a circuit of identical parts from one"
            );
            Ok(m)
        }
        None => {
            tracing::warn!(
                "the circuit is not a prefix and identical parts; recording all {parts} parts"
            );
            super::record_sliced(|| with_parts(parts), rayon::current_num_threads())
        }
    }
}

/// What one part adds to the prefix: its rows (in the 1-part recording, after the prefix's)
/// and its inputs and aux variables.
struct Part {
    /// The prefix's rows, inputs and aux variables.
    rows: usize,
    inputs: usize,
    aux: usize,
    /// What the part adds.
    part_rows: usize,
    part_inputs: usize,
    part_aux: usize,
}

impl Part {
    /// The part of `one` (prefix + 1 part) after `prefix`, if `one` starts with `prefix`.
    fn between(prefix: &ConstraintMatrices, one: &ConstraintMatrices) -> Option<Self> {
        let rows = prefix.a.rows();
        let starts_with = |p: &SparseMatrix, o: &SparseMatrix| {
            o.rows() >= rows
                && o.row_starts[..=rows] == p.row_starts[..]
                && o.entries[..p.entries.len()] == p.entries[..]
        };
        let same_prefix = [
            (&prefix.a, &one.a),
            (&prefix.b, &one.b),
            (&prefix.c, &one.c),
        ]
        .into_iter()
        .all(|(p, o)| starts_with(p, o))
            && one.coefficients.starts_with(&prefix.coefficients)
            && one.num_inputs >= prefix.num_inputs
            && one.num_aux >= prefix.num_aux;
        same_prefix.then(|| Part {
            rows,
            inputs: prefix.num_inputs,
            aux: prefix.num_aux,
            part_rows: one.a.rows() - rows,
            part_inputs: one.num_inputs - prefix.num_inputs,
            part_aux: one.num_aux - prefix.num_aux,
        })
    }

    /// The prefix and `n` copies of the part, from `one` (prefix + 1 part, unfinished: aux
    /// columns still tagged).
    fn repeat(&self, one: &ConstraintMatrices, n: usize) -> Result<ConstraintMatrices> {
        let too_large = |what: &str| {
            Error::Synthesis(format!(
                "{n} parts of {} rows: more {what} than a recording can index",
                self.part_rows
            ))
        };
        let num_aux = n
            .checked_mul(self.part_aux)
            .and_then(|a| a.checked_add(self.aux))
            .filter(|&a| a < AUX_TAG as usize)
            .ok_or_else(|| too_large("aux variables"))?;
        let num_inputs = self.inputs + n * self.part_inputs;
        let matrix =
            |m: &SparseMatrix| self.repeat_matrix(m, n).ok_or_else(|| too_large("entries"));
        Ok(ConstraintMatrices {
            num_inputs,
            num_aux,
            a: matrix(&one.a)?,
            b: matrix(&one.b)?,
            c: matrix(&one.c)?,
            coefficients: one.coefficients.clone(),
            a_aux_density: repeat_bits(&one.a_aux_density, self.aux, self.part_aux, n),
            b_input_density: repeat_bits(&one.b_input_density, self.inputs, self.part_inputs, n),
            b_aux_density: repeat_bits(&one.b_aux_density, self.aux, self.part_aux, n),
        })
    }

    fn repeat_matrix(&self, m: &SparseMatrix, n: usize) -> Option<SparseMatrix> {
        let prefix_entries = m.row_starts[self.rows] as usize;
        let part = &m.entries[prefix_entries..];
        let total = part.len().checked_mul(n)?.checked_add(prefix_entries)?;
        u32::try_from(total).ok()?;
        let mut entries = Vec::with_capacity(total);
        entries.extend_from_slice(&m.entries[..prefix_entries]);
        entries.resize(total, Entry::default());
        if !part.is_empty() {
            entries[prefix_entries..]
                .par_chunks_mut(part.len())
                .enumerate()
                .for_each(|(k, copy)| {
                    for (to, from) in copy.iter_mut().zip(part) {
                        *to = Entry {
                            column: self.shift(from.column, k),
                            coeff: from.coeff,
                        };
                    }
                });
        }
        let part_starts = &m.row_starts[self.rows + 1..];
        let mut row_starts = Vec::with_capacity(self.rows + 1 + n * part_starts.len());
        row_starts.extend_from_slice(&m.row_starts[..=self.rows]);
        for k in 0..n {
            let offset = (k * part.len()) as u32;
            row_starts.extend(part_starts.iter().map(|s| s + offset));
        }
        Some(SparseMatrix {
            row_starts,
            entries,
        })
    }

    /// A column of the part as copy `k` has it: the part's own variables move past the `k`
    /// copies before it; the prefix's (and ONE) stay.
    fn shift(&self, column: u32, k: usize) -> u32 {
        if column & AUX_TAG != 0 {
            let aux = (column & !AUX_TAG) as usize;
            let moved = if aux >= self.aux {
                aux + k * self.part_aux
            } else {
                aux
            };
            moved as u32 | AUX_TAG
        } else {
            let input = column as usize;
            let moved = if input >= self.inputs {
                input + k * self.part_inputs
            } else {
                input
            };
            moved as u32
        }
    }
}

/// The prefix's `prefix` bits of `one` (as marked by the prefix and one part: every part marks
/// the same prefix variables), then the part's `part` bits `n` times.
fn repeat_bits(one: &Density, prefix: usize, part: usize, n: usize) -> Density {
    let mut out = Density::with_capacity(prefix + n * part);
    for i in 0..prefix {
        out.push(one.get(i));
    }
    for _ in 0..n {
        for i in prefix..prefix + part {
            out.push(one.get(i));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use bellpepper_core::{ConstraintSystem, SynthesisError};

    use super::*;

    /// A prefix variable, then parts whose coefficient is the part's number.
    struct Numbered(usize);

    impl Circuit<Scalar> for Numbered {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> std::result::Result<(), SynthesisError> {
            let p = cs.alloc(|| "p", || Ok(Scalar::from(3u64)))?;
            for k in 0..self.0 {
                let x = cs.alloc(|| "x", || Ok(Scalar::from(2u64)))?;
                let c = Scalar::from(10 + k as u64);
                cs.enforce(|| "x", |lc| lc + (c, x), |lc| lc + p, |lc| lc + x);
            }
            Ok(())
        }
    }

    #[test]
    fn the_two_part_check_catches_parts_that_differ() {
        let rec = |k| MatrixRecorder::recording(Numbered(k)).unwrap();
        let (r0, r1, r2) = (rec(0), rec(1), rec(2));
        let part = Part::between(r0.matrices(), r1.matrices()).expect("one part after the prefix");
        // Shapes agree, values do not: without the check, the copies would be wrong.
        let two = part.repeat(r1.matrices(), 2).unwrap();
        assert_eq!(two.a.entries.len(), r2.matrices().a.entries.len());
        assert_ne!(&two, r2.matrices());
    }
}
