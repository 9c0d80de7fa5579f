//! The server's write, operations and delete-request seam ([`Ingest`],
//! [`Operations`], [`Deletes`]) for
//! [`ClickHouseBackend`], delegating to its inherent methods (failures as
//! [`StoreError`] kinds by [`crate::failure`]).

use crate::ClickHouseBackend;
use runakefli_model::deletes::{CancelRefusal, DeleteRequest};
use runakefli_model::{Deletes, Ingest, Operations, PushRequest, StoreError, TenantId};

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
