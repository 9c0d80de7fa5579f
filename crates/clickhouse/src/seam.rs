//! The server's write, operations and delete-request seam ([`Ingest`],
//! [`Operations`], [`Deletes`]) for
//! [`ClickHouseBackend`], and ClickHouse's failures as [`StoreError`] kinds.

use crate::{ClickHouseBackend, Error};
use runakefli_model::deletes::{CancelRefusal, DeleteRequest};
use runakefli_model::{Deletes, Ingest, Operations, PushRequest, StoreError, TenantId};

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

impl Ingest for ClickHouseBackend {
    /// [`ClickHouseBackend::push`]: ClickHouse has written the rows.
    fn push(&self, tenant: &TenantId, request: &PushRequest) -> Result<(), StoreError> {
        Ok(ClickHouseBackend::push(self, tenant, request)?)
    }
}

impl Operations for ClickHouseBackend {
    fn name(&self) -> &'static str {
        "clickhouse"
    }

    /// ClickHouse answers `SELECT 1` in the configured database.
    fn health(&self) -> Result<(), StoreError> {
        Ok(self.ping()?)
    }

    /// Nothing to do: a push is acknowledged only after ClickHouse wrote it.
    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

impl Deletes for ClickHouseBackend {
    /// [`ClickHouseBackend::add_delete`]: a row in `delete_requests`, rows hidden.
    fn add_delete(
        &self,
        tenant: &TenantId,
        req: DeleteRequest,
    ) -> Result<DeleteRequest, StoreError> {
        Ok(ClickHouseBackend::add_delete(self, tenant, req)?)
    }

    /// [`ClickHouseBackend::delete_requests`].
    fn delete_requests(&self, tenant: &TenantId) -> Result<Vec<DeleteRequest>, StoreError> {
        Ok(ClickHouseBackend::delete_requests(self, tenant))
    }

    /// [`ClickHouseBackend::cancel_delete`].
    fn cancel_delete(
        &self,
        tenant: &TenantId,
        id: &str,
        force: bool,
    ) -> Result<Result<(), CancelRefusal>, StoreError> {
        Ok(ClickHouseBackend::cancel_delete(self, tenant, id, force)?)
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
