//! What one client can hold of the daemon: connections, bytes in transit, time, parsing
//! threads. The `[limits]` table of the daemon's configuration; every knob has a documented
//! default (zkforge.example.toml) and is printed at start.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use serde::{Deserialize, Serialize};
use zkforge_engine::{auto_count, parse_bytes};

/// Largest SubmitProof (or Prove) message: a full 64 GiB WindowPoSt partition (2,300 sector
/// proofs) or a 32 GiB PoRep C1 output, with room to spare. docs/reliability.md lists the
/// measured sizes.
pub const DEFAULT_MAX_REQUEST_BYTES: u64 = 256 << 20;

/// Largest message of every other RPC: ids and circuit names only.
pub const SMALL_REQUEST_BYTES: u64 = 64 << 10;

/// The `[limits]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Open connections at most, over both listeners (gRPC and HTTP count separately); one
    /// more is accepted and closed at once.
    pub max_connections: usize,
    /// Open connections from one client (IP address; every unix-socket peer is one client).
    pub max_connections_per_client: usize,
    /// A connection with no request in flight for this long is closed (clients reconnect
    /// transparently); it also bounds a connection that never completes its first request.
    pub idle_timeout_secs: u64,
    /// A request whose body stops arriving for this long is refused and its bytes freed.
    pub body_timeout_secs: u64,
    /// Largest SubmitProof/Prove message, e.g. "256MiB"; the other RPCs take at most 64 KiB.
    pub max_request_bytes: String,
    /// Request bytes being received at once over all connections, e.g. "1GiB"; a request
    /// that would pass it is refused with RESOURCE_EXHAUSTED.
    pub max_receiving_bytes: String,
    /// The part of `max_receiving_bytes` only urgent requests may use (priority HIGH or
    /// CRITICAL, or unset for a WindowPoSt or WinningPoSt): they are received however many
    /// bulk requests are arriving. At most `max_receiving_bytes` − `max_request_bytes`.
    pub urgent_receiving_bytes: String,
    /// Bytes a second a request body must keep arriving at, measured over 5-second windows,
    /// e.g. "1MiB"; a slower one is refused and its bytes freed ("0": no minimum). A client
    /// trickling its last bytes cannot hold its share of `max_receiving_bytes`.
    pub min_receive_rate: String,
    /// Requests parsed and checked at once (C1 JSON, vanilla proofs), off the threads that
    /// answer status calls: a number, or "auto" (0 here): a quarter of the cores, at least 1.
    #[serde(with = "auto_count")]
    pub parse_workers: usize,
    /// Parse workers beside `parse_workers` that take only urgent requests, so that a
    /// WinningPoSt is never parsed after a row of 32 GiB C1 outputs; urgent requests waiting
    /// are also served first by the others. 0: none kept.
    pub urgent_parse_workers: usize,
    /// Calls of one client (AwaitProof, and Prove while it waits) waiting at once on jobs
    /// below HIGH priority; one more is refused at once with RESOURCE_EXHAUSTED. Every
    /// connection carries all of a client's waiters and more, so no number of them delays the
    /// client's other calls.
    pub max_waiters_per_client: usize,
    /// Waiters of one client on HIGH and CRITICAL jobs (WindowPoSt and WinningPoSt by
    /// default), beside `max_waiters_per_client`: room bulk waiters cannot take.
    pub urgent_waiters_per_client: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            max_connections_per_client: 128,
            idle_timeout_secs: 120,
            body_timeout_secs: 30,
            max_request_bytes: "256MiB".into(),
            max_receiving_bytes: "1GiB".into(),
            urgent_receiving_bytes: "256MiB".into(),
            min_receive_rate: "1MiB".into(),
            parse_workers: 0,
            urgent_parse_workers: 1,
            max_waiters_per_client: 4096,
            urgent_waiters_per_client: 1024,
        }
    }
}

/// The limits, checked and in their working units.
#[derive(Clone, Debug)]
pub struct Checked {
    pub max_connections: usize,
    pub max_connections_per_client: usize,
    pub idle_timeout: Duration,
    pub body_timeout: Duration,
    pub max_request_bytes: u64,
    pub max_receiving_bytes: u64,
    pub urgent_receiving_bytes: u64,
    /// Bytes a second (0: no minimum).
    pub min_receive_rate: u64,
    pub parse_workers: usize,
    pub urgent_parse_workers: usize,
    pub max_waiters_per_client: usize,
    pub urgent_waiters_per_client: usize,
}

impl Limits {
    /// Checks every knob, naming the bad one.
    pub fn check(&self) -> Result<Checked> {
        ensure!(
            self.max_connections > 0,
            "limits.max_connections must be at least 1"
        );
        ensure!(
            (1..=self.max_connections).contains(&self.max_connections_per_client),
            "limits.max_connections_per_client must lie in 1..=max_connections"
        );
        ensure!(
            self.idle_timeout_secs > 0 && self.body_timeout_secs > 0,
            "limits.idle_timeout_secs and limits.body_timeout_secs must be at least 1"
        );
        let max_request_bytes =
            parse_bytes(&self.max_request_bytes).context("limits.max_request_bytes")?;
        let max_receiving_bytes =
            parse_bytes(&self.max_receiving_bytes).context("limits.max_receiving_bytes")?;
        ensure!(
            max_request_bytes >= SMALL_REQUEST_BYTES,
            "limits.max_request_bytes must be at least 64KiB"
        );
        ensure!(
            max_receiving_bytes >= max_request_bytes,
            "limits.max_receiving_bytes must be at least limits.max_request_bytes"
        );
        let urgent_receiving_bytes =
            parse_bytes(&self.urgent_receiving_bytes).context("limits.urgent_receiving_bytes")?;
        ensure!(
            urgent_receiving_bytes <= max_receiving_bytes - max_request_bytes,
            "limits.urgent_receiving_bytes must leave limits.max_request_bytes of \
             limits.max_receiving_bytes to other requests"
        );
        let min_receive_rate =
            parse_bytes(&self.min_receive_rate).context("limits.min_receive_rate")?;
        // tonic takes the message limit as a usize and a u32 frame length bounds it anyway.
        ensure!(
            max_request_bytes <= u32::MAX as u64,
            "limits.max_request_bytes must be below 4GiB"
        );
        ensure!(
            self.max_waiters_per_client > 0 && self.urgent_waiters_per_client > 0,
            "limits.max_waiters_per_client and limits.urgent_waiters_per_client must be at \
             least 1"
        );
        ensure!(
            self.max_waiters_per_client + self.urgent_waiters_per_client <= 1 << 20,
            "limits.max_waiters_per_client + limits.urgent_waiters_per_client must be at most \
             1048576 (each waiter holds an HTTP/2 stream)"
        );
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(Checked {
            max_connections: self.max_connections,
            max_connections_per_client: self.max_connections_per_client,
            idle_timeout: Duration::from_secs(self.idle_timeout_secs),
            body_timeout: Duration::from_secs(self.body_timeout_secs),
            max_request_bytes,
            max_receiving_bytes,
            urgent_receiving_bytes,
            min_receive_rate,
            parse_workers: match self.parse_workers {
                0 => (cores / 4).max(1),
                n => n,
            },
            urgent_parse_workers: self.urgent_parse_workers,
            max_waiters_per_client: self.max_waiters_per_client,
            urgent_waiters_per_client: self.urgent_waiters_per_client,
        })
    }

    /// One `key = value` line per knob, for the start-up log.
    pub fn describe(&self) -> Vec<String> {
        let v = serde_json::to_value(self).expect("limits serialize");
        let map = v.as_object().expect("limits are an object");
        map.iter().map(|(k, v)| format!("{k} = {v}")).collect()
    }
}

impl Default for Checked {
    fn default() -> Self {
        Limits::default().check().expect("the defaults are valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_check_and_bad_values_are_named() {
        let c = Limits::default().check().unwrap();
        assert_eq!(c.max_request_bytes, DEFAULT_MAX_REQUEST_BYTES);
        assert!(c.parse_workers >= 1);
        let bad = Limits {
            max_connections_per_client: 0,
            ..Default::default()
        };
        assert!(format!("{:#}", bad.check().unwrap_err()).contains("max_connections_per_client"));
        let bad = Limits {
            max_receiving_bytes: "1MiB".into(),
            ..Default::default()
        };
        assert!(format!("{:#}", bad.check().unwrap_err()).contains("max_receiving_bytes"));
        assert!(Limits::default()
            .describe()
            .iter()
            .any(|l| l == "parse_workers = \"auto\""));
    }
}
