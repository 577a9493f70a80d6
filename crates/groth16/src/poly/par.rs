//! A raw pointer that rayon tasks may share when each task touches disjoint indices.

#[derive(Clone, Copy)]
pub(crate) struct SharedMut<T>(pub *mut T);

// SAFETY: users guarantee that concurrent tasks write disjoint elements.
unsafe impl<T: Send> Send for SharedMut<T> {}
unsafe impl<T: Send> Sync for SharedMut<T> {}

impl<T> SharedMut<T> {
    /// Pointer to element `i`; dereferencing it needs `i` in bounds and no concurrent access.
    #[inline]
    pub fn at(self, i: usize) -> *mut T {
        self.0.wrapping_add(i)
    }
}
