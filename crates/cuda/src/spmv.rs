//! Host side of the constraint products: the recorded matrices uploaded once per circuit,
//! then a = A·z, b = B·z and c = C·z (or a∘b) computed on the device for each partition.

use cudarc::driver::{CudaSlice, PushKernelArg};
use zkforge_groth16::r1cs::{ConstraintMatrices, SparseMatrix};

use crate::device::{grid, CudaDevice, DeviceScalars};
use crate::host::scalars_as_u64;
use crate::{CFrom, CudaError};

/// Rows with more entries than this are summed by a warp each (`spmv_csr_long`) instead of a
/// thread: a warp of one-thread rows takes as long as its longest row, and PoRep's A has ~200-
/// entry rows (0.45% of its rows, 38% of its entries) that would set most warps' pace.
const LONG_ROW: u32 = 8;

/// One CSR matrix on the device.
struct DeviceCsr {
    row_starts: CudaSlice<u32>,
    /// (column, coefficient index) pairs, as `uint2` in the kernel.
    entries: CudaSlice<u32>,
    /// The rows longer than [`LONG_ROW`], ascending.
    long_rows: CudaSlice<u32>,
    long_count: usize,
}

/// The rows of `x` with more than [`LONG_ROW`] entries, ascending.
fn long_rows(x: &SparseMatrix) -> impl Iterator<Item = u32> + '_ {
    (0..x.rows())
        .filter(|&r| x.row_starts[r + 1] - x.row_starts[r] > LONG_ROW)
        .map(|r| r as u32)
}

/// A circuit's A, B and C resident in device memory.
pub struct DeviceMatrices {
    a: DeviceCsr,
    b: DeviceCsr,
    c: DeviceCsr,
    coefficients: CudaSlice<u64>,
    rows: usize,
    num_inputs: usize,
    num_aux: usize,
}

/// Device bytes [`CudaDevice::upload_matrices`] takes for `m`.
pub fn matrices_bytes(m: &ConstraintMatrices) -> u64 {
    let csr = |x: &SparseMatrix| {
        4 * x.row_starts.len() + 8 * x.entries.len() + 4 * long_rows(x).count().max(1)
    };
    (csr(&m.a) + csr(&m.b) + csr(&m.c) + 32 * m.coefficients.len()) as u64
}

impl DeviceMatrices {
    pub fn rows(&self) -> usize {
        self.rows
    }
}

impl CudaDevice {
    /// Copies the matrices to the device (once per circuit; keep the result).
    pub fn upload_matrices(&self, m: &ConstraintMatrices) -> Result<DeviceMatrices, CudaError> {
        let csr = |x: &SparseMatrix| -> Result<DeviceCsr, CudaError> {
            // SAFETY: Entry is repr(C) { u32, u32 }: its bytes are two u32 per entry.
            let words = unsafe {
                std::slice::from_raw_parts(x.entries.as_ptr() as *const u32, 2 * x.entries.len())
            };
            let long: Vec<u32> = long_rows(x).collect();
            Ok(DeviceCsr {
                row_starts: self.stream.clone_htod(&x.row_starts[..])?,
                entries: self.stream.clone_htod(if words.is_empty() {
                    &[0u32, 0][..]
                } else {
                    words
                })?,
                long_rows: self.stream.clone_htod(if long.is_empty() {
                    &[0u32][..]
                } else {
                    &long
                })?,
                long_count: long.len(),
            })
        };
        let dm = DeviceMatrices {
            a: csr(&m.a)?,
            b: csr(&m.b)?,
            c: csr(&m.c)?,
            coefficients: self.stream.clone_htod(scalars_as_u64(&m.coefficients))?,
            rows: m.num_constraints(),
            num_inputs: m.num_inputs,
            num_aux: m.num_aux,
        };
        self.stream.synchronize()?;
        Ok(dm)
    }

    /// A·z, B·z and C·z (or A·z ∘ B·z, see [`CFrom`]) for z = inputs ‖ aux, each zero-padded
    /// to `padded` rows (the domain).
    pub fn constraint_products(
        &self,
        m: &DeviceMatrices,
        inputs: &DeviceScalars,
        aux: &DeviceScalars,
        padded: usize,
        c_from: CFrom,
    ) -> Result<[DeviceScalars; 3], CudaError> {
        if inputs.len != m.num_inputs || aux.len != m.num_aux || padded < m.rows {
            return Err(CudaError::Invalid(format!(
                "constraint products: {} inputs and {} aux for matrices of {} and {}, {padded} \
                 rows for {}",
                inputs.len, aux.len, m.num_inputs, m.num_aux, m.rows
            )));
        }
        let (rows, padded_rows, n_in) = (m.rows as u64, padded as u64, m.num_inputs as u32);
        // Every one of the `padded` rows is written by the kernels below.
        let rows_out = || -> Result<DeviceScalars, CudaError> {
            let out = self.alloc_scalars(padded.max(1))?;
            Ok(DeviceScalars {
                buf: out.buf,
                len: padded,
            })
        };
        let product = |x: &DeviceCsr| -> Result<DeviceScalars, CudaError> {
            let mut out = rows_out()?;
            let mut b = self.stream.launch_builder(&self.k.spmv_csr);
            b.arg(&mut out.buf)
                .arg(&padded_rows)
                .arg(&x.row_starts)
                .arg(&x.entries)
                .arg(&rows)
                .arg(&m.coefficients)
                .arg(&inputs.buf)
                .arg(&n_in)
                .arg(&aux.buf)
                .arg(&LONG_ROW);
            unsafe { b.launch(grid(padded_rows, 256)) }?;
            if x.long_count > 0 {
                let n_long = x.long_count as u64;
                let mut b = self.stream.launch_builder(&self.k.spmv_csr_long);
                b.arg(&mut out.buf)
                    .arg(&x.long_rows)
                    .arg(&n_long)
                    .arg(&x.row_starts)
                    .arg(&x.entries)
                    .arg(&m.coefficients)
                    .arg(&inputs.buf)
                    .arg(&n_in)
                    .arg(&aux.buf);
                unsafe { b.launch(grid(32 * n_long, 256)) }?;
            }
            Ok(out)
        };
        let (a, b) = (product(&m.a)?, product(&m.b)?);
        let c = match c_from {
            CFrom::Matrix => product(&m.c)?,
            CFrom::AB => {
                let mut out = rows_out()?;
                let mut l = self.stream.launch_builder(&self.k.fr_hadamard);
                l.arg(&mut out.buf)
                    .arg(&a.buf)
                    .arg(&b.buf)
                    .arg(&padded_rows);
                unsafe { l.launch(grid(padded_rows, 256)) }?;
                out
            }
        };
        Ok([a, b, c])
    }
}
