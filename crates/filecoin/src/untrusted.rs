//! The boundary where client input meets the official crates. storage-proofs trusts its
//! inputs: a vanilla proof that decodes but holds, say, a non-canonical field element in a
//! Merkle path makes it panic while hashing (found by crates/filecoin/tests/fuzz_inputs.rs).
//! Building circuits from a request runs under [`refusing_panics`], so such input is an error
//! that names it, in the daemon and the CLI alike.

use std::panic::{catch_unwind, AssertUnwindSafe};

use anyhow::{anyhow, Context, Result};
use serde::de::DeserializeOwned;

/// Runs `build`, turning a panic into an error naming `what` and the panic's message.
pub(crate) fn refusing_panics<T>(what: &str, build: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(build)).unwrap_or_else(|panic| {
        let msg = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Err(anyhow!(
            "{what} are malformed: the Filecoin code checking them failed ({msg})"
        ))
    })
}

/// Each of a request's vanilla proofs decoded from bincode, its bytes freed as soon as it is;
/// one that does not decode is named by `what(i)`, `i` its index.
pub(crate) fn decode_each<T: DeserializeOwned>(
    proofs: Vec<Vec<u8>>,
    what: impl Fn(usize) -> String,
) -> Result<Vec<T>> {
    proofs
        .into_iter()
        .enumerate()
        .map(|(i, b)| bincode::deserialize(&b).with_context(|| what(i)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_named_error() {
        let err = refusing_panics("the vanilla proofs", || -> Result<()> {
            std::panic::panic_any(String::from("from_repr failure at 0"))
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("the vanilla proofs are malformed") && err.contains("from_repr"));
        assert_eq!(refusing_panics("x", || Ok(3)).unwrap(), 3);
    }
}
