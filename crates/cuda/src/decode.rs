//! Key decoding on the device: the kernels (`decode_points_g1`, `decode_points_g2` in
//! `kernels/ec/decode.cuh`) that turn a `.params` file's canonical big-endian points into
//! Montgomery affine points, checking flags and curve; used by the key upload and the streamed
//! chunks (backend/key_upload.rs, backend/chunks.rs).

use cudarc::driver::{CudaFunction, DriverError};

use crate::context::Core;

#[derive(Clone)]
pub(crate) struct Decode {
    pub g1: CudaFunction,
    pub g2: CudaFunction,
}

impl Decode {
    pub fn load(core: &Core) -> Result<Self, DriverError> {
        Ok(Decode {
            g1: core.function("decode_points_g1")?,
            g2: core.function("decode_points_g2")?,
        })
    }
}

/// Why the decode kernel refused a point (kernels/ec/encode.cuh `decode_error`).
pub(crate) fn decode_error(code: u64) -> &'static str {
    match code {
        1 => "bad flag bits (compressed or sign set, or junk after the infinity flag)",
        2 => "a coordinate is not below the field modulus",
        3 => "point at infinity",
        4 => "not on the curve",
        _ => "unknown decode error",
    }
}
