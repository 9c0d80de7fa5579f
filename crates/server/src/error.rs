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
}

impl ApiError {
    /// An error with any status.
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
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
        let mut body = self.message;
        body.push('\n');
        (
            status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            body,
        )
            .into_response()
    }
}

impl From<runakefli_storage::StorageError> for ApiError {
    /// Backpressure (the store is behind on flushing) is 503, which every collector
    /// retries; everything else is a 500.
    fn from(e: runakefli_storage::StorageError) -> Self {
        match e {
            runakefli_storage::StorageError::Overloaded(_) => ApiError::new(503, e.to_string()),
            other => ApiError::internal(other.to_string()),
        }
    }
}

impl From<runakefli_model::BackendError> for ApiError {
    fn from(e: runakefli_model::BackendError) -> Self {
        match e {
            runakefli_model::BackendError::Limit(m) => ApiError::bad_request(m),
            other => ApiError::internal(other.to_string()),
        }
    }
}
