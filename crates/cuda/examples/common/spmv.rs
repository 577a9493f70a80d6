//! Random constraint matrices for the device's constraint products: checked against the CPU's
//! `ConstraintMatrices::evaluate`, and timed at a 32 GiB PoRep partition's shape.

use blstrs::Scalar;
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use zkforge_cuda::{CFrom, CudaDevice, CudaError};
use zkforge_groth16::r1cs::{ConstraintMatrices, Entry, SparseMatrix};
use zkforge_groth16::synthesis::Density;

use super::random_scalars;

/// How one matrix's rows are laid out: every `long_every`-th row has `long_len` entries, the
/// others between `short.0` and `short.1` (inclusive; 0 allowed).
#[derive(Clone, Copy)]
pub struct RowShape {
    pub long_every: usize,
    pub long_len: usize,
    pub short: (usize, usize),
}

/// A CSR matrix of `rows` rows over `columns` variables. Columns sit near the row's share of
/// the assignment (synthesis lays gadgets' variables out in order), `spread` apart at most;
/// coefficient indices are 1, −1 or one of `coefficients` others.
fn random_matrix(
    rows: usize,
    columns: usize,
    shape: RowShape,
    spread: usize,
    coefficients: usize,
    seed: u64,
) -> SparseMatrix {
    const CHUNK: usize = 1 << 16;
    let parts: Vec<(Vec<u32>, Vec<Entry>)> = (0..rows.div_ceil(CHUNK))
        .into_par_iter()
        .map(|k| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((k as u64) << 24));
            let (mut lens, mut entries) = (Vec::new(), Vec::new());
            for r in k * CHUNK..((k + 1) * CHUNK).min(rows) {
                let len = if r % shape.long_every == shape.long_every / 2 {
                    shape.long_len
                } else {
                    rng.gen_range(shape.short.0..=shape.short.1)
                };
                let base = (r as u128 * columns as u128 / rows as u128) as usize;
                for _ in 0..len {
                    let column = (base + rng.gen_range(0..spread)).min(columns - 1) as u32;
                    let coeff = match rng.gen_range(0..10) {
                        0..=3 => 0,
                        4 | 5 => 1,
                        _ => rng.gen_range(2..coefficients as u32),
                    };
                    entries.push(Entry { column, coeff });
                }
                lens.push(len as u32);
            }
            (lens, entries)
        })
        .collect();
    let mut m = SparseMatrix {
        row_starts: Vec::with_capacity(rows + 1),
        entries: Vec::new(),
    };
    m.row_starts.push(0);
    for (lens, entries) in parts {
        for len in lens {
            let last = *m.row_starts.last().unwrap();
            m.row_starts.push(last + len);
        }
        m.entries.extend_from_slice(&entries);
    }
    m
}

/// Matrices of `rows` rows, A, B and C shaped as given, over 3 inputs and `aux` variables.
pub fn random_matrices(
    rows: usize,
    aux: usize,
    shapes: [RowShape; 3],
    seed: u64,
) -> ConstraintMatrices {
    let inputs = 3;
    let spread = 4096.min(inputs + aux);
    let mut coefficients = vec![Scalar::ONE, -Scalar::ONE];
    coefficients.extend(random_scalars(62, seed ^ 0xc0ef));
    let [a, b, c] = [0u64, 1, 2]
        .map(|k| random_matrix(rows, inputs + aux, shapes[k as usize], spread, 64, seed ^ k));
    ConstraintMatrices {
        num_inputs: inputs,
        num_aux: aux,
        a,
        b,
        c,
        coefficients,
        a_aux_density: Density::full(aux),
        b_input_density: Density::full(inputs),
        b_aux_density: Density::full(aux),
    }
}

/// The small shape the checks use: empty rows, short rows and rows past the warp threshold
/// (long enough for several passes of a warp's 32 lanes).
pub const CHECK_SHAPE: RowShape = RowShape {
    long_every: 29,
    long_len: 161,
    short: (0, 9),
};

/// Device a, b, c against the CPU's for random z: c from C, and c as a∘b, over `padded` rows.
pub fn check(dev: &CudaDevice, rows: usize, padded: usize, seed: u64) -> Result<bool, CudaError> {
    let m = random_matrices(rows, 2 * rows, [CHECK_SHAPE; 3], seed);
    let inputs = random_scalars(m.num_inputs, seed ^ 0x1);
    let aux = random_scalars(m.num_aux, seed ^ 0x2);
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    m.evaluate(&inputs, &aux, [&mut a, &mut b, &mut c], None)
        .expect("CPU evaluation");
    let pad = |mut v: Vec<Scalar>| {
        v.resize(padded, Scalar::ZERO);
        v
    };
    let (a, b, c) = (pad(a), pad(b), pad(c));
    let ab: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    let dm = dev.upload_matrices(&m)?;
    let (di, da) = (dev.upload_scalars(&inputs)?, dev.upload_scalars(&aux)?);
    let mut ok = true;
    for (c_from, want_c) in [(CFrom::Matrix, &c), (CFrom::AB, &ab)] {
        let got = dev.constraint_products(&dm, &di, &da, padded, c_from)?;
        let got = got.map(|x| dev.download_scalars(&x));
        ok &= got[0].as_ref().is_ok_and(|x| *x == a)
            && got[1].as_ref().is_ok_and(|x| *x == b)
            && got[2].as_ref().is_ok_and(|x| x == want_c);
    }
    Ok(ok)
}

/// The shape of a 32 GiB PoRep partition's matrices as far as their averages go (A 2.4, B 1.0,
/// C 2.2 entries a row): mostly one-entry rows, and one row in 64 long (a SHA-256 word
/// addition's packed bits).
pub const POREP_SHAPES: [RowShape; 3] = [
    RowShape {
        long_every: 64,
        long_len: 96,
        short: (1, 1),
    },
    RowShape {
        long_every: 1 << 30,
        long_len: 0,
        short: (1, 1),
    },
    RowShape {
        long_every: 64,
        long_len: 80,
        short: (1, 1),
    },
];

/// The checks: row counts below, at and past a block, padding rows past the matrix.
pub fn checks(dev: &CudaDevice, seed: u64) -> Vec<(String, Result<bool, CudaError>)> {
    [
        (1usize, 2usize),
        (1000, 1024),
        (4097, 8192),
        (100_003, 1 << 17),
    ]
    .into_iter()
    .map(|(rows, padded)| {
        let ok = check(dev, rows, padded, seed ^ 0x5b ^ rows as u64);
        (format!("constraint products {rows} rows"), ok)
    })
    .collect()
}

/// Timings at a 32 GiB PoRep partition's row and variable counts and its matrices' average
/// shapes, c from C and c = a∘b; `time` runs its argument after a warm-up and gives the runs.
pub fn bench_porep(
    dev: &CudaDevice,
    seed: u64,
    mut time: impl FnMut(&mut dyn FnMut(&CudaDevice)) -> Vec<f32>,
) -> Vec<(String, Vec<f32>)> {
    let (rows, aux) = (130_278_869usize, 130_148_591usize);
    let m = random_matrices(rows, aux, POREP_SHAPES, seed);
    let dm = dev.upload_matrices(&m).unwrap();
    let inputs = dev
        .upload_scalars(&random_scalars(m.num_inputs, seed))
        .unwrap();
    let z = dev
        .upload_scalars(&super::bit_scalars(aux, seed ^ 0x5c))
        .unwrap();
    drop(m);
    [CFrom::Matrix, CFrom::AB]
        .into_iter()
        .map(|c_from| {
            let runs = time(&mut |d: &CudaDevice| {
                d.constraint_products(&dm, &inputs, &z, 1 << 27, c_from)
                    .unwrap();
            });
            (format!("constraint products 2^27, c from {c_from:?}"), runs)
        })
        .collect()
}
