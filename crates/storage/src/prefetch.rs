//! Hints to the CPU to fetch memory a reader is about to touch.
//!
//! A query's first run after a restart opens each block it reads for the
//! first time: it walks the block's decoded header (built when the part
//! opened, scattered over the heap) and parses its directory and kept frames
//! from the mapping. Each step's address depends on the bytes the step
//! before read, so those cache and TLB misses are paid one after another
//! (`perf` of q9's first run: ~25 % of the query threads' samples in the
//! first instructions touching a block). Hinting the next blocks' memory
//! while the current one is read lets the misses overlap with work.
//!
//! A hint never faults and changes no result; on targets without one it is
//! nothing.

/// Bytes per cache line the hints step by.
const LINE: usize = 64;

/// Hints the cache lines of `bytes`, at most `cap` bytes from its start;
/// returns how many hints it gave.
#[inline]
pub fn bytes(bytes: &[u8], cap: usize) -> usize {
    let len = bytes.len().min(cap);
    let base = bytes.as_ptr();
    let mut at = 0;
    let mut hints = 0;
    while at < len {
        // SAFETY: `at < len <= bytes.len()`: the address is inside `bytes`.
        line(unsafe { base.add(at) });
        at += LINE;
        hints += 1;
    }
    hints
}

/// Hints the memory of `items`, at most `cap` bytes of it; returns how many
/// hints it gave.
#[inline]
pub fn slice<T>(items: &[T], cap: usize) -> usize {
    let len = std::mem::size_of_val(items);
    // SAFETY: `items` is `len` initialised bytes; they are only hinted.
    bytes(
        unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<u8>(), len) },
        cap,
    )
}

/// Hints the first cache line of `value`.
#[inline]
pub fn value<T>(value: &T) {
    line((value as *const T).cast::<u8>());
}

/// One hint, into the core's second-level cache (not the first: a block's
/// bytes hinted a unit ahead would push out the current block's).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn line(p: *const u8) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
    // SAFETY: SSE is part of the x86-64 baseline; a prefetch reads nothing
    // the program sees and never faults, whatever the address.
    unsafe { _mm_prefetch(p.cast::<i8>(), _MM_HINT_T1) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn line(_p: *const u8) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hint_per_line_up_to_the_cap() {
        let data = vec![7u8; 1000];
        assert_eq!(bytes(&data, 0), 0);
        assert_eq!(bytes(&data, 10_000), 16, "1000 bytes: 16 lines");
        assert_eq!(bytes(&data, 128), 2);
        assert_eq!(bytes(&data, 129), 3);
        assert_eq!(bytes(&data[999..], 64), 1);
        assert_eq!(bytes(&[], 64), 0);
        assert_eq!(slice(&[1u64; 20], 10_000), 3, "160 bytes: 3 lines");
        assert_eq!(slice(&[1u64; 20], 8), 1);
        assert_eq!(slice::<u32>(&[], 8), 0);
        value(&data);
    }
}
