//! Loki's push protobuf messages (`logproto.PushRequest`), declared with prost.
//! Field numbers follow Loki's public wire format.

/// `logproto.PushRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PushRequest {
    /// The streams.
    #[prost(message, repeated, tag = "1")]
    pub streams: Vec<StreamAdapter>,
}

/// `logproto.StreamAdapter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StreamAdapter {
    /// Label set in Loki's string form, e.g. `{app="api"}`.
    #[prost(string, tag = "1")]
    pub labels: String,
    /// Entries.
    #[prost(message, repeated, tag = "2")]
    pub entries: Vec<EntryAdapter>,
    /// Hash of the labels (ignored on receipt).
    #[prost(uint64, tag = "3")]
    pub hash: u64,
}

/// `logproto.EntryAdapter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EntryAdapter {
    /// Entry time.
    #[prost(message, optional, tag = "1")]
    pub timestamp: Option<Timestamp>,
    /// The line.
    #[prost(string, tag = "2")]
    pub line: String,
    /// Structured metadata.
    #[prost(message, repeated, tag = "3")]
    pub structured_metadata: Vec<LabelPairAdapter>,
}

/// `logproto.LabelPairAdapter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelPairAdapter {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `google.protobuf.Timestamp`.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Timestamp {
    /// Seconds since the epoch.
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    /// Nanoseconds within the second.
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}
