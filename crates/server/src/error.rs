//! API errors: one status and one message, answered the way Loki answers errors
//! (`text/plain` body holding the message and a newline).

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// An error answered to an HTTP client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status code.
    pub status: u16,
    /// Message, in Loki's wording where Loki has one.
    pub message: String,
    /// Why a push was refused, for `runakefli_rejected_requests_total`;
    /// `None`: derived from the status ([`ApiError::reason`]).
    pub reason: Option<&'static str>,
    /// Seconds for a `Retry-After` header (backpressure refusals), if any.
    pub retry_after: Option<u32>,
}

/// The metrics reason of a push the backend refused because too much
/// already waits for it ([`runakefli_model::StoreError::Overloaded`]).
pub const BACKEND_OVERLOADED: &str = "backend_overloaded";

/// The reason of a failed request, left in the response's extensions for the
/// metrics layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorReason(pub &'static str);

impl ApiError {
    /// An error with any status.
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            reason: None,
            retry_after: None,
        }
    }

    /// The same error with `Retry-After: secs`.
    pub fn with_retry_after(mut self, secs: u32) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// The same error, counted under `reason` in the metrics.
    pub fn with_reason(mut self, reason: &'static str) -> Self {
        self.reason = Some(reason);
        self
    }

    /// The metric reason: the one set with [`ApiError::with_reason`], else one
    /// per status (`invalid`, `unauthorized`, `too_large`, `rate_limited`,
    /// `unavailable`, `timeout`, `disk_full`, `not_implemented`, `internal`).
    pub fn reason(&self) -> &'static str {
        if let Some(r) = self.reason {
            return r;
        }
        match self.status {
            401 | 403 => "unauthorized",
            413 => "too_large",
            415 => "unsupported_media_type",
            501 => "not_implemented",
            429 => "rate_limited",
            503 => "unavailable",
            504 => "timeout",
            507 => "disk_full",
            400..=499 => "invalid",
            _ => "internal",
        }
    }

    /// 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, message)
    }

    /// 500 Internal Server Error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, message)
    }

    /// 413 Payload Too Large: the request is bigger than a limit allows.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(413, message)
    }

    /// 429 Too Many Requests: a rate or concurrency limit; clients retry later.
    pub fn too_many_requests(message: impl Into<String>) -> Self {
        Self::new(429, message)
    }

    /// 503 Service Unavailable: backpressure, shutting down, or not ready;
    /// clients retry.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(503, message)
    }

    /// 507 Insufficient Storage: the disk is full; nothing was acknowledged.
    pub fn insufficient_storage(message: impl Into<String>) -> Self {
        Self::new(507, message)
    }

    /// 501 Not Implemented: the configured backend does not offer this
    /// endpoint (yet).
    pub fn not_implemented(message: impl Into<String>) -> Self {
        Self::new(501, message)
    }

    /// Keeps the message; the parameter name is already part of Loki's texts.
    pub fn with_param(self, _name: &str) -> Self {
        self
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status, self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            tracing::warn!(status = self.status, message = %self.message, "request failed");
        }
        let reason = ErrorReason(self.reason());
        let mut body = self.message;
        body.push('\n');
        let mut resp = (
            status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            body,
        )
            .into_response();
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
        }
        resp.extensions_mut().insert(reason);
        resp
    }
}

impl From<runakefli_model::StoreError> for ApiError {
    /// One status per backend failure kind, 4xx only where the request is at
    /// fault: 400 invalid, 413 too large, 503 unavailable (collectors retry),
    /// 503 overloaded with `Retry-After: 1` (as the in-flight push budget
    /// answers; counted under the reason `backend_overloaded`), 507 full,
    /// 504 timed out, 501 not offered by this backend, 500 other.
    fn from(e: runakefli_model::StoreError) -> Self {
        use runakefli_model::StoreError as K;
        match e {
            K::Invalid(m) => ApiError::bad_request(m),
            K::TooLarge(m) => ApiError::too_large(m),
            K::Unavailable(m) => ApiError::unavailable(m),
            K::Overloaded(m) => ApiError::unavailable(m)
                .with_reason(BACKEND_OVERLOADED)
                .with_retry_after(1),
            K::Full(m) => ApiError::insufficient_storage(m),
            K::Timeout(m) => ApiError::new(504, m),
            K::Unsupported(m) => ApiError::not_implemented(m),
            K::Internal(m) => ApiError::internal(m),
        }
    }
}

impl From<runakefli_model::BackendError> for ApiError {
    /// One status per read failure kind (see
    /// [`BackendError`](runakefli_model::BackendError)), 4xx only where the
    /// query is at fault: 400 over a limit or refused as invalid, 503
    /// unavailable, 504 timed out or cancelled, 500 other.
    fn from(e: runakefli_model::BackendError) -> Self {
        use runakefli_model::BackendError as K;
        match e {
            K::Limit(m) | K::Rejected(m) => ApiError::bad_request(m),
            K::Cancelled => ApiError::new(504, "query cancelled"),
            K::Unavailable(_) => ApiError::unavailable(e.to_string()),
            K::Timeout(_) => ApiError::new(504, e.to_string()),
            K::Io(_) | K::Corrupt(_) | K::Internal(_) => ApiError::internal(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn read_failures_map_to_one_status_each() {
        use runakefli_model::BackendError as K;
        let status = |e: K| ApiError::from(e).status;
        assert_eq!(status(K::Limit("too many".into())), 400);
        assert_eq!(status(K::Rejected("bad regexp".into())), 400);
        assert_eq!(status(K::Unavailable("refused".into())), 503);
        assert_eq!(status(K::Timeout("socket".into())), 504);
        assert_eq!(status(K::Cancelled), 504);
        assert_eq!(status(K::Internal("x".into())), 500);
        assert_eq!(status(K::Corrupt("x".into())), 500);
        assert_eq!(status(K::Io(std::io::Error::other("eio"))), 500);
        let e = ApiError::from(K::Rejected("clickhouse: bad regexp".into()));
        assert_eq!(e.message, "clickhouse: bad regexp");
        let e = ApiError::from(K::Unavailable("clickhouse: refused".into()));
        assert_eq!(e.message, "backend unavailable: clickhouse: refused");
    }

    #[test]
    fn an_overloaded_backend_answers_503_with_retry_after() {
        let e = ApiError::from(runakefli_model::StoreError::Overloaded("behind".into()));
        assert_eq!((e.status, e.reason()), (503, BACKEND_OVERLOADED));
        let resp = e.into_response();
        assert_eq!(resp.status(), 503);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "1");
        assert_eq!(
            resp.headers()[header::CONTENT_TYPE],
            "text/plain; charset=utf-8"
        );
        let plain = ApiError::from(runakefli_model::StoreError::Unavailable("down".into()));
        assert_eq!((plain.status, plain.reason()), (503, "unavailable"));
        assert!(plain
            .into_response()
            .headers()
            .get(header::RETRY_AFTER)
            .is_none());
    }

    #[test]
    fn backend_failures_are_not_client_errors() {
        use runakefli_model::BackendError as B;
        assert_eq!(ApiError::from(B::Limit("too many".into())).status, 400);
        assert_eq!(ApiError::from(B::Corrupt("x".into())).status, 500);
    }
}
