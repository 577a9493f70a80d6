//! A bitmap over variables that records which ones appear in a query (A or B).

/// Which variables of one kind (inputs or aux) appear with a non-zero coefficient in a query.
///
/// Mirrors bellperson's `DensityTracker`, including how two trackers are concatenated, because
/// the parameter files store query points only for the variables marked here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    count: usize,
}

impl Density {
    pub fn with_capacity(bits: usize) -> Self {
        Self {
            words: Vec::with_capacity(bits.div_ceil(64)),
            len: 0,
            count: 0,
        }
    }

    /// A density of `len` variables, all of them marked.
    pub fn full(len: usize) -> Self {
        let mut d = Self::with_capacity(len);
        for _ in 0..len {
            d.push(true);
        }
        d
    }

    /// A density over `len` variables from its words (as [`words`](Self::words) returns them);
    /// None when the words do not match `len` or mark bits beyond it.
    pub fn from_words(words: Vec<u64>, len: usize) -> Option<Self> {
        if words.len() != len.div_ceil(64) {
            return None;
        }
        if !len.is_multiple_of(64) && words.last().is_some_and(|w| w >> (len % 64) != 0) {
            return None;
        }
        let count = words.iter().map(|w| w.count_ones() as usize).sum();
        Some(Self { words, len, count })
    }

    /// Number of variables tracked.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of variables marked.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The bitmap's words, bit `i % 64` of word `i / 64` standing for variable `i`.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    pub fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        if bit {
            self.words[self.len / 64] |= 1 << (self.len % 64);
            self.count += 1;
        }
        self.len += 1;
    }

    #[inline]
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Marks variable `i`; returns false when `i` is not tracked.
    #[inline]
    pub fn mark(&mut self, i: usize) -> bool {
        if i >= self.len {
            return false;
        }
        let (w, b) = (i / 64, 1u64 << (i % 64));
        if self.words[w] & b == 0 {
            self.words[w] |= b;
            self.count += 1;
        }
        true
    }

    /// Number of marked variables before index `i`: the position of `i`'s point in its query.
    pub fn rank(&self, i: usize) -> usize {
        let i = i.min(self.len);
        let whole: usize = self.words[..i / 64]
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum();
        let part = match i % 64 {
            0 => 0,
            r => (self.words[i / 64] & ((1u64 << r) - 1)).count_ones() as usize,
        };
        whole + part
    }

    /// Appends `other`, as bellperson does when a sub-circuit's constraint system is merged.
    ///
    /// For input densities, variable 0 of `other` is its own copy of ONE: it is folded into our
    /// variable 0 instead of being appended.
    pub fn extend(&mut self, other: &Density, is_input: bool) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        let skip = usize::from(is_input);
        if is_input && other.get(0) {
            self.mark(0);
        }
        for i in skip..other.len {
            self.push(other.get(i));
        }
    }

    /// Iterates the bits in order.
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(move |i| self.words[i / 64] >> (i % 64) & 1 == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_bits(bits: &[bool]) -> Density {
        let mut d = Density::default();
        bits.iter().for_each(|&b| d.push(b));
        d
    }

    #[test]
    fn rank_counts_marked_bits_before_index() {
        let bits: Vec<bool> = (0..200).map(|i| i % 3 == 0 || i % 7 == 0).collect();
        let d = from_bits(&bits);
        for i in 0..=200 {
            assert_eq!(
                d.rank(i),
                bits[..i].iter().filter(|&&b| b).count(),
                "rank({i})"
            );
        }
        assert_eq!(d.count(), d.rank(200));
    }

    #[test]
    fn input_extend_folds_the_one_variable() {
        let mut a = from_bits(&[false, true]);
        a.extend(&from_bits(&[true, false, true]), true);
        assert_eq!(a, from_bits(&[true, true, false, true]));
        assert_eq!(a.count(), 3);

        let mut b = from_bits(&[true]);
        b.extend(&from_bits(&[true, true]), true);
        assert_eq!(b, from_bits(&[true, true]));
        assert_eq!(b.count(), 2);
    }

    #[test]
    fn aux_extend_concatenates_and_empty_self_copies() {
        let mut a = Density::default();
        a.extend(&from_bits(&[true, false]), true);
        assert_eq!(a, from_bits(&[true, false]));
        a.extend(&from_bits(&[false, true, true]), false);
        assert_eq!(a, from_bits(&[true, false, false, true, true]));
        assert_eq!(a.count(), 3);
    }
}
