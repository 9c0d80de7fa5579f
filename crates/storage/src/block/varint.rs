//! Byte-level primitives of the block format: LEB128 varints, zigzag, and a
//! bounds-checked reading cursor that turns every short read into a
//! corruption error instead of a panic.

use crate::StorageError;

/// Appends `v` as an unsigned LEB128 varint.
#[inline]
pub fn put_uvarint(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Appends `v` zigzag-mapped as an unsigned varint.
#[inline]
pub fn put_ivarint(dst: &mut Vec<u8>, v: i64) {
    put_uvarint(dst, zigzag(v));
}

/// Appends a length-prefixed byte string.
#[inline]
pub fn put_bytes(dst: &mut Vec<u8>, b: &[u8]) {
    put_uvarint(dst, b.len() as u64);
    dst.extend_from_slice(b);
}

/// Maps signed to unsigned so that small magnitudes give small numbers.
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Encoded size of `v` as an unsigned varint.
#[inline]
pub fn uvarint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// A bounds-checked reader over a byte slice; `what` names the section for errors.
#[derive(Clone)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8], what: &'static str) -> Self {
        Cursor { buf, pos: 0, what }
    }

    /// A corruption error naming this cursor's section.
    pub fn err(&self, detail: &str) -> StorageError {
        StorageError::corrupt(
            format!("block {}", self.what),
            format!("{detail} at offset {}", self.pos),
        )
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Length of the whole buffer.
    pub fn buf_len(&self) -> usize {
        self.buf.len()
    }

    /// The whole buffer (offsets such as [`Cursor::pos`] index it).
    pub fn buf(&self) -> &'a [u8] {
        self.buf
    }

    /// Current offset.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// True when everything was consumed.
    pub fn is_empty(&self) -> bool {
        self.pos == self.buf.len()
    }

    /// Reads one byte.
    #[inline]
    pub fn u8(&mut self) -> Result<u8, StorageError> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| self.err("unexpected end"))?;
        self.pos += 1;
        Ok(b)
    }

    /// Reads an unsigned varint.
    #[inline]
    pub fn uvarint(&mut self) -> Result<u64, StorageError> {
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                return Err(self.err("varint overflow"));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(self.err("varint overflow"));
            }
        }
    }

    /// Reads a zigzag varint.
    #[inline]
    pub fn ivarint(&mut self) -> Result<i64, StorageError> {
        Ok(unzigzag(self.uvarint()?))
    }

    /// Reads an unsigned varint that must not exceed `max` (a count or length).
    #[inline]
    pub fn len(&mut self, max: usize) -> Result<usize, StorageError> {
        let v = self.uvarint()?;
        if v > max as u64 {
            return Err(self.err("length out of range"));
        }
        Ok(v as usize)
    }

    /// Reads `n` raw bytes.
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], StorageError> {
        if n > self.remaining() {
            return Err(self.err("unexpected end"));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Reads a length-prefixed byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8], StorageError> {
        let n = self.len(self.remaining())?;
        self.take(n)
    }

    /// Reads a little-endian u64.
    pub fn u64_le(&mut self) -> Result<u64, StorageError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        let vals = [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX];
        let mut buf = Vec::new();
        for &v in &vals {
            put_uvarint(&mut buf, v);
            assert_eq!(uvarint_len(v), {
                let mut b = Vec::new();
                put_uvarint(&mut b, v);
                b.len()
            });
        }
        for v in [i64::MIN, -1, 0, 1, i64::MAX] {
            put_ivarint(&mut buf, v);
        }
        let mut c = Cursor::new(&buf, "test");
        for &v in &vals {
            assert_eq!(c.uvarint().unwrap(), v);
        }
        for v in [i64::MIN, -1, 0, 1, i64::MAX] {
            assert_eq!(c.ivarint().unwrap(), v);
        }
        assert!(c.is_empty());
        assert!(c.u8().is_err());
    }

    #[test]
    fn overlong_varint_is_an_error() {
        let buf = [0xffu8; 11];
        assert!(Cursor::new(&buf, "test").uvarint().is_err());
    }
}
