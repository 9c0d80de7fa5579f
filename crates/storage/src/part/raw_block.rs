//! Row-wise blocks for freshly flushed parts: the rows length-prefixed and
//! zstd-compressed at a fast level. Flushed parts are short-lived (merges
//! rewrite them into columnar blocks), so paying the columnar encoder twice per
//! row would double the ingest CPU for little gain.
//!
//! Layout: `raw_len u32 LE | zstd(n_rows uvarint | (ts i64 LE | line | metadata pairs)*)`
//! with varint-prefixed strings.

use crate::block::{BlockMeta, DecodedBlock};
use crate::encoding::{put_bytes, put_i64, put_pairs, put_u32, put_uvarint, Reader};
use crate::StorageError;

/// Largest decompressed raw block accepted (guards hostile length fields).
const RAW_BLOCK_MAX: usize = 256 << 20;

thread_local! {
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Accumulates rows of one stream into a raw block.
#[derive(Default)]
pub struct RawBlockBuilder {
    buf: Vec<u8>,
    rows: u32,
    min_ts: i64,
    max_ts: i64,
    line_bytes: u64,
    plain: Vec<u8>,
    compressor: Option<(i32, zstd::bulk::Compressor<'static>)>,
}

impl RawBlockBuilder {
    /// Appends a row (rows come sorted by time).
    pub fn push(&mut self, ts: i64, line: &str, metadata: &[(String, String)]) {
        if self.rows == 0 {
            self.min_ts = ts;
            self.max_ts = ts;
        }
        self.min_ts = self.min_ts.min(ts);
        self.max_ts = self.max_ts.max(ts);
        self.rows += 1;
        self.line_bytes += line.len() as u64;
        put_i64(&mut self.buf, ts);
        put_bytes(&mut self.buf, line.as_bytes());
        put_pairs(&mut self.buf, metadata);
    }

    /// Rows pending.
    pub fn len(&self) -> usize {
        self.rows as usize
    }

    /// True when no rows are pending.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Uncompressed bytes pending.
    pub fn raw_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Compresses the pending rows into `dst` and resets the builder.
    pub fn finish(&mut self, level: i32, dst: &mut Vec<u8>) -> Result<BlockMeta, StorageError> {
        let err = |e| StorageError::io("raw block compression", e);
        self.plain.clear();
        put_uvarint(&mut self.plain, self.rows as u64);
        self.plain.extend_from_slice(&self.buf);
        if self.compressor.as_ref().map(|(l, _)| *l) != Some(level) {
            self.compressor = Some((level, zstd::bulk::Compressor::new(level).map_err(err)?));
        }
        let (_, comp) = self.compressor.as_mut().expect("compressor set above");
        let compressed = comp.compress(&self.plain).map_err(err)?;
        put_u32(dst, self.plain.len() as u32);
        dst.extend_from_slice(&compressed);
        let meta = BlockMeta {
            rows: self.rows,
            min_ts: self.min_ts,
            max_ts: self.max_ts,
            line_bytes: self.line_bytes,
        };
        self.buf.clear();
        self.rows = 0;
        self.line_bytes = 0;
        Ok(meta)
    }
}

/// Decodes a raw block.
pub fn decode_raw_block(src: &[u8]) -> Result<DecodedBlock, StorageError> {
    let mut r = Reader::new(src, "raw block");
    let plain_len = r.u32()? as usize;
    if plain_len > RAW_BLOCK_MAX {
        return Err(StorageError::corrupt("raw block", "block too large"));
    }
    let frame = r.take(r.remaining())?;
    let plain = DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = Some(
                zstd::bulk::Decompressor::new()
                    .map_err(|e| StorageError::io("raw block decompression", e))?,
            );
        }
        d.as_mut()
            .expect("decompressor set above")
            .decompress(frame, plain_len)
            .map_err(|e| StorageError::corrupt("raw block", e.to_string()))
    })?;
    if plain.len() != plain_len {
        return Err(StorageError::corrupt("raw block", "length mismatch"));
    }
    let mut r = Reader::new(&plain, "raw block");
    let n = r.count(10)?;
    let mut out = DecodedBlock {
        ts: Vec::with_capacity(n),
        lines: Vec::with_capacity(n),
        metadata: Vec::with_capacity(n),
    };
    for _ in 0..n {
        out.ts.push(r.i64()?);
        out.lines.push(r.string()?);
        out.metadata.push(r.pairs()?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut b = RawBlockBuilder::default();
        b.push(3, "a", &[]);
        b.push(7, "bé", &[("k".into(), "v".into())]);
        let mut dst = vec![9];
        let meta = b.finish(1, &mut dst).unwrap();
        assert_eq!(
            (meta.rows, meta.min_ts, meta.max_ts, meta.line_bytes),
            (2, 3, 7, 4)
        );
        assert!(b.is_empty());
        let d = decode_raw_block(&dst[1..]).unwrap();
        assert_eq!(d.ts, vec![3, 7]);
        assert_eq!(d.lines, vec!["a", "bé"]);
        assert_eq!(d.metadata[1], vec![("k".to_string(), "v".to_string())]);
    }

    proptest::proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..100)) {
            let _ = decode_raw_block(&bytes);
        }
    }
}
