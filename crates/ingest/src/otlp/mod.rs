//! OTLP logs over HTTP: `POST /otlp/v1/logs` (Loki's path) and `/v1/logs`.
//!
//! Bodies are `ExportLogsServiceRequest` in protobuf
//! (`application/x-protobuf`) or OTLP/JSON (`application/json`), optionally
//! gzip- (or deflate-) encoded. They map to streams as Loki maps them with
//! its default `otlp_config`, `discover_service_name` and
//! `discover_log_levels` (recorded in `testdata/conformance-otlp`):
//! - Stream labels come only from resource attributes on
//!   [`mapping::INDEX_ATTRIBUTES`], names rewritten as Prometheus label names
//!   (`k8s.pod.name` -> `k8s_pod_name`, `3ds.version` -> `key_3ds_version`).
//!   Records of resources with the same labels share a stream.
//! - Without a non-empty `service.name`, `service_name` is copied from the
//!   first stream label listed in [`mapping::SERVICE_NAME_SOURCES`], else
//!   `unknown_service`.
//! - Structured metadata per entry, in this order: log attributes (an
//!   `event_name` attribute is dropped when the field is set),
//!   `observed_timestamp` (only when the record also has a time),
//!   `severity_number`, `severity_text`, `dropped_attributes_count`, `flags`,
//!   `trace_id`, `span_id` (lowercase hex), `event_name`; then the other
//!   resource attributes; then scope attributes, `scope_name`,
//!   `scope_version`, `scope_dropped_attributes_count`; then
//!   `detected_level` (see [`crate::level`]). Map attributes flatten to
//!   `parent_child`; arrays become JSON; bytes base64. A metadata name equal
//!   to a stream label gets the suffix `_extracted`, which is how Loki
//!   answers it.
//! - Line: the body's text ([`value::as_string`]): strings verbatim, maps as
//!   compact JSON with sorted keys. Time: `time_unix_nano`, else
//!   `observed_time_unix_nano`, else the time of receipt.
//!
//! Differences from Loki, by design: any invalid record rejects the request
//! (Loki drops the resource and accepts the rest); a media type with
//! parameters (`application/json; charset=utf-8`) is accepted; `deflate` is
//! accepted and other encodings are refused (Loki ignores the header unless
//! it is `gzip`).

mod json;
pub mod mapping;
pub mod proto;
pub mod value;

use crate::body::{decompress, media_type, Encoding};
use crate::{PushError, PushLimits};
use prost::Message;
use runakefli_model::PushRequest;

/// Decodes and maps one OTLP/HTTP logs export body.
pub fn decode_logs(
    body: &[u8],
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    limits: &PushLimits,
) -> Result<PushRequest, PushError> {
    let unsupported = || {
        PushError::ContentType(format!(
            "content type: {} is not supported",
            content_type.unwrap_or("")
        ))
    };
    let media = media_type(content_type).map_err(|_| unsupported())?;
    let encoding = Encoding::parse(content_encoding)?;
    let raw = decompress(body, encoding, limits.max_body_bytes)?;
    let req = match media.as_str() {
        "application/x-protobuf" | "application/protobuf" => {
            proto::ExportLogsServiceRequest::decode(&*raw)
                .map_err(|e| PushError::Protobuf(format!("proto: {e}")))?
        }
        "application/json" => json::decode(&raw)?,
        _ => return Err(unsupported()),
    };
    mapping::to_push(req, limits)
}

/// Maps an already decoded export request.
pub fn map_request(
    req: proto::ExportLogsServiceRequest,
    limits: &PushLimits,
) -> Result<PushRequest, PushError> {
    mapping::to_push(req, limits)
}

#[cfg(test)]
mod tests;
