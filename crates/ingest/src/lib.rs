//! Decoders for the push protocols collectors speak. Each turns a request body
//! into a validated [`runakefli_model::PushRequest`]; none does I/O.
//!
//! - [`loki`]: `POST /loki/api/v1/push` (protobuf + snappy, JSON).
//! - [`otlp`]: `POST /otlp/v1/logs` and `/v1/logs` (OTLP protobuf, OTLP/JSON).
//! - [`es_bulk`]: Elasticsearch `_bulk` (NDJSON action/document pairs).
//! - [`jsonline`]: VictoriaLogs' `/insert/jsonline` (one JSON object per line).
//! - [`syslog`]: RFC 5424 / RFC 3164 messages and RFC 6587 TCP framing.
//!
//! [`jsondoc`] maps JSON documents to entries for the last two.
//!
//! Every decoder reports problems as a [`PushError`], which carries the HTTP
//! status Loki would answer with ([`PushError::status`]) and a message in
//! Loki's wording. Request-wide limits live in [`PushLimits`].
//!
//! One rule holds for every protocol: a request is either accepted whole or
//! rejected whole. Loki drops only the invalid entries of a push and answers
//! 400 naming them while storing the rest; Rúnakefli rejects the whole request
//! with the same 400 and message (the first problem found), so a rejected
//! request stores nothing.
#![deny(missing_docs)]

pub mod body;
pub mod discover;
pub mod error;
pub mod es_bulk;
pub mod jsondoc;
pub mod jsonline;
pub mod level;
pub mod limits;
pub mod loki;
pub mod otlp;
pub mod syslog;
pub mod validate;

pub use error::PushError;
pub use limits::PushLimits;
