//! One WAL record: a tenant's push request, zstd-compressed, framed with a
//! length and a CRC-32 so a torn or damaged tail is detected on replay.
//!
//! Frame: `len u32 LE | crc32(payload) u32 LE | payload[len]`, where
//! payload = `kind u8 (1 = push) | raw_len u32 LE | zstd(raw)` and raw =
//! `tenant | n_streams | (labels pairs | n_entries | (ts i64 | line | metadata pairs)*)*`
//! with varint lengths (see docs/storage-format.md).

use crate::config::WAL_RECORD_MAX_BYTES;
use crate::encoding::{put_bytes, put_i64, put_pairs, put_u32, put_uvarint, Reader};
use crate::StorageError;
use runakefli_model::{Entry, Labels, PushRequest, PushStream, TenantId};
use std::cell::RefCell;

/// Bytes of the frame header (length and checksum).
pub const FRAME_HEADER: usize = 8;
const KIND_PUSH: u8 = 1;

thread_local! {
    static COMPRESSOR: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
}

fn compress(raw: &[u8], level: i32) -> Result<Vec<u8>, StorageError> {
    COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        if c.as_ref().map(|(l, _)| *l) != Some(level) {
            let comp = zstd::bulk::Compressor::new(level)
                .map_err(|e| StorageError::io("wal record compressor", e))?;
            *c = Some((level, comp));
        }
        let (_, comp) = c.as_mut().expect("compressor set above");
        comp.compress(raw)
            .map_err(|e| StorageError::io("wal record compression", e))
    })
}

/// First bytes of every zstd frame (its magic number, little-endian).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Encodes a framed record for `tenant`'s push, compressed at `level`.
///
/// Fails with [`StorageError::RecordTooLarge`] when the uncompressed body or
/// the frame would pass `max_bytes` (at most [`WAL_RECORD_MAX_BYTES`], the
/// most replay accepts): such a record is never written, so nothing
/// acknowledged can be refused on replay.
pub fn encode(
    tenant: &TenantId,
    req: &PushRequest,
    level: i32,
    max_bytes: usize,
) -> Result<Vec<u8>, StorageError> {
    let limit = max_bytes.min(WAL_RECORD_MAX_BYTES);
    // A cheap lower bound first, so a huge request is refused before it is
    // copied: every line and label byte is in the body.
    let at_least = req.line_bytes();
    if at_least > limit {
        return Err(StorageError::RecordTooLarge {
            bytes: at_least,
            limit,
        });
    }
    let mut raw = Vec::with_capacity(req.line_bytes() + 32 * req.entry_count() + 64);
    put_bytes(&mut raw, tenant.as_str().as_bytes());
    put_uvarint(&mut raw, req.streams.len() as u64);
    for s in &req.streams {
        put_pairs(&mut raw, s.labels.pairs());
        put_uvarint(&mut raw, s.entries.len() as u64);
        for e in &s.entries {
            put_i64(&mut raw, e.ts);
            put_bytes(&mut raw, e.line.as_bytes());
            put_pairs(&mut raw, &e.metadata);
        }
    }
    if raw.len() > limit {
        return Err(StorageError::RecordTooLarge {
            bytes: raw.len(),
            limit,
        });
    }
    let compressed = compress(&raw, level)?;
    if compressed.len() + 5 > limit {
        return Err(StorageError::RecordTooLarge {
            bytes: compressed.len() + 5,
            limit,
        });
    }
    let mut payload = Vec::with_capacity(compressed.len() + 5 + FRAME_HEADER);
    payload.extend_from_slice(&[0; FRAME_HEADER]);
    payload.push(KIND_PUSH);
    put_u32(&mut payload, raw.len() as u32);
    payload.extend_from_slice(&compressed);
    let len = (payload.len() - FRAME_HEADER) as u32;
    let crc = crc32fast::hash(&payload[FRAME_HEADER..]);
    payload[..4].copy_from_slice(&len.to_le_bytes());
    payload[4..8].copy_from_slice(&crc.to_le_bytes());
    Ok(payload)
}

/// Result of reading one frame at the start of a buffer.
pub enum Frame<'a> {
    /// A complete frame with a valid checksum: its payload and total length.
    Valid(&'a [u8], usize),
    /// The buffer ends inside the frame (what a write cut short leaves).
    Short(&'static str),
    /// Not a valid frame (bad length or checksum).
    Invalid(&'static str),
}

/// Reads the frame at the start of `buf`.
pub fn read_frame(buf: &[u8]) -> Frame<'_> {
    if buf.len() < FRAME_HEADER {
        return Frame::Short("truncated frame header");
    }
    let len = u32::from_le_bytes(buf[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(buf[4..8].try_into().expect("4 bytes"));
    if len == 0 || len > WAL_RECORD_MAX_BYTES {
        return Frame::Invalid("bad frame length");
    }
    let Some(payload) = buf.get(FRAME_HEADER..FRAME_HEADER + len) else {
        return Frame::Short("truncated frame");
    };
    if crc32fast::hash(payload) != crc {
        return Frame::Invalid("checksum mismatch");
    }
    Frame::Valid(payload, FRAME_HEADER + len)
}

/// Whether a push frame could start at `buf[0]`: the bytes where the kind and
/// the zstd magic of its payload sit have those values. A cheap filter before
/// [`read_frame`] when searching damaged data for the next record.
pub fn may_start_frame(buf: &[u8]) -> bool {
    buf.len() >= FRAME_HEADER + 9
        && buf[FRAME_HEADER] == KIND_PUSH
        && buf[FRAME_HEADER + 5..FRAME_HEADER + 9] == ZSTD_MAGIC
}

/// Decodes a checked payload into the tenant and its push request.
pub fn decode_payload(payload: &[u8]) -> Result<(TenantId, PushRequest), StorageError> {
    let mut r = Reader::new(payload, "wal record");
    let kind = r.take(1)?[0];
    if kind != KIND_PUSH {
        return Err(StorageError::corrupt(
            "wal record",
            format!("unknown record kind {kind}"),
        ));
    }
    let raw_len = r.u32()? as usize;
    if raw_len > WAL_RECORD_MAX_BYTES {
        return Err(StorageError::corrupt("wal record", "record too large"));
    }
    let raw = zstd::bulk::decompress(r.take(r.remaining())?, raw_len)
        .map_err(|e| StorageError::corrupt("wal record", e.to_string()))?;
    if raw.len() != raw_len {
        return Err(StorageError::corrupt("wal record", "length mismatch"));
    }
    let mut r = Reader::new(&raw, "wal record");
    let tenant = TenantId::new(r.string()?);
    let n = r.count(2)?;
    let mut streams = Vec::with_capacity(n);
    for _ in 0..n {
        let labels = Labels::new(r.pairs()?);
        let m = r.count(10)?;
        let mut entries = Vec::with_capacity(m);
        for _ in 0..m {
            let ts = r.i64()?;
            let line = r.string()?;
            let metadata = r.pairs()?;
            entries.push(Entry { ts, line, metadata });
        }
        streams.push(PushStream { labels, entries });
    }
    Ok((tenant, PushRequest { streams }))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> PushRequest {
        PushRequest {
            streams: vec![PushStream {
                labels: Labels::new(vec![("app".into(), "api".into())]),
                entries: vec![
                    Entry {
                        ts: 5,
                        line: "{\"msg\":\"hello\"}".into(),
                        metadata: vec![],
                    },
                    Entry {
                        ts: -3,
                        line: "x".into(),
                        metadata: vec![("trace".into(), "ab".into())],
                    },
                ],
            }],
        }
    }

    #[test]
    fn round_trip() {
        let t = TenantId::new("t1");
        let frame = encode(&t, &sample(), 1, WAL_RECORD_MAX_BYTES).unwrap();
        assert!(may_start_frame(&frame));
        let Frame::Valid(p, used) = read_frame(&frame) else {
            panic!("invalid")
        };
        assert_eq!(used, frame.len());
        let (t2, req) = decode_payload(p).unwrap();
        assert_eq!(t2, t);
        assert_eq!(req, sample());
    }

    #[test]
    fn damage_is_detected() {
        let frame = encode(&TenantId::new("t"), &sample(), 1, WAL_RECORD_MAX_BYTES).unwrap();
        for cut in 0..frame.len() {
            assert!(matches!(read_frame(&frame[..cut]), Frame::Short(_)));
        }
        for i in 0..frame.len() {
            let mut f = frame.clone();
            f[i] ^= 0x40;
            if let Frame::Valid(p, _) = read_frame(&f) {
                // Only a flipped length byte could still frame; the payload must then fail.
                assert!(decode_payload(p).is_err() || i < 4);
            }
        }
    }

    #[test]
    fn records_past_the_limit_are_refused_before_writing() {
        let t = TenantId::new("t");
        let req = sample();
        let frame = encode(&t, &req, 1, WAL_RECORD_MAX_BYTES).unwrap();
        // The larger of body and frame payload is what must fit: exactly
        // that passes, one byte less does not.
        let payload = frame.len() - FRAME_HEADER;
        let raw = u32::from_le_bytes(
            frame[FRAME_HEADER + 1..FRAME_HEADER + 5]
                .try_into()
                .unwrap(),
        );
        let need = payload.max(raw as usize);
        assert!(encode(&t, &req, 1, need).is_ok());
        let err = encode(&t, &req, 1, need - 1).unwrap_err();
        assert!(
            matches!(err, StorageError::RecordTooLarge { limit, .. } if limit == need - 1),
            "{err}"
        );
        // Lines alone over the limit: refused before encoding.
        let err = encode(&t, &req, 1, 3).unwrap_err();
        assert!(matches!(err, StorageError::RecordTooLarge { .. }), "{err}");
        // The configured limit never exceeds what replay accepts.
        assert!(encode(&t, &req, 1, usize::MAX).is_ok());
    }

    proptest::proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = decode_payload(&bytes);
            let _ = read_frame(&bytes);
        }
    }
}
