//! A lock that goes to the most urgent waiter: a device's exclusive region (the kernels of one
//! partition), so that a WinningPoSt partition waits for at most the partition on the device
//! when it arrives, not for every PoRep partition queued at the lock before it.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Mutual exclusion by priority: when the holder lets go, the waiter of the highest priority
/// goes next (among equals, whichever the scheduler wakes first, as with a `Mutex`). Nothing
/// preempts the holder.
#[derive(Default)]
pub struct PriorityLock {
    state: Mutex<State>,
    turn: Condvar,
}

#[derive(Default)]
struct State {
    held: bool,
    /// Waiters by priority.
    waiting: BTreeMap<u8, usize>,
}

impl State {
    fn outranked(&self, priority: u8) -> bool {
        self.waiting
            .last_key_value()
            .is_some_and(|(&top, _)| top > priority)
    }
}

/// Held until dropped.
pub struct PriorityGuard<'a> {
    lock: &'a PriorityLock,
}

impl PriorityLock {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The state is two counters updated in place: a panic elsewhere cannot leave it torn.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the lock is free and no more urgent waiter is left, then takes it.
    pub fn lock(&self, priority: u8) -> PriorityGuard<'_> {
        let mut s = self.state();
        *s.waiting.entry(priority).or_default() += 1;
        while s.held || s.outranked(priority) {
            s = self.turn.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        let left = s.waiting.get_mut(&priority).expect("counted above");
        *left -= 1;
        if *left == 0 {
            s.waiting.remove(&priority);
        }
        s.held = true;
        PriorityGuard { lock: self }
    }

    /// How many wait for the lock right now (tests wait for their threads to queue).
    pub fn waiting(&self) -> usize {
        self.state().waiting.values().sum()
    }
}

impl Drop for PriorityGuard<'_> {
    fn drop(&mut self) {
        self.lock.state().held = false;
        // Every waiter checks its rank: only the most urgent one proceeds.
        self.lock.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn wait_for_waiters(lock: &PriorityLock, n: usize) {
        let t = Instant::now();
        while lock.waiting() < n {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "waiters never queued"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn the_most_urgent_waiter_goes_next_whatever_the_arrival_order() {
        let lock = Arc::new(PriorityLock::new());
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = lock.lock(2);
        let mut threads = Vec::new();
        // Low-priority waiters queue first, the urgent one last.
        for (i, p) in [(0, 2u8), (1, 2), (2, 1), (3, 4)] {
            let (mine, order) = (lock.clone(), order.clone());
            threads.push(std::thread::spawn(move || {
                let _g = mine.lock(p);
                order.lock().unwrap().push((i, p));
                std::thread::sleep(Duration::from_millis(5));
            }));
            wait_for_waiters(&lock, i + 1);
        }
        drop(held);
        for t in threads {
            t.join().unwrap();
        }
        let priorities: Vec<u8> = order.lock().unwrap().iter().map(|&(_, p)| p).collect();
        assert_eq!(priorities, [4, 2, 2, 1]);
        assert_eq!(lock.waiting(), 0);
    }

    #[test]
    fn exclusive_under_contention() {
        let lock = Arc::new(PriorityLock::new());
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..8u8)
            .map(|i| {
                let (mine, inside) = (lock.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let _g = mine.lock(i % 3);
                        let n = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        assert_eq!(n, 0, "two holders at once");
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(lock.waiting(), 0);
    }
}
