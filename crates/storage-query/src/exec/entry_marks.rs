//! Rows whose dictionary entry is one of a few wanted entries, as a bitmap.
//!
//! A label filter over a dictionary column (`| json | level="error"`) passes
//! or fails per entry; a block's rows then pass when their entry is one of
//! the passing ones, usually one entry of a handful, held by a few percent
//! of the rows. Testing row by row through a per-entry table and gathering
//! the passing rows cost ~17 instructions a row (callgrind, q9 of the
//! issue-7 bench); comparing the row entries sixteen at a time with SSE2
//! (part of every x86-64 CPU) and visiting only the set bits costs about
//! one.

/// How many wanted entries [`mark`] compares each row with, at most.
pub const MAX_WANTED: usize = 4;

/// The entries that pass, when there are at most [`MAX_WANTED`] of them.
#[derive(Clone, Copy, Debug)]
pub struct Wanted {
    entries: [u32; MAX_WANTED],
    len: usize,
}

impl Wanted {
    /// The entries `e` with `pass[e]`, or `None` when more than
    /// [`MAX_WANTED`] pass.
    pub fn passing(pass: &[bool]) -> Option<Wanted> {
        let mut w = Wanted {
            entries: [0; MAX_WANTED],
            len: 0,
        };
        for (e, _) in pass.iter().enumerate().filter(|(_, &p)| p) {
            if w.len == MAX_WANTED {
                return None;
            }
            w.entries[w.len] = e as u32;
            w.len += 1;
        }
        Some(w)
    }

    /// The passing entries, ascending.
    pub fn entries(&self) -> &[u32] {
        &self.entries[..self.len]
    }
}

/// Sets in `marks` bit `r % 64` of word `r / 64` for each row `r` of
/// `entries` whose entry is in `wanted` (at most [`MAX_WANTED`]), and
/// clears every other bit; returns how many rows were marked.
pub fn mark(entries: &[u32], wanted: &[u32], marks: &mut Vec<u64>) -> usize {
    assert!(
        wanted.len() <= MAX_WANTED,
        "at most {MAX_WANTED} wanted entries"
    );
    match *wanted {
        [] => fill(entries.len(), marks, |_| 0),
        [a] => fill(entries.len(), marks, |r| word(&entries[r], [a])),
        [a, b] => fill(entries.len(), marks, |r| word(&entries[r], [a, b])),
        [a, b, c] => fill(entries.len(), marks, |r| word(&entries[r], [a, b, c])),
        [a, b, c, d] => fill(entries.len(), marks, |r| word(&entries[r], [a, b, c, d])),
        _ => unreachable!("at most {MAX_WANTED} wanted entries"),
    }
}

/// Fills `marks` with the bitmap of `rows` rows, one word per 64 rows from
/// `bits` (given the rows of the word: 64, fewer in the last word); returns
/// how many rows are marked.
pub fn fill(
    rows: usize,
    marks: &mut Vec<u64>,
    mut bits: impl FnMut(std::ops::Range<usize>) -> u64,
) -> usize {
    marks.clear();
    marks.resize(rows.div_ceil(64), 0);
    let mut marked = 0;
    for (w, word) in marks.iter_mut().enumerate() {
        let from = w * 64;
        *word = bits(from..(from + 64).min(rows));
        marked += word.count_ones() as usize;
    }
    marked
}

/// The bits of up to 64 rows, the number of wanted entries a constant (the
/// compares of a whole word unrolled).
#[inline]
fn word<const N: usize>(entries: &[u32], wanted: [u32; N]) -> u64 {
    match entries.try_into() {
        Ok(whole) => mark_64(whole, wanted),
        Err(_) => mark_scalar(entries, &wanted),
    }
}

/// The bits of up to 64 rows, one by one.
fn mark_scalar(entries: &[u32], wanted: &[u32]) -> u64 {
    entries.iter().enumerate().fold(0u64, |word, (b, e)| {
        word | (u64::from(wanted.contains(e)) << b)
    })
}

/// The bits of 64 rows, sixteen at a time: four 4-lane compares per wanted
/// entry, narrowed to bytes, one byte mask.
#[cfg(target_arch = "x86_64")]
#[inline]
fn mark_64<const N: usize>(entries: &[u32; 64], wanted: [u32; N]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_packs_epi16, _mm_packs_epi32, _mm_set1_epi32,
    };
    // SAFETY: SSE2 is part of the x86-64 baseline every x86-64 target
    // enables; each load reads four `u32`s inside `entries` (`(q * 4 + k)
    // * 4 + 4 <= 64`), unaligned loads allowed.
    unsafe {
        let wants: [__m128i; N] = wanted.map(|w| _mm_set1_epi32(w as i32));
        let at = entries.as_ptr().cast::<__m128i>();
        let mut word = 0u64;
        for q in 0..4 {
            let four = |k: usize| {
                let v = _mm_loadu_si128(at.add(q * 4 + k));
                let mut hit = _mm_cmpeq_epi32(v, wants[0]);
                for w in &wants[1..] {
                    hit = _mm_or_si128(hit, _mm_cmpeq_epi32(v, *w));
                }
                hit
            };
            // Lanes are all ones or zeros: saturating packs keep them so.
            let low = _mm_packs_epi32(four(0), four(1));
            let high = _mm_packs_epi32(four(2), four(3));
            let bytes = _mm_packs_epi16(low, high);
            word |= u64::from(_mm_movemask_epi8(bytes) as u16) << (q * 16);
        }
        word
    }
}

/// The bits of 64 rows, one by one (targets without SSE2).
#[cfg(not(target_arch = "x86_64"))]
fn mark_64<const N: usize>(entries: &[u32; 64], wanted: [u32; N]) -> u64 {
    mark_scalar(entries, &wanted)
}

/// The rows marked in `marks` (bit `r % 64` of word `r / 64`), ascending.
pub fn rows(marks: &[u64]) -> impl Iterator<Item = usize> + '_ {
    marks.iter().enumerate().flat_map(|(w, &word)| {
        let mut bits = word;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                w * 64 + b
            })
        })
    })
}

/// Whether row `r` is marked.
#[inline]
pub fn is_marked(marks: &[u64], r: usize) -> bool {
    (marks[r / 64] >> (r % 64)) & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_the_rows_holding_a_wanted_entry() {
        // Entries 0..7 in a pattern, lengths around the 64-row words and
        // the 16-row compares, including the largest entry values.
        let mut state = 0x9e37_79b9u32;
        for len in [0usize, 1, 15, 16, 17, 63, 64, 65, 128, 200, 400] {
            let entries: Vec<u32> = (0..len)
                .map(|i| {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    match i % 11 {
                        10 => u32::MAX,
                        _ => (state >> 28) % 7,
                    }
                })
                .collect();
            for wanted in [&[][..], &[3], &[0, 6], &[u32::MAX], &[1, 2, 5, 4]] {
                let mut marks = vec![u64::MAX; 3];
                let n = mark(&entries, wanted, &mut marks);
                let expect: Vec<usize> =
                    (0..len).filter(|&r| wanted.contains(&entries[r])).collect();
                assert_eq!(
                    rows(&marks).collect::<Vec<_>>(),
                    expect,
                    "len {len}, wanted {wanted:?}"
                );
                assert_eq!(n, expect.len());
                assert_eq!(marks.len(), len.div_ceil(64));
                for (r, e) in entries.iter().enumerate() {
                    assert_eq!(is_marked(&marks, r), wanted.contains(e));
                }
            }
        }
    }

    #[test]
    fn wanted_entries_are_the_passing_ones_up_to_the_limit() {
        let w = Wanted::passing(&[false, true, false, false, true]).expect("two pass");
        assert_eq!(w.entries(), &[1, 4]);
        assert_eq!(
            Wanted::passing(&[false; 9]).expect("none pass").entries(),
            &[] as &[u32]
        );
        let all = vec![true; MAX_WANTED];
        assert_eq!(
            Wanted::passing(&all).expect("the limit").entries().len(),
            MAX_WANTED
        );
        assert!(Wanted::passing(&[true; MAX_WANTED + 1]).is_none());
    }

    #[test]
    #[should_panic(expected = "at most")]
    fn refuses_more_wanted_entries_than_it_compares() {
        mark(&[1, 2, 3], &[1, 2, 3, 4, 5], &mut Vec::new());
    }
}
