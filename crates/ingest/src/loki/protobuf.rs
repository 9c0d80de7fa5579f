//! Loki push in protobuf: snappy block -> `logproto.PushRequest` -> checked
//! streams, decoded by hand straight into the model types (no intermediate
//! messages): each line is copied once, from the decompressed buffer into its
//! `String`; label strings are borrowed from the buffer for the per-request
//! label cache. Field numbers as in [`super::proto`]; unknown fields are
//! skipped, as protobuf requires.

use crate::body::snappy_block_into;
use crate::level::StreamLevel;
use crate::validate::{check_entry, LabelCache};
use crate::{PushError, PushLimits};
use runakefli_model::{Entry, PushRequest, PushStream};
use std::cell::RefCell;

/// Decompressed bodies up to this size keep their buffer for the next request
/// on the thread (a Promtail batch is about 1 MiB; blocking pools have few busy threads).
const KEEP_SCRATCH_BYTES: usize = 16 << 20;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Decodes a snappy-compressed `logproto.PushRequest`.
pub(crate) fn decode(body: &[u8], limits: &PushLimits) -> Result<PushRequest, PushError> {
    SCRATCH.with(|cell| {
        let mut scratch = cell.borrow_mut();
        let n = snappy_block_into(body, limits.max_body_bytes, &mut scratch)?;
        let result = decode_raw(&scratch[..n], limits);
        if scratch.len() > KEEP_SCRATCH_BYTES {
            *scratch = Vec::new();
        }
        result
    })
}

/// Decodes an uncompressed `logproto.PushRequest`.
pub(crate) fn decode_raw(buf: &[u8], limits: &PushLimits) -> Result<PushRequest, PushError> {
    LABELS.with(|cache| decode_raw_with(buf, limits, &mut cache.borrow_mut()))
}

thread_local! {
    /// This thread's parsed label strings, kept from request to request.
    static LABELS: std::cell::RefCell<LabelCache> = std::cell::RefCell::new(LabelCache::new());
}

/// [`decode_raw`] with the label strings parsed through `cache`.
fn decode_raw_with(
    buf: &[u8],
    limits: &PushLimits,
    cache: &mut LabelCache,
) -> Result<PushRequest, PushError> {
    let mut r = Reader { buf, pos: 0 };
    let mut out = PushRequest::default();
    while let Some((field, wt)) = r.key()? {
        if field == 1 {
            expect(wt, LEN)?;
            let (labels_text, mut entries) = decode_stream(r.bytes()?)?;
            let labels = cache.get(labels_text, limits)?;
            if limits.discover_log_levels {
                let level = StreamLevel::of(&labels);
                for e in &mut entries {
                    level.apply(&mut e.metadata, &e.line);
                }
            }
            for e in &entries {
                check_entry(&labels, e.line.len(), &e.metadata, limits)?;
            }
            if !entries.is_empty() {
                out.streams.push(PushStream { labels, entries });
            }
        } else {
            r.skip(wt)?;
        }
    }
    Ok(out)
}

fn decode_stream(buf: &[u8]) -> Result<(&str, Vec<Entry>), PushError> {
    let mut r = Reader { buf, pos: 0 };
    let mut labels = "";
    let mut entries = Vec::new();
    while let Some((field, wt)) = r.key()? {
        match field {
            1 => {
                expect(wt, LEN)?;
                labels = std::str::from_utf8(r.bytes()?).map_err(|_| {
                    PushError::InvalidLabels("label string is not valid UTF-8".into())
                })?;
            }
            2 => {
                expect(wt, LEN)?;
                entries.push(decode_entry(r.bytes()?)?);
            }
            _ => r.skip(wt)?,
        }
    }
    Ok((labels, entries))
}

fn decode_entry(buf: &[u8]) -> Result<Entry, PushError> {
    let mut r = Reader { buf, pos: 0 };
    let (mut seconds, mut nanos) = (0i64, 0i32);
    let mut line = String::new();
    let mut metadata = Vec::new();
    while let Some((field, wt)) = r.key()? {
        match field {
            1 => {
                expect(wt, LEN)?;
                let mut t = Reader {
                    buf: r.bytes()?,
                    pos: 0,
                };
                while let Some((f, wt)) = t.key()? {
                    match f {
                        1 => {
                            expect(wt, VARINT)?;
                            seconds = t.varint()? as i64;
                        }
                        2 => {
                            expect(wt, VARINT)?;
                            nanos = t.varint()? as i64 as i32;
                        }
                        _ => t.skip(wt)?,
                    }
                }
            }
            2 => {
                expect(wt, LEN)?;
                line = utf8_lossy(r.bytes()?);
            }
            3 => {
                expect(wt, LEN)?;
                let mut p = Reader {
                    buf: r.bytes()?,
                    pos: 0,
                };
                let (mut name, mut value) = (String::new(), String::new());
                while let Some((f, wt)) = p.key()? {
                    match f {
                        1 => {
                            expect(wt, LEN)?;
                            name = utf8_lossy(p.bytes()?);
                        }
                        2 => {
                            expect(wt, LEN)?;
                            value = utf8_lossy(p.bytes()?);
                        }
                        _ => p.skip(wt)?,
                    }
                }
                metadata.push((name, value));
            }
            _ => r.skip(wt)?,
        }
    }
    let ts = seconds
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(i64::from(nanos)))
        .ok_or_else(|| {
            PushError::InvalidTimestamp(format!("timestamp out of range: {seconds}s {nanos}ns"))
        })?;
    Ok(Entry { ts, line, metadata })
}

/// Copies valid UTF-8 as is; replaces invalid sequences with U+FFFD.
fn utf8_lossy(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

const VARINT: u8 = 0;
const LEN: u8 = 2;

fn expect(got: u8, want: u8) -> Result<(), PushError> {
    if got == want {
        Ok(())
    } else {
        Err(corrupt(&format!(
            "invalid wire type {got} (expected {want})"
        )))
    }
}

fn corrupt(what: &str) -> PushError {
    PushError::Protobuf(format!("proto: failed to decode push request: {what}"))
}

/// A cursor over protobuf wire data.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// The next field number and wire type, or `None` at the end.
    fn key(&mut self) -> Result<Option<(u32, u8)>, PushError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let k = self.varint()?;
        let field = k >> 3;
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            return Err(corrupt("invalid field number"));
        }
        Ok(Some((field as u32, (k & 7) as u8)))
    }

    fn varint(&mut self) -> Result<u64, PushError> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or_else(|| corrupt("truncated varint"))?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(corrupt("varint too long"))
    }

    fn bytes(&mut self) -> Result<&'a [u8], PushError> {
        let len = self.varint()?;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| self.pos.checked_add(l))
            .filter(|e| *e <= self.buf.len())
            .ok_or_else(|| corrupt("length past the end of the message"))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn skip(&mut self, wt: u8) -> Result<(), PushError> {
        let n = match wt {
            0 => return self.varint().map(|_| ()),
            1 => 8,
            2 => return self.bytes().map(|_| ()),
            5 => 4,
            _ => return Err(corrupt(&format!("unsupported wire type {wt}"))),
        };
        if self.buf.len() - self.pos < n {
            return Err(corrupt("truncated fixed-width field"));
        }
        self.pos += n;
        Ok(())
    }
}
