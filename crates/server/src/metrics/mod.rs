//! The server's counters, gauges and histograms and the page `GET /metrics`
//! answers ([`crate::metrics_api`]), in the Prometheus text exposition
//! format (version 0.0.4).
//!
//! What is counted where:
//! - lines and bytes ingested: [`crate::state::AppState::append`], the one
//!   place every protocol's decoded push reaches the store;
//! - rejected pushes and query latencies: [`Metrics::track`], the layer
//!   around every route, which classifies the request path and reads the
//!   failure reason the error left in the response
//!   ([`crate::error::ErrorReason`]);
//! - everything about the backend (the embedded store's WAL, memtable,
//!   parts, merges and disk; ClickHouse's plans answered in SQL or declined,
//!   rows shipped, push batches): written by its [`BackendMetrics`] (see
//!   [`crate::backends`]) when `/metrics` is scraped.
//!
//! Names follow Prometheus conventions: counters end in `_total`, durations
//! are `_seconds`, sizes `_bytes`.

mod text;

use crate::error::ErrorReason;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::Instant;
pub use text::Exposition;

/// The fixed-bucket latency histogram of the storage crate, which keeps the
/// embedded store's fsync times in it; the server keeps its query latencies
/// in it too.
pub use runakefli_storage::stats::{Histogram, HistogramSnapshot};

/// What the rest of the server shows on `/metrics`, read when it is scraped.
pub struct Scrape<'a> {
    /// Read requests stopped because their client went away, since start.
    pub cancelled_queries: u64,
    /// Read requests waiting for a query slot now.
    pub queries_queued: usize,
    /// Bytes charged to the in-flight push budget now.
    pub push_inflight_bytes: usize,
    /// The backend's own metric families, when it has some.
    pub backend: Option<&'a dyn BackendMetrics>,
    /// The ruler's figures, when the ruler runs.
    pub ruler: Option<&'a runakefli_ruler::metrics::RulerMetrics>,
}

/// A push protocol, the `protocol` label of the ingestion metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protocol {
    /// Loki push (protobuf or JSON).
    Loki,
    /// OpenTelemetry logs (OTLP/HTTP).
    Otlp,
    /// Elasticsearch `_bulk`.
    Elasticsearch,
    /// JSON lines (`/insert/jsonline`).
    Jsonline,
    /// Syslog over TCP or UDP.
    Syslog,
}

impl Protocol {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Loki => "loki",
            Protocol::Otlp => "otlp",
            Protocol::Elasticsearch => "elasticsearch",
            Protocol::Jsonline => "jsonline",
            Protocol::Syslog => "syslog",
        }
    }

    /// The protocol an HTTP push path belongs to.
    pub fn of_path(path: &str) -> Option<Protocol> {
        match path {
            "/loki/api/v1/push" | "/api/prom/push" => Some(Protocol::Loki),
            "/otlp/v1/logs" | "/v1/logs" => Some(Protocol::Otlp),
            "/insert/jsonline" => Some(Protocol::Jsonline),
            p if p.ends_with("/_bulk") => Some(Protocol::Elasticsearch),
            _ => None,
        }
    }
}

/// The read endpoints whose latency is measured (`endpoint` label).
pub const QUERY_ENDPOINTS: &[&str] = &[
    "query_range",
    "query",
    "labels",
    "label_values",
    "series",
    "index_stats",
    "index_volume",
];

/// The `endpoint` label of a read path.
fn endpoint_of(path: &str) -> Option<usize> {
    let name = match path.strip_prefix("/loki/api/v1/")? {
        "query_range" => "query_range",
        "query" => "query",
        "labels" | "label" => "labels",
        "series" => "series",
        "index/stats" => "index_stats",
        "index/volume" | "index/volume_range" => "index_volume",
        p if p.starts_with("label/") && p.ends_with("/values") => "label_values",
        _ => return None,
    };
    QUERY_ENDPOINTS.iter().position(|e| *e == name)
}

/// Counters kept by the server itself (the store keeps its own).
#[derive(Debug)]
pub struct Metrics {
    /// (protocol, tenant) → (lines, bytes of lines and structured metadata).
    ingested: Mutex<BTreeMap<(Protocol, String), (u64, u64)>>,
    /// (protocol, reason) → refused push requests.
    rejected: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    /// One per [`QUERY_ENDPOINTS`] entry.
    query_seconds: Vec<Histogram>,
    /// (endpoint, reason) → failed read requests.
    query_failures: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    /// Read requests being answered (waiting for a slot or running).
    in_flight: AtomicI64,
    started: Instant,
    /// The value of [`WARM_UP_HEADER`] on the server's own warm-up requests
    /// ([`crate::warm_up`]), which are not counted; random per process.
    warm_up_key: u64,
}

/// Header marking the server's own warm-up requests (with
/// [`Metrics::warm_up_key`]).
pub const WARM_UP_HEADER: &str = "x-runakefli-warm-up";

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            ingested: Mutex::default(),
            rejected: Mutex::default(),
            query_seconds: QUERY_ENDPOINTS
                .iter()
                .map(|_| Histogram::default())
                .collect(),
            query_failures: Mutex::default(),
            in_flight: AtomicI64::new(0),
            started: Instant::now(),
            warm_up_key: {
                use std::hash::{BuildHasher, Hasher};
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_u128(
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap_or_default()
                        .as_nanos(),
                );
                h.finish()
            },
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Metrics {
    /// The key the server's own warm-up requests carry in
    /// [`WARM_UP_HEADER`] so they are not counted.
    pub fn warm_up_key(&self) -> u64 {
        self.warm_up_key
    }

    /// Whether `req` is one of the server's own warm-up requests.
    fn is_warm_up(&self, req: &Request) -> bool {
        req.headers()
            .get(WARM_UP_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            == Some(self.warm_up_key)
    }

    /// Counts an acknowledged push.
    pub fn ingested(&self, protocol: Protocol, tenant: &str, lines: u64, bytes: u64) {
        let mut m = lock(&self.ingested);
        let e = m.entry((protocol, tenant.to_string())).or_default();
        e.0 += lines;
        e.1 += bytes;
    }

    /// Counts a refused push.
    pub fn rejected(&self, protocol: Protocol, reason: &'static str) {
        *lock(&self.rejected)
            .entry((protocol.as_str(), reason))
            .or_default() += 1;
    }

    /// Writes every metric, the store's and the ruler's included, in the
    /// text format.
    pub fn render(&self, scrape: Scrape<'_>) -> String {
        let mut x = Exposition::default();
        x.counter(
            "runakefli_queries_cancelled_total",
            "Read requests stopped because their client disconnected.",
            scrape.cancelled_queries as f64,
        );
        x.family(
            "runakefli_ingested_lines_total",
            "counter",
            "Log lines acknowledged, by push protocol and tenant.",
        );
        let ingested = lock(&self.ingested).clone();
        for ((p, t), (lines, _)) in &ingested {
            x.sample(
                "",
                &[("protocol", p.as_str()), ("tenant", t)],
                *lines as f64,
            );
        }
        x.family(
            "runakefli_ingested_bytes_total",
            "counter",
            "Bytes of log lines and structured metadata acknowledged, by push protocol and tenant.",
        );
        for ((p, t), (_, bytes)) in &ingested {
            x.sample(
                "",
                &[("protocol", p.as_str()), ("tenant", t)],
                *bytes as f64,
            );
        }
        x.family(
            "runakefli_rejected_requests_total",
            "counter",
            "Push requests refused, by protocol and reason; nothing of them was stored.",
        );
        for ((p, r), n) in lock(&self.rejected).iter() {
            x.sample("", &[("protocol", p), ("reason", r)], *n as f64);
        }
        x.family(
            "runakefli_query_duration_seconds",
            "histogram",
            "Time to answer a read request (queue wait included), by endpoint.",
        );
        for (e, h) in QUERY_ENDPOINTS.iter().zip(&self.query_seconds) {
            x.histogram(&[("endpoint", e)], &h.snapshot());
        }
        x.family(
            "runakefli_query_failures_total",
            "counter",
            "Read requests answered with an error, by endpoint and reason.",
        );
        for ((e, r), n) in lock(&self.query_failures).iter() {
            x.sample("", &[("endpoint", e), ("reason", r)], *n as f64);
        }
        x.gauge(
            "runakefli_queries_in_flight",
            "Read requests being answered now (running or waiting for a slot).",
            self.in_flight.load(Ordering::Relaxed) as f64,
        );
        x.gauge(
            "runakefli_queries_queued",
            "Read requests waiting for a query slot now.",
            scrape.queries_queued as f64,
        );
        x.gauge(
            "runakefli_push_inflight_bytes",
            "Bytes of push bodies (HTTP) and syslog messages being received or stored now (limit: --max-inflight-push-bytes).",
            scrape.push_inflight_bytes as f64,
        );
        if let Some(backend) = scrape.backend {
            backend.render(&mut x);
        }
        x.gauge(
            "runakefli_uptime_seconds",
            "Seconds since the server started.",
            self.started.elapsed().as_secs_f64(),
        );
        let mut out = x.finish();
        if let Some(r) = scrape.ruler {
            r.write(&mut out);
        }
        out
    }
}

/// A backend's own metric families, written at scrape time after the
/// server's (none for a backend without them).
pub trait BackendMetrics: Send + Sync {
    /// Writes the families and their samples, read now.
    fn render(&self, x: &mut Exposition);
}

/// Decrements the in-flight gauge when a read request ends, however it ends.
struct InFlight<'a>(&'a AtomicI64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    /// The layer around every route: counts refused pushes by reason, times
    /// read requests per endpoint and counts them while they run.
    pub async fn track(&self, req: Request, next: Next) -> Response {
        if self.is_warm_up(&req) {
            return next.run(req).await;
        }
        let path = req.uri().path();
        if let Some(protocol) = Protocol::of_path(path) {
            let resp = next.run(req).await;
            if resp.status().is_client_error() || resp.status().is_server_error() {
                self.rejected(protocol, reason_of(&resp));
            }
            return resp;
        }
        let Some(endpoint) = endpoint_of(path) else {
            return next.run(req).await;
        };
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        let _guard = InFlight(&self.in_flight);
        let t0 = Instant::now();
        let resp = next.run(req).await;
        self.query_seconds[endpoint].observe(t0.elapsed());
        if resp.status().is_client_error() || resp.status().is_server_error() {
            *lock(&self.query_failures)
                .entry((QUERY_ENDPOINTS[endpoint], reason_of(&resp)))
                .or_default() += 1;
        }
        resp
    }
}

/// The reason an error response carries, or one derived from its status.
fn reason_of(resp: &Response) -> &'static str {
    match resp.extensions().get::<ErrorReason>() {
        Some(r) => r.0,
        None => crate::error::ApiError::new(resp.status().as_u16(), "").reason(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_classified() {
        assert_eq!(Protocol::of_path("/loki/api/v1/push"), Some(Protocol::Loki));
        assert_eq!(Protocol::of_path("/v1/logs"), Some(Protocol::Otlp));
        assert_eq!(
            Protocol::of_path("/es/_bulk"),
            Some(Protocol::Elasticsearch)
        );
        assert_eq!(Protocol::of_path("/loki/api/v1/query"), None);
        let ep = |p| endpoint_of(p).map(|i| QUERY_ENDPOINTS[i]);
        assert_eq!(ep("/loki/api/v1/query_range"), Some("query_range"));
        assert_eq!(ep("/loki/api/v1/label/app/values"), Some("label_values"));
        assert_eq!(ep("/loki/api/v1/index/volume_range"), Some("index_volume"));
        assert_eq!(ep("/loki/api/v1/push"), None);
        assert_eq!(ep("/metrics"), None);
    }
}
