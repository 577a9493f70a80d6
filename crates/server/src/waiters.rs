//! Calls waiting for a job's end (AwaitProof, and the wait inside Prove), counted per client.
//!
//! A waiter is a parked future, but it also holds an HTTP/2 stream of its connection, and a
//! connection carries at most `max_concurrent_streams` of them: gRPC clients share one
//! connection between their calls (grpc-go's ClientConn, grpcio's channels to one target), so
//! with 256 streams a client holding 300 waiters had its next GetStatus or WinningPoSt queued
//! behind them *in the client library*, unanswered until a waiter left. So a connection takes
//! every stream a client may hold ([`streams_per_connection`]), and the count that bounds
//! memory is kept here instead, per client: a call past a cap is refused at once with
//! RESOURCE_EXHAUSTED naming the cap, never queued. Waiters on urgent jobs (WindowPoSt and
//! WinningPoSt by default) count against a cap of their own, so that no number of waiters on
//! bulk jobs leaves a WinningPoSt's Prove without room.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tonic::Status;
use zkforge_engine::{FailureKind, Priority};

use crate::limits::Checked;
use crate::listener::{Client, ConnInfo};
use crate::log_sample::LogSample;
use crate::status::failure;

/// Calls beside a client's waiters that one connection must still carry at once: status
/// calls, submissions, cancels (each answers in milliseconds or is bounded by the receive
/// budget and the queue).
pub const CALLS_BESIDE_WAITERS: u32 = 256;

/// HTTP/2 streams one connection may hold: every waiter its client may have, and room beside
/// them, so that a client's new call is never held in its own library by its waiters.
pub fn streams_per_connection(limits: &Checked) -> u32 {
    let waiters = limits.max_waiters_per_client + limits.urgent_waiters_per_client;
    u32::try_from(waiters)
        .unwrap_or(u32::MAX)
        .saturating_add(CALLS_BESIDE_WAITERS)
}

/// The waiters of every client, bulk and urgent apart.
pub struct Waiters {
    bulk_cap: usize,
    urgent_cap: usize,
    by_client: Mutex<HashMap<(Client, bool), usize>>,
    refused: LogSample,
}

/// One waiting call's place; given back when dropped (the call answered, or its client left).
pub struct WaiterSlot {
    waiters: Arc<Waiters>,
    key: (Client, bool),
}

impl Waiters {
    pub fn new(limits: &Checked) -> Arc<Self> {
        Arc::new(Self {
            bulk_cap: limits.max_waiters_per_client,
            urgent_cap: limits.urgent_waiters_per_client,
            by_client: Mutex::new(HashMap::new()),
            refused: LogSample::default(),
        })
    }

    /// A place for one more waiter of the client `conn` names (a call from outside a
    /// connection, as in-process tests make, counts as the local client), on a job of
    /// `priority`; RESOURCE_EXHAUSTED at once when the client holds its cap.
    pub fn enter(
        self: &Arc<Self>,
        conn: Option<&ConnInfo>,
        priority: Priority,
    ) -> Result<WaiterSlot, Status> {
        let urgent = priority.is_urgent();
        let client = conn.map_or(Client::Local, |c| c.0.client);
        let key = (client, urgent);
        let cap = if urgent {
            self.urgent_cap
        } else {
            self.bulk_cap
        };
        let mut counts = self.by_client.lock().unwrap_or_else(|e| e.into_inner());
        let held = counts.entry(key).or_default();
        if *held >= cap {
            drop(counts);
            return Err(self.refuse(client, urgent, cap));
        }
        *held += 1;
        Ok(WaiterSlot {
            waiters: self.clone(),
            key,
        })
    }

    fn refuse(&self, client: Client, urgent: bool, cap: usize) -> Status {
        let (what, knob) = if urgent {
            ("urgent", "limits.urgent_waiters_per_client")
        } else {
            ("bulk", "limits.max_waiters_per_client")
        };
        if self.refused.take() {
            tracing::warn!(
                ?client,
                cap,
                "a waiter refused: the client holds {knob} calls waiting on {what} jobs \
                 (logged once per 1000)"
            );
        }
        failure(
            FailureKind::NoRoom,
            format!(
                "this client already has {cap} calls waiting on {what} jobs ({knob} = {cap}); \
                 wait on fewer at once"
            ),
        )
    }

    /// Waiters held now, all clients together.
    #[cfg(test)]
    fn held(&self) -> usize {
        let counts = self.by_client.lock().unwrap_or_else(|e| e.into_inner());
        counts.values().sum()
    }
}

impl Drop for WaiterSlot {
    fn drop(&mut self) {
        let mut counts = self
            .waiters
            .by_client
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(n) = counts.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;

    fn limits(bulk: usize, urgent: usize) -> Checked {
        Limits {
            max_waiters_per_client: bulk,
            urgent_waiters_per_client: urgent,
            ..Default::default()
        }
        .check()
        .unwrap()
    }

    #[test]
    fn a_client_at_its_cap_is_refused_at_once_and_urgent_waiters_keep_their_room() {
        let w = Waiters::new(&limits(3, 1));
        let bulk: Vec<_> = (0..3)
            .map(|_| w.enter(None, Priority::Normal).unwrap())
            .collect();
        let refused = w
            .enter(None, Priority::Normal)
            .err()
            .expect("over the bulk cap");
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(refused
            .message()
            .contains("limits.max_waiters_per_client = 3"));
        let urgent = w
            .enter(None, Priority::High)
            .expect("urgent room bulk waiters cannot take");
        assert!(
            w.enter(None, Priority::High).is_err(),
            "over the urgent cap"
        );
        assert_eq!(w.held(), 4);
        drop(bulk);
        drop(urgent);
        assert_eq!(w.held(), 0);
        w.enter(None, Priority::Normal)
            .expect("room again once the waiters left");
    }

    #[test]
    fn a_connection_carries_every_waiter_of_its_client_and_more() {
        let l = limits(4096, 1024);
        assert_eq!(
            streams_per_connection(&l),
            4096 + 1024 + CALLS_BESIDE_WAITERS
        );
    }
}
