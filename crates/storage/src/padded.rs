//! A value alone on its cache lines.
//!
//! Atomics and locks that every query worker writes (a part's reader count,
//! the decoded cache's locks) move their cache line from core to core on
//! each write; data sharing that line with them is then missed by every
//! other core too (false sharing), and which data that is depends on where
//! the allocator or linker happened to put it: measured repeated queries
//! over every stream differed by up to a fifth between builds that differed
//! only in unrelated code.

/// `T` aligned to, and padded out to, 128 bytes: two 64-byte lines, as the
/// CPU's adjacent-line prefetcher fetches pairs.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Padded<T>(pub T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_values_start_and_end_on_their_own_lines() {
        assert_eq!(std::mem::align_of::<Padded<u8>>(), 128);
        assert_eq!(std::mem::size_of::<Padded<u8>>(), 128);
        let pair = [Padded(1u32), Padded(2u32)];
        let gap =
            (&pair[1] as *const Padded<u32> as usize) - (&pair[0] as *const Padded<u32> as usize);
        assert_eq!(gap, 128);
        assert_eq!(*pair[1], 2);
    }
}
