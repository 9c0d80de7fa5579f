//! The block header: the uncompressed prefix of a block that describes its
//! frames and columns and carries the token bloom filter. See `FORMAT.md`.

use super::encoding::Encoding;
use super::varint::{put_bytes, put_ivarint, put_uvarint, Cursor};
use crate::StorageError;

/// Current block format version.
pub const VERSION: u8 = 1;

/// Column payloads at least this big get their own compressed frame, so a
/// reader can decompress them alone; smaller ones share frame 0.
pub const OWN_FRAME_MIN: usize = 8 * 1024;

/// Largest decompressed frame accepted by the reader (a bound on allocation
/// when reading hostile input).
pub const MAX_FRAME_RAW: usize = 512 << 20;

/// Frame codec: stored as is.
pub const CODEC_NONE: u8 = 0;
/// Frame codec: one zstd frame.
pub const CODEC_ZSTD: u8 = 1;

/// What a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    /// Values of one JSON field (named by the templates).
    Field = 0,
    /// Whole lines that were not decomposed.
    Line = 1,
}

/// A column as the header describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnHead {
    /// What the column holds.
    pub kind: ColumnKind,
    /// How its values are stored.
    pub encoding: Encoding,
    /// PrefixedDecimal: the common prefix (lets token pruning judge the
    /// column without a bloom entry per value); empty otherwise.
    pub prefix: Vec<u8>,
}

/// A compressed frame of the block body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// [`CODEC_NONE`] or [`CODEC_ZSTD`].
    pub codec: u8,
    /// Bytes in the block.
    pub stored_len: usize,
    /// Bytes once decompressed.
    pub raw_len: usize,
}

/// The decoded header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// Number of rows.
    pub rows: usize,
    /// Smallest row timestamp.
    pub min_ts: i64,
    /// Largest row timestamp.
    pub max_ts: i64,
    /// Sum of line lengths.
    pub line_bytes: u64,
    /// Body frames in order.
    pub frames: Vec<FrameInfo>,
    /// Kind, encoding (and prefix) of each column.
    pub columns: Vec<ColumnHead>,
    /// Bloom filter words, little-endian.
    pub bloom: Vec<u8>,
}

impl BlockHeader {
    /// Appends version, header and header checksum to `dst`.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        let mut h = Vec::with_capacity(32 + self.bloom.len() + self.columns.len());
        put_uvarint(&mut h, self.rows as u64);
        put_ivarint(&mut h, self.min_ts);
        put_uvarint(&mut h, self.max_ts.wrapping_sub(self.min_ts) as u64);
        put_uvarint(&mut h, self.line_bytes);
        put_uvarint(&mut h, self.frames.len() as u64);
        for f in &self.frames {
            h.push(f.codec);
            put_uvarint(&mut h, f.stored_len as u64);
            put_uvarint(&mut h, f.raw_len as u64);
        }
        put_uvarint(&mut h, self.columns.len() as u64);
        for c in &self.columns {
            h.push((c.kind as u8) << 4 | c.encoding as u8);
            if c.encoding == Encoding::PrefixedDecimal {
                put_bytes(&mut h, &c.prefix);
            }
        }
        put_uvarint(&mut h, (self.bloom.len() / 8) as u64);
        h.extend_from_slice(&self.bloom);
        let start = dst.len();
        dst.push(VERSION);
        put_uvarint(dst, h.len() as u64);
        dst.extend_from_slice(&h);
        let crc = crc32fast::hash(&dst[start..]);
        dst.extend_from_slice(&crc.to_le_bytes());
    }

    /// Parses and checks the header at the start of `src`; returns it with the
    /// offset where the body starts.
    pub fn decode(src: &[u8]) -> Result<(BlockHeader, usize), StorageError> {
        let mut c = Cursor::new(src, "header");
        let version = c.u8()?;
        if version != VERSION {
            return Err(StorageError::corrupt(
                "block header",
                format!("unsupported version {version}"),
            ));
        }
        let len = c.len(c.remaining())?;
        let body_start = c.pos() + len;
        if src.len() < body_start + 4 {
            return Err(c.err("header truncated"));
        }
        let want = u32::from_le_bytes([
            src[body_start],
            src[body_start + 1],
            src[body_start + 2],
            src[body_start + 3],
        ]);
        if crc32fast::hash(&src[..body_start]) != want {
            return Err(StorageError::corrupt("block header", "checksum mismatch"));
        }
        let mut c = Cursor::new(&src[c.pos()..body_start], "header");
        let rows = c.len(u32::MAX as usize)?;
        let min_ts = c.ivarint()?;
        let max_ts = min_ts.wrapping_add(c.uvarint()? as i64);
        let line_bytes = c.uvarint()?;
        let nf = c.len(c.remaining())?;
        let mut frames = Vec::with_capacity(nf);
        for _ in 0..nf {
            let codec = c.u8()?;
            if codec > CODEC_ZSTD {
                return Err(c.err("unknown frame codec"));
            }
            let stored_len = c.len(src.len())?;
            let raw_len = c.len(MAX_FRAME_RAW)?;
            frames.push(FrameInfo {
                codec,
                stored_len,
                raw_len,
            });
        }
        let nc = c.len(c.remaining())?;
        let mut columns = Vec::with_capacity(nc);
        for _ in 0..nc {
            let b = c.u8()?;
            let kind = match b >> 4 {
                0 => ColumnKind::Field,
                1 => ColumnKind::Line,
                _ => return Err(c.err("unknown column kind")),
            };
            let encoding =
                Encoding::from_u8(b & 15).ok_or_else(|| c.err("unknown column encoding"))?;
            let prefix = match encoding {
                Encoding::PrefixedDecimal => c.bytes()?.to_vec(),
                _ => Vec::new(),
            };
            columns.push(ColumnHead {
                kind,
                encoding,
                prefix,
            });
        }
        let words = c.len(c.remaining() / 8)?;
        let bloom = c.take(words * 8)?.to_vec();
        if !c.is_empty() {
            return Err(c.err("trailing bytes in header"));
        }
        Ok((
            BlockHeader {
                rows,
                min_ts,
                max_ts,
                line_bytes,
                frames,
                columns,
                bloom,
            },
            body_start + 4,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_checksum() {
        let h = BlockHeader {
            rows: 3,
            min_ts: -5,
            max_ts: i64::MAX,
            line_bytes: 99,
            frames: vec![FrameInfo {
                codec: CODEC_ZSTD,
                stored_len: 10,
                raw_len: 20,
            }],
            columns: vec![
                ColumnHead {
                    kind: ColumnKind::Field,
                    encoding: Encoding::Hex,
                    prefix: Vec::new(),
                },
                ColumnHead {
                    kind: ColumnKind::Field,
                    encoding: Encoding::PrefixedDecimal,
                    prefix: b"user_".to_vec(),
                },
                ColumnHead {
                    kind: ColumnKind::Line,
                    encoding: Encoding::Plain,
                    prefix: Vec::new(),
                },
            ],
            bloom: vec![1, 2, 3, 4, 5, 6, 7, 8],
        };
        let mut buf = Vec::new();
        h.encode(&mut buf);
        buf.extend_from_slice(&[0; 10]);
        let (d, at) = BlockHeader::decode(&buf).unwrap();
        assert_eq!(d, h);
        assert_eq!(at, buf.len() - 10);
        buf[3] ^= 1;
        assert!(BlockHeader::decode(&buf).is_err());
    }
}
