//! Why a job failed, typed: its [`FailureKind`] (what the client can do about it) beside the
//! message that names the cause. The server maps the kind onto a gRPC code.

pub use zkforge_groth16::FailureKind;

/// A failure the engine reports: a failed job's outcome, a refused preload. Shown as its
/// message alone, so that logs and messages read as they did before kinds.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// `e` with the kind of the first error in its chain that knows its own (a [`Failure`],
    /// a prover error), else `otherwise`; the message is the whole chain (`{e:#}`).
    pub fn of(e: &anyhow::Error, otherwise: FailureKind) -> Self {
        Self::new(kind_of(e, otherwise), format!("{e:#}"))
    }

    /// The same failure, its message prefixed by `context` (`"{context}: {message}"`).
    pub fn context(self, context: impl std::fmt::Display) -> Self {
        Self::new(self.kind, format!("{context}: {}", self.message))
    }
}

/// The kind of the first error in `e`'s chain that knows its own, else `otherwise`.
pub fn kind_of(e: &anyhow::Error, otherwise: FailureKind) -> FailureKind {
    e.chain()
        .find_map(|c| {
            c.downcast_ref::<Failure>()
                .map(|f| f.kind)
                .or_else(|| c.downcast_ref::<zkforge_groth16::Error>().map(|g| g.kind()))
        })
        .unwrap_or(otherwise)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn the_kind_is_found_under_any_context_and_the_message_is_the_chain() {
        let room: anyhow::Result<()> = Err(Failure::new(FailureKind::NoRoom, "no room").into());
        let e = room.context("parameters porep-2k").unwrap_err();
        let f = Failure::of(&e, FailureKind::Internal);
        assert_eq!(f.kind, FailureKind::NoRoom);
        assert_eq!(f.message, "parameters porep-2k: no room");
        assert_eq!(f.to_string(), f.message);

        let prover: anyhow::Result<()> =
            Err(zkforge_groth16::Error::DomainTooLarge { log2: 33 }.into());
        let e = prover.context("partition 3").unwrap_err();
        assert_eq!(
            kind_of(&e, FailureKind::Internal),
            FailureKind::InvalidInput
        );

        let unknown = anyhow::anyhow!("something else");
        assert_eq!(
            kind_of(&unknown, FailureKind::NotProvisioned),
            FailureKind::NotProvisioned
        );
    }
}
