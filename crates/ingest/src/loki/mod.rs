//! Loki's push API: `POST /loki/api/v1/push`.
//!
//! [`decode_push`] follows Loki's request handling:
//! - `Content-Encoding`: none, `snappy` (a no-op restating the protobuf
//!   framing), `gzip` or `deflate`; anything else is a 400
//!   `Content-Encoding "br" not supported`.
//! - `Content-Type`: `application/json` selects JSON; every other media type
//!   selects protobuf in a snappy block (so `gzip` + protobuf means gzip around
//!   snappy around protobuf, as in Loki). A missing header is a 400
//!   (`mime: no media type`), as Go's media-type parser makes it in Loki.
//! - The body after decompression must fit `max_body_bytes` (413 otherwise).
//! - Labels are parsed once per distinct label string per request, then
//!   checked (missing, too many, too long, duplicate names); lines and
//!   structured metadata are checked against the limits.
//! - Loki's ingestion extras are off unless asked for:
//!   [`PushLimits::discover_service_name`] adds `service_name`
//!   ([`crate::discover`]), [`PushLimits::discover_log_levels`] adds
//!   `detected_level` metadata ([`crate::level`]).
//!
//! Differences from Loki, by design:
//! - Loki stores the valid entries of a push and answers 400 for the others;
//!   here any invalid entry rejects the whole request with that 400, so a
//!   rejected request stores nothing.
//! - Loki keeps invalid UTF-8 in protobuf lines as raw bytes; lines (and
//!   structured metadata) here are `String`s, so invalid sequences are replaced
//!   with U+FFFD. Invalid UTF-8 in a label string is a 400.
//! - An entry without a protobuf timestamp gets time 0 (the Unix epoch), which
//!   is what Loki's non-nullable timestamp decodes to; age limits, which need
//!   the clock, are the server's to enforce.

mod json;
pub mod proto;
mod protobuf;

use crate::body::{decompress, media_type, Encoding};
use crate::{PushError, PushLimits};
use runakefli_model::PushRequest;

/// Decodes and validates one Loki push body.
///
/// `content_type` and `content_encoding` are the request's header values.
/// Streams come back in request order, one per input stream that has entries
/// (the same label set may appear more than once), with entries in push order.
pub fn decode_push(
    body: &[u8],
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    limits: &PushLimits,
) -> Result<PushRequest, PushError> {
    let encoding = Encoding::parse(content_encoding)?;
    let media = media_type(content_type)?;
    let raw = decompress(body, encoding, limits.max_body_bytes)?;
    if media == "application/json" {
        json::decode(&raw, limits)
    } else {
        protobuf::decode(&raw, limits)
    }
}

/// Decodes a Loki push already known to be protobuf in a snappy block.
pub fn decode_protobuf(body: &[u8], limits: &PushLimits) -> Result<PushRequest, PushError> {
    protobuf::decode(body, limits)
}

/// Decodes a Loki push already known to be (uncompressed) JSON.
pub fn decode_json(body: &[u8], limits: &PushLimits) -> Result<PushRequest, PushError> {
    json::decode(body, limits)
}

#[cfg(test)]
pub(crate) mod tests;
