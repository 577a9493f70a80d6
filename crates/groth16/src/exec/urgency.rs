//! How urgent a piece of work is, and the one place where waiters are ranked by it.
//!
//! [`Urgency`] is what every zkforge crate schedules by, and it alone says whether work is
//! urgent ([`Urgency::is_urgent`]): the engine maps its job `Priority` into it (the only
//! numbering: cuzk.v1's, on the wire), and the three places where work
//! waits for something another piece of work holds rank their waiters with
//! [`RankedWaiters`]:
//! - the host-memory budget (`zkforge-engine`'s `budget.rs`),
//! - a device's kernel lock ([`crate::PriorityLock`]),
//! - VRAM placement's wait for room (`zkforge-cuda`'s `resident.rs`).
//!
//! Each keeps its waiters in its own state under its own mutex (beside what they wait for:
//! bytes, the lock, resident keys) and wakes them with its own condvar; [`Ranked`] bundles the
//! two with the poisoning rule all three share.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How urgent a piece of work is. Ordered **least urgent first**: `a > b` means `a` goes
/// before `b`, and `Critical` is the maximum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Urgency {
    /// No request waits for it: a key preloaded by an operator, a backend called outside a
    /// job. Everything else goes first.
    #[default]
    Background,
    Low,
    Normal,
    High,
    Critical,
}

impl Urgency {
    /// Whether the work is due by a deadline (High and above: WindowPoSt and WinningPoSt by
    /// default). The one place this line is drawn: every gate that keeps room bulk work cannot
    /// take (the engine's queues and lanes, its admission, its memory floor, the server's
    /// receive reserve, parse workers and waiters) asks it, through `Priority::is_urgent`
    /// above the engine.
    pub fn is_urgent(self) -> bool {
        self >= Urgency::High
    }

    /// Every urgency, least urgent first.
    pub const ALL: [Urgency; 5] = [
        Urgency::Background,
        Urgency::Low,
        Urgency::Normal,
        Urgency::High,
        Urgency::Critical,
    ];
}

/// A place among [`RankedWaiters`]: given back with [`RankedWaiters::leave`]. Not `Clone`: one
/// waiter, one place.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a place is held until given back with RankedWaiters::leave"]
pub struct Ticket(u64);

/// Waiters ranked by urgency, then arrival: **the most urgent, then the oldest, goes next**.
/// Kept in the state its owner guards with a mutex; each waiter is tagged with a `K` (what
/// it waits for, where that matters).
///
/// Waiters of equal urgency are ordered by arrival for [`first`](Self::first); an owner that
/// only asks [`outranks`](Self::outranks) lets equals compete, as a `Mutex` would.
///
/// Joining and leaving allocate nothing once the queue has held as many waiters at once
/// before (the storage is kept).
#[derive(Debug)]
pub struct RankedWaiters<K = ()> {
    /// In arrival order (tickets increase along it).
    queue: Vec<(Urgency, u64, K)>,
    next: u64,
}

impl<K> Default for RankedWaiters<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> RankedWaiters<K> {
    pub const fn new() -> Self {
        Self {
            queue: Vec::new(),
            next: 0,
        }
    }

    /// Queues a waiter of `urgency`, behind every earlier one of the same urgency.
    pub fn join(&mut self, urgency: Urgency, key: K) -> Ticket {
        let ticket = self.next;
        self.next += 1;
        self.queue.push((urgency, ticket, key));
        Ticket(ticket)
    }

    /// Takes the waiter out of the queue (served, timed out, cancelled or dropped); false
    /// when it had left already (see [`leave_where`](Self::leave_where)).
    pub fn leave(&mut self, ticket: Ticket) -> bool {
        match self.queue.iter().position(|w| w.1 == ticket.0) {
            Some(at) => {
                self.queue.remove(at);
                true
            }
            None => false,
        }
    }

    /// Takes out every waiter whose tag matches (what they waited for was served).
    pub fn leave_where(&mut self, mut served: impl FnMut(&K) -> bool) {
        self.queue.retain(|w| !served(&w.2));
    }

    /// Whether `ticket` still waits.
    pub fn holds(&self, ticket: &Ticket) -> bool {
        self.queue.iter().any(|w| w.1 == ticket.0)
    }

    /// A waiter more urgent than `urgency` waits: whoever is of `urgency` stands back.
    pub fn outranks(&self, urgency: Urgency) -> bool {
        self.queue.iter().any(|w| w.0 > urgency)
    }

    /// The waiter that goes next: the most urgent, then the oldest.
    pub fn first(&self) -> Option<(Urgency, &K)> {
        self.head().map(|w| (w.0, &w.2))
    }

    /// Whether `ticket` is the waiter that goes next.
    pub fn is_first(&self, ticket: &Ticket) -> bool {
        self.head().is_some_and(|w| w.1 == ticket.0)
    }

    fn head(&self) -> Option<&(Urgency, u64, K)> {
        let mut head: Option<&(Urgency, u64, K)> = None;
        for w in &self.queue {
            // Strictly more urgent only: among equals the earlier (older) one stays.
            if head.is_none_or(|h| w.0 > h.0) {
                head = Some(w);
            }
        }
        head
    }

    /// How many wait.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// Ranked waiters' state behind a mutex, and the condvar its waiters sleep on: what changes
/// the state (a release, a waiter leaving) wakes them all, and each checks its rank.
#[derive(Debug, Default)]
pub struct Ranked<S> {
    state: Mutex<S>,
    changed: Condvar,
}

impl<S> Ranked<S> {
    pub const fn new(state: S) -> Self {
        Self {
            state: Mutex::new(state),
            changed: Condvar::new(),
        }
    }

    /// The state. A panic elsewhere never leaves it torn (its owners update it in place, in
    /// steps that do not panic), so a poisoned lock is taken as it is.
    pub fn lock(&self) -> MutexGuard<'_, S> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps until woken, or at most `timeout` when given (also a spurious wake-up: callers
    /// check their condition again).
    pub fn wait<'a>(&self, s: MutexGuard<'a, S>, timeout: Option<Duration>) -> MutexGuard<'a, S> {
        match timeout {
            None => self.changed.wait(s).unwrap_or_else(|e| e.into_inner()),
            Some(t) => {
                self.changed
                    .wait_timeout(s, t)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        }
    }

    /// Wakes every waiter (each checks its rank and its condition).
    pub fn wake_all(&self) {
        self.changed.notify_all();
    }
}

impl<K> Ranked<RankedWaiters<K>> {
    /// A place in the queue held until dropped (see [`Place`]).
    pub fn place(&self, urgency: Urgency, key: K) -> Place<'_, K> {
        let ticket = self.lock().join(urgency, key);
        Place {
            ranked: self,
            ticket: Some(ticket),
        }
    }
}

/// Gives `ticket` back and wakes the others: the drop of a waiter that leaves while not
/// holding the state's lock (the waiters it held back may go now).
pub fn leave_and_wake<S, K>(
    ranked: &Ranked<S>,
    waiters: impl FnOnce(&mut S) -> &mut RankedWaiters<K>,
    ticket: Ticket,
) {
    waiters(&mut ranked.lock()).leave(ticket);
    ranked.wake_all();
}

/// A place among a [`Ranked`] queue's waiters, held until dropped.
pub struct Place<'a, K> {
    ranked: &'a Ranked<RankedWaiters<K>>,
    ticket: Option<Ticket>,
}

impl<K> Place<'_, K> {
    /// Waits until this place goes next (the most urgent, then the oldest) or `timeout`
    /// passes; true when it is next.
    pub fn wait_first(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let ticket = self.ticket.as_ref().expect("held until dropped");
        let mut s = self.ranked.lock();
        loop {
            if s.is_first(ticket) {
                return true;
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return false;
            }
            s = self.ranked.wait(s, Some(deadline - now));
        }
    }
}

impl<K> Drop for Place<'_, K> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            leave_and_wake(self.ranked, |w| w, ticket);
        }
    }
}

#[cfg(test)]
mod tests;
