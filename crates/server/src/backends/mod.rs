//! The backends the server can run on, named in one place.
//!
//! This module and its submodules (one per backend) are the only part of the
//! server that names a backend crate's types. Each submodule opens its
//! backend from the [`ServerConfig`] and hands back a [`Store`]: the model's
//! traits ([`Backend`](runakefli_model::Backend), [`Ingest`](runakefli_model::Ingest),
//! [`Operations`](runakefli_model::Operations), [`Deletes`](runakefli_model::Deletes)),
//! its metric families ([`BackendMetrics`](crate::metrics::BackendMetrics))
//! and, for a backend with files of its own, what the admin endpoints read
//! of them ([`LocalFiles`](crate::store::LocalFiles)). The rest of the server
//! sees only those traits.
//!
//! Adding a backend: a variant of [`BackendConfig`], a submodule with its
//! `open`, and an arm in [`open`] (plus the flags in the CLI).

pub mod clickhouse;
pub mod embedded;

use crate::config::ServerConfig;
use crate::state::OpenError;
use crate::store::Store;

/// Which store the server reads and writes (see [`crate::store`]).
#[derive(Debug, Clone, Default)]
pub enum BackendConfig {
    /// The embedded columnar store under [`ServerConfig::data_dir`] (the default).
    #[default]
    Embedded,
    /// A ClickHouse database over its HTTP interface (`docs/clickhouse.md`);
    /// `data_dir` is not used.
    ClickHouse(Box<clickhouse::Settings>),
}

/// Opens the backend `config` names: the embedded store under
/// `config.data_dir` (replaying its WAL), or a ClickHouse database
/// (creating or migrating its schema).
pub fn open(config: &ServerConfig) -> Result<Store, OpenError> {
    match &config.backend {
        BackendConfig::Embedded => embedded::open(config),
        BackendConfig::ClickHouse(c) => clickhouse::open(config, c),
    }
}
