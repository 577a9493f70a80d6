//! A lock that goes to the most urgent waiter: a device's exclusive region (the kernels of one
//! partition), so that a WinningPoSt partition waits for at most the partition on the device
//! when it arrives, not for every PoRep partition queued at the lock before it.

use super::urgency::{Ranked, RankedWaiters, Urgency};

/// Mutual exclusion by urgency: when the holder lets go, the most urgent waiter goes next
/// (among equals, whichever the scheduler wakes first, as with a `Mutex`). Nothing preempts
/// the holder. Waiters are ranked by [`RankedWaiters`].
#[derive(Default)]
pub struct PriorityLock {
    state: Ranked<State>,
}

#[derive(Default)]
struct State {
    held: bool,
    waiting: RankedWaiters,
}

/// Held until dropped.
pub struct PriorityGuard<'a> {
    lock: &'a PriorityLock,
}

impl PriorityLock {
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits until the lock is free and no more urgent waiter is left, then takes it.
    pub fn lock(&self, urgency: Urgency) -> PriorityGuard<'_> {
        let mut s = self.state.lock();
        let place = s.waiting.join(urgency, ());
        while s.held || s.waiting.outranks(urgency) {
            s = self.state.wait(s, None);
        }
        s.waiting.leave(place);
        s.held = true;
        PriorityGuard { lock: self }
    }

    /// How many wait for the lock right now (tests wait for their threads to queue).
    pub fn waiting(&self) -> usize {
        self.state.lock().waiting.len()
    }
}

impl Drop for PriorityGuard<'_> {
    fn drop(&mut self) {
        self.lock.state.lock().held = false;
        // Every waiter checks its rank: only the most urgent one proceeds.
        self.lock.state.wake_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
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
        let held = lock.lock(Urgency::Normal);
        let mut threads = Vec::new();
        // Low-priority waiters queue first, the urgent one last.
        for (i, p) in [
            (0, Urgency::Normal),
            (1, Urgency::Normal),
            (2, Urgency::Low),
            (3, Urgency::Critical),
        ] {
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
        let priorities: Vec<Urgency> = order.lock().unwrap().iter().map(|&(_, p)| p).collect();
        assert_eq!(
            priorities,
            [
                Urgency::Critical,
                Urgency::Normal,
                Urgency::Normal,
                Urgency::Low
            ]
        );
        assert_eq!(lock.waiting(), 0);
    }

    #[test]
    fn exclusive_under_contention() {
        let lock = Arc::new(PriorityLock::new());
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..8usize)
            .map(|i| {
                let (mine, inside) = (lock.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let _g = mine.lock(Urgency::ALL[i % 3]);
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
