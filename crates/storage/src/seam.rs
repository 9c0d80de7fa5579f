//! The server's write, operations and delete-request seam ([`Ingest`],
//! [`Operations`], [`Deletes`]) for [`Storage`], and the store's failures as
//! [`StoreError`] kinds.

use crate::{Storage, StorageError};
use runakefli_model::deletes::{CancelRefusal, DeleteRequest};
use runakefli_model::{Deletes, Ingest, Operations, PushRequest, StoreError, TenantId};

impl From<StorageError> for StoreError {
    /// One kind per storage failure, a client fault only where the request is
    /// at fault: an invalid tenant or a stream whose labels collide with
    /// another stream's id is [`StoreError::Invalid`] (retrying cannot help);
    /// a request too large for one WAL record is [`StoreError::TooLarge`];
    /// backpressure, shutting down, or a WAL that failed for another reason
    /// than a full disk is [`StoreError::Unavailable`]; a full disk (or
    /// quota) is [`StoreError::Full`]; corruption and other I/O failures are
    /// [`StoreError::Internal`]. The message is the storage error's text.
    fn from(e: StorageError) -> Self {
        use StorageError as S;
        let message = e.to_string();
        if e.is_disk_full() {
            return StoreError::Full(message);
        }
        match e {
            S::InvalidTenant(_) | S::StreamIdCollision { .. } => StoreError::Invalid(message),
            S::RecordTooLarge { .. } => StoreError::TooLarge(message),
            S::Overloaded(_) | S::Closed | S::WalFailed { .. } => StoreError::Unavailable(message),
            S::Io { .. } | S::Corrupt { .. } | S::Locked(_) => StoreError::Internal(message),
            S::Cancelled => StoreError::Timeout(message),
        }
    }
}

impl Ingest for Storage {
    /// [`Storage::append`]: in the WAL (fsynced unless disabled) and visible.
    fn push(&self, tenant: &TenantId, request: &PushRequest) -> Result<(), StoreError> {
        Ok(self.append(tenant, request)?)
    }
}

impl Operations for Storage {
    fn name(&self) -> &'static str {
        "embedded"
    }

    /// [`Storage::health`].
    fn health(&self) -> Result<(), StoreError> {
        Ok(Storage::health(self)?)
    }

    /// [`Storage::flush`]: memtables to parts.
    fn flush(&self) -> Result<(), StoreError> {
        Ok(Storage::flush(self)?)
    }
}

impl Deletes for Storage {
    /// [`Storage::add_delete`]: in the tenant's `deletes` file, rows hidden.
    fn add_delete(
        &self,
        tenant: &TenantId,
        req: DeleteRequest,
    ) -> Result<DeleteRequest, StoreError> {
        Ok(Storage::add_delete(self, tenant, req)?)
    }

    /// [`Storage::delete_requests`].
    fn delete_requests(&self, tenant: &TenantId) -> Result<Vec<DeleteRequest>, StoreError> {
        Ok(Storage::delete_requests(self, tenant))
    }

    /// [`Storage::cancel_delete`].
    fn cancel_delete(
        &self,
        tenant: &TenantId,
        id: &str,
        force: bool,
    ) -> Result<Result<(), CancelRefusal>, StoreError> {
        Ok(Storage::cancel_delete(self, tenant, id, force)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_failures_map_to_one_kind_each() {
        let kind = |e: StorageError| std::mem::discriminant(&StoreError::from(e));
        let d = std::mem::discriminant;
        let s = String::new;
        assert_eq!(
            kind(StorageError::InvalidTenant("a/b".into())),
            d(&StoreError::Invalid(s()))
        );
        assert_eq!(
            kind(StorageError::RecordTooLarge { bytes: 2, limit: 1 }),
            d(&StoreError::TooLarge(s()))
        );
        assert_eq!(kind(StorageError::Closed), d(&StoreError::Unavailable(s())));
        assert_eq!(
            kind(StorageError::WalFailed {
                reason: "x".into(),
                disk_full: true
            }),
            d(&StoreError::Full(s()))
        );
        assert_eq!(kind(StorageError::Cancelled), d(&StoreError::Timeout(s())));
        assert_eq!(
            kind(StorageError::corrupt("part", "checksum")),
            d(&StoreError::Internal(s()))
        );
        assert_eq!(
            StoreError::from(StorageError::Closed).to_string(),
            StorageError::Closed.to_string()
        );
    }
}
