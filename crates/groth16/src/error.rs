//! Errors of the prover crate; each names what was wrong and where.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a failure means to whoever asked for the work: the few cases a client acts on
/// differently. Every [`Error`] has one ([`Error::kind`]); the daemon turns it into a gRPC code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The request itself is wrong (a circuit its inputs do not satisfy, a proof that does
    /// not parse): the same request fails again anywhere.
    InvalidInput,
    /// This machine lacks the room: host memory, VRAM (or the wait for it ran out), a key
    /// larger than its cards. Another machine, or this one later, may do it.
    NoRoom,
    /// The prover is not set up for the work: its parameter files are missing, damaged or do
    /// not match the circuit, or it has no GPU support. An operator must act.
    NotProvisioned,
    /// The prover is stopping (or stopped) and will not finish the work; retry elsewhere.
    Unavailable,
    /// Someone cancelled the work.
    Cancelled,
    /// A bug, a device or driver fault, a panic: nothing the client did.
    Internal,
}

impl FailureKind {
    /// The kind's name, as logs and tests print it.
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::InvalidInput => "invalid input",
            FailureKind::NoRoom => "no room",
            FailureKind::NotProvisioned => "not provisioned",
            FailureKind::Unavailable => "unavailable",
            FailureKind::Cancelled => "cancelled",
            FailureKind::Internal => "internal",
        }
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

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

    /// A backend's failure, with what it means ([`FailureKind`]) as the backend judged it.
    #[error("prover backend {backend}: {message}")]
    Backend {
        backend: &'static str,
        kind: FailureKind,
        message: String,
    },
}

impl Error {
    /// What this failure means to the client (see [`FailureKind`]).
    pub fn kind(&self) -> FailureKind {
        match self {
            Error::Synthesis(_)
            | Error::DomainTooLarge { .. }
            | Error::MalformedProof(_)
            | Error::PublicInputCount(..) => FailureKind::InvalidInput,
            // Parameter files are the prover's, not the client's: an operator fixes them.
            Error::Io { .. }
            | Error::MalformedParams { .. }
            | Error::ShapeMismatch { .. }
            | Error::MalformedVerifyingKey(_) => FailureKind::NotProvisioned,
            Error::Backend { kind, .. } => *kind,
        }
    }

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
