//! Which resident item makes room first: the idle one used least recently. One rule for both
//! stores that evict, the host's parameter sets (engine `srs_store.rs`) and the device's keys
//! and matrices (cuda `resident.rs`), so a key is never kept by one layer's policy and dropped
//! by the other's.

/// An item a store may drop for room.
pub trait Evictable {
    /// Orders uses in time (an `Instant`, a logical clock).
    type Stamp: Ord;

    /// When it was last used, if nothing holds it now; `None` while it is in use or loading
    /// (such an item is never evicted).
    fn idle_since(&self) -> Option<Self::Stamp>;
}

/// The key of the item to evict first: of the idle ones, the one used least recently (the
/// earliest listed among equals). `None` when every item is in use.
pub fn least_recently_used<'a, K, E>(items: impl IntoIterator<Item = (K, &'a E)>) -> Option<K>
where
    E: Evictable + 'a,
{
    let mut victim: Option<(E::Stamp, K)> = None;
    for (key, item) in items {
        if let Some(stamp) = item.idle_since() {
            if victim.as_ref().is_none_or(|(best, _)| stamp < *best) {
                victim = Some((stamp, key));
            }
        }
    }
    victim.map(|(_, key)| key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (last used, in use).
    struct Item(u64, bool);

    impl Evictable for Item {
        type Stamp = u64;
        fn idle_since(&self) -> Option<u64> {
            (!self.1).then_some(self.0)
        }
    }

    fn victim(items: &[Item]) -> Option<usize> {
        least_recently_used(items.iter().enumerate())
    }

    #[test]
    fn the_idle_item_used_least_recently_goes_first() {
        assert_eq!(
            victim(&[Item(5, false), Item(2, false), Item(9, false)]),
            Some(1)
        );
    }

    #[test]
    fn an_item_in_use_is_never_chosen_however_old() {
        assert_eq!(
            victim(&[Item(1, true), Item(7, false), Item(3, true)]),
            Some(1)
        );
        assert_eq!(victim(&[Item(1, true), Item(3, true)]), None);
        assert_eq!(victim(&[]), None);
    }

    #[test]
    fn among_equals_the_earliest_listed_goes() {
        assert_eq!(victim(&[Item(4, false), Item(4, false)]), Some(0));
    }
}
