//! OTLP error answers: a `google.rpc.Status` (code, message) encoded as
//! protobuf or JSON, as the OTLP/HTTP spec asks of a failing server.

use super::WireFormat;
use crate::error::ApiError;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use prost::Message;

/// `google.rpc.Status` without `details`.
#[derive(Clone, PartialEq, Message)]
pub struct RpcStatus {
    /// A `google.rpc.Code`.
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// Human-readable reason.
    #[prost(string, tag = "2")]
    pub message: String,
}

/// The gRPC code matching an HTTP status: 3 `INVALID_ARGUMENT` for 4xx,
/// 8 `RESOURCE_EXHAUSTED` for 413 and 429, 16 `UNAUTHENTICATED` for 401,
/// 7 `PERMISSION_DENIED` for 403,
/// 14 `UNAVAILABLE` for 503, 13 `INTERNAL` otherwise.
pub fn grpc_code(http_status: u16) -> i32 {
    match http_status {
        401 => 16,
        403 => 7,
        413 | 429 => 8,
        503 => 14,
        400..=499 => 3,
        _ => 13,
    }
}

/// The HTTP status an OTLP client gets for `status`. OTLP/HTTP exporters
/// retry only 429, 502, 503 and 504 and drop data on anything else, so a full
/// disk (507 on the other push APIs) is answered 503 here: the exporter keeps
/// the batch and retries once space is freed.
pub fn otlp_http_status(status: u16) -> u16 {
    match status {
        507 => 503,
        s => s,
    }
}

/// The error as an OTLP answer in `format`.
pub fn error_response(e: &ApiError, format: WireFormat) -> Response {
    let status = StatusCode::from_u16(otlp_http_status(e.status))
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if status.is_server_error() {
        tracing::warn!(status = e.status, message = %e.message, "otlp request failed");
    }
    let rpc = RpcStatus {
        code: grpc_code(status.as_u16()),
        message: e.message.clone(),
    };
    let body = match format {
        WireFormat::Protobuf => rpc.encode_to_vec(),
        WireFormat::Json => serde_json::json!({"code": rpc.code, "message": rpc.message})
            .to_string()
            .into_bytes(),
    };
    (
        status,
        [(header::CONTENT_TYPE, format.content_type())],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_round_trips_and_codes() {
        let s = RpcStatus {
            code: grpc_code(400),
            message: "bad".into(),
        };
        let back = RpcStatus::decode(&*s.encode_to_vec()).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.code, 3);
        assert_eq!(grpc_code(413), 8);
        assert_eq!(grpc_code(500), 13);
        assert_eq!(grpc_code(401), 16, "UNAUTHENTICATED");
        assert_eq!(grpc_code(403), 7, "PERMISSION_DENIED");
    }

    #[test]
    fn disk_full_is_retryable_for_otlp_exporters() {
        assert_eq!(otlp_http_status(507), 503);
        assert_eq!(grpc_code(otlp_http_status(507)), 14);
        assert_eq!(otlp_http_status(400), 400);
        assert_eq!(otlp_http_status(413), 413);
    }
}
