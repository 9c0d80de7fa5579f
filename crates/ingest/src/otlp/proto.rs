//! The OTLP logs protobuf messages (`opentelemetry.proto.collector.logs.v1`
//! and the `logs`, `common` and `resource` packages they use), declared with
//! prost. Field numbers follow the public opentelemetry-proto definitions.

/// `ExportLogsServiceRequest`: the body of `POST /v1/logs`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportLogsServiceRequest {
    /// Logs grouped by the resource that produced them.
    #[prost(message, repeated, tag = "1")]
    pub resource_logs: Vec<ResourceLogs>,
}

/// `ResourceLogs`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceLogs {
    /// The producing resource; absent means unknown.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// Logs grouped by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_logs: Vec<ScopeLogs>,
    /// Schema URL of the resource (unused here).
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `ScopeLogs`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeLogs {
    /// The instrumentation scope.
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// The records.
    #[prost(message, repeated, tag = "2")]
    pub log_records: Vec<LogRecord>,
    /// Schema URL of the scope (unused here).
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `LogRecord`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LogRecord {
    /// Event time, ns since the epoch (0 = unknown).
    #[prost(fixed64, tag = "1")]
    pub time_unix_nano: u64,
    /// Time the collector saw the event, ns since the epoch (0 = unknown).
    #[prost(fixed64, tag = "11")]
    pub observed_time_unix_nano: u64,
    /// `SeverityNumber` enum value (0 = unspecified).
    #[prost(int32, tag = "2")]
    pub severity_number: i32,
    /// Severity as text.
    #[prost(string, tag = "3")]
    pub severity_text: String,
    /// The body.
    #[prost(message, optional, tag = "5")]
    pub body: Option<AnyValue>,
    /// Attributes.
    #[prost(message, repeated, tag = "6")]
    pub attributes: Vec<KeyValue>,
    /// Attributes dropped by the producer.
    #[prost(uint32, tag = "7")]
    pub dropped_attributes_count: u32,
    /// W3C trace flags.
    #[prost(fixed32, tag = "8")]
    pub flags: u32,
    /// Trace id: 16 bytes, or empty.
    #[prost(bytes = "vec", tag = "9")]
    pub trace_id: Vec<u8>,
    /// Span id: 8 bytes, or empty.
    #[prost(bytes = "vec", tag = "10")]
    pub span_id: Vec<u8>,
    /// Event name.
    #[prost(string, tag = "12")]
    pub event_name: String,
}

/// `Resource`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    /// Attributes.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    /// Attributes dropped by the producer.
    #[prost(uint32, tag = "2")]
    pub dropped_attributes_count: u32,
}

/// `InstrumentationScope`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Version.
    #[prost(string, tag = "2")]
    pub version: String,
    /// Attributes.
    #[prost(message, repeated, tag = "3")]
    pub attributes: Vec<KeyValue>,
    /// Attributes dropped by the producer.
    #[prost(uint32, tag = "4")]
    pub dropped_attributes_count: u32,
}

/// `KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// Key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Value; absent is the empty value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `AnyValue`: one of several kinds, or empty.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    /// The value; `None` is the empty value.
    #[prost(oneof = "any_value::Value", tags = "1, 2, 3, 4, 5, 6, 7")]
    pub value: Option<any_value::Value>,
}

/// The kinds of [`AnyValue`].
pub mod any_value {
    /// `AnyValue.value`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        /// `string_value`.
        #[prost(string, tag = "1")]
        StringValue(String),
        /// `bool_value`.
        #[prost(bool, tag = "2")]
        BoolValue(bool),
        /// `int_value`.
        #[prost(int64, tag = "3")]
        IntValue(i64),
        /// `double_value`.
        #[prost(double, tag = "4")]
        DoubleValue(f64),
        /// `array_value`.
        #[prost(message, tag = "5")]
        ArrayValue(super::ArrayValue),
        /// `kvlist_value`.
        #[prost(message, tag = "6")]
        KvlistValue(super::KeyValueList),
        /// `bytes_value`.
        #[prost(bytes = "vec", tag = "7")]
        BytesValue(Vec<u8>),
    }
}

/// `ArrayValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ArrayValue {
    /// Elements.
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<AnyValue>,
}

/// `KeyValueList`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValueList {
    /// Entries, in order; a repeated key's last value wins when rendered.
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<KeyValue>,
}
