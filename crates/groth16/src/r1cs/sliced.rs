//! Recording a circuit on every core: each thread runs the whole circuit but builds the linear
//! combinations of its own share of the rows only, and the shares are joined in row order.
//!
//! A circuit that is not made of identical parts (SnapDeals: each challenge's constants
//! differ) cannot use [`record_repeated`](super::record_repeated); recorded on one thread, the
//! 32 GiB SnapDeals circuit took 60.3 s on the H200 box. Most of a recording is building the
//! rows' linear combinations and appending their entries; allocating variables and walking the
//! gadgets is what every slice repeats. The join interns coefficients in the order a single
//! recording meets them (row by row, A then B then C), so the result is identical to
//! [`MatrixRecorder::record`]'s, coefficient table included.

use bellpepper_core::Circuit;
use blstrs::Scalar;
use rayon::prelude::*;

use super::record::{Interned, MatrixRecorder, Share};
use super::{ConstraintMatrices, SparseMatrix, COEFF_MINUS_ONE, COEFF_ONE};
use crate::synthesis::Density;
use crate::{Error, Result};

/// Rows a block of a share: large enough that a slice's rows come in long runs, small enough
/// that the gadgets' uneven costs average out over the slices.
const BLOCK: usize = 1 << 12;

/// Records `circuit()` in `slices` interleaved shares of its rows, one a thread; equal to
/// [`MatrixRecorder::record`]`(circuit())`.
pub fn record_sliced<C: Circuit<Scalar>>(
    circuit: impl Fn() -> C + Sync,
    slices: usize,
) -> Result<ConstraintMatrices> {
    record_sliced_in_blocks(circuit, slices, BLOCK)
}

/// [`record_sliced`] with shares of `block` rows (tests use small ones to cross many shares).
pub fn record_sliced_in_blocks<C: Circuit<Scalar>>(
    circuit: impl Fn() -> C + Sync,
    slices: usize,
    block: usize,
) -> Result<ConstraintMatrices> {
    if slices <= 1 {
        return MatrixRecorder::record(circuit());
    }
    let t = std::time::Instant::now();
    let shares = (0..slices)
        .into_par_iter()
        .map(|slice| {
            let share = Share {
                slice,
                slices,
                block,
            };
            MatrixRecorder::recording_share(circuit(), Some(share)).map(MatrixRecorder::into_parts)
        })
        .collect::<Result<Vec<_>>>()?;
    let recorded = t.elapsed();
    let joined = join(shares, block)?;
    tracing::debug!(
        slices,
        recorded_s = recorded.as_secs_f64(),
        joined_s = (t.elapsed() - recorded).as_secs_f64(),
        "recorded a circuit in slices"
    );
    joined.finish()
}

/// The shares' rows in order, their coefficients re-interned as one recording would.
fn join(
    shares: Vec<(usize, ConstraintMatrices, Option<String>)>,
    block: usize,
) -> Result<MatrixRecorder> {
    let (rows, first, _) = &shares[0];
    let (rows, num_inputs, num_aux) = (*rows, first.num_inputs, first.num_aux);
    if shares
        .iter()
        .any(|(r, m, _)| (*r, m.num_inputs, m.num_aux) != (rows, num_inputs, num_aux))
    {
        return Err(Error::Synthesis(
            "the circuit allocated differently in two runs: it cannot be recorded in slices".into(),
        ));
    }
    let entries = |pick: fn(&ConstraintMatrices) -> &SparseMatrix| {
        shares
            .iter()
            .map(|(_, m, _)| pick(m).nonzeros())
            .sum::<usize>()
    };
    let mut out = [
        joined_matrix(rows, entries(|m| &m.a))?,
        joined_matrix(rows, entries(|m| &m.b))?,
        joined_matrix(rows, entries(|m| &m.c))?,
    ];
    let mut coefficients = first.coefficients[..2].to_vec();
    let mut seen = Interned::default();
    // Per share: its coefficient index → the joined table's (u32::MAX: not met yet).
    let mut maps: Vec<Vec<u32>> = shares
        .iter()
        .map(|(_, m, _)| {
            let mut map = vec![u32::MAX; m.coefficients.len()];
            map[COEFF_ONE as usize] = COEFF_ONE;
            map[COEFF_MINUS_ONE as usize] = COEFF_MINUS_ONE;
            map
        })
        .collect();
    let mut next_row = vec![0usize; shares.len()];
    for row in 0..rows {
        let s = (row / block) % shares.len();
        let (_, m, _) = &shares[s];
        let local = next_row[s];
        next_row[s] += 1;
        for (which, joined) in [&m.a, &m.b, &m.c].into_iter().zip(out.iter_mut()) {
            for e in which.row(local) {
                let to = &mut maps[s][e.coeff as usize];
                if *to == u32::MAX {
                    *to = MatrixRecorder::intern_into(
                        &mut coefficients,
                        &mut seen,
                        &m.coefficients[e.coeff as usize],
                    );
                }
                joined.entries.push(super::Entry {
                    column: e.column,
                    coeff: *to,
                });
            }
            joined.row_starts.push(joined.entries.len() as u32);
        }
    }
    let density = |pick: fn(&ConstraintMatrices) -> &Density| {
        let mut words = pick(first).words().to_vec();
        for (_, m, _) in &shares[1..] {
            for (w, x) in words.iter_mut().zip(pick(m).words()) {
                *w |= x;
            }
        }
        Density::from_words(words, pick(first).len()).expect("same lengths, same words")
    };
    let [a, b, c] = out;
    let m = ConstraintMatrices {
        num_inputs,
        num_aux,
        a,
        b,
        c,
        coefficients,
        a_aux_density: density(|m| &m.a_aux_density),
        b_input_density: density(|m| &m.b_input_density),
        b_aux_density: density(|m| &m.b_aux_density),
    };
    // Any fault fails the recording (each names its row).
    let fault = shares.into_iter().find_map(|(_, _, f)| f);
    Ok(MatrixRecorder::from_parts(m, seen, fault))
}

/// An empty matrix with room for `rows` rows of `entries` entries in all.
fn joined_matrix(rows: usize, entries: usize) -> Result<SparseMatrix> {
    if entries > u32::MAX as usize {
        return Err(Error::Synthesis(
            "more than 2^32 non-zero entries in one matrix".into(),
        ));
    }
    let mut row_starts = Vec::with_capacity(rows + 1);
    row_starts.push(0);
    Ok(SparseMatrix {
        row_starts,
        entries: Vec::with_capacity(entries),
    })
}
