//! `ResidentSet`: what stays in one GPU's memory between partitions (a proving key's bases with
//! its circuit's matrices), under the device's [`VramBudget`].
//!
//! A 32 GiB PoRep key (44 GiB of bases, 6.8 GiB of matrices) and a 32 GiB WindowPoSt key (~68
//! GiB, ~10 GiB) do not fit in one H200 beside the partitions that use them, yet a WindowPoSt
//! must not wait behind a batch of PoRep. The rules:
//! - An item that is not in use (no partition holds it) is evicted, least recently used first,
//!   when another needs its room.
//! - A request that does not fit waits; the waiting request that goes next (the most urgent,
//!   then the oldest: `zkforge_groth16::exec::urgency::RankedWaiters`) is *wanted*. Items whose
//!   users are all less urgent than it *drain*: less urgent requests for them wait, so that
//!   their partitions in flight finish, they fall idle and are evicted for it. (A PoRep key
//!   drains for a WindowPoSt, and is uploaded again after.)
//! - A less urgent request never takes room while a more urgent one waits for it.
//! - An item larger than the budget (with its headroom) never waits: the caller falls back.

use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use zkforge_groth16::exec::eviction::{least_recently_used, Evictable};
use zkforge_groth16::exec::urgency::{Ranked, RankedWaiters, Ticket, Urgency};

use crate::vram::{VramBudget, VramReservation};

/// How long a request may wait for room.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wait {
    /// Not at all, and evicting nothing: staging ahead of time takes only free room (an idle
    /// key it pushed out would only come back, pushing the staged one out in turn).
    No,
    For(Duration),
}

/// The outcome of [`ResidentSet::acquire`].
pub(crate) enum Acquired<I: Clone + PartialEq, T> {
    Held(Held<I, T>),
    /// Larger than the budget with its headroom: it can never be resident.
    NeverFits,
    /// No room now (with [`Wait::No`]) or by the end of the wait; `holders` names who has it.
    Busy {
        holders: String,
    },
}

enum Value<T> {
    /// Being uploaded by the request that reserved it; others wait.
    Loading,
    Ready(Arc<T>),
}

struct Item<I, T> {
    id: I,
    value: Value<T>,
    /// The urgency of each partition holding the item now.
    users: Vec<Urgency>,
    last_used: u64,
    _vram: VramReservation,
}

/// Idle when loaded and held by no partition.
impl<I, T> Evictable for Item<I, T> {
    type Stamp = u64;
    fn idle_since(&self) -> Option<u64> {
        (self.users.is_empty() && matches!(self.value, Value::Ready(_))).then_some(self.last_used)
    }
}

impl<I, T> Item<I, T> {
    fn most_urgent_user(&self) -> Option<Urgency> {
        self.users.iter().copied().max()
    }
}

struct State<I, T> {
    items: Vec<Item<I, T>>,
    /// The requests waiting for room, by the item each wants; the first is *wanted*.
    waiting: RankedWaiters<I>,
    clock: u64,
}

/// The items resident on one device, the room they hold, and who waits for room.
pub(crate) struct ResidentSet<I, T> {
    budget: Arc<VramBudget>,
    /// Woken when an item is released, loaded or dropped, and when the wanted request leaves.
    state: Ranked<State<I, T>>,
    /// Partitions' scratch comes and goes in the same budget without telling this set: a
    /// waiter looks again this often.
    poll: Duration,
}

/// An item in use by one partition: it stays resident (and is not evicted) until dropped.
pub(crate) struct Held<I: Clone + PartialEq, T> {
    set: Arc<ResidentSet<I, T>>,
    id: I,
    urgency: Urgency,
    value: Arc<T>,
}

impl<I: Clone + PartialEq, T> std::ops::Deref for Held<I, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<I: Clone + PartialEq, T> Drop for Held<I, T> {
    fn drop(&mut self) {
        let mut st = self.set.lock();
        if let Some(item) = st.items.iter_mut().find(|i| i.id == self.id) {
            if let Some(k) = item.users.iter().position(|&u| u == self.urgency) {
                item.users.swap_remove(k);
            }
        }
        drop(st);
        self.set.state.wake_all();
    }
}

impl<I, T> ResidentSet<I, T> {
    fn lock(&self) -> MutexGuard<'_, State<I, T>> {
        self.state.lock()
    }
}

impl<I: Clone + PartialEq + std::fmt::Debug, T> ResidentSet<I, T> {
    pub fn new(budget: Arc<VramBudget>) -> Arc<Self> {
        Self::with_poll(budget, Duration::from_millis(50))
    }

    fn with_poll(budget: Arc<VramBudget>, poll: Duration) -> Arc<Self> {
        Arc::new(Self {
            budget,
            state: Ranked::new(State {
                items: Vec::new(),
                waiting: RankedWaiters::new(),
                clock: 0,
            }),
            poll,
        })
    }

    /// The item `id` for a partition of `urgency`, loading it with
    /// `load` into `bytes` of the budget if it is not resident; `headroom` more bytes must stay
    /// free beside it (its partitions' scratch). A load runs without the set's lock; requests
    /// for the same item wait for it, and a failed load leaves nothing behind.
    pub fn acquire<E>(
        self: &Arc<Self>,
        id: I,
        bytes: u64,
        headroom: u64,
        urgency: Urgency,
        wait: Wait,
        load: impl FnOnce() -> Result<T, E>,
    ) -> Result<Acquired<I, T>, E> {
        if bytes.saturating_add(headroom) > self.budget.total() {
            return Ok(Acquired::NeverFits);
        }
        let deadline = match wait {
            Wait::No => Instant::now(),
            Wait::For(d) => Instant::now() + d,
        };
        // This request's place among the waiters for room, once it found none.
        let mut place: Option<Ticket> = None;
        let mut st = self.lock();
        loop {
            st.clock += 1;
            let now = st.clock;
            // A more urgent request waits for room: this one neither takes room nor starts
            // work on an item that is draining for it.
            let outranked = |st: &State<I, T>| {
                st.waiting
                    .first()
                    .is_some_and(|(u, w)| *w != id && u > urgency)
            };
            let state = &mut *st;
            if let Some(item) = state.items.iter_mut().find(|i| i.id == id) {
                let draining = matches!(state.waiting.first(), Some((u, w))
                    if *w != id && u > urgency && item.most_urgent_user().is_none_or(|m| m < u));
                if let (Value::Ready(v), false) = (&item.value, draining) {
                    let value = v.clone();
                    item.users.push(urgency);
                    item.last_used = now;
                    // The item is served: no request waits for room for it any more.
                    state.waiting.leave_where(|w| *w == id);
                    return Ok(Acquired::Held(Held {
                        set: self.clone(),
                        id,
                        urgency,
                        value,
                    }));
                }
            } else if !outranked(&st) {
                let evict = !matches!(wait, Wait::No);
                if let Some(room) = self.make_room(&mut st, bytes, headroom, evict) {
                    st.waiting.leave_where(|w| *w == id);
                    st.items.push(Item {
                        id: id.clone(),
                        value: Value::Loading,
                        users: vec![urgency],
                        last_used: now,
                        _vram: room,
                    });
                    drop(st);
                    let loaded = load();
                    let mut st = self.lock();
                    let at = st.items.iter().position(|i| i.id == id);
                    let out = match (loaded, at) {
                        (Ok(v), Some(at)) => {
                            let value = Arc::new(v);
                            st.items[at].value = Value::Ready(value.clone());
                            Ok(Acquired::Held(Held {
                                set: self.clone(),
                                id,
                                urgency,
                                value,
                            }))
                        }
                        (Err(e), at) => {
                            if let Some(at) = at {
                                st.items.remove(at);
                            }
                            Err(e)
                        }
                        (Ok(_), None) => unreachable!("a loading item is never evicted"),
                    };
                    drop(st);
                    self.state.wake_all();
                    return out;
                }
                // No room yet: it waits among the others, the first of which the rest make
                // way for.
                if !matches!(wait, Wait::No) && !place.as_ref().is_some_and(|t| st.waiting.holds(t))
                {
                    place = Some(st.waiting.join(urgency, id.clone()));
                }
            }
            let now = Instant::now();
            if now >= deadline {
                if let Some(place) = place.take() {
                    // Those it held back may go now.
                    let was_wanted = st.waiting.is_first(&place);
                    st.waiting.leave(place);
                    if was_wanted {
                        self.state.wake_all();
                    }
                }
                return Ok(Acquired::Busy {
                    holders: holders(&st),
                });
            }
            let pause = self.poll.min(deadline - now);
            st = self.state.wait(st, Some(pause));
        }
    }

    /// Reserves `bytes` with `headroom` free beside them, evicting idle items (least recently
    /// used first) as needed if `evict`; None when the room is held by items in use or by
    /// partitions.
    fn make_room(
        &self,
        st: &mut State<I, T>,
        bytes: u64,
        headroom: u64,
        evict: bool,
    ) -> Option<VramReservation> {
        loop {
            if self.budget.used() + bytes + headroom <= self.budget.total() {
                if let Some(r) = self.budget.try_reserve(bytes) {
                    return Some(r);
                }
            }
            if !evict {
                return None;
            }
            let idle = least_recently_used(st.items.iter().enumerate())?;
            let evicted = st.items.remove(idle);
            tracing::info!(item = ?evicted.id, "evicted from the device for room");
        }
    }

    /// True when a resident (loaded) item satisfies `pred`.
    pub fn any(&self, pred: impl Fn(&I, &T) -> bool) -> bool {
        self.lock().items.iter().any(|i| match &i.value {
            Value::Ready(v) => pred(&i.id, v),
            Value::Loading => false,
        })
    }

    /// `f` over the loaded items, with the bytes each holds.
    pub fn each(&self, mut f: impl FnMut(&I, &T, u64)) {
        for i in &self.lock().items {
            if let Value::Ready(v) = &i.value {
                f(&i.id, v, i._vram.bytes());
            }
        }
    }

    /// Drops every idle item (in-use ones stay until released).
    pub fn clear_idle(&self) {
        self.lock().items.retain(|i| !i.users.is_empty());
        self.state.wake_all();
    }
}

fn holders<I: std::fmt::Debug, T>(st: &State<I, T>) -> String {
    let held: Vec<String> = st
        .items
        .iter()
        .map(|i| format!("{:?} ({} in use)", i.id, i.users.len()))
        .collect();
    if held.is_empty() {
        "partitions in flight".into()
    } else {
        held.join(", ")
    }
}

#[cfg(test)]
mod tests;
