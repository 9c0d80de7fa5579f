//! Per-stream blocks: the unit of encoding and reading inside a part.
//!
//! A block holds up to a few thousand rows of ONE stream, sorted by time: a
//! timestamp column, structured metadata, and the lines decomposed into columns.
//!
//! STUB: this first version stores rows naively (length-prefixed, zstd). The
//! columnar encoding replaces it behind the same API.

use crate::StorageError;

/// Summary of an encoded block, kept in the part index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockMeta {
    /// Number of rows.
    pub rows: u32,
    /// Smallest timestamp in the block.
    pub min_ts: i64,
    /// Largest timestamp in the block.
    pub max_ts: i64,
    /// Sum of line lengths (uncompressed), for stats and volume.
    pub line_bytes: u64,
}

/// Rows of a decoded block, in the order they were pushed into the builder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecodedBlock {
    /// Timestamps, nanoseconds.
    pub ts: Vec<i64>,
    /// Lines, byte-identical to what was pushed.
    pub lines: Vec<String>,
    /// Structured metadata per row.
    pub metadata: Vec<Vec<(String, String)>>,
}

/// Accumulates rows of one stream and encodes them into a block.
#[derive(Default)]
pub struct BlockBuilder {
    rows: DecodedBlock,
    raw: usize,
}

impl BlockBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a row. Callers push rows already sorted by (ts, push order).
    pub fn push(&mut self, ts: i64, line: &str, metadata: &[(String, String)]) {
        self.raw += line.len() + 8 + metadata.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
        self.rows.ts.push(ts);
        self.rows.lines.push(line.to_string());
        self.rows.metadata.push(metadata.to_vec());
    }

    /// Rows pushed since the last `finish`.
    pub fn len(&self) -> usize {
        self.rows.ts.len()
    }

    /// True when no rows are pending.
    pub fn is_empty(&self) -> bool {
        self.rows.ts.is_empty()
    }

    /// Approximate uncompressed size of the pending rows, in bytes.
    pub fn raw_bytes(&self) -> usize {
        self.raw
    }

    /// Encodes the pending rows into `dst` (appending) with zstd `level`, and resets the builder.
    pub fn finish(&mut self, level: i32, dst: &mut Vec<u8>) -> BlockMeta {
        let rows = std::mem::take(&mut self.rows);
        self.raw = 0;
        let mut plain = Vec::new();
        put_u32(&mut plain, rows.ts.len() as u32);
        for i in 0..rows.ts.len() {
            plain.extend_from_slice(&rows.ts[i].to_le_bytes());
            put_bytes(&mut plain, rows.lines[i].as_bytes());
            put_u32(&mut plain, rows.metadata[i].len() as u32);
            for (k, v) in &rows.metadata[i] {
                put_bytes(&mut plain, k.as_bytes());
                put_bytes(&mut plain, v.as_bytes());
            }
        }
        let compressed = zstd::bulk::compress(&plain, level).expect("zstd compress to memory");
        put_u32(dst, plain.len() as u32);
        dst.extend_from_slice(&compressed);
        BlockMeta {
            rows: rows.ts.len() as u32,
            min_ts: rows.ts.iter().copied().min().unwrap_or(0),
            max_ts: rows.ts.iter().copied().max().unwrap_or(0),
            line_bytes: rows.lines.iter().map(|l| l.len() as u64).sum(),
        }
    }
}

/// Decodes a whole block.
pub fn decode_block(src: &[u8]) -> Result<DecodedBlock, StorageError> {
    let bad = |d: &str| StorageError::corrupt("block", d);
    if src.len() < 4 {
        return Err(bad("short block"));
    }
    let plain_len = u32::from_le_bytes(src[..4].try_into().unwrap()) as usize;
    let plain = zstd::bulk::decompress(&src[4..], plain_len).map_err(|e| bad(&e.to_string()))?;
    let mut r = &plain[..];
    let n = get_u32(&mut r).ok_or_else(|| bad("row count"))?;
    let mut out = DecodedBlock::default();
    for _ in 0..n {
        if r.len() < 8 {
            return Err(bad("timestamp"));
        }
        out.ts.push(i64::from_le_bytes(r[..8].try_into().unwrap()));
        r = &r[8..];
        out.lines.push(get_string(&mut r).ok_or_else(|| bad("line"))?);
        let m = get_u32(&mut r).ok_or_else(|| bad("metadata count"))?;
        let mut md = Vec::with_capacity(m as usize);
        for _ in 0..m {
            let k = get_string(&mut r).ok_or_else(|| bad("metadata"))?;
            let v = get_string(&mut r).ok_or_else(|| bad("metadata"))?;
            md.push((k, v));
        }
        out.metadata.push(md);
    }
    Ok(out)
}

/// Whether the block may hold a line containing every one of `substrings`.
/// `false` only when the block's indexes prove no line can match.
pub fn block_may_contain(_src: &[u8], _substrings: &[String]) -> bool {
    true
}

fn put_u32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(dst: &mut Vec<u8>, b: &[u8]) {
    put_u32(dst, b.len() as u32);
    dst.extend_from_slice(b);
}

fn get_u32(r: &mut &[u8]) -> Option<u32> {
    if r.len() < 4 {
        return None;
    }
    let v = u32::from_le_bytes(r[..4].try_into().unwrap());
    *r = &r[4..];
    Some(v)
}

fn get_string(r: &mut &[u8]) -> Option<String> {
    let n = get_u32(r)? as usize;
    if r.len() < n {
        return None;
    }
    let s = String::from_utf8(r[..n].to_vec()).ok()?;
    *r = &r[n..];
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut b = BlockBuilder::new();
        b.push(1, "{\"a\":1}", &[]);
        b.push(2, "plain", &[("k".into(), "v".into())]);
        let mut buf = Vec::new();
        let meta = b.finish(3, &mut buf);
        assert_eq!(meta.rows, 2);
        let d = decode_block(&buf).unwrap();
        assert_eq!(d.lines, vec!["{\"a\":1}", "plain"]);
        assert_eq!(d.metadata[1], vec![("k".to_string(), "v".to_string())]);
    }
}
