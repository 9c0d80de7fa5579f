//! The backend the server reads and writes through.
//!
//! Handlers see a backend only through traits: reads and metadata through
//! [`model::Backend`](runakefli_model::Backend) (the engine answers queries,
//! labels, label values, series, index stats and volumes from it), pushes
//! through [`Ingest`], health and flushing through [`Operations`], delete
//! requests through [`Deletes`] ([`Store::deletes`], 501 on a backend
//! without them), its own metric families through
//! [`BackendMetrics`](crate::metrics::BackendMetrics). Failures arrive as
//! [`StoreError`](runakefli_model::StoreError) kinds, which `error.rs` maps
//! to HTTP statuses. Endpoints that only a backend with files of its own
//! offers (`/admin/storage/stats`, `/ready`'s free-space check) ask for
//! [`LocalFiles`] with [`Store::local_files_for`], which answers 501 on
//! another backend. [`crate::backends`] builds the store a configuration
//! names.

use crate::error::ApiError;
use crate::metrics::BackendMetrics;
use runakefli_model::{Backend, Deletes, Ingest, Operations};
use std::sync::Arc;

/// What the admin endpoints read of a backend that keeps files of its own
/// (the embedded store).
pub trait LocalFiles: Send + Sync {
    /// Free bytes on the file system of the data directory.
    fn free_disk_bytes(&self) -> std::io::Result<u64>;
    /// The backend's statistics as a JSON document (`/admin/storage/stats`),
    /// or why they could not be written.
    fn stats_json(&self) -> Result<String, String>;
}

/// The configured backend, behind the seam's traits.
pub struct Store {
    reads: Arc<dyn Backend>,
    writes: Arc<dyn Ingest>,
    ops: Arc<dyn Operations>,
    deletes: Option<Arc<dyn Deletes>>,
    metrics: Option<Arc<dyn BackendMetrics>>,
    files: Option<Arc<dyn LocalFiles>>,
}

impl Store {
    /// Any backend that implements the three traits (delete requests
    /// answer 501 until [`Store::with_deletes`]).
    pub fn new<B: Backend + Ingest + Operations + 'static>(backend: Arc<B>) -> Store {
        Store::from_parts(backend.clone(), backend.clone(), backend)
    }

    /// A backend whose reads, writes and operations are served apart
    /// (delete requests answer 501 until [`Store::with_deletes`]).
    pub fn from_parts(
        reads: Arc<dyn Backend>,
        writes: Arc<dyn Ingest>,
        ops: Arc<dyn Operations>,
    ) -> Store {
        Store {
            reads,
            writes,
            ops,
            deletes: None,
            metrics: None,
            files: None,
        }
    }

    /// The store with `deletes` serving `/loki/api/v1/delete`.
    pub fn with_deletes(mut self, deletes: Arc<dyn Deletes>) -> Store {
        self.deletes = Some(deletes);
        self
    }

    /// The store with `metrics` writing the backend's families on `/metrics`.
    pub fn with_metrics(mut self, metrics: Arc<dyn BackendMetrics>) -> Store {
        self.metrics = Some(metrics);
        self
    }

    /// The store with `files` for the admin endpoints that read them.
    pub fn with_local_files(mut self, files: Arc<dyn LocalFiles>) -> Store {
        self.files = Some(files);
        self
    }

    /// Reads and metadata, for the engine.
    pub fn reads(&self) -> Arc<dyn Backend> {
        self.reads.clone()
    }

    /// Pushes.
    pub fn writes(&self) -> &dyn Ingest {
        self.writes.as_ref()
    }

    /// Health and flushing.
    pub fn ops(&self) -> &dyn Operations {
        self.ops.as_ref()
    }

    /// Delete requests (`what` names the endpoint); a 501 saying so on a
    /// backend without them.
    pub fn deletes(&self, what: &str) -> Result<&dyn Deletes, ApiError> {
        self.deletes
            .as_deref()
            .ok_or_else(|| self.not_implemented(what))
    }

    /// The backend's own metric families, when it has some.
    pub fn metrics(&self) -> Option<&dyn BackendMetrics> {
        self.metrics.as_deref()
    }

    /// The backend's files, when it keeps files of its own.
    pub fn local_files(&self) -> Option<&dyn LocalFiles> {
        self.files.as_deref()
    }

    /// The backend's files for an endpoint only such a backend offers
    /// (`what` names the endpoint); on another backend a 501 saying so.
    pub fn local_files_for(&self, what: &str) -> Result<&dyn LocalFiles, ApiError> {
        self.files
            .as_deref()
            .ok_or_else(|| self.not_implemented(what))
    }

    fn not_implemented(&self, what: &str) -> ApiError {
        ApiError::not_implemented(format!(
            "{what}: not implemented for the {} backend yet",
            self.ops.name()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_only_endpoints_answer_501_elsewhere() {
        struct Nothing;
        impl Backend for Nothing {
            fn streams(
                &self,
                _: &runakefli_model::TenantId,
                _: &[runakefli_model::Matcher],
                _: i64,
                _: i64,
            ) -> Result<Vec<runakefli_model::StreamInfo>, runakefli_model::BackendError>
            {
                Ok(Vec::new())
            }
            fn label_names(
                &self,
                _: &runakefli_model::TenantId,
                _: i64,
                _: i64,
            ) -> Result<Vec<String>, runakefli_model::BackendError> {
                Ok(Vec::new())
            }
            fn label_values(
                &self,
                _: &runakefli_model::TenantId,
                _: &str,
                _: &[runakefli_model::Matcher],
                _: i64,
                _: i64,
            ) -> Result<Vec<String>, runakefli_model::BackendError> {
                Ok(Vec::new())
            }
            fn scan(
                &self,
                _: &runakefli_model::ScanRequest,
                _: &mut dyn FnMut(
                    &runakefli_model::StreamInfo,
                    runakefli_model::EntryBatch,
                ) -> runakefli_model::ScanControl,
            ) -> Result<(), runakefli_model::BackendError> {
                Ok(())
            }
        }
        impl Ingest for Nothing {
            fn push(
                &self,
                _: &runakefli_model::TenantId,
                _: &runakefli_model::PushRequest,
            ) -> Result<(), runakefli_model::StoreError> {
                Ok(())
            }
        }
        impl Operations for Nothing {
            fn name(&self) -> &'static str {
                "nothing"
            }
            fn health(&self) -> Result<(), runakefli_model::StoreError> {
                Ok(())
            }
            fn flush(&self) -> Result<(), runakefli_model::StoreError> {
                Ok(())
            }
        }
        let s = Store::new(Arc::new(Nothing));
        let Err(e) = s.deletes("delete requests") else {
            panic!("delete requests")
        };
        assert_eq!(e.status, 501);
        assert_eq!(
            e.message,
            "delete requests: not implemented for the nothing backend yet"
        );
        let Err(e) = s.local_files_for("delete requests") else {
            panic!("local files")
        };
        assert_eq!(e.status, 501);
        assert_eq!(
            e.message,
            "delete requests: not implemented for the nothing backend yet"
        );
        assert!(s.local_files().is_none());
        assert!(s.metrics().is_none());
    }
}
