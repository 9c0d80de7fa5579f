//! Loki push in protobuf: snappy block -> `logproto.PushRequest` -> checked streams.

use super::wire::{WireEntry, WirePush};
use crate::body::snappy_block;
use crate::validate::{check_entry, LabelCache};
use crate::{PushError, PushLimits};
use prost::Message;
use runakefli_model::{Entry, PushRequest, PushStream};

/// Decodes a snappy-compressed `logproto.PushRequest`.
pub(crate) fn decode(body: &[u8], limits: &PushLimits) -> Result<PushRequest, PushError> {
    let raw = snappy_block(body, limits.max_body_bytes)?;
    let wire =
        WirePush::decode(raw.as_slice()).map_err(|e| PushError::Protobuf(format!("proto: {e}")))?;
    drop(raw);
    let mut cache = LabelCache::new();
    let mut out = PushRequest {
        streams: Vec::with_capacity(wire.streams.len()),
    };
    for s in wire.streams {
        let labels = cache.get(&s.labels, limits)?;
        if s.entries.is_empty() {
            continue;
        }
        let mut entries = Vec::with_capacity(s.entries.len());
        for e in s.entries {
            let entry = convert(e)?;
            check_entry(&labels, entry.line.len(), &entry.metadata, limits)?;
            entries.push(entry);
        }
        out.streams.push(PushStream { labels, entries });
    }
    Ok(out)
}

fn convert(e: WireEntry) -> Result<Entry, PushError> {
    let ts = match e.timestamp {
        None => 0,
        Some(t) => t
            .seconds
            .checked_mul(1_000_000_000)
            .and_then(|ns| ns.checked_add(i64::from(t.nanos)))
            .ok_or_else(|| {
                PushError::InvalidTimestamp(format!(
                    "timestamp out of range: {}s {}ns",
                    t.seconds, t.nanos
                ))
            })?,
    };
    let metadata = e
        .structured_metadata
        .into_iter()
        .map(|p| (utf8_lossy(p.name), utf8_lossy(p.value)))
        .collect();
    Ok(Entry {
        ts,
        line: utf8_lossy(e.line),
        metadata,
    })
}

/// Takes valid UTF-8 without copying; replaces invalid sequences with U+FFFD.
fn utf8_lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
