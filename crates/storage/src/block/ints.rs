//! Integer streams: a run of unsigned integers stored as varints, as
//! fixed-width byte planes (all lowest bytes, then all second bytes, …), or
//! (block format 2) bit-packed at a fixed width. Planes let zstd's entropy
//! coder see each byte position on its own, which is close to the
//! information content for random ids, sizes and durations; bit-packing is
//! as small for narrow values without zstd, and decodes without it; varints
//! win when a few outliers would force a wide fixed width.

use super::varint::{put_uvarint, uvarint_len, Cursor};
use crate::StorageError;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// Mode byte of a bit-packed stream (followed by the width in bits).
pub const MODE_BITS: u8 = 9;

/// Appends `vals` as the smallest of varints, byte planes and bit-packing:
/// one mode byte (0 = varints, 1..=8 = plane width, [`MODE_BITS`] = packed),
/// then data.
pub fn put_ints(dst: &mut Vec<u8>, vals: &[u64]) {
    let max = vals.iter().copied().max().unwrap_or(0);
    let bits = 64 - max.leading_zeros() as usize;
    let packed = 1 + (vals.len() * bits).div_ceil(8);
    let width = (8 - max.leading_zeros() as usize / 8).max(1);
    let varint_len: usize = vals.iter().map(|&v| uvarint_len(v)).sum();
    if packed < width * vals.len() && packed <= varint_len + varint_len / 4 {
        dst.push(MODE_BITS);
        dst.push(bits as u8);
        pack_bits(dst, vals, bits);
        return;
    }
    if width * vals.len() <= varint_len + varint_len / 4 {
        dst.push(width as u8);
        dst.reserve(width * vals.len());
        for b in 0..width {
            dst.extend(vals.iter().map(|&v| (v >> (8 * b)) as u8));
        }
    } else {
        dst.push(0);
        for &v in vals {
            put_uvarint(dst, v);
        }
    }
}

/// Like [`put_ints`], but always in a layout [`IntsLayout::get`] reads
/// in place (bits or byte planes, never varints): for streams that
/// queries read a few integers of, such as a shared column's entries.
pub fn put_ints_addressable(dst: &mut Vec<u8>, vals: &[u64]) {
    let max = vals.iter().copied().max().unwrap_or(0);
    let bits = 64 - max.leading_zeros() as usize;
    let packed = 1 + (vals.len() * bits).div_ceil(8);
    let width = (8 - max.leading_zeros() as usize / 8).max(1);
    if packed < width * vals.len() {
        dst.push(MODE_BITS);
        dst.push(bits as u8);
        pack_bits(dst, vals, bits);
    } else {
        dst.push(width as u8);
        dst.reserve(width * vals.len());
        for b in 0..width {
            dst.extend(vals.iter().map(|&v| (v >> (8 * b)) as u8));
        }
    }
}

/// Appends `vals` bit-packed at `bits` each, least significant bit first.
fn pack_bits(dst: &mut Vec<u8>, vals: &[u64], bits: usize) {
    if bits == 0 {
        return;
    }
    let mut acc: u128 = 0;
    let mut have = 0usize;
    for &v in vals {
        acc |= u128::from(v) << have;
        have += bits;
        while have >= 8 {
            dst.push(acc as u8);
            acc >>= 8;
            have -= 8;
        }
    }
    if have > 0 {
        dst.push(acc as u8);
    }
}

/// Reads `n` values bit-packed at `bits` from `src` (exactly long enough).
fn unpack_bits(src: &[u8], n: usize, bits: usize, out: &mut Vec<u64>) {
    out.reserve(n);
    let at = out.len();
    unpack_bits_into(src, bits, &mut out.spare_capacity_mut()[..n], |v| v);
    // SAFETY: `unpack_bits_into` wrote each of the `n` slots after `at`.
    unsafe { out.set_len(at + n) };
}

/// Reads `slots.len()` values bit-packed at `bits` from `src` (exactly long
/// enough), writing each mapped by `f` (called in order) to its slot: every
/// slot is written. Straight writes to the slots, no capacity check or
/// length update per value (a block's row templates and timestamps are
/// decoded by this on their first read).
fn unpack_bits_into<T>(
    src: &[u8],
    bits: usize,
    slots: &mut [MaybeUninit<T>],
    mut f: impl FnMut(u64) -> T,
) {
    let n = slots.len();
    if bits == 0 {
        for s in slots {
            s.write(f(0));
        }
        return;
    }
    // Widths up to 56 bits: whole groups of eight values with the width a
    // constant, then the rest below.
    let done = groups_of_eight(src, bits, slots, &mut f);
    if done > 0 {
        // `done` is a multiple of eight: the rest starts on a byte.
        let rest = &mut slots[done..];
        unpack_bits_into(&src[done * bits / 8..], bits, rest, f);
        return;
    }
    if bits > 56 {
        let mut wide = Vec::with_capacity(n);
        unpack_wide(src, n, bits, &mut wide);
        for (s, v) in slots.iter_mut().zip(wide) {
            s.write(f(v));
        }
        return;
    }
    let mask = (1u64 << bits) - 1;
    // Values read with a straight 8-byte load from `src`: those whose first
    // byte is at most `len - 8`.
    let direct = if src.len() >= 8 {
        (((src.len() - 8) * 8 + 7) / bits + 1).min(n)
    } else {
        0
    };
    let (head, tail) = slots.split_at_mut(direct);
    // Up to 8 bits, eight values fill exactly `bits` bytes: one load per
    // eight values (the bytes past the group's `bits` are shifted out or
    // masked off); the rest of the direct values, one load each.
    let groups = if bits <= 8 { direct / 8 } else { 0 };
    let (whole, single) = head.split_at_mut(groups * 8);
    for (g, chunk) in whole.chunks_exact_mut(8).enumerate() {
        let at = g * bits;
        let word = u64::from_le_bytes(src[at..at + 8].try_into().expect("8 bytes"));
        for (k, s) in chunk.iter_mut().enumerate() {
            s.write(f((word >> (k * bits)) & mask));
        }
    }
    // The bit position advances by `bits` (no multiplication per value), and
    // the loads are not bounds-checked one by one: the last direct value's
    // first byte is at most `len - 8` (asserted once, before the loop).
    let mut bit = groups * 8 * bits;
    if let Some(last) = (groups * 8 + single.len()).checked_sub(1) {
        assert!(last * bits / 8 + 8 <= src.len(), "direct values in bounds");
    }
    let base = src.as_ptr();
    for s in single.iter_mut() {
        // SAFETY: `bit / 8` is at most the last direct value's first byte,
        // which is at most `src.len() - 8` (asserted above), so the eight
        // bytes read are inside `src`.
        let bytes = unsafe { base.add(bit / 8).cast::<[u8; 8]>().read_unaligned() };
        s.write(f((u64::from_le_bytes(bytes) >> (bit % 8)) & mask));
        bit += bits;
    }
    if !tail.is_empty() {
        // The last values, from a zero-padded copy of the stream's end.
        let from = (direct * bits / 8).min(src.len());
        let mut pad = [0u8; 24];
        let k = (src.len() - from).min(16);
        pad[..k].copy_from_slice(&src[from..from + k]);
        for (i, s) in tail.iter_mut().enumerate() {
            let bit = (direct + i) * bits;
            let byte = bit / 8 - from;
            let word = u64::from_le_bytes(pad[byte..byte + 8].try_into().expect("8 bytes"));
            s.write(f((word >> (bit % 8)) & mask));
        }
    }
}

/// Unpacks the leading whole groups of eight values of a stream of `bits`
/// (1 to 56) bits whose loads stay inside `src`, with the width a
/// constant ([`unpack_groups`]); returns how many values it wrote (a
/// multiple of eight; 0 for other widths).
fn groups_of_eight<T>(
    src: &[u8],
    bits: usize,
    slots: &mut [MaybeUninit<T>],
    f: &mut impl FnMut(u64) -> T,
) -> usize {
    macro_rules! widths {
        ($($b:literal)*) => {
            match bits {
                $($b => unpack_groups::<$b, T>(src, slots, f),)*
                _ => 0,
            }
        };
    }
    widths!(
        1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28
        29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56
    )
}

/// Eight values of `B` bits fill exactly `B` bytes, so within a group each
/// value's byte and shift are constants: a straight load, shift and mask
/// per value (one load for the whole group up to 8 bits), no bit position
/// carried from value to value (a block's row timestamps, ~35 bits apart
/// in nanoseconds, took ~20 instructions a value that way on their first
/// read, ~12 this way). Writes the groups whose every load stays inside
/// `src`; returns how many values that is.
#[inline]
fn unpack_groups<const B: usize, T>(
    src: &[u8],
    slots: &mut [MaybeUninit<T>],
    f: &mut impl FnMut(u64) -> T,
) -> usize {
    // A group reads bytes `[g * B, g * B + span)`.
    let span = if B <= 8 { 8 } else { (7 * B) / 8 + 8 };
    let mask = (1u64 << B) - 1;
    let whole = (slots.len() / 8).min(match src.len().checked_sub(span) {
        Some(room) => room / B + 1,
        None => 0,
    });
    for (g, chunk) in slots[..whole * 8].chunks_exact_mut(8).enumerate() {
        let bytes = &src[g * B..g * B + span];
        if B <= 8 {
            let word = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
            for (k, s) in chunk.iter_mut().enumerate() {
                s.write(f((word >> (k * B)) & mask));
            }
        } else {
            for (k, s) in chunk.iter_mut().enumerate() {
                let at = k * B / 8;
                let word = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
                s.write(f((word >> (k * B % 8)) & mask));
            }
        }
    }
    whole * 8
}

/// The values of `bits` bits (1, 2, 4 or 8) each byte holds, low bits
/// first.
const fn byte_values<const B: usize, const K: usize>() -> [[u32; K]; 256] {
    let mut t = [[0u32; K]; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < K {
            t[b][k] = ((b >> (k * B)) & ((1 << B) - 1)) as u32;
            k += 1;
        }
        b += 1;
    }
    t
}

/// The largest of the values of `bits` bits each byte holds.
const fn byte_max<const B: usize>() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < 8 / B {
            let v = ((b >> (k * B)) & ((1 << B) - 1)) as u8;
            if v > t[b] {
                t[b] = v;
            }
            k += 1;
        }
        b += 1;
    }
    t
}

static BYTES_OF_1: [[u32; 8]; 256] = byte_values::<1, 8>();
static BYTES_OF_2: [[u32; 4]; 256] = byte_values::<2, 4>();
static BYTES_OF_4: [[u32; 2]; 256] = byte_values::<4, 2>();
static MAX_OF_1: [u8; 256] = byte_max::<1>();
static MAX_OF_2: [u8; 256] = byte_max::<2>();
static MAX_OF_4: [u8; 256] = byte_max::<4>();

/// Writes every slot of `out` with the values bit-packed at `bits` (1, 2,
/// 4 or 8) in `src` (exactly long enough) and returns the largest (0 for
/// none): each byte's values copied from a table at once, with their
/// largest, instead of a shift and mask per value (a block's shared
/// dictionary entries, two bits each in most columns, took ~5 instructions
/// a value that way, and a separate pass for the largest ~2 more: SSE2 has
/// no unsigned 32-bit maximum).
fn widen_bytes(src: &[u8], bits: usize, out: &mut [MaybeUninit<u32>]) -> u32 {
    fn by_table<const K: usize>(
        src: &[u8],
        values: &[[u32; K]; 256],
        maxes: &[u8; 256],
        out: &mut [MaybeUninit<u32>],
    ) -> u32 {
        let whole = out.len() / K;
        let mut max = 0u8;
        let at = out.as_mut_ptr().cast::<[u32; K]>();
        for (i, &b) in src[..whole].iter().enumerate() {
            // SAFETY: group `i < whole` is inside `out` (`whole * K <=
            // out.len()`), and an unaligned write of `[u32; K]` writes
            // exactly its `K` slots (one wide move).
            unsafe { at.add(i).write_unaligned(values[usize::from(b)]) };
            max = max.max(maxes[usize::from(b)]);
        }
        let mut max = u32::from(max);
        let rest = &mut out[whole * K..];
        if let Some(&b) = src.get(whole) {
            for (s, &v) in rest.iter_mut().zip(&values[usize::from(b)]) {
                s.write(v);
                max = max.max(v);
            }
        }
        max
    }
    match bits {
        1 => by_table(src, &BYTES_OF_1, &MAX_OF_1, out),
        2 => by_table(src, &BYTES_OF_2, &MAX_OF_2, out),
        4 => by_table(src, &BYTES_OF_4, &MAX_OF_4, out),
        8 => {
            for (s, &b) in out.iter_mut().zip(src) {
                s.write(u32::from(b));
            }
            // Bytes: SSE2 compares sixteen at once.
            u32::from(src[..out.len()].iter().fold(0u8, |m, &b| m.max(b)))
        }
        _ => unreachable!("widths 1, 2, 4, 8"),
    }
}

/// [`unpack_bits`] for widths above 56 bits.
fn unpack_wide(src: &[u8], n: usize, bits: usize, out: &mut Vec<u64>) {
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let mut acc: u128 = 0;
    let mut have = 0usize;
    let mut bytes = src.iter();
    for _ in 0..n {
        while have < bits {
            acc |= u128::from(*bytes.next().unwrap_or(&0)) << have;
            have += 8;
        }
        out.push(acc as u64 & mask);
        acc >>= bits;
        have -= bits;
    }
}

/// Reads `n` integers written by [`put_ints`].
pub fn get_ints(c: &mut Cursor<'_>, n: usize) -> Result<Vec<u64>, StorageError> {
    let mode = c.u8()? as usize;
    if mode == MODE_BITS as usize {
        let bits = c.u8()? as usize;
        if bits > 64 {
            return Err(c.err("bad bit width"));
        }
        let len = n
            .checked_mul(bits)
            .ok_or_else(|| c.err("count overflow"))?
            .div_ceil(8);
        let src = c.take(len)?;
        let mut out = Vec::with_capacity(n);
        unpack_bits(src, n, bits, &mut out);
        return Ok(out);
    }
    match mode {
        0 => {
            let mut out = Vec::with_capacity(n.min(c.remaining()));
            for _ in 0..n {
                out.push(c.uvarint()?);
            }
            Ok(out)
        }
        1..=8 => {
            let planes = c.take(n.checked_mul(mode).ok_or_else(|| c.err("count overflow"))?)?;
            let mut out = vec![0u64; n];
            for (b, plane) in
                planes
                    .chunks_exact(n.max(1))
                    .enumerate()
                    .take(if n == 0 { 0 } else { mode })
            {
                for (v, &byte) in out.iter_mut().zip(plane) {
                    *v |= u64::from(byte) << (8 * b);
                }
            }
            Ok(out)
        }
        _ => Err(c.err("bad integer stream mode")),
    }
}

/// Where an integer stream lies in a buffer, for reading single values
/// without decoding the stream whole (bit-packed and byte-plane streams;
/// varint streams are decoded when read).
#[derive(Clone, Debug)]
pub struct IntsLayout {
    start: usize,
    kind: LayoutKind,
}

/// The most integers [`IntsLayout::for_each_run`] hands over at once (a
/// multiple of eight, so that every run starts on a byte).
pub const RUN: usize = 256;

#[derive(Clone, Debug)]
enum LayoutKind {
    Bits(usize),
    Planes { n: usize, width: usize },
    Decoded(Vec<u64>),
}

impl IntsLayout {
    /// Reads the layout of `n` integers written by [`put_ints`] at the
    /// cursor, moving past them. Positions are relative to the cursor's
    /// buffer, which [`IntsLayout::get`] must be given.
    pub fn read(c: &mut Cursor<'_>, n: usize) -> Result<Self, StorageError> {
        let mode = c.u8()? as usize;
        let kind = match mode {
            m if m == MODE_BITS as usize => {
                let bits = c.u8()? as usize;
                if bits > 64 {
                    return Err(c.err("bad bit width"));
                }
                let len = n
                    .checked_mul(bits)
                    .ok_or_else(|| c.err("count overflow"))?
                    .div_ceil(8);
                let start = c.pos();
                c.take(len)?;
                return Ok(IntsLayout {
                    start,
                    kind: LayoutKind::Bits(bits),
                });
            }
            1..=8 => {
                let start = c.pos();
                c.take(n.checked_mul(mode).ok_or_else(|| c.err("count overflow"))?)?;
                return Ok(IntsLayout {
                    start,
                    kind: LayoutKind::Planes { n, width: mode },
                });
            }
            0 => {
                let mut out = Vec::with_capacity(n.min(c.remaining()));
                for _ in 0..n {
                    out.push(c.uvarint()?);
                }
                LayoutKind::Decoded(out)
            }
            _ => return Err(c.err("bad integer stream mode")),
        };
        Ok(IntsLayout { start: 0, kind })
    }

    /// Whether every integer of the stream is certainly below `limit`
    /// judging by its stored width alone (a bit-packed or byte-plane stream
    /// too narrow to hold `limit - 1` or more), so callers can skip checking
    /// each value.
    pub fn all_below(&self, limit: u64) -> bool {
        let bits = match &self.kind {
            LayoutKind::Bits(w) => *w,
            LayoutKind::Planes { width, .. } => width * 8,
            LayoutKind::Decoded(_) => return false,
        };
        bits < 64 && (1u64 << bits) <= limit
    }

    /// All `n` integers (the count read) of the stream in `buf`, mapped by `f`.
    pub fn all<T>(&self, buf: &[u8], n: usize, mut f: impl FnMut(u64) -> T) -> Vec<T> {
        match &self.kind {
            LayoutKind::Bits(w) => {
                let len = (n * w).div_ceil(8);
                let mut out = Vec::with_capacity(n);
                unpack_bits_into(
                    &buf[self.start..self.start + len],
                    *w,
                    &mut out.spare_capacity_mut()[..n],
                    f,
                );
                // SAFETY: `unpack_bits_into` wrote each of the `n` slots.
                unsafe { out.set_len(n) };
                out
            }
            LayoutKind::Decoded(v) => v.iter().map(|&x| f(x)).collect(),
            LayoutKind::Planes { width: 1, .. } => buf[self.start..self.start + n]
                .iter()
                .map(|&b| f(u64::from(b)))
                .collect(),
            LayoutKind::Planes { .. } => (0..n).map(|i| f(self.get(buf, i))).collect(),
        }
    }

    /// [`Self::all`] of the integers as `u32`s, with the largest of them
    /// (0 when `n` is 0); integers above `u32::MAX` are cut to their low
    /// 32 bits, as `v as u32` does. Widths of 1, 2, 4 and 8 bits are
    /// widened a byte at a time through a table (shared dictionary entries,
    /// row templates: a few distinct values per block).
    pub fn all_u32(&self, buf: &[u8], n: usize) -> (Vec<u32>, u32) {
        if let LayoutKind::Bits(w @ (1 | 2 | 4 | 8)) = self.kind {
            let len = (n * w).div_ceil(8);
            let mut out = Vec::with_capacity(n);
            let max = widen_bytes(
                &buf[self.start..self.start + len],
                w,
                &mut out.spare_capacity_mut()[..n],
            );
            // SAFETY: `widen_bytes` wrote each of the `n` slots.
            unsafe { out.set_len(n) };
            return (out, max);
        }
        let mut max = 0u32;
        let out = self.all(buf, n, |v| {
            let v = v as u32;
            max = max.max(v);
            v
        });
        (out, max)
    }

    /// [`Self::all`], built in place in shared memory: no copy of a `Vec`
    /// into an `Arc` afterwards (a block's row timestamps and templates are
    /// kept shared past its reader).
    pub fn all_shared<T>(&self, buf: &[u8], n: usize, f: impl FnMut(u64) -> T) -> Arc<[T]> {
        let LayoutKind::Bits(w) = &self.kind else {
            return self.all(buf, n, f).into();
        };
        let len = (n * w).div_ceil(8);
        let mut shared = Arc::<[T]>::new_uninit_slice(n);
        let slots = Arc::get_mut(&mut shared).expect("a new Arc is not shared");
        unpack_bits_into(&buf[self.start..self.start + len], *w, slots, f);
        // SAFETY: `unpack_bits_into` wrote every one of the `n` slots.
        unsafe { shared.assume_init() }
    }

    /// Calls `f` with the `n` integers (the count read) of the stream in
    /// `buf`, at most [`RUN`] at a time, decoded into a buffer on the stack:
    /// a pass over every value that allocates nothing (a part checks its
    /// blocks' directories this way when it opens).
    pub fn for_each_run(&self, buf: &[u8], n: usize, mut f: impl FnMut(&[u64])) {
        let mut scratch = [0u64; RUN];
        match &self.kind {
            LayoutKind::Bits(w) => {
                let w = *w;
                let src = &buf[self.start..self.start + (n * w).div_ceil(8)];
                let mut i = 0;
                while i < n {
                    let k = RUN.min(n - i);
                    // `i` is a multiple of eight: its first bit starts a byte.
                    let from = i / 8 * w;
                    let end = ((i + k) * w).div_ceil(8);
                    let run = &mut scratch[..k];
                    // SAFETY: `MaybeUninit<u64>` has the layout of `u64`, and
                    // `unpack_bits_into` writes only initialised values.
                    let slots = unsafe { &mut *(run as *mut [u64] as *mut [MaybeUninit<u64>]) };
                    unpack_bits_into(&src[from..end], w, slots, |v| v);
                    f(&scratch[..k]);
                    i += k;
                }
            }
            LayoutKind::Decoded(v) => v[..n.min(v.len())].chunks(RUN).for_each(f),
            LayoutKind::Planes { .. } => {
                let mut i = 0;
                while i < n {
                    let k = RUN.min(n - i);
                    for (j, s) in scratch[..k].iter_mut().enumerate() {
                        *s = self.get(buf, i + j);
                    }
                    f(&scratch[..k]);
                    i += k;
                }
            }
        }
    }

    /// Integer `i` (below the count read) of the stream in `buf`.
    #[inline]
    pub fn get(&self, buf: &[u8], i: usize) -> u64 {
        match &self.kind {
            LayoutKind::Bits(0) => 0,
            LayoutKind::Bits(w) => {
                let bit = i * w;
                let at = self.start + bit / 8;
                let shift = bit % 8;
                let word = match buf.get(at..at + 16) {
                    Some(b) => u128::from_le_bytes(b.try_into().expect("16 bytes")),
                    None => {
                        let mut raw = [0u8; 16];
                        let avail = buf.len().saturating_sub(at).min(16);
                        raw[..avail].copy_from_slice(&buf[at..at + avail]);
                        u128::from_le_bytes(raw)
                    }
                };
                let v = (word >> shift) as u64;
                if *w == 64 {
                    v
                } else {
                    v & ((1u64 << w) - 1)
                }
            }
            LayoutKind::Planes { n, width } => {
                let mut v = 0u64;
                for b in 0..*width {
                    v |= u64::from(buf[self.start + b * n + i]) << (8 * b);
                }
                v
            }
            LayoutKind::Decoded(v) => v[i],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Runs of at most `RUN` values, decoded on the stack, concatenate
        /// to what `all` decodes, for every stored form (bit widths 0-64 over
        /// counts that do and do not fill runs, byte planes, varints).
        #[test]
        fn runs_concatenate_to_every_value(
            bits in 0u32..=64,
            n in 0usize..1100,
            seed in any::<u64>(),
            form in 0u8..3,
        ) {
            let mut x = seed | 1;
            let vals: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if bits == 64 { x } else { x & ((1u64 << bits) - 1) }
                })
                .collect();
            let (layout, buf) = match form {
                0 => {
                    let mut buf = vec![7u8; 3];
                    pack_bits(&mut buf, &vals, bits as usize);
                    (IntsLayout { start: 3, kind: LayoutKind::Bits(bits as usize) }, buf)
                }
                _ => {
                    let mut buf = Vec::new();
                    if form == 1 { put_ints_addressable(&mut buf, &vals) } else { put_ints(&mut buf, &vals) }
                    let mut c = Cursor::new(&buf, "test");
                    let l = IntsLayout::read(&mut c, n).unwrap();
                    (l, buf)
                }
            };
            let mut runs = Vec::new();
            let mut lens = Vec::new();
            layout.for_each_run(&buf, n, |run| {
                lens.push(run.len());
                runs.extend_from_slice(run);
            });
            prop_assert_eq!(&runs, &vals);
            prop_assert_eq!(&runs, &layout.all(&buf, n, |v| v));
            prop_assert!(lens.iter().all(|&k| k > 0 && k <= RUN));
            prop_assert_eq!(lens.len(), n.div_ceil(RUN));
        }
    }

    proptest! {
        #[test]
        fn packed_widths_round_trip(bits in 0u32..=64, vals in prop::collection::vec(any::<u64>(), 0..70)) {
            let vals: Vec<u64> = vals
                .into_iter()
                .map(|v| if bits == 64 { v } else { v & ((1u64 << bits) - 1) })
                .collect();
            let mut buf = Vec::new();
            pack_bits(&mut buf, &vals, bits as usize);
            let mut out = Vec::new();
            unpack_bits(&buf, vals.len(), bits as usize, &mut out);
            prop_assert_eq!(&out, &vals);
            // Built in place in an Arc: the same values, mapped in order.
            let layout = IntsLayout { start: 0, kind: LayoutKind::Bits(bits as usize) };
            let mut sum = 0u64;
            let shared = layout.all_shared(&buf, vals.len(), |v| {
                sum = sum.wrapping_add(v);
                sum
            });
            let mut sum = 0u64;
            let expect: Vec<u64> = vals.iter().map(|&v| { sum = sum.wrapping_add(v); sum }).collect();
            prop_assert_eq!(&shared[..], &expect[..]);
            // As `u32`s with their largest: table-widened at 1, 2, 4 and 8
            // bits, the general path at other widths; every length of a
            // last partial byte.
            let (narrow, max) = layout.all_u32(&buf, vals.len());
            let expect: Vec<u32> = vals.iter().map(|&v| v as u32).collect();
            prop_assert_eq!(&narrow, &expect);
            prop_assert_eq!(max, expect.iter().copied().max().unwrap_or(0));
        }
    }

    proptest! {
        #[test]
        fn layouts_read_single_values(vals in prop::collection::vec(any::<u64>(), 0..90), shift in 0u32..64) {
            let vals: Vec<u64> = vals.into_iter().map(|v| v >> shift).collect();
            let mut buf = vec![7u8];
            put_ints(&mut buf, &vals);
            buf.push(9);
            let mut c = Cursor::new(&buf, "test");
            c.u8().unwrap();
            let l = IntsLayout::read(&mut c, vals.len()).unwrap();
            prop_assert_eq!(c.u8().unwrap(), 9);
            for (i, &v) in vals.iter().enumerate() {
                prop_assert_eq!(l.get(&buf, i), v);
            }
            prop_assert_eq!(&l.all_shared(&buf, vals.len(), |v| v)[..], &vals[..]);
            prop_assert_eq!(l.all(&buf, vals.len(), |v| v), vals);
        }
    }

    #[test]
    fn all_below_judges_by_width_only() {
        let bits = |w| IntsLayout {
            start: 0,
            kind: LayoutKind::Bits(w),
        };
        assert!(bits(3).all_below(8));
        assert!(!bits(3).all_below(7));
        assert!(bits(0).all_below(1));
        assert!(!bits(0).all_below(0));
        assert!(!bits(64).all_below(u64::MAX));
        let planes = |width| IntsLayout {
            start: 0,
            kind: LayoutKind::Planes { n: 4, width },
        };
        assert!(planes(1).all_below(256));
        assert!(!planes(1).all_below(255));
        assert!(!planes(8).all_below(u64::MAX));
        // Varints say nothing about their values' size.
        let decoded = IntsLayout {
            start: 0,
            kind: LayoutKind::Decoded(vec![0]),
        };
        assert!(!decoded.all_below(u64::MAX));
    }

    #[test]
    fn both_modes_round_trip() {
        for vals in [
            vec![],
            vec![0u64],
            vec![1, 2, 3, 255, 256, 70_000],
            vec![1, 1, 1, u64::MAX],
            (0..100).map(|i| i * 977).collect(),
            (0..1000).map(|i| i % 5).collect(),
            (0..37u64)
                .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 3)
                .collect(),
        ] {
            let mut buf = Vec::new();
            put_ints(&mut buf, &vals);
            let mut c = Cursor::new(&buf, "test");
            assert_eq!(get_ints(&mut c, vals.len()).unwrap(), vals);
            assert!(c.is_empty());
        }
        let mut buf = Vec::new();
        put_ints(&mut buf, &[5, 1 << 40]);
        assert_eq!(buf[0], 0, "an outlier keeps varints");
        let mut buf = Vec::new();
        put_ints(&mut buf, &[1, 2, 3, 0, 2, 1, 3, 3]);
        assert_eq!(buf, vec![MODE_BITS, 2, 0b00_11_10_01, 0b11_11_01_10]);
    }
}
