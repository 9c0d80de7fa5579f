//! What every handler shares: settings, the backend ([`Store`]), the query engine.

use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::ingest_limits::{IngestLimits, TenantLimits};
use crate::loki_api::tail_slots::TailSlots;
use crate::metrics::{Metrics, Protocol};
use crate::open_error::OpenError;
use crate::query_gate::QueryGate;
use crate::store::Store;
use crate::time_window::TimeWindow;
use runakefli_engine::{Engine, QueryLimits};
use runakefli_ingest::PushLimits;
use runakefli_logql::ParseLimits;
use runakefli_model::StoreError;
use runakefli_model::{PushRequest, TenantId};
use std::sync::Arc;

const MIB: f64 = 1024.0 * 1024.0;

/// Shared server state.
pub struct AppState {
    /// Settings.
    pub config: ServerConfig,
    /// The backend: reads, writes and operations behind the seam's traits.
    pub store: Store,
    /// The LogQL engine over the backend.
    pub engine: Engine,
    /// Limits applied to every push.
    pub push_limits: PushLimits,
    /// Limits applied to every LogQL query and selector.
    pub parse_limits: ParseLimits,
    /// Admission of read requests (concurrency limit and queue).
    pub query_gate: QueryGate,
    /// Live tails open per tenant, and their cap.
    pub tail_slots: TailSlots,
    /// Entries stored behind the open tails' cursors, handed to them.
    pub tail_feed: Arc<crate::tail_feed::TailFeed>,
    /// Admission of HTTP push bodies by size ([`crate::push_gate`]).
    pub push_gate: Arc<crate::push_gate::PushGate>,
    /// The server's own counters for `/metrics`.
    pub metrics: Metrics,
    /// The accepted age of pushed entries.
    pub window: TimeWindow,
    /// Per-tenant ingestion rate and active streams.
    pub ingest_limits: IngestLimits,
    /// Read requests stopped because their client went away.
    pub cancelled_queries: Arc<std::sync::atomic::AtomicU64>,
    /// True while the server answers its own first query
    /// ([`crate::warm_up`]): `/ready` answers 503 meanwhile.
    pub warming_up: std::sync::atomic::AtomicBool,
    /// Credentials checked on every request when `--auth-file` is set
    /// ([`crate::auth`]); `None`: authentication off.
    pub auth: Option<Arc<crate::auth::Authenticator>>,
    /// The ruler, when `--rules-dir` is set ([`crate::ruler_api`]).
    pub ruler: Option<Arc<runakefli_ruler::Ruler>>,
}

impl AppState {
    /// Opens the configured backend ([`crate::backends::open`]: the embedded
    /// store under `config.data_dir`, replaying its WAL, or ClickHouse).
    pub fn open(mut config: ServerConfig) -> Result<Arc<AppState>, OpenError> {
        let auth = match &config.auth_file {
            Some(path) => Some(Arc::new(crate::auth::Authenticator::load(path)?)),
            None => None,
        };
        // With credentials the tenant is always the credential's.
        config.multi_tenant |= auth.is_some();
        let store = crate::backends::open(&config)?;
        let threads = runakefli_engine::parallel::start();
        tracing::debug!(threads, "query pool started");
        let engine = Engine::new(
            store.reads(),
            QueryLimits {
                max_entries_limit_per_query: config.max_entries_per_query,
                max_query_series: config.max_query_series,
                query_timeout: config.query_timeout,
                max_query_points: config.max_query_points,
            },
        );
        let push_limits = PushLimits {
            max_body_bytes: config.max_push_decompressed_bytes,
            max_line_bytes: config.max_line_bytes,
            max_label_names_per_series: config.max_labels_per_stream,
            max_label_name_length: config.max_label_name_bytes,
            max_label_value_length: config.max_label_value_bytes,
            max_entries_per_request: config.max_push_entries,
            max_expanded_bytes_per_request: config.max_push_expanded_bytes,
            discover_service_name: config.discover_service_name,
            discover_log_levels: config.discover_log_levels,
            ..PushLimits::default()
        };
        let parse_limits = ParseLimits {
            max_bytes: config.max_query_bytes,
            max_depth: config.max_query_depth,
        };
        let query_gate = QueryGate::new(
            config.max_concurrent_queries,
            config.max_queued_queries,
            config.query_queue_timeout,
        );
        let default_limits = TenantLimits {
            rate_bytes: config.ingestion_rate_mb.max(0.0) * MIB,
            burst_bytes: config.ingestion_burst_size_mb.max(0.0) * MIB,
            max_streams: config.max_global_streams_per_user,
        };
        let tenant_limits = config
            .tenant_overrides
            .iter()
            .filter(|(_, o)| {
                o.ingestion_rate_mb.is_some()
                    || o.ingestion_burst_size_mb.is_some()
                    || o.max_global_streams_per_user.is_some()
            })
            .map(|(t, o)| {
                let mut l = default_limits;
                if let Some(r) = o.ingestion_rate_mb {
                    l.rate_bytes = r.max(0.0) * MIB;
                }
                if let Some(b) = o.ingestion_burst_size_mb {
                    l.burst_bytes = b.max(0.0) * MIB;
                }
                if let Some(n) = o.max_global_streams_per_user {
                    l.max_streams = n;
                }
                (t.clone(), l)
            })
            .collect();
        let ingest_limits = IngestLimits::new(default_limits, tenant_limits);
        // The ruler queries through an engine of its own over the same
        // backend and limits as `/loki/api/v1/query`, outside the query
        // gate (rules are not refused for users' load).
        let ruler = match &config.ruler {
            Some(rc) => {
                let querier = Arc::new(Engine::new(store.reads(), engine.limits().clone()));
                let ruler = runakefli_ruler::Ruler::start(rc.clone(), querier, parse_limits)
                    .map_err(|source| OpenError::Thread {
                        what: "the ruler",
                        source,
                    })?;
                Some(ruler)
            }
            None => None,
        };
        Ok(Arc::new(AppState {
            ruler,
            ingest_limits,
            cancelled_queries: Default::default(),
            warming_up: Default::default(),
            auth,
            store,
            engine,
            push_limits,
            parse_limits,
            query_gate,
            tail_slots: TailSlots::new(config.max_concurrent_tail_requests),
            tail_feed: crate::tail_feed::TailFeed::new(),
            push_gate: Arc::new(crate::push_gate::PushGate::new(
                config.max_inflight_push_bytes,
                config.max_push_body_bytes,
            )),
            metrics: Metrics::default(),
            window: TimeWindow {
                max_age: config.reject_old_samples_max_age.filter(|d| !d.is_zero()),
                grace: config.creation_grace_period.filter(|d| !d.is_zero()),
            },
            config,
        }))
    }

    /// Appends a decoded push of `protocol` durably and counts it. Every
    /// protocol's push reaches the backend
    /// ([`Ingest`](runakefli_model::Ingest)) through here. A push over the
    /// tenant's ingestion rate is refused whole with 429; streams over its
    /// active-stream limit are left out and answered 429 once the others are
    /// stored ([`IngestLimits`], Loki's messages). Entries outside the
    /// accepted age ([`TimeWindow`]) are left out and answered 400 with
    /// Loki's message once the others are stored.
    pub fn append(
        &self,
        protocol: Protocol,
        tenant: &TenantId,
        request: &PushRequest,
    ) -> Result<(), ApiError> {
        let limited = |r: crate::ingest_limits::Refusal| {
            ApiError::too_many_requests(r.message).with_reason(r.reason)
        };
        match self
            .ingest_limits
            .admit(tenant, request, std::time::Instant::now())
        {
            Ok(None) => self.append_in_window(protocol, tenant, request),
            Err(r) => Err(limited(r)),
            Ok(Some((refused, r))) => {
                let mut kept = request.clone();
                let mut i = 0;
                kept.streams.retain(|_| {
                    i += 1;
                    !refused.contains(&(i - 1))
                });
                self.append_in_window(protocol, tenant, &kept)?;
                Err(limited(r))
            }
        }
    }

    /// An engine for one read request, over the backend read through a
    /// [`CancellableBackend`](crate::cancel::CancellableBackend) on `flag`.
    pub fn request_engine(&self, flag: Arc<std::sync::atomic::AtomicBool>) -> Engine {
        Engine::new(
            Arc::new(crate::cancel::CancellableBackend::new(
                self.store.reads(),
                flag,
                self.cancelled_queries.clone(),
            )),
            self.engine.limits().clone(),
        )
    }

    fn append_in_window(
        &self,
        protocol: Protocol,
        tenant: &TenantId,
        request: &PushRequest,
    ) -> Result<(), ApiError> {
        let now = crate::loki_api::params::now_ns();
        if self.window.admits_all(request, now) {
            return self.append_admitted(protocol, tenant, request);
        }
        let mut kept = request.clone();
        let refused = self.window.apply(&mut kept, now);
        self.append_admitted(protocol, tenant, &kept)?;
        match refused {
            Some(r) => Err(ApiError::bad_request(r.message).with_reason(r.reason)),
            None => Ok(()),
        }
    }

    fn append_admitted(
        &self,
        protocol: Protocol,
        tenant: &TenantId,
        request: &PushRequest,
    ) -> Result<(), ApiError> {
        if request.entry_count() == 0 {
            return Ok(());
        }
        self.store.writes().push(tenant, request)?;
        self.tail_feed.publish(tenant, request);
        let bytes = crate::ingest_limits::push_bytes(request);
        self.metrics.ingested(
            protocol,
            tenant.as_str(),
            request.entry_count() as u64,
            bytes as u64,
        );
        Ok(())
    }

    /// Flushes buffered data (the embedded store's memtables) before the
    /// process exits.
    pub fn shutdown(&self) -> Result<(), StoreError> {
        if let Some(r) = &self.ruler {
            r.stop();
        }
        self.store.ops().flush()
    }
}
