//! The crate's error type.

use thiserror::Error;

/// Failure talking to ClickHouse or translating a plan. `Clone`, so one
/// failed batch insert can be every member push's answer.
#[derive(Clone, Debug, Error)]
pub enum Error {
    /// The request did not get an HTTP answer (connection refused, timeout, …).
    #[error("clickhouse unreachable: {0}")]
    Transport(String),
    /// ClickHouse answered with an exception (`Code: N. DB::Exception: …`).
    #[error("clickhouse exception (http {status}, code {code:?}): {message}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// ClickHouse's error code, when the text carried one.
        code: Option<u32>,
        /// The exception text as ClickHouse sent it, trimmed.
        message: String,
    },
    /// An answer that does not have the expected shape.
    #[error("unexpected clickhouse answer: {0}")]
    Decode(String),
    /// The database holds a schema newer than this binary knows.
    #[error("clickhouse schema version {found} is newer than this binary's {known}")]
    SchemaTooNew {
        /// The version recorded in the database.
        found: u32,
        /// The newest version this binary has migrations for.
        known: u32,
    },
    /// A plan piece that cannot be translated exactly; the plan is left to the engine.
    #[error("not pushed down: {0}")]
    Unsupported(String),
    /// A plan whose answer would be too large to hold whole (its residual
    /// rows past the budget); the plan is left to the engine's streamed scan.
    #[error("plan declined: {0}")]
    Declined(String),
    /// A request the backend can never carry out as sent (an invalid tenant,
    /// a delete request it cannot evaluate exactly); clients must not retry.
    #[error("{0}")]
    Invalid(String),
    /// A push refused at once because as many pushes or bytes as the
    /// [`crate::Backlog`] allows already wait for ClickHouse; nothing of it
    /// was stored, a retry after a short wait may succeed.
    #[error(
        "too many pushes waiting for clickhouse ({pushes} pushes, {bytes} bytes; limits \
         {max_pushes} pushes, {max_bytes} bytes: --clickhouse-max-waiting-pushes, \
         --clickhouse-max-waiting-bytes); retry later"
    )]
    Backlog {
        /// Pushes waiting when this one arrived.
        pushes: usize,
        /// Their encoded bytes.
        bytes: usize,
        /// [`crate::Backlog::max_pushes`].
        max_pushes: usize,
        /// [`crate::Backlog::max_bytes`].
        max_bytes: usize,
    },
    /// A bug in the backend (an insert writer that panicked, legs of a
    /// plan answering different kinds of buckets).
    #[error("internal error: {0}")]
    Internal(String),
    /// TLS files that cannot be used (unreadable, not PEM, a key that does
    /// not fit its certificate).
    #[error("clickhouse tls: {0}")]
    Tls(String),
}

impl Error {
    /// The error for an exception answer: `Code: N. DB::Exception: …` (the
    /// code is taken from the text, or from the `X-ClickHouse-Exception-Code`
    /// header when given).
    pub fn from_exception(status: u16, header_code: Option<u32>, body: &str) -> Error {
        Error::Server {
            status,
            code: header_code.or_else(|| exception_code(body)),
            message: body.trim().to_string(),
        }
    }

    /// ClickHouse's error code, for [`Error::Server`].
    pub fn code(&self) -> Option<u32> {
        match self {
            Error::Server { code, .. } => *code,
            _ => None,
        }
    }

    /// Whether the same request may succeed later: no HTTP answer
    /// ([`Error::Transport`]), an HTTP 503, or a [`RETRYABLE_CODES`] exception.
    /// An insert that failed so may still have been written (e.g. the answer
    /// was lost), which its deduplication token makes harmless to retry.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Transport(_) => true,
            Error::Server { status, code, .. } => {
                *status == 503 || code.is_some_and(|c| RETRYABLE_CODES.contains(&c))
            }
            _ => false,
        }
    }
}

/// ClickHouse's `TIMEOUT_EXCEEDED`: a query past its time limit (the
/// request's deadline), or a plan whose client went away
/// ([`crate::cancel::check_cancel`]).
pub(crate) const TIMEOUT_EXCEEDED: u32 = 159;

/// ClickHouse error codes that say "not now": a retry may succeed
/// (`TIMEOUT_EXCEEDED`, `TOO_MANY_SIMULTANEOUS_QUERIES`, `SOCKET_TIMEOUT`,
/// `NETWORK_ERROR`, `MEMORY_LIMIT_EXCEEDED`, `TABLE_IS_READ_ONLY`,
/// `TOO_MANY_PARTS`, `UNKNOWN_STATUS_OF_INSERT`, `ALL_CONNECTION_TRIES_FAILED`,
/// `KEEPER_EXCEPTION`).
pub const RETRYABLE_CODES: &[u32] = &[159, 202, 209, 210, 241, 242, 252, 319, 279, 999];

/// The `N` of the first `Code: N.` in an exception text.
fn exception_code(body: &str) -> Option<u32> {
    let at = body.find("Code: ")? + "Code: ".len();
    let digits: String = body[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exception_text_gives_the_code() {
        let e = Error::from_exception(
            404,
            None,
            "Code: 60. DB::Exception: Unknown table expression identifier 'x'. (UNKNOWN_TABLE)\n",
        );
        assert_eq!(e.code(), Some(60));
        let Error::Server {
            status, message, ..
        } = &e
        else {
            panic!("{e:?}")
        };
        assert_eq!(*status, 404);
        assert!(message.ends_with("(UNKNOWN_TABLE)"), "{message}");
        assert_eq!(Error::from_exception(500, None, "boom").code(), None);
        assert_eq!(
            Error::from_exception(500, Some(62), "boom").code(),
            Some(62)
        );
    }

    #[test]
    fn unreachable_busy_or_overloaded_is_retryable_else_not() {
        let server = |status, code| Error::Server {
            status,
            code,
            message: "x".into(),
        };
        assert!(Error::Transport("refused".into()).is_retryable());
        assert!(server(503, None).is_retryable());
        assert!(server(500, Some(252)).is_retryable(), "TOO_MANY_PARTS");
        assert!(server(500, Some(159)).is_retryable(), "TIMEOUT_EXCEEDED");
        assert!(!server(500, Some(60)).is_retryable(), "UNKNOWN_TABLE");
        assert!(!server(400, Some(62)).is_retryable(), "SYNTAX_ERROR");
        assert!(!Error::Decode("x".into()).is_retryable());
        assert!(!Error::Unsupported("x".into()).is_retryable());
    }
}
