//! A blocking priority queue of units: highest priority first, then the oldest job, then the
//! lowest partition, so that jobs finish in order instead of all advancing together.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex};

use crate::job::{JobId, Priority};

/// The order of a unit: compared as a max-heap key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct UnitKey {
    pub priority: Priority,
    pub job: Reverse<JobId>,
    pub partition: Reverse<usize>,
}

impl UnitKey {
    pub fn new(priority: Priority, job: JobId, partition: usize) -> Self {
        Self {
            priority,
            job: Reverse(job),
            partition: Reverse(partition),
        }
    }
}

struct Entry<T> {
    key: UnitKey,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

struct Inner<T> {
    heap: BinaryHeap<Entry<T>>,
    closed: bool,
}

pub(crate) struct UnitQueue<T> {
    inner: Mutex<Inner<T>>,
    not_empty: Condvar,
    not_full: Condvar,
    capacity: usize,
}

impl<T> UnitQueue<T> {
    /// A queue holding at most `capacity` units (`usize::MAX`: unbounded).
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                heap: BinaryHeap::new(),
                closed: false,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a unit, waiting while the queue is full; gives the unit back if the queue closed.
    /// A unit of higher priority than everything queued does not wait for room: an urgent
    /// proof (a WindowPoSt with a deadline) must not queue behind a full batch of PoRep
    /// partitions. Memory stays bounded: every unit already holds its budget reservation.
    pub fn push(&self, key: UnitKey, item: T) -> Result<(), T> {
        let mut q = self.lock();
        while q.heap.len() >= self.capacity
            && !q.closed
            && q.heap
                .peek()
                .is_none_or(|top| top.key.priority >= key.priority)
        {
            q = self.not_full.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        if q.closed {
            return Err(item);
        }
        q.heap.push(Entry { key, item });
        drop(q);
        // Every taker: an urgent lane woken by an ordinary unit would leave it to nobody.
        self.not_empty.notify_all();
        Ok(())
    }

    /// Takes the first unit, waiting for one; `None` once the queue is closed (what it still
    /// holds is dropped by whoever closes it).
    #[cfg(test)]
    pub fn pop(&self) -> Option<T> {
        self.pop_if(|_| true)
    }

    /// Takes the first unit once `takes` its priority, waiting for one: an urgent lane takes
    /// urgent units only ([`Priority::is_urgent`]); the first is the most urgent, so a lane
    /// that does not take it takes none. `None` once the queue is closed.
    pub fn pop_if(&self, takes: impl Fn(Priority) -> bool) -> Option<T> {
        let mut q = self.lock();
        loop {
            if q.closed {
                return None;
            }
            if q.heap.peek().is_some_and(|top| takes(top.key.priority)) {
                let e = q.heap.pop().expect("peeked");
                drop(q);
                self.not_full.notify_one();
                return Some(e.item);
            }
            q = self.not_empty.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Removes and returns the units for which `drop_it` is true.
    pub fn take_where(&self, drop_it: impl Fn(&T) -> bool) -> Vec<T> {
        let mut q = self.lock();
        let (gone, kept): (Vec<_>, Vec<_>) = q.heap.drain().partition(|e| drop_it(&e.item));
        q.heap.extend(kept);
        drop(q);
        self.not_full.notify_all();
        gone.into_iter().map(|e| e.item).collect()
    }

    /// The highest priority queued, if any.
    pub fn top_priority(&self) -> Option<Priority> {
        self.lock().heap.peek().map(|e| e.key.priority)
    }

    /// Counts the units matching `f`.
    pub fn count_where(&self, f: impl Fn(&T) -> bool) -> usize {
        self.lock().heap.iter().filter(|e| f(&e.item)).count()
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Wakes every waiter; later pushes fail and pops drain what is left.
    pub fn close(&self) {
        self.lock().closed = true;
        self.not_empty.notify_all();
        self.not_full.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_then_oldest_job_then_partition() {
        let q = UnitQueue::new(usize::MAX);
        for (p, j, k) in [
            (Priority::Normal, 2, 0),
            (Priority::Normal, 1, 1),
            (Priority::Normal, 1, 0),
            (Priority::Critical, 9, 0),
        ] {
            q.push(UnitKey::new(p, j, k), (j, k)).unwrap();
        }
        let order: Vec<_> = (0..4).map(|_| q.pop().unwrap()).collect();
        assert_eq!(order, [(9, 0), (1, 0), (1, 1), (2, 0)]);
    }

    #[test]
    fn bounded_push_waits_and_close_releases_everyone() {
        let q = std::sync::Arc::new(UnitQueue::new(1));
        q.push(UnitKey::new(Priority::Low, 1, 0), 1).unwrap();
        let q2 = q.clone();
        let pusher = std::thread::spawn(move || q2.push(UnitKey::new(Priority::Low, 2, 0), 2));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(q.pop(), Some(1));
        pusher.join().unwrap().unwrap();
        assert_eq!(q.take_where(|v| *v == 2), vec![2]);
        q.push(UnitKey::new(Priority::Low, 4, 0), 4).unwrap();
        q.close();
        assert_eq!(q.pop(), None, "closing stops the takers at once");
        assert_eq!(q.push(UnitKey::new(Priority::Low, 3, 0), 3), Err(3));
    }

    #[test]
    fn an_urgent_lane_takes_only_urgent_units_and_waits_for_one() {
        let q = std::sync::Arc::new(UnitQueue::new(usize::MAX));
        q.push(UnitKey::new(Priority::Normal, 1, 0), 1).unwrap();
        let q2 = q.clone();
        let lane = std::thread::spawn(move || q2.pop_if(Priority::is_urgent));
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert!(!lane.is_finished(), "the urgent lane took a Normal unit");
        q.push(UnitKey::new(Priority::High, 2, 0), 2).unwrap();
        assert_eq!(lane.join().unwrap(), Some(2));
        // The Normal unit is still there for an ordinary worker.
        assert_eq!(q.pop(), Some(1));
        let q3 = q.clone();
        let lane = std::thread::spawn(move || q3.pop_if(Priority::is_urgent));
        std::thread::sleep(std::time::Duration::from_millis(10));
        q.close();
        assert_eq!(
            lane.join().unwrap(),
            None,
            "closing releases the urgent lane"
        );
    }

    #[test]
    fn a_higher_priority_unit_does_not_wait_for_room() {
        let q = UnitQueue::new(1);
        q.push(UnitKey::new(Priority::Normal, 1, 0), 1).unwrap();
        assert_eq!(q.top_priority(), Some(Priority::Normal));
        // Full, but Critical outranks everything queued: in at once, and out first.
        q.push(UnitKey::new(Priority::Critical, 2, 0), 2).unwrap();
        assert_eq!(q.top_priority(), Some(Priority::Critical));
        assert_eq!(q.pop(), Some(2));
        assert_eq!(q.pop(), Some(1));
        assert_eq!(q.top_priority(), None);
    }
}
