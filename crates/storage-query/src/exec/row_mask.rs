//! Questions about a block's row mask (`keep`: one `bool` per row) answered
//! a vector at a time: a fields plan asks whether every row of a window is
//! kept before choosing its pass, once or twice per block, and a byte-wise
//! `all`/`any` that stops early cannot be vectorised (measured: ~4
//! instructions per row, a tenth of a `sum(count_over_time(… | json …))`
//! block's set-up).

/// The mask's bytes (a `bool` is one byte, 0 or 1).
fn bytes(mask: &[bool]) -> &[u8] {
    // SAFETY: `bool` has the size and alignment of `u8`, and every `bool`
    // is a valid `u8`; the slice is only read.
    unsafe { std::slice::from_raw_parts(mask.as_ptr().cast::<u8>(), mask.len()) }
}

/// Whether every row of `mask` is set (true for an empty mask).
pub fn all_set(mask: &[bool]) -> bool {
    memchr::memchr(0, bytes(mask)).is_none()
}

/// Whether some row of `mask` is set.
pub fn any_set(mask: &[bool]) -> bool {
    memchr::memchr(1, bytes(mask)).is_some()
}

/// Sets in `marks` bit `r % 64` of word `r / 64` for each set row `r` of
/// `mask` and clears every other bit (the bitmap [`super::entry_marks::rows`]
/// and [`super::buckets::Agg::count_marked`] read); returns how many rows
/// are set. Sixteen rows at a time with SSE2 (every x86-64 CPU): a count
/// of a few kept rows then visits only them, where a gather row by row
/// cost ~12 instructions a row.
pub fn to_marks(mask: &[bool], marks: &mut Vec<u64>) -> usize {
    let bytes = bytes(mask);
    super::entry_marks::fill(bytes.len(), marks, |r| {
        let rows = &bytes[r];
        match rows.try_into() {
            Ok(whole) => marks_64(whole),
            Err(_) => marks_scalar(rows),
        }
    })
}

/// The bits of 64 rows, sixteen at a time: each byte (0 or 1) shifted to
/// its top bit, one byte mask.
#[cfg(target_arch = "x86_64")]
#[inline]
fn marks_64(rows: &[u8; 64]) -> u64 {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_movemask_epi8, _mm_slli_epi16};
    // SAFETY: SSE2 is part of the x86-64 baseline; each load reads 16
    // bytes inside `rows` (`q * 16 + 16 <= 64`), unaligned loads allowed.
    unsafe {
        let at = rows.as_ptr().cast::<__m128i>();
        let mut word = 0u64;
        for q in 0..4 {
            // Bytes of 0 or 1 shifted left by 7 within their 16-bit
            // lanes: each byte's bit 0 lands on its own top bit (the low
            // byte's other bits, all 0, move into the high byte).
            let top = _mm_slli_epi16(_mm_loadu_si128(at.add(q)), 7);
            word |= u64::from(_mm_movemask_epi8(top) as u16) << (q * 16);
        }
        word
    }
}

/// The bits of up to 64 rows, one by one.
fn marks_scalar(rows: &[u8]) -> u64 {
    rows.iter()
        .enumerate()
        .fold(0u64, |w, (b, &x)| w | (u64::from(x) << b))
}

/// The bits of 64 rows, one by one (targets without SSE2).
#[cfg(not(target_arch = "x86_64"))]
fn marks_64(rows: &[u8; 64]) -> u64 {
    marks_scalar(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_the_set_rows() {
        let mut state = 0x2545_f491u32;
        for len in [0usize, 1, 15, 16, 17, 63, 64, 65, 128, 200, 400] {
            for share in [1u32, 2, 7, 50] {
                let mask: Vec<bool> = (0..len)
                    .map(|_| {
                        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                        (state >> 16).is_multiple_of(share)
                    })
                    .collect();
                let mut marks = vec![u64::MAX; 2];
                let n = to_marks(&mask, &mut marks);
                let expect: Vec<usize> = (0..len).filter(|&r| mask[r]).collect();
                let got: Vec<usize> = super::super::entry_marks::rows(&marks).collect();
                assert_eq!(got, expect, "len {len} share {share}");
                assert_eq!(n, expect.len());
                assert_eq!(marks.len(), len.div_ceil(64));
            }
        }
    }

    #[test]
    fn answers_as_iterating_does() {
        for len in [0usize, 1, 7, 31, 32, 33, 64, 400, 1000] {
            let every = vec![true; len];
            let none = vec![false; len];
            assert!(all_set(&every) && !any_set(&none));
            assert_eq!(any_set(&every), len > 0);
            assert_eq!(all_set(&none), len == 0);
            for at in [0, len / 2, len.saturating_sub(1)]
                .into_iter()
                .filter(|&a| a < len)
            {
                let mut one_off = every.clone();
                one_off[at] = false;
                let mut one_on = none.clone();
                one_on[at] = true;
                assert!(!all_set(&one_off), "unset row {at} of {len}");
                assert!(any_set(&one_on), "set row {at} of {len}");
                assert_eq!(any_set(&one_off), len > 1);
                assert_eq!(all_set(&one_on), len == 1);
            }
        }
    }
}
