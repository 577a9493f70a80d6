//! Key decoding on the device: the kernels (`decode_points_g1`, `decode_points_g2` in
//! `kernels/ec/decode.cuh`) that turn a `.params` file's canonical big-endian points into
//! Montgomery affine points, checking flags and curve; used by the key upload and the streamed
//! chunks (backend/key_upload.rs, backend/chunks.rs).

use cudarc::driver::{CudaFunction, DriverError};

use zkforge_groth16::srs::Query;
use zkforge_groth16::ParamsFile;

use crate::context::Core;
use crate::CudaError;

#[derive(Clone)]
pub(crate) struct Decode {
    pub g1: CudaFunction,
    pub g2: CudaFunction,
}

impl Decode {
    pub fn load(core: &Core) -> Result<Self, DriverError> {
        let [g1, g2] = core.functions(["decode_points_g1", "decode_points_g2"])?;
        Ok(Decode { g1, g2 })
    }
}

/// The error for a point of `query` the decode kernel refused in a key read from `file`:
/// `verdict` is the kernel's report for a run of points from `first` on (the refused one's
/// index in the run, shifted left 8, with the reason), named as the prover crate names a
/// damaged key read on the host.
pub(crate) fn damaged_key(file: &ParamsFile, query: Query, first: usize, verdict: u64) -> CudaError {
    CudaError::Groth16(zkforge_groth16::Error::MalformedParams {
        path: file.path().to_path_buf(),
        what: format!(
            "{}[{}]: {}",
            query.name(),
            first + (verdict >> 8) as usize,
            decode_error(verdict & 0xff)
        ),
    })
}

/// Why the decode kernel refused a point (kernels/ec/encode.cuh `decode_error`).
fn decode_error(code: u64) -> &'static str {
    match code {
        1 => "bad flag bits (compressed or sign set, or junk after the infinity flag)",
        2 => "a coordinate is not below the field modulus",
        3 => "point at infinity",
        4 => "not on the curve",
        _ => "unknown decode error",
    }
}
