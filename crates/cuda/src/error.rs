//! Errors returned by every GPU entry point, each of one [`FailureKind`] once it reaches the
//! prover crate (`From<CudaError> for zkforge_groth16::Error`).

use zkforge_groth16::FailureKind;

/// Why a GPU operation could not run.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// The crate was compiled without the `cuda` feature.
    #[error("zkforge-cuda was built without the `cuda` feature; rebuild with --features cuda")]
    NotBuilt,
    /// libcuda.so could not be loaded (no NVIDIA driver on this machine).
    #[error("no CUDA driver: libcuda.so could not be loaded")]
    NoDriver,
    /// A CUDA driver call failed: a device or driver fault.
    #[error("CUDA driver error: {0}")]
    Driver(String),
    /// The device had no room for an allocation (another process may hold its memory).
    #[error("out of device memory: {0}")]
    OutOfMemory(String),
    /// The card cannot hold the work, or the wait for its room ran out: a key or partition
    /// larger than its VRAM budget, no room for a key after the wait.
    #[error("{0}")]
    NoRoom(String),
    /// The arguments cannot be processed (length, size, mismatch).
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The prover crate's own error (a damaged key file, a domain too large), kind and all.
    #[error(transparent)]
    Groth16(#[from] zkforge_groth16::Error),
    /// Something this crate's own checks should have made impossible: a bug.
    #[error("internal error: {0}")]
    Internal(String),
}

impl CudaError {
    /// What this failure means to the client.
    pub fn kind(&self) -> FailureKind {
        match self {
            CudaError::NotBuilt | CudaError::NoDriver => FailureKind::NotProvisioned,
            CudaError::Driver(_) | CudaError::Internal(_) => FailureKind::Internal,
            CudaError::OutOfMemory(_) | CudaError::NoRoom(_) => FailureKind::NoRoom,
            CudaError::Invalid(_) => FailureKind::InvalidInput,
            CudaError::Groth16(e) => e.kind(),
        }
    }
}

impl From<CudaError> for zkforge_groth16::Error {
    fn from(e: CudaError) -> Self {
        match e {
            CudaError::Groth16(e) => e,
            e => zkforge_groth16::Error::Backend {
                backend: "cuda",
                kind: e.kind(),
                message: e.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkforge_groth16::Error;

    #[test]
    fn each_error_reaches_the_prover_crate_with_its_kind_and_message() {
        let cases = [
            (
                CudaError::NoRoom("no room on GPU 0 for the key after 1800 s".into()),
                FailureKind::NoRoom,
            ),
            (
                CudaError::OutOfMemory("CUDA_ERROR_OUT_OF_MEMORY".into()),
                FailureKind::NoRoom,
            ),
            (
                CudaError::Invalid("NTT length 3 is not a power of two".into()),
                FailureKind::InvalidInput,
            ),
            (
                CudaError::Driver("CUDA_ERROR_ILLEGAL_ADDRESS".into()),
                FailureKind::Internal,
            ),
            (
                CudaError::Internal("c was not computed".into()),
                FailureKind::Internal,
            ),
            (CudaError::NotBuilt, FailureKind::NotProvisioned),
        ];
        for (e, kind) in cases {
            let shown = e.to_string();
            let err = Error::from(e);
            assert_eq!(err.kind(), kind, "{shown}");
            let Error::Backend {
                backend, message, ..
            } = &err
            else {
                panic!("{err:?}");
            };
            assert_eq!((*backend, message.as_str()), ("cuda", shown.as_str()));
        }
        // The prover crate's own error comes back as itself: a damaged key file stays one.
        let damaged = Error::MalformedParams {
            path: "k.params".into(),
            what: "a[3]: not on the curve".into(),
        };
        let back = Error::from(CudaError::from(damaged));
        assert!(matches!(back, Error::MalformedParams { .. }), "{back:?}");
        assert_eq!(back.kind(), FailureKind::NotProvisioned);
        assert_eq!(back.to_string(), "k.params: a[3]: not on the curve");
    }
}
