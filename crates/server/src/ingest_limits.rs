//! Per-tenant ingestion limits, as Loki's distributor and ingesters apply them:
//!
//! - **Rate** (`ingestion_rate_mb`, `ingestion_burst_size_mb`): a token bucket
//!   per tenant holding up to the burst in bytes, refilled at the rate. A push
//!   whose line and structured-metadata bytes do not fit is refused whole with
//!   429 and Loki's `Ingestion rate limit exceeded for user …` message; nothing
//!   of it is stored. Off when the rate is 0 (the default: one process, no
//!   shared ingesters to protect).
//! - **Active streams** (`max_global_streams_per_user`): a stream is active
//!   while it received an entry within [`ACTIVE_STREAM_WINDOW`]. A push that
//!   would make more streams active than the limit has those new streams
//!   refused (their entries are not stored) while its other streams are
//!   stored, and is answered 429 with Loki's `Maximum active stream limit
//!   exceeded when trying to create stream …` for the first refused stream.
//!   The default limit (100,000) is far above Loki's 5,000; 0 turns it off.
//!
//! Both are checked per push under one lock per tenant; pushes running at the
//! same moment may take a tenant a few streams past its limit, never more than
//! one push's worth each.

use runakefli_model::{PushRequest, TenantId};
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a stream counts as active after its last entry: Loki keeps a
/// stream in its ingester until it has been idle for `chunk_idle_period`
/// (30 minutes by default) and its chunks are flushed.
pub const ACTIVE_STREAM_WINDOW: Duration = Duration::from_secs(30 * 60);

/// Default of `max_global_streams_per_user`.
pub const DEFAULT_MAX_STREAMS: usize = 100_000;

/// The limits of one tenant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TenantLimits {
    /// Bytes per second; 0: no rate limit.
    pub rate_bytes: f64,
    /// Bucket size in bytes (at least one push's worth of the rate).
    pub burst_bytes: f64,
    /// Active streams; 0: no limit.
    pub max_streams: usize,
}

/// Why a push was refused, with Loki's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The text of the 429 answer.
    pub message: String,
    /// The reason label of the refused-push metric (Loki's discard reasons).
    pub reason: &'static str,
}

#[derive(Debug)]
struct TenantState {
    tokens: f64,
    refilled: Instant,
    /// Active streams by fingerprint of their labels, with their last push.
    streams: HashMap<u64, Instant>,
    pruned: Instant,
}

/// The limits of every tenant and their state.
#[derive(Debug)]
pub struct IngestLimits {
    default: TenantLimits,
    overrides: HashMap<String, TenantLimits>,
    tenants: Mutex<HashMap<String, TenantState>>,
    keys: RandomState,
}

/// Line and structured-metadata bytes of a push (what Loki's rate counts).
pub fn push_bytes(req: &PushRequest) -> usize {
    req.streams
        .iter()
        .flat_map(|s| &s.entries)
        .map(|e| {
            e.line.len()
                + e.metadata
                    .iter()
                    .map(|(k, v)| k.len() + v.len())
                    .sum::<usize>()
        })
        .sum()
}

impl IngestLimits {
    /// Limits `default` for every tenant, `overrides` for some.
    pub fn new(default: TenantLimits, overrides: HashMap<String, TenantLimits>) -> Self {
        IngestLimits {
            default,
            overrides,
            tenants: Mutex::new(HashMap::new()),
            keys: RandomState::new(),
        }
    }

    fn limits(&self, tenant: &str) -> TenantLimits {
        self.overrides.get(tenant).copied().unwrap_or(self.default)
    }

    /// Applies the limits to a push about to be stored at `now`. `Err`: the
    /// whole push is refused (rate). `Ok(None)`: store all of it.
    /// `Ok(Some((streams, refusal)))`: the streams at those positions of
    /// `req` are over the active-stream limit; store the others, then answer
    /// the refusal.
    pub fn admit(
        &self,
        tenant: &TenantId,
        req: &PushRequest,
        now: Instant,
    ) -> Result<Option<(Vec<usize>, Refusal)>, Refusal> {
        let limits = self.limits(tenant.as_str());
        if limits.rate_bytes <= 0.0 && limits.max_streams == 0 {
            return Ok(None);
        }
        let mut all = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        let st = all
            .entry(tenant.as_str().to_string())
            .or_insert_with(|| TenantState {
                tokens: limits.burst_bytes.max(limits.rate_bytes),
                refilled: now,
                streams: HashMap::new(),
                pruned: now,
            });
        if limits.rate_bytes > 0.0 {
            let burst = limits.burst_bytes.max(limits.rate_bytes);
            let dt = now.saturating_duration_since(st.refilled).as_secs_f64();
            st.tokens = (st.tokens + dt * limits.rate_bytes).min(burst);
            st.refilled = now;
            let bytes = push_bytes(req) as f64;
            if bytes > st.tokens {
                return Err(Refusal {
                    message: format!(
                        "Ingestion rate limit exceeded for user {} (limit: {} bytes/sec) while attempting to ingest '{}' lines totaling '{}' bytes, reduce log volume or contact your Loki administrator to see if the limit can be increased",
                        tenant.as_str(),
                        limits.rate_bytes as u64,
                        req.entry_count(),
                        bytes as u64
                    ),
                    reason: "rate_limited",
                });
            }
            st.tokens -= bytes;
        }
        if limits.max_streams == 0 {
            return Ok(None);
        }
        if now.saturating_duration_since(st.pruned) >= ACTIVE_STREAM_WINDOW / 10 {
            st.streams
                .retain(|_, last| now.saturating_duration_since(*last) < ACTIVE_STREAM_WINDOW);
            st.pruned = now;
        }
        let mut refused: Option<(Vec<usize>, Refusal)> = None;
        for (i, s) in req.streams.iter().enumerate() {
            let key = self.keys.hash_one(&s.labels);
            if let Some(last) = st.streams.get_mut(&key) {
                *last = now;
                continue;
            }
            if st.streams.len() >= limits.max_streams {
                let (at, _) = refused.get_or_insert_with(|| (Vec::new(), Refusal {
                    message: format!(
                        "Maximum active stream limit exceeded when trying to create stream {}, reduce the number of active streams (reduce labels or reduce label values), or contact your Loki administrator to see if the limit can be increased, user: '{}'",
                        s.labels,
                        tenant.as_str()
                    ),
                    reason: "stream_limit",
                }));
                at.push(i);
                continue;
            }
            st.streams.insert(key, now);
        }
        Ok(refused)
    }

    /// Streams counted as active for `tenant` now.
    pub fn active_streams(&self, tenant: &str) -> usize {
        self.tenants
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(tenant)
            .map_or(0, |s| s.streams.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::{Entry, Labels, PushStream};

    fn req(streams: &[&str], line_bytes: usize) -> PushRequest {
        PushRequest {
            streams: streams
                .iter()
                .map(|app| PushStream {
                    labels: Labels::new(vec![("app".into(), app.to_string())]),
                    entries: vec![Entry {
                        ts: 1,
                        line: "x".repeat(line_bytes),
                        metadata: vec![],
                    }],
                })
                .collect(),
        }
    }

    fn limits(rate: f64, burst: f64, streams: usize) -> IngestLimits {
        IngestLimits::new(
            TenantLimits {
                rate_bytes: rate,
                burst_bytes: burst,
                max_streams: streams,
            },
            HashMap::new(),
        )
    }

    #[test]
    fn the_bucket_holds_the_burst_and_refills_at_the_rate() {
        let l = limits(1000.0, 3000.0, 0);
        let t = TenantId::new("t");
        let t0 = Instant::now();
        assert_eq!(l.admit(&t, &req(&["a"], 2000), t0), Ok(None));
        let e = l.admit(&t, &req(&["a"], 2000), t0).unwrap_err();
        assert_eq!(e.reason, "rate_limited");
        assert_eq!(
            e.message,
            "Ingestion rate limit exceeded for user t (limit: 1000 bytes/sec) while attempting to ingest '1' lines totaling '2000' bytes, reduce log volume or contact your Loki administrator to see if the limit can be increased"
        );
        // One second later 1000 more bytes fit: 1000 + 1000 left.
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(l.admit(&t, &req(&["a"], 2000), t1), Ok(None));
        // Other tenants have their own bucket.
        assert_eq!(
            l.admit(&TenantId::new("u"), &req(&["a"], 3000), t1),
            Ok(None)
        );
    }

    #[test]
    fn new_streams_past_the_limit_are_refused_and_the_rest_kept() {
        let l = limits(0.0, 0.0, 2);
        let t = TenantId::new("t");
        let now = Instant::now();
        assert_eq!(l.admit(&t, &req(&["a", "b"], 1), now), Ok(None));
        let r = req(&["a", "c", "b", "d"], 1);
        let (at, refusal) = l.admit(&t, &r, now).unwrap().unwrap();
        assert_eq!(at, vec![1, 3]);
        assert_eq!(refusal.reason, "stream_limit");
        assert_eq!(
            refusal.message,
            r#"Maximum active stream limit exceeded when trying to create stream {app="c"}, reduce the number of active streams (reduce labels or reduce label values), or contact your Loki administrator to see if the limit can be increased, user: 't'"#
        );
        assert_eq!(l.active_streams("t"), 2);
        // Once the old streams have been idle for the window, new ones fit.
        let later = now + ACTIVE_STREAM_WINDOW + Duration::from_secs(1);
        assert_eq!(l.admit(&t, &req(&["c", "d"], 1), later), Ok(None));
        assert_eq!(l.active_streams("t"), 2);
    }

    #[test]
    fn overrides_replace_the_default_and_zero_turns_limits_off() {
        let mut o = HashMap::new();
        o.insert(
            "big".to_string(),
            TenantLimits {
                rate_bytes: 0.0,
                burst_bytes: 0.0,
                max_streams: 0,
            },
        );
        let l = IngestLimits::new(
            TenantLimits {
                rate_bytes: 10.0,
                burst_bytes: 10.0,
                max_streams: 1,
            },
            o,
        );
        let now = Instant::now();
        assert!(l
            .admit(&TenantId::new("small"), &req(&["a"], 100), now)
            .is_err());
        assert_eq!(
            l.admit(&TenantId::new("big"), &req(&["a", "b", "c"], 100), now),
            Ok(None)
        );
        assert_eq!(l.active_streams("big"), 0, "not tracked when off");
    }
}
