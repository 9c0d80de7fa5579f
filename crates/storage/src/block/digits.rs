//! Skeletons: a string with each maximal run of ASCII digits replaced by
//! the byte [`HOLE`], plus the runs themselves packed four bits a digit.
//!
//! Messages that differ only in numbers (`timeout after 78.345ms`,
//! `retrying (2 of 3)`) share a skeleton, so a part's dictionary of
//! skeletons holds a column whose exact values rarely repeat. A needle with
//! no digit (and no [`HOLE`]) lies in a value exactly when it lies in the
//! value's skeleton: it cannot overlap a digit run, and the skeleton keeps
//! every other byte in place. Field values never hold the byte 0x00 (lines
//! with it are stored whole), so it is free to mark the holes.

use crate::StorageError;

/// The byte standing for one run of digits in a skeleton.
pub const HOLE: u8 = 0;

/// Nibble ending one run in the digit stream.
const END: u8 = 0xF;

/// True when `v` has an ASCII digit.
#[inline]
pub fn has_digit(v: &[u8]) -> bool {
    v.iter().any(u8::is_ascii_digit)
}

/// True when a test on the stretch `s` of a needle can be judged on
/// skeletons (no digit, no [`HOLE`]).
#[inline]
pub fn skeleton_safe(s: &[u8]) -> bool {
    !s.iter().any(|&b| b.is_ascii_digit() || b == HOLE)
}

/// The digit-free pieces of `s`: every value holding `s` holds each of them
/// in its skeleton. `None` when `s` has a [`HOLE`] byte.
pub fn skeleton_pieces(s: &[u8]) -> Option<Vec<&[u8]>> {
    if s.contains(&HOLE) {
        return None;
    }
    Some(
        s.split(u8::is_ascii_digit)
            .filter(|p| !p.is_empty())
            .collect(),
    )
}

/// Appends the skeleton of `v` to `skel` and its digit runs to `digits`.
pub fn split(v: &[u8], skel: &mut Vec<u8>, digits: &mut DigitWriter) {
    let mut i = 0;
    while i < v.len() {
        // The bytes up to the next digit go to the skeleton at once.
        let start = i;
        while i < v.len() && !v[i].is_ascii_digit() {
            i += 1;
        }
        skel.extend_from_slice(&v[start..i]);
        if i == v.len() {
            break;
        }
        let start = i;
        while i < v.len() && v[i].is_ascii_digit() {
            i += 1;
        }
        skel.push(HOLE);
        digits.push_run(&v[start..i]);
    }
}

/// Packs digit runs, two digits a byte (low nibble first), each run ended
/// by the nibble 0xF; an odd final nibble is padded with 0xF.
#[derive(Default)]
pub struct DigitWriter {
    out: Vec<u8>,
    half: Option<u8>,
}

impl DigitWriter {
    fn nibble(&mut self, n: u8) {
        match self.half.take() {
            None => self.half = Some(n),
            Some(lo) => self.out.push(lo | (n << 4)),
        }
    }

    /// Appends one run of ASCII digits.
    pub fn push_run(&mut self, run: &[u8]) {
        let mut rest = run;
        if self.half.is_some() {
            match rest.split_first() {
                Some((&d, r)) => {
                    self.nibble(d - b'0');
                    rest = r;
                }
                None => return self.nibble(END),
            }
        }
        // A whole byte at a time while two digits are left.
        let pairs = rest.chunks_exact(2);
        let last = pairs.remainder();
        self.out
            .extend(pairs.map(|p| (p[0] - b'0') | (p[1] - b'0') << 4));
        match last {
            [d] => self.out.push((d - b'0') | END << 4),
            _ => self.half = Some(END),
        }
    }

    /// The packed stream.
    pub fn finish(mut self) -> Vec<u8> {
        if let Some(lo) = self.half.take() {
            self.out.push(lo | (END << 4));
        }
        self.out
    }
}

/// Reads digit runs in order.
pub struct DigitReader<'a> {
    src: &'a [u8],
    /// Position in nibbles.
    at: usize,
}

impl<'a> DigitReader<'a> {
    /// A reader of the stream `src`.
    pub fn new(src: &'a [u8]) -> Self {
        DigitReader { src, at: 0 }
    }

    fn nibble(&mut self) -> Option<u8> {
        let b = *self.src.get(self.at / 2)?;
        let n = if self.at.is_multiple_of(2) {
            b & 0xF
        } else {
            b >> 4
        };
        self.at += 1;
        Some(n)
    }

    /// Appends the next run's digits to `out`.
    pub fn run(&mut self, out: &mut Vec<u8>) -> Result<(), StorageError> {
        let bad = || StorageError::corrupt("block column", "bad digit run");
        let mut any = false;
        loop {
            match self.nibble().ok_or_else(bad)? {
                END if any => return Ok(()),
                d @ 0..=9 => {
                    out.push(b'0' + d);
                    any = true;
                }
                _ => return Err(bad()),
            }
        }
    }

    /// Skips the next `n` runs. Sixteen nibbles at a time while the runs
    /// they end are not enough (reaching a value deep in a column took ~10
    /// instructions a digit one nibble at a time: ~30 k per line rebuilt
    /// from a long free-text column); a damaged nibble is reported as
    /// reading nibble by nibble reports it.
    pub fn skip(&mut self, mut n: usize) -> Result<(), StorageError> {
        /// Bit 0 of each nibble.
        const LOW: u64 = 0x1111_1111_1111_1111;
        while n > 0 {
            if self.at.is_multiple_of(2) {
                let from = self.at / 2;
                if let Some(bytes) = self.src.get(from..from + 8) {
                    let w = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
                    let (b1, b2, b3) = (w >> 1, w >> 2, w >> 3);
                    // Nibbles 0xF (run ends), and 10 to 14 (damage).
                    let ends = w & b1 & b2 & b3 & LOW;
                    let damaged = b3 & (b2 | b1) & LOW & !ends;
                    let count = ends.count_ones() as usize;
                    if damaged == 0 && count < n {
                        n -= count;
                        self.at += 16;
                        continue;
                    }
                }
            }
            match self.nibble() {
                Some(END) => n -= 1,
                Some(0..=9) => {}
                _ => return Err(StorageError::corrupt("block column", "bad digit run")),
            }
        }
        Ok(())
    }

    /// True when no whole run is left (only padding, if anything).
    pub fn is_done(&self) -> bool {
        let left = self.src.len() * 2 - self.at.min(self.src.len() * 2);
        left == 0 || (left == 1 && self.src.last().is_some_and(|b| b >> 4 == END))
    }
}

/// Appends the value of skeleton `skel` to `out`, taking one run from
/// `digits` per [`HOLE`].
pub fn fill(
    skel: &[u8],
    digits: &mut DigitReader<'_>,
    out: &mut Vec<u8>,
) -> Result<(), StorageError> {
    for &b in skel {
        if b == HOLE {
            digits.run(out)?;
        } else {
            out.push(b);
        }
    }
    Ok(())
}

/// Number of holes in a skeleton.
#[inline]
pub fn holes(skel: &[u8]) -> usize {
    memchr::memchr_iter(HOLE, skel).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_the_digit_free_runs() {
        assert_eq!(
            skeleton_pieces(b"usr_0012x3"),
            Some(vec![&b"usr_"[..], b"x"])
        );
        assert_eq!(skeleton_pieces(b"123"), Some(vec![]));
        assert_eq!(skeleton_pieces(b"a\0b"), None);
    }
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn split_and_fill_round_trip(vals in prop::collection::vec("[a-z0-9 .()]{0,20}", 0..20)) {
            let mut w = DigitWriter::default();
            let mut skels = Vec::new();
            for v in &vals {
                let mut s = Vec::new();
                split(v.as_bytes(), &mut s, &mut w);
                prop_assert!(skeleton_safe(&s.iter().copied().filter(|&b| b != HOLE).collect::<Vec<_>>()));
                prop_assert_eq!(holes(&s) > 0, has_digit(v.as_bytes()));
                skels.push(s);
            }
            let packed = w.finish();
            let mut r = DigitReader::new(&packed);
            for (v, s) in vals.iter().zip(&skels) {
                let mut out = Vec::new();
                fill(s, &mut r, &mut out).unwrap();
                prop_assert_eq!(out, v.as_bytes().to_vec());
            }
            prop_assert!(r.is_done());
        }

        #[test]
        fn digit_free_needles_match_skeletons_exactly(v in "[a-c0-9 ]{0,16}", n in "[a-c ]{1,4}") {
            let mut s = Vec::new();
            let mut w = DigitWriter::default();
            split(v.as_bytes(), &mut s, &mut w);
            let in_value = memchr::memmem::find(v.as_bytes(), n.as_bytes()).is_some();
            let in_skel = memchr::memmem::find(&s, n.as_bytes()).is_some();
            prop_assert_eq!(in_value, in_skel);
            prop_assert_eq!(v.starts_with(&n), s.starts_with(n.as_bytes()));
            prop_assert_eq!(v.ends_with(&n), s.ends_with(n.as_bytes()));
            prop_assert_eq!(v == n, s == n.as_bytes());
        }
    }

    /// The nibble-by-nibble skip the word-wise one must agree with.
    fn skip_one_by_one(r: &mut DigitReader<'_>, mut n: usize) -> Result<(), ()> {
        while n > 0 {
            match r.nibble() {
                Some(END) => n -= 1,
                Some(0..=9) => {}
                _ => return Err(()),
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn skipping_word_wise_agrees_with_nibble_by_nibble(
            // Mostly digits and run ends, sometimes a damaged nibble.
            nibbles in prop::collection::vec(
                prop_oneof![8 => 0u8..=9, 3 => Just(END), 1 => 10u8..=14],
                0..80,
            ),
            start in 0usize..6,
            n in 0usize..30,
        ) {
            let src: Vec<u8> = nibbles
                .chunks(2)
                .map(|p| p[0] | (p.get(1).copied().unwrap_or(END) << 4))
                .collect();
            let mut a = DigitReader::new(&src);
            let mut b = DigitReader::new(&src);
            a.at = start;
            b.at = start;
            let fast = a.skip(n).is_ok();
            let slow = skip_one_by_one(&mut b, n).is_ok();
            prop_assert_eq!(fast, slow);
            if fast {
                prop_assert_eq!(a.at, b.at);
            }
        }
    }

    #[test]
    fn damaged_streams_are_errors() {
        let mut r = DigitReader::new(&[0xFF]);
        assert!(r.run(&mut Vec::new()).is_err(), "an empty run");
        let mut r = DigitReader::new(&[0xA1]);
        assert!(r.run(&mut Vec::new()).is_err(), "a nibble above 9");
        let mut r = DigitReader::new(&[0x21]);
        assert!(r.run(&mut Vec::new()).is_err(), "no end");
    }
}
