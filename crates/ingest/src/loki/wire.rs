//! Decode-side twins of the push messages in [`super::proto`]: same field
//! numbers, but lines and structured metadata as bytes, so that invalid UTF-8
//! can be repaired instead of failing the whole request, and the stream hash
//! left out (prost skips it as an unknown field).

use super::proto::Timestamp;

/// `logproto.PushRequest`.
#[derive(prost::Message)]
pub(crate) struct WirePush {
    #[prost(message, repeated, tag = "1")]
    pub streams: Vec<WireStream>,
}

/// `logproto.StreamAdapter`.
#[derive(prost::Message)]
pub(crate) struct WireStream {
    #[prost(string, tag = "1")]
    pub labels: String,
    #[prost(message, repeated, tag = "2")]
    pub entries: Vec<WireEntry>,
}

/// `logproto.EntryAdapter`.
#[derive(prost::Message)]
pub(crate) struct WireEntry {
    #[prost(message, optional, tag = "1")]
    pub timestamp: Option<Timestamp>,
    #[prost(bytes = "vec", tag = "2")]
    pub line: Vec<u8>,
    #[prost(message, repeated, tag = "3")]
    pub structured_metadata: Vec<WirePair>,
}

/// `logproto.LabelPairAdapter`.
#[derive(prost::Message)]
pub(crate) struct WirePair {
    #[prost(bytes = "vec", tag = "1")]
    pub name: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}
