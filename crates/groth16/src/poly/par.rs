//! A raw pointer that rayon tasks may share when each task touches disjoint indices.

#[derive(Clone, Copy)]
pub(crate) struct SharedMut<T>(pub *mut T);

// SAFETY: users guarantee that concurrent tasks write disjoint elements.
unsafe impl<T: Send> Send for SharedMut<T> {}
unsafe impl<T: Send> Sync for SharedMut<T> {}

impl<T> SharedMut<T> {
    /// # Safety
    /// `i` is in bounds and no other task accesses element `i` concurrently.
    #[inline]
    pub unsafe fn at(&self, i: usize) -> &mut T {
        &mut *self.0.add(i)
    }
}
