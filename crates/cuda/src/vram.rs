//! `VramBudget`: device memory per GPU, reserved before anything is allocated; a partition that
//! does not fit yet waits for room instead of failing with out-of-memory.

use std::sync::{Arc, Condvar, Mutex};

use crate::CudaError;

/// Bytes of one device that workers may reserve.
pub struct VramBudget {
    total: u64,
    state: Mutex<VramState>,
    freed: Condvar,
}

#[derive(Default)]
struct VramState {
    used: u64,
    peak: u64,
}

/// Reserved device bytes, returned on drop.
pub struct VramReservation {
    budget: Arc<VramBudget>,
    bytes: u64,
}

impl VramBudget {
    pub fn new(total: u64) -> Arc<Self> {
        Arc::new(Self {
            total,
            state: Mutex::new(VramState::default()),
            freed: Condvar::new(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, VramState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn used(&self) -> u64 {
        self.state().used
    }

    /// Most bytes ever reserved at once.
    pub fn peak(&self) -> u64 {
        self.state().peak
    }

    /// Reserves `bytes`, waiting while others hold the room; an error if it can never fit.
    pub fn reserve(self: &Arc<Self>, bytes: u64, what: &str) -> Result<VramReservation, CudaError> {
        if bytes > self.total {
            return Err(CudaError::NoRoom(format!(
                "{what} needs {} of device memory, more than the budget of {}",
                gib(bytes),
                gib(self.total)
            )));
        }
        let mut st = self.state();
        while st.used + bytes > self.total {
            st = self.freed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        Ok(self.grant(&mut st, bytes))
    }

    /// Reserves `bytes` only if they fit now.
    pub fn try_reserve(self: &Arc<Self>, bytes: u64) -> Option<VramReservation> {
        let mut st = self.state();
        (st.used + bytes <= self.total).then(|| self.grant(&mut st, bytes))
    }

    fn grant(self: &Arc<Self>, st: &mut VramState, bytes: u64) -> VramReservation {
        st.used += bytes;
        st.peak = st.peak.max(st.used);
        VramReservation {
            budget: self.clone(),
            bytes,
        }
    }
}

impl VramReservation {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for VramReservation {
    fn drop(&mut self) {
        let mut st = self.budget.state();
        st.used -= self.bytes;
        drop(st);
        self.budget.freed.notify_all();
    }
}

pub(crate) fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_reservation_waits_for_room_and_never_exceeds_the_total() {
        let budget = VramBudget::new(100);
        let first = budget.reserve(70, "first").unwrap();
        assert!(budget.try_reserve(40).is_none());
        let b = budget.clone();
        let waiter = std::thread::spawn(move || {
            let t = Instant::now();
            let r = b.reserve(40, "second").unwrap();
            (t.elapsed(), r.bytes())
        });
        std::thread::sleep(Duration::from_millis(100));
        drop(first);
        let (waited, bytes) = waiter.join().unwrap();
        assert!(waited >= Duration::from_millis(90), "{waited:?}");
        assert_eq!(bytes, 40);
        assert_eq!(budget.peak(), 70);
        assert_eq!(budget.used(), 0);
        let err = budget.reserve(101, "a partition").err().unwrap();
        assert!(err.to_string().contains("a partition needs"), "{err}");
    }
}
