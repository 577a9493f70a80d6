//! Curio's own client against the daemon (issue 36): its request shapes, the unary `Prove`
//! only, its retries of a failed task with the same request (scaled down), and what other
//! local processes can do beside it. One test per way Curio once lost a proof, a retry or its
//! connection; each asserts the outcome Curio needs — a proof filecoin-proofs accepts, an
//! answer in time — not merely a status code.
//!
//! `retries.rs`: what Curio itself does (retries after a failure or a cancellation, ProofShare's
//! SnapDeals, urgent proofs past a full queue, a stop under load, GetStatus's names);
//! `proof_types.rs`: the seal proof types besides interactive PoRep (a synthetic PoRep proved,
//! NI-PoRep refused by name); `neighbours.rs`: what another local client does beside it
//! (guessed job ids, squatted request ids, trickled bodies, held connections, slowloris on the
//! scrape port, bad ids, a row of 32 GiB C1 outputs ahead of a WinningPoSt). Crowds of waiters
//! on one connection: `crates/cli/tests/waiters.rs`, against a daemon process.

mod client;
#[path = "../common/mod.rs"]
mod common;
mod daemon;
mod failures;
mod neighbours;
mod proof_types;
mod requests;
mod retries;
