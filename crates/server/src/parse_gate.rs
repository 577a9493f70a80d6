//! Parse workers, urgent requests first. Parsing and checking a 32 GiB C1 output takes seconds
//! of CPU; six of them ahead of a WinningPoSt once held it for 35 s (8.8 s alone). The gate
//! keeps `workers` slots for any request plus `urgent` slots only urgent requests take, and a
//! freed slot goes to the oldest urgent waiter before any other.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use zkforge_engine::Priority;

/// A slot's kind: shared by every request, or kept for urgent ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Shared,
    Urgent,
}

struct Waiter {
    urgent: bool,
    seq: u64,
    wake: oneshot::Sender<Slot>,
}

impl Waiter {
    /// Urgent before bulk, then first come first served.
    fn rank(&self) -> (bool, Reverse<u64>) {
        (self.urgent, Reverse(self.seq))
    }
}

impl PartialEq for Waiter {
    fn eq(&self, o: &Self) -> bool {
        self.rank() == o.rank()
    }
}
impl Eq for Waiter {}
impl PartialOrd for Waiter {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Waiter {
    fn cmp(&self, o: &Self) -> Ordering {
        self.rank().cmp(&o.rank())
    }
}

#[derive(Default)]
struct State {
    free_shared: usize,
    free_urgent: usize,
    waiting: BinaryHeap<Waiter>,
    seq: u64,
}

/// The parse workers' slots.
pub struct ParseGate(Mutex<State>);

/// A held slot; dropping it hands the slot to the next waiter it may serve.
pub struct ParsePermit {
    gate: Arc<ParseGate>,
    slot: Slot,
}

impl ParseGate {
    pub fn new(workers: usize, urgent: usize) -> Arc<Self> {
        Arc::new(Self(Mutex::new(State {
            free_shared: workers.max(1),
            free_urgent: urgent,
            ..Default::default()
        })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot, once one a request of `priority` may take is free.
    pub async fn acquire(self: &Arc<Self>, priority: Priority) -> ParsePermit {
        let urgent = priority.is_urgent();
        let woken = {
            let mut s = self.lock();
            let slot = if s.free_shared > 0 {
                s.free_shared -= 1;
                Some(Slot::Shared)
            } else if urgent && s.free_urgent > 0 {
                s.free_urgent -= 1;
                Some(Slot::Urgent)
            } else {
                None
            };
            if let Some(slot) = slot {
                return ParsePermit {
                    gate: self.clone(),
                    slot,
                };
            }
            let (wake, woken) = oneshot::channel();
            s.seq += 1;
            let seq = s.seq;
            s.waiting.push(Waiter { urgent, seq, wake });
            woken
        };
        match woken.await {
            Ok(slot) => ParsePermit {
                gate: self.clone(),
                slot,
            },
            // The gate never drops a waiter unanswered while it lives, and it outlives them.
            Err(_) => unreachable!("a parse waiter was dropped unanswered"),
        }
    }

    /// Hands `slot` to the best waiter that may take it, or frees it.
    fn release(&self, slot: Slot) {
        let mut s = self.lock();
        loop {
            let eligible = match s.waiting.peek() {
                Some(w) => slot == Slot::Shared || w.urgent,
                None => false,
            };
            if !eligible {
                break;
            }
            let w = s.waiting.pop().expect("peeked");
            // A waiter whose client left has dropped its receiver: try the next one.
            if w.wake.send(slot).is_ok() {
                return;
            }
        }
        match slot {
            Slot::Shared => s.free_shared += 1,
            Slot::Urgent => s.free_urgent += 1,
        }
    }
}

impl Drop for ParsePermit {
    fn drop(&mut self) {
        self.gate.release(self.slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const BULK: Priority = Priority::Normal;
    const URGENT: Priority = Priority::High;

    async fn held_within(gate: &Arc<ParseGate>, p: Priority, ms: u64) -> Option<ParsePermit> {
        tokio::time::timeout(Duration::from_millis(ms), gate.acquire(p))
            .await
            .ok()
    }

    #[tokio::test]
    async fn urgent_requests_have_a_slot_of_their_own_and_go_first() {
        let gate = ParseGate::new(1, 1);
        let bulk = held_within(&gate, BULK, 50).await.expect("the shared slot");
        assert!(held_within(&gate, BULK, 50).await.is_none(), "bulk waits");
        let urgent = held_within(&gate, URGENT, 50)
            .await
            .expect("the urgent slot");
        // Both held: a bulk waiter queued before an urgent one is served after it.
        let later_bulk = tokio::spawn({
            let g = gate.clone();
            async move { g.acquire(BULK).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let later_urgent = tokio::spawn({
            let g = gate.clone();
            async move { g.acquire(URGENT).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(bulk);
        let second = later_urgent.await.unwrap();
        assert_eq!(second.slot, Slot::Shared, "urgent first");
        // The urgent slot freed serves no bulk waiter; the shared one, once free, does.
        drop(urgent);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !later_bulk.is_finished(),
            "an urgent slot never serves bulk work"
        );
        drop(second);
        assert_eq!(later_bulk.await.unwrap().slot, Slot::Shared);
    }

    #[tokio::test]
    async fn a_waiter_that_left_does_not_keep_a_slot() {
        let gate = ParseGate::new(1, 0);
        let held = gate.acquire(BULK).await;
        assert!(held_within(&gate, BULK, 20).await.is_none(), "gave up");
        drop(held);
        assert!(
            held_within(&gate, BULK, 50).await.is_some(),
            "the slot is free"
        );
    }
}
