//! One host-memory budget: consumers reserve before they allocate and release on drop.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use zkforge_groth16::exec::urgency::{leave_and_wake, Ranked, RankedWaiters, Ticket, Urgency};

#[derive(Debug, Default)]
struct State {
    used: u64,
    peak: u64,
    reservations: usize,
    peak_reservations: usize,
    /// Ranked waiters (see [`MemoryBudget::waiter`]).
    waiting: RankedWaiters,
}

/// Memory the budget counts without a reservation and can ask back: a buffer pool's idle
/// buffers, which are real memory between the partitions that use them.
pub trait Reclaimable: Send + Sync {
    /// Bytes held now.
    fn held(&self) -> u64;
    /// Frees held memory until at most `target` bytes remain.
    fn shrink_to(&self, target: u64);
}

/// Bytes of host memory shared by parameters, synthesized partitions and idle pooled buffers:
/// reservations plus what the reclaimable holds (plus, for the engine's budget, buffers handed
/// to the reaper and not yet freed) never exceed the limit.
///
/// The **total** is the configured budget; the **limit** is the part of it the host leaves the
/// engine now (`host_memory` moves it), and the **floor** what urgent work may hold however
/// low the limit falls: an urgent reservation ([`Urgency::is_urgent`]) is granted within
/// `max(limit, floor)`, every other within the limit.
pub struct MemoryBudget {
    total: u64,
    limit: AtomicU64,
    floor: u64,
    /// The counts and the ranked waiters; woken when memory is freed or a waiter leaves.
    state: Ranked<State>,
    reclaimable: Option<Arc<dyn Reclaimable>>,
    /// Count `reaper::pending_bytes()` as held: memory released to the reaper (a reservation's
    /// witness, buffers the pool let go to make room) is still there until the reaper frees it,
    /// and a reservation granted meanwhile would be memory held twice.
    counts_pending_frees: bool,
}

impl std::fmt::Debug for MemoryBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBudget")
            .field("total", &self.total)
            .field("limit", &self.limit())
            .field("state", &*self.lock())
            .finish()
    }
}

/// Bytes held from a [`MemoryBudget`]; given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl MemoryBudget {
    /// A budget of reservations only (what unit tests of its rules use).
    pub fn new(total: u64) -> Arc<Self> {
        Arc::new(Self {
            total,
            limit: AtomicU64::new(total),
            floor: 0,
            state: Ranked::default(),
            reclaimable: None,
            counts_pending_frees: false,
        })
    }

    /// The engine's budget: it also counts `reclaimable`'s memory, shrinking it when a
    /// reservation needs the room, and the memory the reaper has yet to free (the process's:
    /// one engine a process).
    pub fn with_reclaimable(
        total: u64,
        floor: u64,
        reclaimable: Option<Arc<dyn Reclaimable>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            total,
            limit: AtomicU64::new(total),
            floor: floor.min(total),
            state: Ranked::default(),
            reclaimable,
            counts_pending_frees: true,
        })
    }

    /// The configured budget.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// What the host leaves the engine now: at most the total.
    pub fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }

    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// True while the host leaves less than the floor: bulk work is refused.
    pub fn below_floor(&self) -> bool {
        self.limit() < self.floor
    }

    /// Moves the limit (at most the total); waiters are woken to look again.
    pub fn set_limit(&self, bytes: u64) {
        self.limit.store(bytes.min(self.total), Ordering::Relaxed);
        self.state.wake_all();
    }

    /// What a reservation of `urgency` may bring the use up to.
    fn ceiling(&self, urgency: Urgency) -> u64 {
        let limit = self.limit();
        if urgency.is_urgent() {
            limit.max(self.floor)
        } else {
            limit
        }
    }

    /// Frees idle reclaimable memory until the use fits `target` bytes, or none is left;
    /// returns the bytes still over it.
    pub fn shrink_idle_to(&self, target: u64) -> u64 {
        let reserved = self.lock().used;
        if let Some(r) = &self.reclaimable {
            let room = target.saturating_sub(reserved + self.pending_frees());
            if r.held() > room {
                r.shrink_to(room);
            }
        }
        (reserved + self.held()).saturating_sub(target)
    }

    /// Reserved bytes plus what the reclaimable holds.
    pub fn used(&self) -> u64 {
        self.lock().used + self.held()
    }

    fn held(&self) -> u64 {
        self.reclaimable.as_ref().map_or(0, |r| r.held()) + self.pending_frees()
    }

    fn pending_frees(&self) -> u64 {
        if self.counts_pending_frees {
            zkforge_groth16::exec::reaper::pending_bytes()
        } else {
            0
        }
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
        self.grant(&mut s, bytes, Urgency::Background)
    }

    /// Waits until `bytes` fit, checking `give_up` every `poll`; `None` when it gave up.
    pub fn reserve_or(
        self: &Arc<Self>,
        bytes: u64,
        poll: Duration,
        give_up: impl Fn() -> bool,
    ) -> Option<Reservation> {
        let s = self.lock();
        let waited = self.wait_for(
            s,
            bytes,
            Urgency::Background,
            poll,
            |_| give_up(),
            |_| false,
        );
        waited.1
    }

    /// A place among the ranked waiters, kept across several attempts (a parameter load
    /// evicting between them): while it lives, waiters of lower rank take nothing, so that
    /// memory freed by a finished partition goes to the most urgent work, not to whichever
    /// waiter polls first.
    /// Waiters of equal urgency compete (whichever polls first when memory is freed).
    pub fn waiter(self: &Arc<Self>, urgency: Urgency) -> RankedWaiter {
        let place = self.lock().waiting.join(urgency, ());
        RankedWaiter {
            budget: self.clone(),
            urgency,
            place: Some(place),
        }
    }

    /// Blocks while a waiter more urgent than `urgency` waits, checking `give_up` every
    /// `poll`.
    pub fn wait_while_outranked(
        &self,
        urgency: Urgency,
        poll: Duration,
        give_up: impl Fn() -> bool,
    ) {
        let mut s = self.lock();
        while s.waiting.outranks(urgency) && !give_up() {
            s = self.state.wait(s, Some(poll));
        }
    }

    /// The waiting loop of all: grants `bytes` once they fit and `held_back` is false.
    /// Both conditions see the state under its lock (they must not take it again).
    #[allow(clippy::too_many_arguments)]
    fn wait_for<'a>(
        self: &'a Arc<Self>,
        mut s: MutexGuard<'a, State>,
        bytes: u64,
        urgency: Urgency,
        poll: Duration,
        give_up: impl Fn(&State) -> bool,
        held_back: impl Fn(&State) -> bool,
    ) -> (MutexGuard<'a, State>, Option<Reservation>) {
        loop {
            if !held_back(&s) {
                if let Some(r) = self.grant(&mut s, bytes, urgency) {
                    return (s, Some(r));
                }
            }
            if give_up(&s) {
                return (s, None);
            }
            s = self.state.wait(s, Some(poll));
        }
    }

    fn grant(self: &Arc<Self>, s: &mut State, bytes: u64, urgency: Urgency) -> Option<Reservation> {
        let ceiling = self.ceiling(urgency);
        if s.used + bytes > ceiling {
            return None;
        }
        let room = ceiling - s.used - bytes;
        if let Some(r) = &self.reclaimable {
            let target = room.saturating_sub(self.pending_frees());
            if r.held() > target {
                r.shrink_to(target);
            }
        }
        // What the pool let go is pending on the reaper now: the reservation waits (its
        // caller polls) until it is freed, instead of allocating beside it.
        if self.held() > room {
            return None;
        }
        s.used += bytes;
        s.reservations += 1;
        s.peak = s.peak.max(s.used + self.held());
        s.peak_reservations = s.peak_reservations.max(s.reservations);
        Some(Reservation {
            budget: self.clone(),
            bytes,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }
}

/// A ranked waiter's registration (see [`MemoryBudget::waiter`]); leaves the ranks on drop.
pub struct RankedWaiter {
    budget: Arc<MemoryBudget>,
    urgency: Urgency,
    /// Given back on drop.
    place: Option<Ticket>,
}

impl RankedWaiter {
    /// Reserves `bytes` if they fit now and no more urgent waiter waits.
    pub fn try_reserve(&self, bytes: u64) -> Option<Reservation> {
        let mut s = self.budget.lock();
        if s.waiting.outranks(self.urgency) {
            return None;
        }
        self.budget.grant(&mut s, bytes, self.urgency)
    }

    /// Waits until `bytes` fit and no more urgent waiter waits, checking `give_up` every `poll`.
    pub fn reserve_or(
        &self,
        bytes: u64,
        poll: Duration,
        give_up: impl Fn() -> bool,
    ) -> Option<Reservation> {
        self.wait(bytes, poll, give_up, false)
    }

    /// As [`reserve_or`](Self::reserve_or), but gives up as soon as a more urgent waiter
    /// waits, instead of waiting behind it: for a waiter holding something it may need.
    pub fn reserve_or_yield(
        &self,
        bytes: u64,
        poll: Duration,
        give_up: impl Fn() -> bool,
    ) -> Option<Reservation> {
        self.wait(bytes, poll, give_up, true)
    }

    fn wait(
        &self,
        bytes: u64,
        poll: Duration,
        give_up: impl Fn() -> bool,
        yields: bool,
    ) -> Option<Reservation> {
        let urgency = self.urgency;
        let held_back = |s: &State| s.waiting.outranks(urgency);
        let stop = |s: &State| (yields && held_back(s)) || give_up();
        // A yielding waiter asks whether to give its unit back before it takes freed memory:
        // memory freed just after a more urgent unit was queued (before this waiter's next
        // poll) goes to that unit, not to this one.
        let not_now = |s: &State| held_back(s) || (yields && give_up());
        let s = self.budget.lock();
        self.budget
            .wait_for(s, bytes, urgency, poll, stop, not_now)
            .1
    }
}

impl Drop for RankedWaiter {
    fn drop(&mut self) {
        if let Some(place) = self.place.take() {
            // The waiters this one held back may go now.
            leave_and_wake(&self.budget.state, |s| &mut s.waiting, place);
        }
    }
}

impl Reservation {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Gives back all but `bytes` (a reservation made from an estimate, once the real size is
    /// known); a larger `bytes` changes nothing.
    pub fn shrink_to(&mut self, bytes: u64) {
        if bytes >= self.bytes {
            return;
        }
        let mut s = self.budget.lock();
        s.used -= self.bytes - bytes;
        self.bytes = bytes;
        drop(s);
        self.budget.state.wake_all();
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut s = self.budget.lock();
        s.used -= self.bytes;
        s.reservations -= 1;
        drop(s);
        self.budget.state.wake_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn freed_memory_goes_to_the_highest_ranked_waiter() {
        let b = MemoryBudget::new(100);
        let held = b.try_reserve(60).unwrap();
        let wait = |urgency| {
            let b = b.clone();
            std::thread::spawn(move || {
                b.waiter(urgency)
                    .reserve_or(60, Duration::from_millis(5), || false)
            })
        };
        let low = wait(Urgency::Low);
        std::thread::sleep(Duration::from_millis(50));
        let high = wait(Urgency::High);
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        // Both waited; only one fits: the higher rank's, although the lower asked first.
        let high = high.join().unwrap().expect("the higher rank is served");
        std::thread::sleep(Duration::from_millis(50));
        assert!(!low.is_finished(), "the lower rank still waits for room");
        drop(high);
        assert_eq!(low.join().unwrap().unwrap().bytes(), 60);
    }

    #[test]
    fn a_yielding_waiter_gives_up_when_a_higher_rank_waits() {
        let b = MemoryBudget::new(100);
        let held = b.try_reserve(60).unwrap();
        let b2 = b.clone();
        let low = std::thread::spawn(move || {
            b2.waiter(Urgency::Low)
                .reserve_or_yield(60, Duration::from_millis(5), || false)
        });
        std::thread::sleep(Duration::from_millis(30));
        assert!(!low.is_finished(), "no room yet: it waits");
        let high = b.waiter(Urgency::High);
        assert!(
            low.join().unwrap().is_none(),
            "it yields to the higher rank"
        );
        assert!(
            b.waiter(Urgency::Low).try_reserve(10).is_none(),
            "lower ranks take nothing"
        );
        assert_eq!(high.try_reserve(40).unwrap().bytes(), 40);
        drop((held, high));
        assert_eq!(b.used(), 0);
    }

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
        let mut estimate = b.try_reserve(80).unwrap();
        estimate.shrink_to(30);
        assert_eq!((estimate.bytes(), b.used()), (30, 30));
        assert!(b.try_reserve(70).is_some(), "the rest is free again");
        estimate.shrink_to(50);
        assert_eq!(b.used(), 30, "never grows");
    }

    /// Idle buffers a pool holds.
    struct Idle(Mutex<u64>);

    impl Reclaimable for Idle {
        fn held(&self) -> u64 {
            *self.0.lock().unwrap()
        }
        fn shrink_to(&self, target: u64) {
            let mut h = self.0.lock().unwrap();
            *h = (*h).min(target);
        }
    }

    #[test]
    fn reclaimable_memory_counts_and_is_shrunk_for_a_reservation() {
        let idle = Arc::new(Idle(Mutex::new(70)));
        let b = MemoryBudget::with_reclaimable(100, 0, Some(idle.clone()));
        assert_eq!(b.used(), 70, "idle buffers are memory in use");
        let r = b
            .try_reserve(50)
            .expect("the pool gives back what is needed");
        assert_eq!(idle.held(), 50, "shrunk just enough");
        assert_eq!(b.used(), 100);
        assert!(
            b.try_reserve(60).is_none(),
            "reservations alone would not fit"
        );
        drop(r);
        assert_eq!(b.used(), 50);
    }

    #[test]
    fn the_limit_bounds_bulk_work_and_the_floor_keeps_room_for_urgent_work() {
        let idle = Arc::new(Idle(Mutex::new(30)));
        let b = MemoryBudget::with_reclaimable(100, 40, Some(idle.clone()));
        let held = b.try_reserve(20).unwrap();
        // The host takes memory back: the limit falls to 25.
        b.set_limit(25);
        assert!(b.below_floor());
        assert_eq!(b.shrink_idle_to(b.limit()), 0, "idle buffers go first");
        assert_eq!(idle.held(), 5);
        let bulk = b.waiter(Urgency::Normal);
        assert!(
            bulk.try_reserve(10).is_none(),
            "bulk work waits within the limit"
        );
        drop(bulk);
        let urgent = b.waiter(Urgency::Critical);
        let r = urgent
            .try_reserve(15)
            .expect("urgent work within the floor");
        assert!(urgent.try_reserve(6).is_none(), "and no further");
        b.set_limit(1000);
        assert_eq!(b.limit(), 100, "never above the configured budget");
        assert!(!b.below_floor());
        drop((held, r));
    }

    #[test]
    fn memory_pending_on_the_reaper_is_held_until_freed() {
        use zkforge_groth16::exec::reaper::{drop_later_counted, pause};
        // Sizes no other test's garbage comes near: the reaper's count is the process's.
        const UNIT: u64 = 1 << 48;
        let idle = Arc::new(Idle(Mutex::new(0)));
        let b = MemoryBudget::with_reclaimable(3 * UNIT, 0, Some(idle));
        let held = b.try_reserve(UNIT).unwrap();
        let paused = pause();
        // A witness of 2 units freed on the reaper, not yet gone.
        drop_later_counted(vec![0u8; 64], 2 * UNIT);
        assert!(
            b.try_reserve(UNIT).is_none(),
            "memory on its way out is still held"
        );
        let b2 = b.clone();
        let waiter = std::thread::spawn(move || {
            b2.reserve_or(UNIT, Duration::from_millis(5), || false)
                .map(|r| r.bytes())
        });
        std::thread::sleep(Duration::from_millis(30));
        assert!(!waiter.is_finished(), "it waits for the reaper");
        drop(paused);
        assert_eq!(waiter.join().unwrap(), Some(UNIT));
        drop(held);
    }
}
