//! `ScalarPool`: reusable witness buffers, optionally page-locked by a backend, so synthesis
//! writes straight into memory the GPU can copy from at full PCIe speed.
//!
//! Rule that keeps pinning sound: a buffer the pool pinned is never freed or reallocated while
//! pinned. Synthesis grows a pooled vector by moving its contents out and giving the old buffer
//! back; a [`Witness`](crate::Witness) gives its buffers back when it is dropped; the pool
//! unpins before it frees.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use blstrs::Scalar;
use rayon::prelude::*;

/// Page-locks host memory for a device (e.g. `cuMemHostRegister`).
pub trait HostPinner: Send + Sync {
    /// Pins the `bytes` at `addr`; false when the device refused (they stay pageable).
    fn pin(&self, addr: usize, bytes: usize) -> bool;
    /// Undoes `pin`; called before the memory is freed.
    fn unpin(&self, addr: usize);
}

/// Buffers smaller than this are not worth pooling or pinning.
const MIN_POOLED_BYTES: usize = 1 << 20;

/// Idle witness buffers for reuse, pinned when a pinner is set.
pub struct ScalarPool {
    pinner: Option<Arc<dyn HostPinner>>,
    max_idle_bytes: usize,
    state: Mutex<PoolState>,
}

#[derive(Default)]
struct PoolState {
    idle: Vec<Vec<Scalar>>,
    idle_bytes: usize,
    /// Start address → bytes of the pinned buffers (idle or lent out).
    pinned: HashMap<usize, usize>,
    /// Largest length given back: new buffers start with this capacity.
    hint: usize,
}

fn bytes_of(v: &Vec<Scalar>) -> usize {
    v.capacity() * std::mem::size_of::<Scalar>()
}

impl ScalarPool {
    /// A pool keeping at most `max_idle_bytes` of idle buffers, pinning them with `pinner`.
    pub fn new(pinner: Option<Arc<dyn HostPinner>>, max_idle_bytes: usize) -> Arc<Self> {
        Arc::new(Self {
            pinner,
            max_idle_bytes,
            state: Mutex::new(PoolState::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An empty vector: the largest idle buffer, or a new one sized like the last given back
    /// (or as [`expect`](Self::expect) said), pinned before it is handed out. For synthesis
    /// whose final sizes are not known up front (the reference `WitnessBuilder`); a partition
    /// of known shape takes [`take_exact`](Self::take_exact), so that what it holds is what
    /// its memory reservation counted.
    pub fn take(&self) -> Vec<Scalar> {
        let hint = {
            let mut st = self.state();
            let largest = (0..st.idle.len()).max_by_key(|&i| st.idle[i].capacity());
            if let Some(i) = largest {
                let v = st.idle.swap_remove(i);
                st.idle_bytes -= bytes_of(&v);
                return v;
            }
            st.hint
        };
        self.fresh(hint)
    }

    /// An empty vector of exactly `capacity` scalars: an idle buffer of that capacity, else a
    /// new one (pinned before it is handed out). Never a larger idle buffer: a partition that
    /// took one would hold more than the memory budget reserved for it (a WinningPoSt partition
    /// in a 4.2 GB PoRep buffer), while the budget stopped counting that buffer as idle.
    pub fn take_exact(&self, capacity: usize) -> Vec<Scalar> {
        {
            let mut st = self.state();
            if let Some(i) = st.idle.iter().position(|v| v.capacity() == capacity) {
                let v = st.idle.swap_remove(i);
                st.idle_bytes -= bytes_of(&v);
                return v;
            }
        }
        self.fresh(capacity)
    }

    /// Sizes the buffers made from now on for witnesses of `capacity` scalars, allocating
    /// nothing yet.
    pub fn expect(&self, capacity: usize) {
        let mut st = self.state();
        st.hint = st.hint.max(capacity);
    }

    /// A new buffer of `capacity` scalars. One worth pinning has its pages faulted in first, by
    /// the threads of the current rayon pool (the synthesis threads, which would fault them in
    /// while writing the witness anyway), so that the registration, which holds the driver
    /// while it runs, only locks pages already there instead of faulting 4 GB in one by one.
    fn fresh(&self, capacity: usize) -> Vec<Scalar> {
        let mut v = Vec::with_capacity(capacity);
        if self.pinner.is_none() || bytes_of(&v) < MIN_POOLED_BYTES {
            return v;
        }
        fault_in(&mut v);
        self.pin(&v);
        v
    }

    /// Pins `v`'s buffer unless it is pinned already.
    fn pin(&self, v: &Vec<Scalar>) {
        let addr = v.as_ptr() as usize;
        let Some(pinner) = &self.pinner else { return };
        if self.state().pinned.contains_key(&addr) {
            return;
        }
        if pinner.pin(addr, bytes_of(v)) {
            self.state().pinned.insert(addr, bytes_of(v));
        }
    }

    /// Takes a buffer back for reuse, pinning it on first return; frees what does not fit.
    pub fn give(&self, mut v: Vec<Scalar>) {
        if bytes_of(&v) < MIN_POOLED_BYTES {
            return self.free(v);
        }
        v.clear();
        // A buffer that grew outside the pool (`reserve`) is pinned on its first return.
        self.pin(&v);
        let mut st = self.state();
        st.hint = st.hint.max(v.capacity());
        st.idle_bytes += bytes_of(&v);
        st.idle.push(v);
        let mut evicted = Vec::new();
        while st.idle_bytes > self.max_idle_bytes {
            let smallest = (0..st.idle.len()).min_by_key(|&i| st.idle[i].capacity());
            let Some(i) = smallest else { break };
            let old = st.idle.swap_remove(i);
            st.idle_bytes -= bytes_of(&old);
            evicted.push(old);
        }
        drop(st);
        for old in evicted {
            self.free(old);
        }
    }

    /// Makes sure `count` idle buffers of at least `capacity` scalars exist (within the idle
    /// cap), allocating and pinning the missing ones now, before any partition is proved (the
    /// driver holds kernel launches back while it page-locks).
    pub fn prewarm(&self, count: usize, capacity: usize) {
        let bytes = capacity * std::mem::size_of::<Scalar>();
        if bytes < MIN_POOLED_BYTES {
            return;
        }
        let (have, room) = {
            let mut st = self.state();
            st.hint = st.hint.max(capacity);
            let have = st.idle.iter().filter(|v| v.capacity() == capacity).count();
            (
                have,
                self.max_idle_bytes.saturating_sub(st.idle_bytes) / bytes,
            )
        };
        for _ in 0..count.saturating_sub(have).min(room) {
            self.give(self.fresh(capacity));
        }
    }

    /// Unpins (if pinned) and frees on the reaper thread, which counts the bytes as held
    /// until they are freed (a memory budget shrinking the pool sees them until then).
    fn free(&self, v: Vec<Scalar>) {
        let was_pinned = self.state().pinned.remove(&(v.as_ptr() as usize)).is_some();
        if was_pinned {
            if let Some(p) = &self.pinner {
                p.unpin(v.as_ptr() as usize);
            }
        }
        let bytes = bytes_of(&v) as u64;
        super::reaper::drop_later_counted(v, bytes);
    }

    /// True when `buf` lies inside a buffer this pool pinned (so a DMA from it is safe and fast).
    pub fn is_pinned(&self, buf: &[Scalar]) -> bool {
        // Pooled buffers are lent whole: a slice starting at a pinned buffer's start is inside it.
        self.state().pinned.contains_key(&(buf.as_ptr() as usize))
    }

    /// Bytes held idle.
    pub fn idle_bytes(&self) -> usize {
        self.state().idle_bytes
    }

    /// Buffers pinned (idle or in use).
    pub fn pinned_buffers(&self) -> usize {
        self.state().pinned.len()
    }

    /// Bytes pinned (idle or in use).
    pub fn pinned_bytes(&self) -> usize {
        self.state().pinned.values().sum()
    }

    /// Most idle bytes kept.
    pub fn max_idle_bytes(&self) -> usize {
        self.max_idle_bytes
    }

    /// Frees idle buffers, largest first, until at most `target` idle bytes remain (when a
    /// memory budget needs the room).
    pub fn shrink_to(&self, target: usize) {
        let mut freed = Vec::new();
        {
            let mut st = self.state();
            while st.idle_bytes > target {
                let largest = (0..st.idle.len()).max_by_key(|&i| st.idle[i].capacity());
                let Some(i) = largest else { break };
                let v = st.idle.swap_remove(i);
                st.idle_bytes -= bytes_of(&v);
                freed.push(v);
            }
        }
        for v in freed {
            self.free(v);
        }
    }

    /// Frees every idle buffer.
    pub fn shrink(&self) {
        let idle = {
            let mut st = self.state();
            st.idle_bytes = 0;
            std::mem::take(&mut st.idle)
        };
        for v in idle {
            self.free(v);
        }
    }
}

impl Drop for ScalarPool {
    fn drop(&mut self) {
        self.shrink();
    }
}

/// Writes one byte of every page of `v`'s spare capacity, in parallel, so that the kernel maps
/// the pages now. The range is offered for transparent huge pages first: a 4 GB witness
/// buffer is then 2,000 mappings to fault in and lock instead of a million.
fn fault_in(v: &mut Vec<Scalar>) {
    const PAGE: usize = 4096;
    let spare = v.spare_capacity_mut();
    let bytes = std::mem::size_of_val(spare);
    let start = spare.as_mut_ptr() as *mut std::mem::MaybeUninit<u8>;
    #[cfg(target_os = "linux")]
    {
        // madvise wants a page-aligned start; the buffer's first partial page stays small.
        let first = (start as usize).next_multiple_of(PAGE);
        let end = start as usize + bytes;
        if end > first {
            // SAFETY: advice only, on whole pages inside memory this vector owns; a kernel
            // without transparent huge pages refuses it, which changes nothing.
            unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE) };
        }
    }
    // SAFETY: the spare capacity is `bytes` bytes of memory this vector owns; viewing it as
    // MaybeUninit bytes and writing them is sound (nothing reads them as scalars: the vector
    // stays empty).
    let raw = unsafe { std::slice::from_raw_parts_mut(start, bytes) };
    raw.par_chunks_mut(2 << 20).for_each(|chunk| {
        for page in chunk.chunks_mut(PAGE) {
            page[0].write(0);
        }
    });
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<ScalarPool>>> = const { RefCell::new(None) };
}

/// Runs `f` with `pool` as the source of witness buffers for synthesis on this thread.
pub fn with_pool<R>(pool: Option<Arc<ScalarPool>>, f: impl FnOnce() -> R) -> R {
    let previous = CURRENT.with(|c| c.replace(pool));
    struct Restore(Option<Arc<ScalarPool>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| *c.borrow_mut() = self.0.take());
        }
    }
    let _restore = Restore(previous);
    f()
}

/// The pool installed on this thread by [`with_pool`], if any.
pub fn current_pool() -> Option<Arc<ScalarPool>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Pushes onto a pooled vector without letting it reallocate in place: a full buffer is
/// replaced by a larger one and given back to the pool.
pub(crate) fn push(v: &mut Vec<Scalar>, x: Scalar, pool: Option<&ScalarPool>) {
    if v.len() == v.capacity() {
        reserve(v, 1, pool);
    }
    v.push(x);
}

/// Makes room for `additional` more elements under the same rule as [`push`].
pub(crate) fn reserve(v: &mut Vec<Scalar>, additional: usize, pool: Option<&ScalarPool>) {
    let Some(pool) = pool else {
        return v.reserve(additional);
    };
    if v.capacity() - v.len() >= additional {
        return;
    }
    let cap = (v.len() + additional).max(v.capacity() * 2).max(1024);
    let mut bigger = Vec::with_capacity(cap);
    bigger.extend_from_slice(v);
    pool.give(std::mem::replace(v, bigger));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Default)]
    struct CountingPinner {
        pinned: AtomicUsize,
        unpinned: AtomicUsize,
    }

    impl HostPinner for CountingPinner {
        fn pin(&self, _: usize, _: usize) -> bool {
            self.pinned.fetch_add(1, Ordering::SeqCst);
            true
        }
        fn unpin(&self, _: usize) {
            self.unpinned.fetch_add(1, Ordering::SeqCst);
        }
    }

    const BIG: usize = MIN_POOLED_BYTES / 32;

    #[test]
    fn buffers_are_pinned_once_and_reused() {
        let pinner = Arc::new(CountingPinner::default());
        let pool = ScalarPool::new(Some(pinner.clone()), usize::MAX);
        let v: Vec<Scalar> = Vec::with_capacity(BIG);
        let addr = v.as_ptr();
        pool.give(v);
        for _ in 0..3 {
            let v = pool.take();
            assert_eq!(v.as_ptr(), addr, "the same buffer comes back");
            assert!(pool.is_pinned(&v));
            pool.give(v);
        }
        assert_eq!(pinner.pinned.load(Ordering::SeqCst), 1);
        drop(pool);
        assert_eq!(pinner.unpinned.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_fresh_buffer_is_pinned_before_it_is_handed_out() {
        let pinner = Arc::new(CountingPinner::default());
        let pool = ScalarPool::new(Some(pinner.clone()), usize::MAX);
        assert_eq!(
            pool.take().capacity(),
            0,
            "no size known yet: nothing to pin"
        );
        pool.expect(BIG);
        let v = pool.take();
        assert!(v.capacity() >= BIG && v.is_empty());
        assert!(
            pool.is_pinned(&v),
            "pinned when taken, before the witness is written"
        );
        pool.give(v);
        let again = pool.take();
        assert!(pool.is_pinned(&again));
        assert_eq!(pinner.pinned.load(Ordering::SeqCst), 1, "pinned once");
        drop(again);
        // Without a pinner nothing is faulted in or pinned.
        let plain = ScalarPool::new(None, usize::MAX);
        plain.expect(BIG);
        let v = plain.take();
        assert!(v.capacity() >= BIG && !plain.is_pinned(&v));
    }

    #[test]
    fn growth_moves_out_instead_of_reallocating_a_pinned_buffer() {
        let pinner = Arc::new(CountingPinner::default());
        let pool = ScalarPool::new(Some(pinner.clone()), usize::MAX);
        pool.give(Vec::with_capacity(BIG));
        let mut v = pool.take();
        let first = v.as_ptr();
        for i in 0..(BIG + 10) as u64 {
            push(&mut v, Scalar::from(i), Some(&pool));
        }
        assert_ne!(v.as_ptr(), first);
        assert_eq!(v.len(), BIG + 10);
        assert_eq!(v[BIG + 9], Scalar::from(BIG as u64 + 9));
        // The pinned buffer went back whole, still pinned, ready for the next witness.
        let back = pool.take();
        assert_eq!(back.as_ptr(), first);
        pool.give(back);
    }

    #[test]
    fn prewarm_pins_up_front_within_the_cap() {
        let pinner = Arc::new(CountingPinner::default());
        let pool = ScalarPool::new(Some(pinner.clone()), 3 * MIN_POOLED_BYTES);
        pool.prewarm(5, BIG);
        assert_eq!(
            pinner.pinned.load(Ordering::SeqCst),
            3,
            "capped at the idle limit"
        );
        pool.prewarm(2, BIG);
        assert_eq!(
            pinner.pinned.load(Ordering::SeqCst),
            3,
            "enough idle already"
        );
        let v = pool.take();
        assert!(v.capacity() >= BIG && pool.is_pinned(&v));
        pool.give(v);
    }

    #[test]
    fn idle_bytes_are_capped_and_evicted_buffers_unpinned() {
        let pinner = Arc::new(CountingPinner::default());
        let pool = ScalarPool::new(Some(pinner.clone()), 2 * MIN_POOLED_BYTES);
        for _ in 0..3 {
            pool.give(Vec::with_capacity(BIG));
        }
        assert_eq!(pool.idle_bytes(), 2 * MIN_POOLED_BYTES);
        assert_eq!(pinner.unpinned.load(Ordering::SeqCst), 1);
        // Small buffers are freed, not pooled.
        pool.give(vec![Scalar::from(1u64); 8]);
        assert_eq!(pool.idle_bytes(), 2 * MIN_POOLED_BYTES);
    }
}
