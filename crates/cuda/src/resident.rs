//! `ResidentSet`: what stays in one GPU's memory between partitions (a proving key's bases with
//! its circuit's matrices), under the device's [`VramBudget`].
//!
//! A 32 GiB PoRep key (44 GiB of bases, 6.8 GiB of matrices) and a 32 GiB WindowPoSt key (~68
//! GiB, ~10 GiB) do not fit in one H200 beside the partitions that use them, yet a WindowPoSt
//! must not wait behind a batch of PoRep. The rules:
//! - An item that is not in use (no partition holds it) is evicted, least recently used first,
//!   when another needs its room.
//! - A request that does not fit waits; the most urgent waiting request is *wanted*. Items whose
//!   users are all less urgent than it *drain*: less urgent requests for them wait, so that
//!   their partitions in flight finish, they fall idle and are evicted for it. (A PoRep key
//!   drains for a WindowPoSt, and is uploaded again after.)
//! - A less urgent request never takes room while a more urgent one waits for it.
//! - An item larger than the budget (with its headroom) never waits: the caller falls back.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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
    /// The priority of each partition holding the item now.
    users: Vec<u8>,
    last_used: u64,
    _vram: VramReservation,
}

impl<I, T> Item<I, T> {
    fn most_urgent_user(&self) -> Option<u8> {
        self.users.iter().copied().max()
    }
}

struct State<I, T> {
    items: Vec<Item<I, T>>,
    /// The most urgent request waiting for room, and its priority.
    wanted: Option<(I, u8)>,
    clock: u64,
}

/// The items resident on one device, the room they hold, and who waits for room.
pub(crate) struct ResidentSet<I, T> {
    budget: Arc<VramBudget>,
    state: Mutex<State<I, T>>,
    changed: Condvar,
    /// Partitions' scratch comes and goes in the same budget without telling this set: a
    /// waiter looks again this often.
    poll: Duration,
}

/// An item in use by one partition: it stays resident (and is not evicted) until dropped.
pub(crate) struct Held<I: Clone + PartialEq, T> {
    set: Arc<ResidentSet<I, T>>,
    id: I,
    priority: u8,
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
            if let Some(k) = item.users.iter().position(|&p| p == self.priority) {
                item.users.swap_remove(k);
            }
        }
        drop(st);
        self.set.changed.notify_all();
    }
}

impl<I, T> ResidentSet<I, T> {
    fn lock(&self) -> MutexGuard<'_, State<I, T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<I: Clone + PartialEq + std::fmt::Debug, T> ResidentSet<I, T> {
    pub fn new(budget: Arc<VramBudget>) -> Arc<Self> {
        Self::with_poll(budget, Duration::from_millis(50))
    }

    fn with_poll(budget: Arc<VramBudget>, poll: Duration) -> Arc<Self> {
        Arc::new(Self {
            budget,
            state: Mutex::new(State {
                items: Vec::new(),
                wanted: None,
                clock: 0,
            }),
            changed: Condvar::new(),
            poll,
        })
    }

    /// The item `id` for a partition of `priority` (higher is more urgent), loading it with
    /// `load` into `bytes` of the budget if it is not resident; `headroom` more bytes must stay
    /// free beside it (its partitions' scratch). A load runs without the set's lock; requests
    /// for the same item wait for it, and a failed load leaves nothing behind.
    pub fn acquire<E>(
        self: &Arc<Self>,
        id: I,
        bytes: u64,
        headroom: u64,
        priority: u8,
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
        let mut st = self.lock();
        loop {
            st.clock += 1;
            let now = st.clock;
            // A more urgent request waits for room: this one neither takes room nor starts
            // work on an item that is draining for it.
            let outranked = |st: &State<I, T>| {
                st.wanted
                    .as_ref()
                    .is_some_and(|(w, p)| *w != id && *p > priority)
            };
            let state = &mut *st;
            if let Some(item) = state.items.iter_mut().find(|i| i.id == id) {
                let draining = matches!(&state.wanted, Some((w, p))
                    if *w != id && *p > priority && item.most_urgent_user().is_none_or(|u| u < *p));
                if let (Value::Ready(v), false) = (&item.value, draining) {
                    let value = v.clone();
                    item.users.push(priority);
                    item.last_used = now;
                    if state.wanted.as_ref().is_some_and(|(w, _)| *w == id) {
                        state.wanted = None;
                    }
                    return Ok(Acquired::Held(Held {
                        set: self.clone(),
                        id,
                        priority,
                        value,
                    }));
                }
            } else if !outranked(&st) {
                let evict = !matches!(wait, Wait::No);
                if let Some(room) = self.make_room(&mut st, bytes, headroom, evict) {
                    if st.wanted.as_ref().is_some_and(|(w, _)| *w == id) {
                        st.wanted = None;
                    }
                    st.items.push(Item {
                        id: id.clone(),
                        value: Value::Loading,
                        users: vec![priority],
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
                                priority,
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
                    self.changed.notify_all();
                    return out;
                }
                // No room yet: the most urgent such request is the one the others make way for.
                if !matches!(wait, Wait::No)
                    && st
                        .wanted
                        .as_ref()
                        .is_none_or(|(w, p)| *p < priority || *w == id)
                {
                    st.wanted = Some((id.clone(), priority));
                }
            }
            let now = Instant::now();
            if now >= deadline {
                if st.wanted.as_ref().is_some_and(|(w, _)| *w == id) {
                    st.wanted = None;
                    self.changed.notify_all();
                }
                return Ok(Acquired::Busy {
                    holders: holders(&st),
                });
            }
            let pause = self.poll.min(deadline - now);
            st = self
                .changed
                .wait_timeout(st, pause)
                .unwrap_or_else(|e| e.into_inner())
                .0;
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
            let idle = st
                .items
                .iter()
                .enumerate()
                .filter(|(_, i)| i.users.is_empty() && matches!(i.value, Value::Ready(_)))
                .min_by_key(|(_, i)| i.last_used)
                .map(|(k, _)| k)?;
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
        self.changed.notify_all();
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
