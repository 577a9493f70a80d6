//! The one place a gRPC status code is minted: each [`FailureKind`] has its code ([`code`]),
//! four answers that are no failure of the work have theirs ([`not_found`],
//! [`already_exists`], [`unauthenticated`], [`stalled`]), and every message is bounded
//! ([`bounded`]) whatever produced it. RPCs that fail answer [`failure`]'s Status; a job that
//! ends FAILED (or CANCELLED) is answered in the response's fields as cuzk.v1 says, with the
//! same bounded message and the kind's code in the response header [`FAILURE_CODE_HEADER`].
//! The architecture test (`crates/cli/tests/architecture.rs`) keeps the server's other files
//! from minting codes of their own.

use tonic::metadata::MetadataValue;
use tonic::{Code, Response, Status};
use zkforge_engine::{Failure, FailureKind};

/// Longest message a Status carries. It travels in an HTTP/2 header (grpc-message): a parser
/// error that quotes the client's input (serde names the unknown variant it read) could
/// otherwise outgrow the header limit and reach the client as a bare protocol error.
pub(crate) const MAX_STATUS_MESSAGE: usize = 1024;

/// Response header of an AwaitProof or Prove answer whose job ended FAILED or CANCELLED: the
/// gRPC code (its number, as `grpc-status` writes it) the failure's kind maps to, e.g. `8`
/// (RESOURCE_EXHAUSTED) for a job this machine had no room for.
pub const FAILURE_CODE_HEADER: &str = "zkforge-failure-code";

/// `msg`, cut to [`MAX_STATUS_MESSAGE`] bytes on a character boundary, saying so.
pub(crate) fn bounded(msg: impl std::fmt::Display) -> String {
    let mut msg = msg.to_string();
    if msg.len() > MAX_STATUS_MESSAGE {
        let total = msg.len();
        let mut cut = MAX_STATUS_MESSAGE;
        while !msg.is_char_boundary(cut) {
            cut -= 1;
        }
        msg.truncate(cut);
        msg.push_str(&format!("… ({} more bytes)", total - cut));
    }
    msg
}

/// The gRPC code of a failure of `kind`: what a client (Curio retries on any) can act on.
pub fn code(kind: FailureKind) -> Code {
    match kind {
        // The same request fails again anywhere.
        FailureKind::InvalidInput => Code::InvalidArgument,
        // Host memory, VRAM, a key beyond this machine: another machine or later may do it.
        FailureKind::NoRoom => Code::ResourceExhausted,
        // Parameters missing or damaged: this daemon cannot, until an operator acts.
        FailureKind::NotProvisioned => Code::FailedPrecondition,
        // The daemon is stopping: retry elsewhere or once it is back.
        FailureKind::Unavailable => Code::Unavailable,
        FailureKind::Cancelled => Code::Cancelled,
        FailureKind::Internal => Code::Internal,
    }
}

/// The Status of a failure of `kind` with `message`, bounded.
pub fn failure(kind: FailureKind, message: impl std::fmt::Display) -> Status {
    Status::new(code(kind), bounded(message))
}

/// The Status of an engine's [`Failure`].
pub fn of(f: &Failure) -> Status {
    failure(f.kind, &f.message)
}

/// NOT_FOUND: the job id (or request_id) names no job this daemon holds.
pub fn not_found(message: impl std::fmt::Display) -> Status {
    Status::not_found(bounded(message))
}

/// ALREADY_EXISTS: a `request_id` whose unfinished job carries another payload. Not a
/// failure: the id is taken, the job under it stands.
pub fn already_exists(message: impl std::fmt::Display) -> Status {
    Status::already_exists(bounded(message))
}

/// UNAUTHENTICATED: the call lacks the bearer token the daemon asks for.
pub fn unauthenticated(message: impl std::fmt::Display) -> Status {
    Status::unauthenticated(bounded(message))
}

/// DEADLINE_EXCEEDED: a request body stopped arriving for `limits.body_timeout_secs`.
pub fn stalled(message: impl std::fmt::Display) -> Status {
    Status::deadline_exceeded(bounded(message))
}

/// A message prost could not decode (a string field that is not UTF-8, a truncated field):
/// the client's fault, INVALID_ARGUMENT, where tonic would answer INTERNAL; `message_type`
/// names the message.
pub(crate) fn undecodable(e: Status, message_type: &str) -> Status {
    match e.code() {
        Code::Internal => failure(
            FailureKind::InvalidInput,
            format!("the message is not a valid {message_type}: {}", e.message()),
        ),
        _ => e,
    }
}

/// `response` with [`FAILURE_CODE_HEADER`] set to `code`'s number when there is one.
pub(crate) fn with_failure_code<T>(mut response: Response<T>, code: Option<Code>) -> Response<T> {
    if let Some(code) = code {
        let value = MetadataValue::from(code as i32);
        response.metadata_mut().insert(FAILURE_CODE_HEADER, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        assert_eq!(bounded("short"), "short");
        let long = "é".repeat(1000);
        let cut = bounded(&long);
        assert!(cut.len() < MAX_STATUS_MESSAGE + 32, "{}", cut.len());
        assert!(cut.ends_with("(976 more bytes)"), "{cut}");
    }

    #[test]
    fn each_kind_has_its_code_and_every_message_is_bounded() {
        let table = [
            (FailureKind::InvalidInput, Code::InvalidArgument),
            (FailureKind::NoRoom, Code::ResourceExhausted),
            (FailureKind::NotProvisioned, Code::FailedPrecondition),
            (FailureKind::Unavailable, Code::Unavailable),
            (FailureKind::Cancelled, Code::Cancelled),
            (FailureKind::Internal, Code::Internal),
        ];
        let huge = "x".repeat(1 << 20);
        for (kind, expected) in table {
            let st = of(&Failure::new(kind, "no room on GPU 0"));
            assert_eq!((st.code(), st.message()), (expected, "no room on GPU 0"));
            let st = failure(kind, &huge);
            assert_eq!(st.code(), expected);
            assert!(st.message().len() <= MAX_STATUS_MESSAGE + 32, "{kind}");
            assert!(st.message().starts_with("xxxx"));
            assert!(
                st.message()
                    .ends_with(&format!("({} more bytes)", (1 << 20) - MAX_STATUS_MESSAGE)),
                "{kind}"
            );
        }
    }

    #[test]
    fn the_header_carries_the_code_number_only_for_a_failure() {
        let r = with_failure_code(Response::new(()), Some(Code::ResourceExhausted));
        assert_eq!(r.metadata().get(FAILURE_CODE_HEADER).unwrap(), "8");
        let r = with_failure_code(Response::new(()), None);
        assert!(r.metadata().get(FAILURE_CODE_HEADER).is_none());
    }
}
