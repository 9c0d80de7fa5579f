//! The backends the server can run on, named in one place.
//!
//! This module and its submodules (one per backend) are the only part of the
//! server that opens or calls a backend crate ([`crate::config`] names only
//! their settings types and defaults, [`crate::metrics`] the storage crate's
//! latency histogram). Each submodule opens its backend from the
//! [`ServerConfig`] and hands back a [`Store`]: the model's
//! traits ([`Backend`](runakefli_model::Backend), [`Ingest`](runakefli_model::Ingest),
//! [`Operations`](runakefli_model::Operations), [`Deletes`](runakefli_model::Deletes)),
//! its metric families ([`BackendMetrics`](crate::metrics::BackendMetrics))
//! and, for a backend with files of its own, what the admin endpoints read
//! of them ([`LocalFiles`](crate::store::LocalFiles)). The rest of the server
//! sees only those traits.
//!
//! Adding a backend: a variant of [`BackendConfig`] (in [`crate::config`]),
//! a submodule with its `open`, and an arm in [`open`] (plus the flags in
//! the CLI).

pub mod clickhouse;
pub mod embedded;

use crate::config::{BackendConfig, RetentionStream, ServerConfig};
use crate::open_error::OpenError;
use crate::store::Store;
use runakefli_model::{retention, TenantId};
use std::time::Duration;

/// Opens the backend `config` names: the embedded store under
/// `config.data_dir` (replaying its WAL), or a ClickHouse database
/// (creating or migrating its schema).
pub fn open(config: &ServerConfig) -> Result<Store, OpenError> {
    match &config.backend {
        BackendConfig::Embedded => embedded::open(config),
        BackendConfig::ClickHouse(c) => clickhouse::open(config, c),
    }
}

/// Parses configured `retention_stream` rules.
fn stream_rules(rules: &[RetentionStream]) -> Result<Vec<retention::StreamRule>, OpenError> {
    rules
        .iter()
        .map(|r| {
            let matchers = runakefli_logql::parse_matchers(&r.selector).map_err(|e| {
                OpenError::Config(format!("retention_stream selector {:?}: {e}", r.selector))
            })?;
            Ok(retention::StreamRule {
                matchers,
                priority: r.priority,
                period: r.period,
            })
        })
        .collect()
}

/// The store's retention settings from the server's.
pub fn retention_config(config: &ServerConfig) -> Result<retention::RetentionConfig, OpenError> {
    let mut tenants = std::collections::HashMap::new();
    for (tenant, o) in &config.tenant_overrides {
        TenantId::validate(tenant)
            .map_err(|e| OpenError::Config(format!("overrides: tenant {tenant:?}: {e}")))?;
        let streams = match &o.retention_stream {
            Some(r) => Some(stream_rules(r)?),
            None => None,
        };
        tenants.insert(
            tenant.clone(),
            retention::TenantRetention {
                period: o.retention_period,
                streams,
            },
        );
    }
    Ok(retention::RetentionConfig {
        default: retention::RetentionPolicy {
            period: config.retention_period,
            streams: stream_rules(&config.retention_streams)?,
        },
        tenants,
        max_disk_bytes: config.max_disk_bytes,
        interval: config.retention_interval.max(Duration::from_secs(1)),
    })
}
