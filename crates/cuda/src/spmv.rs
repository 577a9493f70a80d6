//! The SpMV object: the constraint products' kernels (`kernels/spmv/spmv.cuh`: `spmv_csr`,
//! `spmv_csr_long`, and `fr_hadamard` for c = a∘b), the recorded matrices uploaded once per
//! circuit (or streamed), then a = A·z, b = B·z and c = C·z (or a∘b) computed on the device for
//! each partition.

use cudarc::driver::{CudaFunction, CudaSlice, DriverError, PushKernelArg};
use zkforge_groth16::r1cs::{ConstraintMatrices, MatricesShape, SparseMatrix};

use crate::context::{grid, Core, DeviceScalars};
use crate::host::scalars_as_u64;
use crate::{CFrom, CudaError};

/// Rows with more entries than this are summed by a warp each (`spmv_csr_long`) instead of a
/// thread: a warp of one-thread rows takes as long as its longest row, and PoRep's A has ~200-
/// entry rows (0.45% of its rows, 38% of its entries) that would set most warps' pace.
const LONG_ROW: u32 = 8;

/// The constraint products on one GPU: its kernels.
#[derive(Clone)]
pub(crate) struct Spmv {
    csr: CudaFunction,
    csr_long: CudaFunction,
    hadamard: CudaFunction,
}

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

/// Device bytes [`DeviceMatrices::upload`] takes for `m`.
pub fn matrices_bytes(m: &ConstraintMatrices) -> u64 {
    // The long rows' indexes beyond the one each matrix has at least.
    let long = |x: &SparseMatrix| 4 * (long_rows(x).count().max(1) - 1) as u64;
    shape_bytes(&m.shape()) + long(&m.a) + long(&m.b) + long(&m.c)
}

/// Device bytes of matrices of `shape`, as a placement plans with them: [`matrices_bytes`] but
/// for the long rows' indexes, which only the entries tell (4 bytes a row of more than
/// [`LONG_ROW`] entries: ~2 MB a matrix at 32 GiB PoRep, where its rows are 0.45%).
pub fn shape_bytes(shape: &MatricesShape) -> u64 {
    let csr = |nonzeros: usize| 4 * (shape.rows as u64 + 1) + 8 * nonzeros as u64 + 4;
    shape.nonzeros.map(csr).iter().sum::<u64>() + 32 * shape.coefficients as u64
}

impl DeviceMatrices {
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Copies the matrices to the device (once per circuit; keep the result).
    pub(crate) fn upload(core: &Core, m: &ConstraintMatrices) -> Result<Self, CudaError> {
        let csr = |x: &SparseMatrix| -> Result<DeviceCsr, CudaError> {
            // SAFETY: Entry is repr(C) { u32, u32 }: its bytes are two u32 per entry.
            let words = unsafe {
                std::slice::from_raw_parts(x.entries.as_ptr() as *const u32, 2 * x.entries.len())
            };
            let long: Vec<u32> = long_rows(x).collect();
            Ok(DeviceCsr {
                row_starts: core.stream.clone_htod(&x.row_starts[..])?,
                entries: core.stream.clone_htod(if words.is_empty() {
                    &[0u32, 0][..]
                } else {
                    words
                })?,
                long_rows: core.stream.clone_htod(if long.is_empty() {
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
            coefficients: core.stream.clone_htod(scalars_as_u64(&m.coefficients))?,
            rows: m.num_constraints(),
            num_inputs: m.num_inputs,
            num_aux: m.num_aux,
        };
        core.stream.synchronize()?;
        Ok(dm)
    }
}

/// Rows `start..end` of a CSR matrix kept in host memory, and the long rows among them
/// (relative to `start`).
struct RowBlock {
    start: usize,
    end: usize,
    long: Vec<u32>,
}

/// A circuit's A and B left in host memory and copied block by block at each partition's
/// products: what a card too small for the matrices keeps instead (its coefficients, a few
/// KiB, and each block's long rows, found once here rather than in every partition). C is
/// never needed there: a synthesized witness satisfies its constraints, so c = a∘b.
pub struct StreamedMatrices {
    a: Vec<RowBlock>,
    b: Vec<RowBlock>,
    coefficients: CudaSlice<u64>,
    rows: usize,
    num_inputs: usize,
    num_aux: usize,
}

impl StreamedMatrices {
    /// What a partition's products need of `m` on the device when its A and B stay in host
    /// memory, copied in blocks of at most `block_bytes`.
    pub(crate) fn new(
        core: &Core,
        m: &ConstraintMatrices,
        block_bytes: usize,
    ) -> Result<Self, CudaError> {
        let coefficients = core.stream.clone_htod(scalars_as_u64(&m.coefficients))?;
        core.stream.synchronize()?;
        Ok(StreamedMatrices {
            a: row_blocks(&m.a, block_bytes),
            b: row_blocks(&m.b, block_bytes),
            coefficients,
            rows: m.num_constraints(),
            num_inputs: m.num_inputs,
            num_aux: m.num_aux,
        })
    }
}

/// Cuts `x` into blocks of at most `block_bytes` of row starts and entries (a longer row gets
/// a block of its own).
fn row_blocks(x: &SparseMatrix, block_bytes: usize) -> Vec<RowBlock> {
    let mut blocks = Vec::new();
    let (mut start, mut bytes, mut long) = (0, 0, Vec::new());
    for r in 0..x.rows() {
        let len = (x.row_starts[r + 1] - x.row_starts[r]) as usize;
        let row = 4 + 8 * len;
        if bytes + row > block_bytes && r > start {
            blocks.push(RowBlock {
                start,
                end: r,
                long: std::mem::take(&mut long),
            });
            (start, bytes) = (r, 0);
        }
        bytes += row;
        if len > LONG_ROW as usize {
            long.push((r - start) as u32);
        }
    }
    blocks.push(RowBlock {
        start,
        end: x.rows(),
        long,
    });
    blocks
}

impl Spmv {
    pub fn load(core: &Core) -> Result<Self, DriverError> {
        let [csr, csr_long, hadamard] =
            core.functions(["spmv_csr", "spmv_csr_long", "fr_hadamard"])?;
        Ok(Spmv {
            csr,
            csr_long,
            hadamard,
        })
    }

    /// A·z and B·z over the host matrices `m` (cut as `streamed` says, made from the same `m`),
    /// zero-padded to `padded` rows: each block's row starts and entries copied (from the
    /// engine's page-locked matrices), then its rows summed in place.
    pub fn streamed_products(
        &self,
        core: &Core,
        m: &ConstraintMatrices,
        streamed: &StreamedMatrices,
        inputs: &DeviceScalars,
        aux: &DeviceScalars,
        padded: usize,
    ) -> Result<[DeviceScalars; 2], CudaError> {
        if inputs.len != streamed.num_inputs
            || aux.len != streamed.num_aux
            || padded < streamed.rows
            || m.num_constraints() != streamed.rows
        {
            return Err(CudaError::Invalid(format!(
                "streamed products: {} inputs and {} aux for matrices of {} and {}, {padded} \
                 rows for {}",
                inputs.len, aux.len, streamed.num_inputs, streamed.num_aux, streamed.rows
            )));
        }
        let n_in = streamed.num_inputs as u32;
        let product = |x: &SparseMatrix, blocks: &[RowBlock]| -> Result<DeviceScalars, CudaError> {
            let mut out = core.alloc_scalars(padded.max(1))?;
            out.len = padded;
            let last = blocks.len() - 1;
            for (k, block) in blocks.iter().enumerate() {
                let (e0, e1) = (x.row_starts[block.start], x.row_starts[block.end]);
                let starts = core
                    .stream
                    .clone_htod(&x.row_starts[block.start..=block.end])?;
                // SAFETY: Entry is repr(C) { u32, u32 }: its bytes are two u32 per entry.
                let words = unsafe {
                    std::slice::from_raw_parts(
                        x.entries[e0 as usize..e1 as usize].as_ptr() as *const u32,
                        2 * (e1 - e0) as usize,
                    )
                };
                let entries = core.stream.clone_htod(if words.is_empty() {
                    &[0u32, 0][..]
                } else {
                    words
                })?;
                // The row starts are the matrix's own: the entries' address is moved back by
                // the block's first entry, so that row_starts[r] indexes them as before.
                let entries_at = core.ptr32(&entries).wrapping_sub(8 * e0 as u64);
                let rows = (block.end - block.start) as u64;
                // The last block also zeroes the domain's padding rows.
                let out_rows = if k == last {
                    (padded - block.start) as u64
                } else {
                    rows
                };
                let mut at = out.buf.slice_mut(block.start * 4..);
                let mut b = core.stream.launch_builder(&self.csr);
                b.arg(&mut at)
                    .arg(&out_rows)
                    .arg(&starts)
                    .arg(&entries_at)
                    .arg(&rows)
                    .arg(&streamed.coefficients)
                    .arg(&inputs.buf)
                    .arg(&n_in)
                    .arg(&aux.buf)
                    .arg(&LONG_ROW);
                unsafe { b.launch(grid(out_rows, 256)) }?;
                if !block.long.is_empty() {
                    let long = core.stream.clone_htod(&block.long)?;
                    let n_long = block.long.len() as u64;
                    let mut b = core.stream.launch_builder(&self.csr_long);
                    b.arg(&mut at)
                        .arg(&long)
                        .arg(&n_long)
                        .arg(&starts)
                        .arg(&entries_at)
                        .arg(&streamed.coefficients)
                        .arg(&inputs.buf)
                        .arg(&n_in)
                        .arg(&aux.buf);
                    unsafe { b.launch(grid(32 * n_long, 256)) }?;
                }
                // Keeps the block's buffers until their kernels have read them: the copies
                // are asynchronous from page-locked memory, and freed memory is reused.
                drop((starts, entries));
            }
            Ok(out)
        };
        Ok([product(&m.a, &streamed.a)?, product(&m.b, &streamed.b)?])
    }

    /// c = a∘b over the domain (a synthesized witness satisfies every constraint).
    pub fn hadamard(
        &self,
        core: &Core,
        a: &DeviceScalars,
        b: &DeviceScalars,
    ) -> Result<DeviceScalars, CudaError> {
        let n = a.len as u64;
        let mut out = core.alloc_scalars(a.len.max(1))?;
        out.len = a.len;
        let mut l = core.stream.launch_builder(&self.hadamard);
        l.arg(&mut out.buf).arg(&a.buf).arg(&b.buf).arg(&n);
        unsafe { l.launch(grid(n, 256)) }?;
        Ok(out)
    }

    /// A·z and B·z from the resident matrices, zero-padded to `padded` rows, and C·z (or
    /// A·z ∘ B·z) where `c_from` says how: the h step's phased order leaves c for later, when
    /// fewer vectors are live (see [`hadamard`](Self::hadamard)).
    pub fn products(
        &self,
        core: &Core,
        m: &DeviceMatrices,
        inputs: &DeviceScalars,
        aux: &DeviceScalars,
        padded: usize,
        c_from: Option<CFrom>,
    ) -> Result<(DeviceScalars, DeviceScalars, Option<DeviceScalars>), CudaError> {
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
            let out = core.alloc_scalars(padded.max(1))?;
            Ok(DeviceScalars {
                buf: out.buf,
                len: padded,
            })
        };
        let product = |x: &DeviceCsr| -> Result<DeviceScalars, CudaError> {
            let mut out = rows_out()?;
            let mut b = core.stream.launch_builder(&self.csr);
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
                let mut b = core.stream.launch_builder(&self.csr_long);
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
            None => None,
            Some(CFrom::Matrix) => Some(product(&m.c)?),
            Some(CFrom::AB) => Some(self.hadamard(core, &a, &b)?),
        };
        Ok((a, b, c))
    }
}
