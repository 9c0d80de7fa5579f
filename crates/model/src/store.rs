//! The write and operations half of a storage backend, as the server sees it.
//!
//! Reads (and the metadata endpoints, which the engine answers from
//! [`Backend::streams`](crate::Backend::streams),
//! [`Backend::label_names`](crate::Backend::label_names) and
//! [`Backend::label_values`](crate::Backend::label_values)) go through
//! [`Backend`](crate::Backend). Writes go through [`Ingest`], health and
//! flushing through [`Operations`]. Every backend maps its own failures to
//! [`StoreError`], whose kinds the server turns into HTTP statuses, so the
//! server never sees a backend's error type.

use crate::{PushRequest, TenantId};
use thiserror::Error;

/// Why a backend refused or failed a write or an operation. Each kind has
/// one meaning for clients (the server answers one HTTP status per kind);
/// the message is the backend's own text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StoreError {
    /// The request can never succeed as sent (bad tenant, colliding stream);
    /// clients must not retry it.
    #[error("{0}")]
    Invalid(String),
    /// The request is larger than the backend accepts in one write.
    #[error("{0}")]
    TooLarge(String),
    /// The backend cannot take the request now (overloaded, shutting down,
    /// unreachable); nothing was acknowledged and a retry may succeed.
    #[error("{0}")]
    Unavailable(String),
    /// The backend is behind and refused the request at once rather than
    /// let it wait (a bounded queue is full); nothing was acknowledged and a
    /// retry after a short wait may succeed.
    #[error("{0}")]
    Overloaded(String),
    /// The disk or quota is full; nothing was acknowledged.
    #[error("{0}")]
    Full(String),
    /// The operation ran out of time or was cancelled.
    #[error("{0}")]
    Timeout(String),
    /// The backend does not offer this operation (yet).
    #[error("{0}")]
    Unsupported(String),
    /// Any other failure (I/O, corruption, an unexpected answer).
    #[error("{0}")]
    Internal(String),
}

/// The write seam: stores decoded pushes.
pub trait Ingest: Send + Sync {
    /// Stores `request` for `tenant`. `Ok` means the entries are durable (a
    /// crash after it loses none of them) and readable by later queries.
    fn push(&self, tenant: &TenantId, request: &PushRequest) -> Result<(), StoreError>;
}

/// Health and lifecycle of a backend.
pub trait Operations: Send + Sync {
    /// A short name for messages and logs (`embedded`, `clickhouse`).
    fn name(&self) -> &'static str;

    /// `Ok` while the backend can acknowledge writes; the reason otherwise.
    fn health(&self) -> Result<(), StoreError>;

    /// Makes buffered data permanent (Loki's `/flush`); `Ok` at once for a
    /// backend that buffers nothing.
    fn flush(&self) -> Result<(), StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_is_the_backends_text() {
        assert_eq!(StoreError::Unavailable("down".into()).to_string(), "down");
        assert_eq!(StoreError::Internal("eio".into()).to_string(), "eio");
    }
}
