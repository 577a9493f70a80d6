//! The matrices on disk, so a circuit is recorded once, not at every start.
//!
//! Layout, little-endian: the magic `ZKFR1CS1`; seven u64 — inputs, aux, rows, coefficients and
//! the non-zero counts of A, B, C; the coefficients (32 canonical bytes each); the densities
//! A-aux, B-input, B-aux as u64 words; then for A, B, C their `rows + 1` u32 row starts and
//! their entries (u32 column, u32 coefficient index). Nothing follows. Every length is checked
//! against the file's size before anything is allocated, and every index after reading.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

use blstrs::Scalar;
use rayon::prelude::*;

use super::{ConstraintMatrices, Entry, MatricesShape, SparseMatrix};
use crate::exec::bulk_read::read_vec_at;
use crate::synthesis::Density;
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"ZKFR1CS1";

#[cfg(not(target_endian = "little"))]
compile_error!("the matrix file is read by casting little-endian words");

/// The counts in a file's header.
#[derive(Clone, Copy, Debug)]
struct Header {
    inputs: u64,
    aux: u64,
    rows: u64,
    coefficients: u64,
    nonzeros: [u64; 3],
}

impl Header {
    const BYTES: u64 = 8 + 7 * 8;

    /// Opens `path` and reads its header, checked: the magic, the file's size against the
    /// counts, and every count within the u32 indices entries use.
    fn read(path: &Path) -> Result<(File, Self)> {
        let bad = |what: String| Error::malformed(path, what);
        let io = |e| Error::io(path, e);
        let mut f = File::open(path).map_err(io)?;
        let size = f.metadata().map_err(io)?.len();
        let mut head = [0u8; Header::BYTES as usize];
        f.read_exact(&mut head)
            .map_err(|_| bad(format!("{size} bytes: too short for a matrix file header")))?;
        if &head[..8] != MAGIC {
            return Err(bad(
                "not a zkforge constraint-matrix file (bad magic)".into()
            ));
        }
        let word = |i: usize| u64::from_le_bytes(head[8 + 8 * i..16 + 8 * i].try_into().unwrap());
        let h = Self {
            inputs: word(0),
            aux: word(1),
            rows: word(2),
            coefficients: word(3),
            nonzeros: [word(4), word(5), word(6)],
        };
        match h.file_bytes() {
            Some(expected) if expected == size => {}
            expected => {
                return Err(bad(format!(
                    "header ({h:?}) implies {} bytes, the file has {size}",
                    expected.map_or("more than 2^64".into(), |e| e.to_string())
                )))
            }
        }
        let limit = u32::MAX as u64;
        if h.rows > limit || h.inputs + h.aux > limit || h.nonzeros.iter().any(|&n| n > limit) {
            return Err(bad(format!(
                "{h:?}: more rows, columns or entries than 2^32"
            )));
        }
        Ok((f, h))
    }

    /// The file size these counts imply, or None on overflow.
    fn file_bytes(&self) -> Option<u64> {
        let words = |bits: u64| bits.div_ceil(64).checked_mul(8);
        let mut total = Self::BYTES.checked_add(self.coefficients.checked_mul(32)?)?;
        for bits in [self.aux, self.inputs, self.aux] {
            total = total.checked_add(words(bits)?)?;
        }
        for nnz in self.nonzeros {
            total = total
                .checked_add(self.rows.checked_add(1)?.checked_mul(4)?)?
                .checked_add(nnz.checked_mul(8)?)?;
        }
        Some(total)
    }
}

fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: only used with u32, u64 and Entry (repr(C), two u32): no padding, any bytes valid.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

impl ConstraintMatrices {
    /// Writes the matrices to `path` through a temporary file renamed into place, so readers
    /// never see a partial file.
    pub fn write_file(&self, path: &Path) -> Result<()> {
        let tmp = crate::exec::tmpfile::beside(path);
        let write = || -> std::io::Result<()> {
            let mut w = BufWriter::with_capacity(1 << 22, File::create(&tmp)?);
            w.write_all(MAGIC)?;
            let m = [&self.a, &self.b, &self.c];
            for x in [
                self.num_inputs as u64,
                self.num_aux as u64,
                self.num_constraints() as u64,
                self.coefficients.len() as u64,
            ]
            .into_iter()
            .chain(m.iter().map(|m| m.nonzeros() as u64))
            {
                w.write_all(&x.to_le_bytes())?;
            }
            for c in &self.coefficients {
                w.write_all(&c.to_bytes_le())?;
            }
            for d in [
                &self.a_aux_density,
                &self.b_input_density,
                &self.b_aux_density,
            ] {
                w.write_all(as_bytes(d.words()))?;
            }
            for m in m {
                w.write_all(as_bytes(&m.row_starts))?;
                w.write_all(as_bytes(&m.entries))?;
            }
            w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            std::fs::rename(&tmp, path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::io(path, e)
        })
    }

    /// Reads matrices written by [`write_file`](Self::write_file), checking every count and
    /// index: a damaged file is an error naming what is wrong, never a wrong proof.
    pub fn read_file(path: &Path) -> Result<Self> {
        let bad = |what: String| Error::malformed(path, what);
        let io = |e| Error::io(path, e);
        let (f, h) = Header::read(path)?;
        // The coefficients and densities are small; the matrices (6.8 GB at 32 GiB PoRep) are
        // read by several threads, each faulting in the pages it fills.
        let mut r = std::io::BufReader::with_capacity(1 << 22, &f);
        let mut coefficients = Vec::with_capacity(h.coefficients as usize);
        for i in 0..h.coefficients {
            let mut b = [0u8; 32];
            r.read_exact(&mut b).map_err(io)?;
            let c: Option<Scalar> = Scalar::from_bytes_le(&b).into();
            coefficients
                .push(c.ok_or_else(|| bad(format!("coefficient {i} is not a field element")))?);
        }
        let mut at = Header::BYTES + 32 * h.coefficients;
        let mut next = |len: u64, size: u64| {
            let offset = at;
            at += len * size;
            (offset, len as usize)
        };
        let mut density = |bits: u64| -> Result<Density> {
            let (offset, len) = next(bits.div_ceil(64), 8);
            let words: Vec<u64> = read_vec_at(&f, offset, len).map_err(io)?;
            Density::from_words(words, bits as usize).ok_or_else(|| {
                bad(format!(
                    "a density of {bits} bits has bits set beyond its end"
                ))
            })
        };
        let a_aux_density = density(h.aux)?;
        let b_input_density = density(h.inputs)?;
        let b_aux_density = density(h.aux)?;
        let mut matrix = |nnz: u64| -> Result<SparseMatrix> {
            let (starts_at, rows) = next(h.rows + 1, 4);
            let (entries_at, nnz) = next(nnz, 8);
            Ok(SparseMatrix {
                row_starts: read_vec_at(&f, starts_at, rows).map_err(io)?,
                entries: read_vec_at(&f, entries_at, nnz).map_err(io)?,
            })
        };
        let (a, b, c) = (
            matrix(h.nonzeros[0])?,
            matrix(h.nonzeros[1])?,
            matrix(h.nonzeros[2])?,
        );
        let m = ConstraintMatrices {
            num_inputs: h.inputs as usize,
            num_aux: h.aux as usize,
            a,
            b,
            c,
            coefficients,
            a_aux_density,
            b_input_density,
            b_aux_density,
        };
        m.validate().map_err(bad)?;
        Ok(m)
    }

    /// The shape of the matrices in `path` from its header and its B-input density (bytes,
    /// not the gigabytes of entries), checked as [`read_file`](Self::read_file) checks them.
    pub fn read_shape(path: &Path) -> Result<MatricesShape> {
        let (f, h) = Header::read(path)?;
        let words = h.inputs.div_ceil(64) as usize;
        let offset = Header::BYTES + 32 * h.coefficients + 8 * h.aux.div_ceil(64);
        let b_inputs: Vec<u64> = read_vec_at(&f, offset, words).map_err(|e| Error::io(path, e))?;
        let b_inputs = Density::from_words(b_inputs, h.inputs as usize).ok_or_else(|| {
            Error::malformed(path, "the B-input density has bits set beyond its end")
        })?;
        Ok(MatricesShape {
            num_inputs: h.inputs as usize,
            num_aux: h.aux as usize,
            b_dense_inputs: b_inputs.count(),
            rows: h.rows as usize,
            coefficients: h.coefficients as usize,
            nonzeros: h.nonzeros.map(|n| n as usize),
        })
    }

    /// Checks every internal index, so that products never read out of bounds.
    pub fn validate(&self) -> std::result::Result<(), String> {
        use super::{COEFF_MINUS_ONE, COEFF_ONE};
        use ff::Field;
        let one = Scalar::ONE;
        if self.coefficients.get(COEFF_ONE as usize) != Some(&one)
            || self.coefficients.get(COEFF_MINUS_ONE as usize) != Some(&-one)
        {
            return Err("the coefficient table does not start with 1, −1".into());
        }
        let columns = (self.num_inputs + self.num_aux) as u64;
        let coeffs = self.coefficients.len() as u64;
        let rows = self.a.rows();
        for (name, m) in [("A", &self.a), ("B", &self.b), ("C", &self.c)] {
            if m.rows() != rows {
                return Err(format!("{name} has {} rows, A has {rows}", m.rows()));
            }
            let starts_ok = m.row_starts.first() == Some(&0)
                && m.row_starts.last().map(|&e| e as usize) == Some(m.entries.len())
                && m.row_starts.par_windows(2).all(|w| w[0] <= w[1]);
            if !starts_ok {
                return Err(format!(
                    "{name}'s row starts are not increasing from 0 to its length"
                ));
            }
            let bad = m
                .entries
                .par_iter()
                .position_any(|e: &Entry| e.column as u64 >= columns || e.coeff as u64 >= coeffs);
            if let Some(i) = bad {
                let e = m.entries[i];
                return Err(format!(
                    "{name} entry {i} names column {} of {columns} or coefficient {} of {coeffs}",
                    e.column, e.coeff
                ));
            }
        }
        if self.a_aux_density.len() != self.num_aux
            || self.b_aux_density.len() != self.num_aux
            || self.b_input_density.len() != self.num_inputs
        {
            return Err("a density's length differs from its variable count".into());
        }
        Ok(())
    }
}
