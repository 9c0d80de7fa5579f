//! What each block of a part answered to a needle's bloom probe, kept from
//! query to query: parts never change, so neither do the answers, and a
//! dashboard asks the same needles again and again.
//!
//! Each needle the part was probed for has a verdict per block (unknown,
//! cannot hold it, may hold it). At most [`NeedleMemo::MAX_NEEDLES`]
//! needles are kept per part, the oldest forgotten first, so the memo costs
//! at most that many bytes per block.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// Per block: [`UNKNOWN`], [`NO`] or [`MAYBE`].
pub type Verdicts = Arc<[AtomicU8]>;

/// Not probed yet.
pub const UNKNOWN: u8 = 0;
/// The block cannot hold the needle.
pub const NO: u8 = 1;
/// The block may hold it.
pub const MAYBE: u8 = 2;

/// The verdicts of one part, by needle.
#[derive(Debug, Default)]
pub struct NeedleMemo {
    needles: Mutex<Vec<(Vec<u8>, Verdicts)>>,
}

impl NeedleMemo {
    /// Most needles kept per part.
    pub const MAX_NEEDLES: usize = 64;

    /// The verdicts for `needle` over `blocks` blocks (all unknown when the
    /// needle is new to the part).
    pub fn verdicts(&self, needle: &[u8], blocks: usize) -> Verdicts {
        self.verdicts_keeping(needle, blocks, Self::MAX_NEEDLES)
    }

    /// [`NeedleMemo::verdicts`], keeping at most `max` needles (keys).
    pub fn verdicts_keeping(&self, needle: &[u8], blocks: usize, max: usize) -> Verdicts {
        let mut needles = self.needles.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, v)) = needles.iter().find(|(n, _)| n == needle) {
            return v.clone();
        }
        if needles.len() >= max.max(1) {
            needles.remove(0);
        }
        let v: Verdicts = (0..blocks).map(|_| AtomicU8::new(UNKNOWN)).collect();
        needles.push((needle.to_vec(), v.clone()));
        v
    }
}

/// The verdict on block `b` (`UNKNOWN` past the end).
#[inline]
pub fn get(v: &Verdicts, b: usize) -> u8 {
    v.get(b).map_or(UNKNOWN, |a| a.load(Ordering::Relaxed))
}

/// Records the verdict on block `b`.
#[inline]
pub fn set(v: &Verdicts, b: usize, may: bool) {
    if let Some(a) = v.get(b) {
        a.store(if may { MAYBE } else { NO }, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_shared_per_needle_and_the_oldest_needle_is_forgotten() {
        let m = NeedleMemo::default();
        let a = m.verdicts(b"abc", 3);
        set(&a, 1, false);
        set(&a, 2, true);
        let again = m.verdicts(b"abc", 3);
        assert_eq!(
            (
                get(&again, 0),
                get(&again, 1),
                get(&again, 2),
                get(&again, 9)
            ),
            (UNKNOWN, NO, MAYBE, UNKNOWN)
        );
        for i in 0..NeedleMemo::MAX_NEEDLES {
            m.verdicts(format!("n{i}").as_bytes(), 3);
        }
        assert_eq!(
            get(&m.verdicts(b"abc", 3), 1),
            UNKNOWN,
            "abc was the oldest"
        );
        assert_eq!(get(&m.verdicts(b"n63", 3), 0), UNKNOWN);
    }
}

#[cfg(test)]
mod keeping_tests {
    use super::*;

    #[test]
    fn a_smaller_bound_forgets_sooner() {
        let m = NeedleMemo::default();
        set(&m.verdicts_keeping(b"a", 2, 2), 0, true);
        m.verdicts_keeping(b"b", 2, 2);
        assert_eq!(get(&m.verdicts_keeping(b"a", 2, 2), 0), MAYBE, "two kept");
        m.verdicts_keeping(b"c", 2, 2);
        assert_eq!(
            get(&m.verdicts_keeping(b"a", 2, 2), 0),
            UNKNOWN,
            "a forgotten"
        );
    }
}
