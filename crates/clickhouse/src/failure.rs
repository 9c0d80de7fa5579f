//! ClickHouse's failures ([`Error`]) as the model's kinds: [`BackendError`]
//! for reads (the engine's seam), [`StoreError`] for pushes, operations and
//! delete requests (the server's seam). Each ClickHouse failure is given
//! the one kind that says whose fault it is and whether a retry may pass;
//! `docs/clickhouse.md` lists the statuses.

use crate::error::{Error, TIMEOUT_EXCEEDED};
use runakefli_model::{BackendError, StoreError};

/// ClickHouse's error codes for a result past a configured bound on what a
/// query may read or return (`TOO_MANY_ROWS`, `TOO_MANY_BYTES`,
/// `TOO_MANY_ROWS_OR_BYTES`): [`BackendError::Limit`].
const LIMIT_CODES: &[u32] = &[158, 307, 396];

/// ClickHouse's error codes for a query it can never run as sent because of
/// what the user wrote (`CANNOT_COMPILE_REGEXP`: a regexp of the query that
/// RE2 refuses): [`BackendError::Rejected`].
const REJECTED_CODES: &[u32] = &[427];

/// ClickHouse's `SOCKET_TIMEOUT`: a node of the query did not answer in
/// time.
const SOCKET_TIMEOUT: u32 = 209;

impl From<Error> for BackendError {
    /// - `TIMEOUT_EXCEEDED` (the query's deadline passed, sent as
    ///   `max_execution_time`, or its client went away):
    ///   [`BackendError::Cancelled`], which the engine answers as its query
    ///   timeout;
    /// - an answer of the wrong shape: [`BackendError::Corrupt`];
    /// - a result past ClickHouse's read bounds ([`LIMIT_CODES`]):
    ///   [`BackendError::Limit`];
    /// - a request the backend can never carry out as sent
    ///   ([`Error::Invalid`], [`Error::Unsupported`], [`REJECTED_CODES`]):
    ///   [`BackendError::Rejected`];
    /// - `SOCKET_TIMEOUT`, or an HTTP 504 (a proxy in front of ClickHouse
    ///   gave up): [`BackendError::Timeout`];
    /// - whatever may pass later ([`Error::is_retryable`]: no HTTP answer,
    ///   an HTTP 503, a busy or overloaded server): [`BackendError::Unavailable`];
    /// - anything else (an exception the SQL should not have caused, bad TLS
    ///   files, a schema too new, a bug): [`BackendError::Internal`].
    fn from(e: Error) -> Self {
        let message = format!("clickhouse: {e}");
        if let Error::Decode(m) = e {
            return BackendError::Corrupt(format!("clickhouse: {m}"));
        }
        let code = e.code();
        let status = match &e {
            Error::Server { status, .. } => Some(*status),
            _ => None,
        };
        if code == Some(TIMEOUT_EXCEEDED) {
            BackendError::Cancelled
        } else if code.is_some_and(|c| LIMIT_CODES.contains(&c)) {
            BackendError::Limit(message)
        } else if matches!(e, Error::Invalid(_) | Error::Unsupported(_))
            || code.is_some_and(|c| REJECTED_CODES.contains(&c))
        {
            BackendError::Rejected(message)
        } else if code == Some(SOCKET_TIMEOUT) || status == Some(504) {
            BackendError::Timeout(message)
        } else if e.is_retryable() {
            BackendError::Unavailable(message)
        } else {
            BackendError::Internal(message)
        }
    }
}

impl From<Error> for StoreError {
    /// A retryable failure ([`Error::is_retryable`]: no HTTP answer, an HTTP
    /// 503, or a retryable exception code) is [`StoreError::Unavailable`]
    /// (collectors retry; a re-sent push carries the same deduplication
    /// tokens, see [`ClickHouseBackend::push`]); anything else is
    /// [`StoreError::Internal`]: a push the server accepted is never
    /// ClickHouse's client error. A push refused by the backlog
    /// ([`Error::Backlog`]) is [`StoreError::Overloaded`].
    fn from(e: Error) -> Self {
        let message = e.to_string();
        if let Error::Backlog { .. } = e {
            return StoreError::Overloaded(message);
        }
        if e.is_retryable() {
            return StoreError::Unavailable(message);
        }
        match &e {
            Error::Unsupported(_) => StoreError::Unsupported(message),
            Error::Invalid(_) => StoreError::Invalid(message),
            _ => StoreError::Internal(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(status: u16, code: Option<u32>) -> Error {
        Error::Server {
            status,
            code,
            message: "Code: 1. DB::Exception: x".into(),
        }
    }

    fn kind(e: Error) -> BackendError {
        BackendError::from(e)
    }

    #[test]
    fn read_failures_get_the_kind_of_whose_fault_it_is() {
        assert!(matches!(
            kind(server(500, Some(TIMEOUT_EXCEEDED))),
            BackendError::Cancelled
        ));
        assert!(matches!(
            kind(Error::Decode("x".into())),
            BackendError::Corrupt(m) if m == "clickhouse: x"
        ));
        for unavailable in [
            Error::Transport("connection refused".into()),
            server(503, None),
            server(500, Some(202)),
            server(500, Some(252)),
        ] {
            assert!(
                matches!(kind(unavailable.clone()), BackendError::Unavailable(_)),
                "{unavailable:?}"
            );
        }
        for timeout in [server(500, Some(SOCKET_TIMEOUT)), server(504, None)] {
            assert!(
                matches!(kind(timeout.clone()), BackendError::Timeout(_)),
                "{timeout:?}"
            );
        }
        for rejected in [
            Error::Invalid("bad tenant".into()),
            Error::Unsupported("x".into()),
            server(400, Some(427)),
        ] {
            assert!(
                matches!(kind(rejected.clone()), BackendError::Rejected(_)),
                "{rejected:?}"
            );
        }
        assert!(matches!(
            kind(server(500, Some(158))),
            BackendError::Limit(_)
        ));
        for internal in [
            server(400, Some(62)),
            server(404, Some(60)),
            Error::Internal("bug".into()),
            Error::SchemaTooNew { found: 9, known: 8 },
        ] {
            assert!(
                matches!(kind(internal.clone()), BackendError::Internal(_)),
                "{internal:?}"
            );
        }
        let BackendError::Internal(m) = kind(server(500, Some(60))) else {
            panic!("internal")
        };
        assert!(m.starts_with("clickhouse: clickhouse exception"), "{m}");
    }

    #[test]
    fn unreachable_or_busy_clickhouse_is_unavailable_else_internal() {
        let unavailable = |e| matches!(StoreError::from(e), StoreError::Unavailable(_));
        assert!(unavailable(Error::Transport("connection refused".into())));
        assert!(unavailable(server(500, Some(252))));
        assert!(unavailable(server(503, None)));
        assert!(!unavailable(server(500, Some(60))));
        assert!(matches!(
            StoreError::from(Error::Decode("x".into())),
            StoreError::Internal(_)
        ));
        assert!(matches!(
            StoreError::from(Error::Invalid("x".into())),
            StoreError::Invalid(_)
        ));
        let backlog = Error::Backlog {
            pushes: 3,
            bytes: 10,
            max_pushes: 3,
            max_bytes: 0,
        };
        let StoreError::Overloaded(m) = StoreError::from(backlog) else {
            panic!("overloaded")
        };
        assert!(
            m.starts_with("too many pushes waiting for clickhouse (3 pushes"),
            "{m}"
        );
    }
}
