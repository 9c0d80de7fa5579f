//! Integer streams: a run of unsigned integers stored either as varints or
//! as fixed-width byte planes (all lowest bytes, then all second bytes, …).
//! Planes let zstd's entropy coder see each byte position on its own, which
//! is close to the information content for random ids, sizes and durations;
//! varints win when a few outliers would force a wide fixed width.

use super::varint::{put_uvarint, uvarint_len, Cursor};
use crate::StorageError;

/// Appends `vals`: one mode byte (0 = varints, 1..=8 = plane width), then data.
pub fn put_ints(dst: &mut Vec<u8>, vals: &[u64]) {
    let max = vals.iter().copied().max().unwrap_or(0);
    let width = (8 - max.leading_zeros() as usize / 8).max(1);
    let varint_len: usize = vals.iter().map(|&v| uvarint_len(v)).sum();
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

/// Reads `n` integers written by [`put_ints`].
pub fn get_ints(c: &mut Cursor<'_>, n: usize) -> Result<Vec<u64>, StorageError> {
    let mode = c.u8()? as usize;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_modes_round_trip() {
        for vals in [
            vec![],
            vec![0u64],
            vec![1, 2, 3, 255, 256, 70_000],
            vec![1, 1, 1, u64::MAX],
            (0..100).map(|i| i * 977).collect(),
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
    }
}
