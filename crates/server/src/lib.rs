//! The HTTP front of Rúnakefli.
//!
//! Routes: the Loki API under `/loki/api/v1/` ([`loki_api`]), admin and health
//! endpoints ([`admin`]), the built-in web UI at `/` ([`ui`]). Handlers parse
//! HTTP, then hand blocking work (decoding, WAL appends, queries) to tokio's
//! blocking pool; storage and engine code is synchronous.
#![deny(missing_docs)]

pub mod admin;
pub mod auth;
pub mod backends;
pub mod cancel;
pub mod config;
pub mod error;
pub mod es_api;
pub mod ingest_limits;
pub mod jsonline_api;
pub mod loki_api;
pub mod metrics;
pub mod metrics_api;
pub mod open_error;
pub mod otlp_api;
pub mod push_gate;
pub mod query_gate;
pub mod ruler_api;
pub mod state;
pub mod store;
pub mod syslog;
pub mod tail_feed;
pub mod tenant;
pub mod time_window;
pub mod ui;
pub mod units;
pub mod warm_up;

/// TLS files of the ClickHouse backend (a private CA, a client certificate).
pub use backends::clickhouse::tls as clickhouse_tls;
pub use backends::clickhouse::Cluster as ClickHouseCluster;
pub use backends::clickhouse::Config as ClickHouseConfig;
pub use config::ServerConfig;
pub use error::ApiError;
pub use state::AppState;

use axum::Router;
use std::future::IntoFuture;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Builds the router over an opened state.
pub fn router(state: Arc<AppState>) -> Router {
    // Every HTTP push route, behind the in-flight push budget.
    let pushes = Router::new()
        .merge(loki_api::push_routes())
        .merge(otlp_api::routes())
        .merge(es_api::bulk_routes())
        .merge(jsonline_api::routes())
        .route_layer(axum::middleware::from_fn_with_state(
            state.push_gate.clone(),
            push_gate::limit,
        ));
    Router::new()
        .merge(loki_api::routes(state.clone()))
        .merge(admin::routes(state.clone()))
        .merge(pushes)
        .merge(es_api::routes())
        .merge(ruler_api::routes())
        .merge(ui::routes())
        .route("/metrics", axum::routing::get(metrics_api::metrics))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::layer::require,
        ))
        .layer(axum::middleware::from_fn(ui::tail_tenant_param))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics_api::track,
        ))
        .layer(axum::extract::DefaultBodyLimit::max(
            state.config.max_push_body_bytes,
        ))
        .with_state(state)
}

/// Opens the backend and serves HTTP until SIGINT or SIGTERM, then flushes and stops.
pub async fn serve(config: ServerConfig) -> std::io::Result<()> {
    let listen = config.listen;
    let state = tokio::task::spawn_blocking(move || AppState::open(config))
        .await
        .map_err(std::io::Error::other)?
        .map_err(std::io::Error::other)?;
    let syslog = syslog::SyslogListeners::bind(
        state.config.syslog_tcp_listen,
        state.config.syslog_udp_listen,
    )
    .await?;
    syslog.spawn(state.clone());
    if let Some(auth) = &state.auth {
        tracing::info!(
            users = auth.user_count(),
            tokens = auth.token_count(),
            open_paths = ?auth::layer::OPEN_PATHS,
            "authentication on: credentials decide the tenant"
        );
    }
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let shutdown = shutdown_signal()?;
    if let Some(ruler) = state.ruler.clone() {
        reload_on_sighup(ruler)?;
    }
    let address = listener.local_addr()?;
    tracing::info!(%address, "runakefli listening");
    let app = router(state.clone());
    let warm_up = state.config.warm_up;
    state.warming_up.store(warm_up, Ordering::Release);
    let serving = tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .into_future(),
    );
    if warm_up {
        let took = warm_up::run(address, state.metrics.warm_up_key()).await;
        state.warming_up.store(false, Ordering::Release);
        tracing::info!(?took, "warmed up: ready");
    }
    serving.await.map_err(std::io::Error::other)??;
    tracing::info!("shutting down: flushing in-memory data");
    tokio::task::spawn_blocking(move || state.shutdown())
        .await
        .map_err(std::io::Error::other)?
        .map_err(std::io::Error::other)?;
    Ok(())
}

/// Registers SIGINT and SIGTERM handlers now (so a signal that arrives
/// right after the "listening" line still shuts down gracefully, flushing)
/// and returns the future that completes on the first of them.
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {},
            _ = int.recv() => {},
        }
    })
}

/// Reloads the rule files on every SIGHUP.
fn reload_on_sighup(ruler: Arc<runakefli_ruler::Ruler>) -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            let r = ruler.clone();
            let problems = tokio::task::spawn_blocking(move || r.reload()).await;
            tracing::info!(problems = ?problems.unwrap_or_default(), "rules reloaded on SIGHUP");
        }
    });
    Ok(())
}

/// Runs blocking work on the blocking pool, mapping a panic or cancellation to a 500.
pub async fn blocking<T, F>(f: F) -> Result<T, ApiError>
where
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("internal error: {e}")))?
}
