//! Errors of the prover crate; each names what was wrong and where.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("circuit synthesis failed: {0}")]
    Synthesis(String),

    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{path}: {what}")]
    MalformedParams { path: PathBuf, what: String },

    #[error("parameters do not fit the circuit: {what} has {params} entries in the parameters but the circuit needs {circuit}")]
    ShapeMismatch {
        what: &'static str,
        params: usize,
        circuit: usize,
    },

    #[error("the circuit needs an evaluation domain of 2^{log2} or more, beyond the field's 2^32")]
    DomainTooLarge { log2: u32 },

    #[error("invalid proof bytes: {0}")]
    MalformedProof(String),

    #[error("the verifying key is unusable: {0}")]
    MalformedVerifyingKey(String),

    #[error("{0} public inputs given, the verifying key expects {1}")]
    PublicInputCount(usize, usize),

    #[error("prover backend {backend}: {message}")]
    Backend {
        backend: &'static str,
        message: String,
    },
}

impl Error {
    pub(crate) fn malformed(path: &std::path::Path, what: impl Into<String>) -> Self {
        Error::MalformedParams {
            path: path.to_path_buf(),
            what: what.into(),
        }
    }

    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl From<bellpepper_core::SynthesisError> for Error {
    fn from(e: bellpepper_core::SynthesisError) -> Self {
        Error::Synthesis(e.to_string())
    }
}
