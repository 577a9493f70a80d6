//! One host-memory budget: consumers reserve before they allocate and release on drop.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

#[derive(Debug, Default)]
struct State {
    used: u64,
    peak: u64,
    reservations: usize,
    peak_reservations: usize,
}

/// Bytes of host memory shared by parameters and synthesized partitions.
#[derive(Debug)]
pub struct MemoryBudget {
    total: u64,
    state: Mutex<State>,
    freed: Condvar,
}

/// Bytes held from a [`MemoryBudget`]; given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl MemoryBudget {
    pub fn new(total: u64) -> Arc<Self> {
        Arc::new(Self {
            total,
            state: Mutex::default(),
            freed: Condvar::new(),
        })
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn used(&self) -> u64 {
        self.lock().used
    }

    /// Highest `used` seen, and the most reservations held at once.
    pub fn peaks(&self) -> (u64, usize) {
        let s = self.lock();
        (s.peak, s.peak_reservations)
    }

    pub fn reservations(&self) -> usize {
        self.lock().reservations
    }

    /// Reserves `bytes` if they fit now.
    pub fn try_reserve(self: &Arc<Self>, bytes: u64) -> Option<Reservation> {
        let mut s = self.lock();
        self.grant(&mut s, bytes)
    }

    /// Waits until `bytes` fit, checking `give_up` every `poll`; `None` when it gave up.
    pub fn reserve_or(
        self: &Arc<Self>,
        bytes: u64,
        poll: Duration,
        give_up: impl Fn() -> bool,
    ) -> Option<Reservation> {
        let mut s = self.lock();
        loop {
            if let Some(r) = self.grant(&mut s, bytes) {
                return Some(r);
            }
            if give_up() {
                return None;
            }
            s = self
                .freed
                .wait_timeout(s, poll)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn grant(self: &Arc<Self>, s: &mut State, bytes: u64) -> Option<Reservation> {
        if s.used + bytes > self.total {
            return None;
        }
        s.used += bytes;
        s.reservations += 1;
        s.peak = s.peak.max(s.used);
        s.peak_reservations = s.peak_reservations.max(s.reservations);
        Some(Reservation {
            budget: self.clone(),
            bytes,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Reservation {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut s = self.budget.lock();
        s.used -= self.bytes;
        s.reservations -= 1;
        drop(s);
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_wait_for_room_and_release_on_drop() {
        let b = MemoryBudget::new(100);
        let r1 = b.try_reserve(60).unwrap();
        assert!(b.try_reserve(50).is_none());
        assert!(
            b.reserve_or(50, Duration::from_millis(1), || true)
                .is_none(),
            "gives up"
        );
        let b2 = b.clone();
        let t = std::thread::spawn(move || {
            b2.reserve_or(50, Duration::from_millis(5), || false)
                .unwrap()
                .bytes()
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(r1);
        assert_eq!(t.join().unwrap(), 50);
        assert_eq!(b.used(), 0);
        assert_eq!(b.peaks(), (60, 1));
    }
}
