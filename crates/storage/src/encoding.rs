//! Little-endian binary helpers shared by the WAL, part and stream-index codecs:
//! a growable writer and a bounds-checked reader that never panics.

use crate::StorageError;

/// Appends `v` as little-endian u32.
pub fn put_u32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as little-endian u64.
pub fn put_u64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as little-endian i64.
pub fn put_i64(dst: &mut Vec<u8>, v: i64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends an unsigned LEB128 varint.
pub fn put_uvarint(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Appends a varint length followed by the bytes.
pub fn put_bytes(dst: &mut Vec<u8>, b: &[u8]) {
    put_uvarint(dst, b.len() as u64);
    dst.extend_from_slice(b);
}

/// Appends a list of string pairs (labels or structured metadata).
pub fn put_pairs(dst: &mut Vec<u8>, pairs: &[(String, String)]) {
    put_uvarint(dst, pairs.len() as u64);
    for (k, v) in pairs {
        put_bytes(dst, k.as_bytes());
        put_bytes(dst, v.as_bytes());
    }
}

/// A cursor over untrusted bytes; every read checks bounds.
pub struct Reader<'a> {
    buf: &'a [u8],
    what: &'a str,
}

impl<'a> Reader<'a> {
    /// Reads `buf`; errors name `what`.
    pub fn new(buf: &'a [u8], what: &'a str) -> Self {
        Reader { buf, what }
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    fn err(&self, detail: &str) -> StorageError {
        StorageError::corrupt(self.what, detail)
    }

    /// Takes the next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], StorageError> {
        if self.buf.len() < n {
            return Err(self.err("unexpected end of data"));
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Ok(a)
    }

    /// Reads a little-endian u32.
    pub fn u32(&mut self) -> Result<u32, StorageError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    /// Reads a little-endian u64.
    pub fn u64(&mut self) -> Result<u64, StorageError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// Reads a little-endian i64.
    pub fn i64(&mut self) -> Result<i64, StorageError> {
        Ok(i64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// Reads an unsigned LEB128 varint.
    pub fn uvarint(&mut self) -> Result<u64, StorageError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.take(1)?.first().expect("1 byte");
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(self.err("varint too long"))
    }

    /// Reads a count that must not exceed what the remaining bytes could hold
    /// (each counted item needs at least `min_item_bytes`).
    pub fn count(&mut self, min_item_bytes: usize) -> Result<usize, StorageError> {
        let n = self.uvarint()?;
        if n.saturating_mul(min_item_bytes.max(1) as u64) > self.buf.len() as u64 {
            return Err(self.err("count exceeds data"));
        }
        Ok(n as usize)
    }

    /// Reads a length-prefixed byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8], StorageError> {
        let n = self.count(1)?;
        self.take(n)
    }

    /// Reads a length-prefixed UTF-8 string.
    pub fn string(&mut self) -> Result<String, StorageError> {
        let b = self.bytes()?;
        std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|_| self.err("invalid utf-8"))
    }

    /// Reads a list of string pairs written by [`put_pairs`].
    pub fn pairs(&mut self) -> Result<Vec<(String, String)>, StorageError> {
        let n = self.count(2)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let k = self.string()?;
            let v = self.string()?;
            out.push((k, v));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut b = Vec::new();
        put_u32(&mut b, 7);
        put_uvarint(&mut b, 300);
        put_i64(&mut b, -5);
        put_pairs(&mut b, &[("a".into(), "é".into())]);
        let mut r = Reader::new(&b, "t");
        assert_eq!(r.u32().unwrap(), 7);
        assert_eq!(r.uvarint().unwrap(), 300);
        assert_eq!(r.i64().unwrap(), -5);
        assert_eq!(r.pairs().unwrap(), vec![("a".to_string(), "é".to_string())]);
        assert_eq!(r.remaining(), 0);
        for cut in 0..b.len() {
            let mut r = Reader::new(&b[..cut], "t");
            let ok = r
                .u32()
                .and_then(|_| r.uvarint())
                .and_then(|_| r.i64())
                .and_then(|_| r.pairs());
            assert!(ok.is_err());
        }
    }

    proptest::proptest! {
        #[test]
        fn reader_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let mut r = Reader::new(&bytes, "fuzz");
            let _ = r.pairs();
            let _ = r.uvarint();
            let _ = r.string();
        }
    }
}
