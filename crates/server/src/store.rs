//! The backend the server reads and writes through.
//!
//! Handlers see a backend only through traits: reads and metadata through
//! [`model::Backend`](runakefli_model::Backend) (the engine answers queries,
//! labels, label values, series, index stats and volumes from it), pushes
//! through [`Ingest`], health and flushing through [`Operations`], delete
//! requests through [`Deletes`] ([`Store::deletes`], 501 on a backend
//! without them). Failures arrive as
//! [`StoreError`](runakefli_model::StoreError) kinds, which `error.rs` maps
//! to HTTP statuses. Endpoints that only the embedded store offers
//! (`/admin/storage/stats`, the store's `/metrics` families) ask for it with
//! [`Store::embedded_for`], which answers 501 on another backend.

use crate::config::{BackendConfig, ServerConfig};
use crate::error::ApiError;
use crate::state::OpenError;
use runakefli_clickhouse::{ClickHouseBackend, Client, Housekeeping};
use runakefli_model::{Backend, Deletes, Ingest, Operations};
use runakefli_storage::{Storage, StorageConfig};
use runakefli_storage_query::{EmbeddedBackend, QueryConfig};
use std::sync::Arc;
use std::time::Duration;

/// The configured backend, behind the seam's traits.
pub struct Store {
    reads: Arc<dyn Backend>,
    writes: Arc<dyn Ingest>,
    ops: Arc<dyn Operations>,
    deletes: Option<Arc<dyn Deletes>>,
    embedded: Option<Arc<Storage>>,
    clickhouse: Option<Arc<ClickHouseBackend>>,
}

impl Store {
    /// Any backend that implements the three traits (delete requests
    /// answer 501 until [`Store::with_deletes`]).
    pub fn new<B: Backend + Ingest + Operations + 'static>(backend: Arc<B>) -> Store {
        Store {
            reads: backend.clone(),
            writes: backend.clone(),
            ops: backend,
            deletes: None,
            embedded: None,
            clickhouse: None,
        }
    }

    /// The store with `deletes` serving `/loki/api/v1/delete`.
    pub fn with_deletes(mut self, deletes: Arc<dyn Deletes>) -> Store {
        self.deletes = Some(deletes);
        self
    }

    /// The embedded store, read through `backend` (the store also serves
    /// the endpoints only it offers).
    pub fn embedded(backend: Arc<EmbeddedBackend>) -> Store {
        let storage = backend.storage().clone();
        Store {
            reads: backend,
            writes: storage.clone(),
            ops: storage.clone(),
            deletes: Some(storage.clone()),
            embedded: Some(storage),
            clickhouse: None,
        }
    }

    /// The ClickHouse backend (whose SQL counters `/metrics` shows).
    pub fn clickhouse(backend: Arc<ClickHouseBackend>) -> Store {
        Store {
            clickhouse: Some(backend.clone()),
            ..Store::new(backend.clone()).with_deletes(backend)
        }
    }

    /// Opens the backend `config` names: the embedded store under
    /// `config.data_dir` (replaying its WAL), or a ClickHouse database
    /// (creating or migrating its schema).
    pub fn open(config: &ServerConfig) -> Result<Store, OpenError> {
        match &config.backend {
            BackendConfig::Embedded => {
                let mut sc = StorageConfig::new(config.data_dir.clone());
                sc.retention = crate::state::retention_config(config)?;
                sc.delete_cancel_period = config.delete_request_cancel_period;
                sc.memtable_flush_bytes = config.memtable_bytes;
                sc.flush_interval = config.flush_interval.max(Duration::from_millis(100));
                sc.wal_fsync = config.wal_fsync;
                sc.wal_segment_max_bytes = config.wal_segment_bytes.max(1);
                sc.wal_record_max_bytes = config.wal_record_max_bytes;
                let query = QueryConfig {
                    answer_cache_bytes: config.answer_cache_bytes,
                    decoded_cache_bytes: config.decoded_cache_bytes,
                };
                let backend = EmbeddedBackend::new(Storage::open(sc)?, &query);
                Ok(Store::embedded(Arc::new(backend)))
            }
            BackendConfig::ClickHouse(c) => {
                refuse_embedded_only_settings(config)?;
                let housekeeping = Housekeeping {
                    retention: crate::state::retention_config(config)?,
                    delete_cancel_period: config.delete_request_cancel_period,
                };
                let backend = Arc::new(
                    ClickHouseBackend::open(Client::new(c.clone()))?
                        .with_housekeeping(housekeeping)
                        .with_backlog(config.clickhouse_backlog)
                        .with_metric_legs(config.clickhouse_metric_legs),
                );
                backend
                    .spawn_housekeeping()
                    .map_err(|source| OpenError::Thread {
                        what: "the clickhouse housekeeping thread",
                        source,
                    })?;
                Ok(Store::clickhouse(backend))
            }
        }
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
        self.deletes.as_deref().ok_or_else(|| {
            ApiError::not_implemented(format!(
                "{what}: not implemented for the {} backend yet",
                self.ops.name()
            ))
        })
    }

    /// The embedded store, when that is the backend.
    pub fn embedded_store(&self) -> Option<&Arc<Storage>> {
        self.embedded.as_ref()
    }

    /// The ClickHouse backend, when that is the backend.
    pub fn clickhouse_backend(&self) -> Option<&Arc<ClickHouseBackend>> {
        self.clickhouse.as_ref()
    }

    /// The embedded store for an endpoint only it offers (`what` names the
    /// endpoint); on another backend a 501 saying so.
    pub fn embedded_for(&self, what: &str) -> Result<&Arc<Storage>, ApiError> {
        self.embedded.as_ref().ok_or_else(|| {
            ApiError::not_implemented(format!(
                "{what}: not implemented for the {} backend yet",
                self.ops.name()
            ))
        })
    }
}

/// Settings only the embedded store honours are refused on ClickHouse
/// rather than ignored: the disk budget (`max_disk_bytes`) measures the
/// embedded store's files; ClickHouse's disk is ClickHouse's to budget.
fn refuse_embedded_only_settings(config: &ServerConfig) -> Result<(), OpenError> {
    if config.max_disk_bytes.is_some() {
        return Err(OpenError::Config(
            "max_disk_bytes is the embedded store's disk budget and is not implemented for the \
             clickhouse backend; bound ClickHouse's disk with its own storage policies, and \
             retention_period / retention_stream"
                .into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clickhouse_config() -> ServerConfig {
        ServerConfig {
            backend: BackendConfig::ClickHouse(runakefli_clickhouse::Config::new(
                "http://127.0.0.1:1",
                "x",
            )),
            ..ServerConfig::default()
        }
    }

    #[test]
    fn clickhouse_refuses_the_disk_budget_before_connecting() {
        let mut c = clickhouse_config();
        c.max_disk_bytes = Some(1 << 30);
        match Store::open(&c) {
            Err(OpenError::Config(m)) => assert!(m.contains("max_disk_bytes"), "{m}"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("opened"),
        }
    }

    #[test]
    fn an_unreachable_clickhouse_fails_the_start() {
        match Store::open(&clickhouse_config()) {
            Err(OpenError::ClickHouse(e)) => assert!(e.to_string().contains("unreachable"), "{e}"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("opened"),
        }
    }

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
        let Err(e) = s.embedded_for("delete requests") else {
            panic!("an embedded store")
        };
        assert_eq!(e.status, 501);
        assert_eq!(
            e.message,
            "delete requests: not implemented for the nothing backend yet"
        );
        assert!(s.embedded_store().is_none());
    }
}
