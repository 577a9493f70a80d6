//! A hostile-but-local client against the daemon (issue 22): one test per way a client once
//! aborted or wedged it, and per bound it checks. After each, the daemon is alive, answers
//! GetStatus within a second, and this process's peak memory moved by no more than the bound
//! the test states. Loopback only; each test bounded in time.
//!
//! Jobs that must stay unfinished wait on a [`GatedSource`]: their parameter load blocks until
//! the test opens the gate, then fails, so nothing here needs proving keys.
//!
//! `requests.rs`: what a request can ask for (indices, counts, waits, ids, the queue, the wire
//! fields); `connections.rs`: what a connection can hold (caps, idle and half-sent
//! connections, oversized messages, the HTTP side). One test binary: the bounds are on this
//! process's peak memory, which no other test may move.

#[path = "../common/mod.rs"]
mod common;
mod connections;
mod harness;
mod requests;
