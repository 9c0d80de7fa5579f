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

#[cfg(test)]
mod tests {
    use super::*;

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
