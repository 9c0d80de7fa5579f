//! The query engine's entry points.

use crate::error::EngineError;
use crate::labelset::LabelSet;
use crate::limits::QueryLimits;
use crate::options::EngineOptions;
use crate::result::{QueryResponse, QueryResult, QueryStats};
use crate::scope::{LogWindow, QueryScope};
use crate::{log_query, metadata, metric};
use runakefli_logql::Expr;
use runakefli_model::{Backend, Direction, Matcher, TenantId, Timestamp};
use std::sync::Arc;
use std::time::Instant;

/// Evaluates LogQL over a storage backend.
pub struct Engine {
    backend: Arc<dyn Backend>,
    limits: QueryLimits,
    options: EngineOptions,
}

/// What a `query_range` request asks besides its query (Loki's parameters):
/// the range `[start, end)` in nanoseconds, the metric queries' `step`
/// (nanoseconds) and the log queries' `limit` and `direction`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeRequest {
    /// First nanosecond of the range.
    pub start: Timestamp,
    /// End of the range (exclusive for log queries, the last step for metric queries).
    pub end: Timestamp,
    /// Step between evaluations of a metric query, nanoseconds (> 0).
    pub step: i64,
    /// Most lines a log query returns.
    pub limit: u32,
    /// Order of a log query's lines.
    pub direction: Direction,
}

/// What an `/index/volume` request groups and how much it returns: the
/// streams `matchers` select, grouped by `target_labels` (Loki's
/// `targetLabels`), per label when `by_labels` (`aggregateBy=labels`), at
/// most `limit` groups.
#[derive(Clone, Copy, Debug)]
pub struct VolumeRequest<'a> {
    /// The selector's matchers.
    pub matchers: &'a [Matcher],
    /// The labels to group by (empty: every stream label).
    pub target_labels: &'a [String],
    /// Group per label rather than per series.
    pub by_labels: bool,
    /// Most groups returned.
    pub limit: usize,
}

impl VolumeRequest<'_> {
    fn grouping(&self) -> metadata::VolumeGrouping {
        metadata::VolumeGrouping::new(self.matchers, self.target_labels, self.by_labels)
    }
}

impl Engine {
    /// An engine over `backend` with `limits` and the default options.
    pub fn new(backend: Arc<dyn Backend>, limits: QueryLimits) -> Self {
        Engine::with_options(backend, limits, EngineOptions::default())
    }

    /// An engine over `backend` with `limits` and `options`.
    pub fn with_options(
        backend: Arc<dyn Backend>,
        limits: QueryLimits,
        options: EngineOptions,
    ) -> Self {
        Engine {
            backend,
            limits,
            options,
        }
    }

    /// An engine over the same backend, with the same options, and other `limits`.
    pub fn with_limits(&self, limits: QueryLimits) -> Self {
        Engine {
            backend: self.backend.clone(),
            limits,
            options: self.options,
        }
    }

    /// The configured limits.
    pub fn limits(&self) -> &QueryLimits {
        &self.limits
    }

    /// The options the engine was built with.
    pub fn options(&self) -> &EngineOptions {
        &self.options
    }

    /// The scope of a request for `tenant` that must be done by `deadline`.
    pub(crate) fn scope<'a>(&'a self, tenant: &'a TenantId, deadline: Instant) -> QueryScope<'a> {
        QueryScope {
            backend: self.backend.as_ref(),
            tenant,
            deadline,
            fast_paths: self.options.fast_paths,
        }
    }

    /// The storage backend queries run against.
    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    fn check_limit(&self, limit: u32) -> Result<(), EngineError> {
        if limit > self.limits.max_entries_limit_per_query
            && self.limits.max_entries_limit_per_query > 0
        {
            return Err(EngineError::EntriesLimit {
                requested: limit,
                max: self.limits.max_entries_limit_per_query,
            });
        }
        Ok(())
    }

    /// `query_range`: a log query over `[start, end)`, or a metric query
    /// evaluated at `start, start+step, …, end` (see [`RangeRequest`]).
    pub fn query_range(
        &self,
        tenant: &TenantId,
        expr: &Expr,
        request: RangeRequest,
    ) -> Result<QueryResponse, EngineError> {
        let RangeRequest {
            start: start_ns,
            end: end_ns,
            step: step_ns,
            limit,
            direction,
        } = request;
        let t0 = Instant::now();
        let mut stats = QueryStats::default();
        let result = match expr {
            Expr::Log(log) => {
                self.check_limit(limit)?;
                let window = LogWindow {
                    start: start_ns,
                    end: end_ns,
                    limit: limit as usize,
                    direction,
                };
                let scope = self.scope(tenant, t0 + self.limits.query_timeout);
                QueryResult::Streams(log_query::run(&scope, log, window, &mut stats)?)
            }
            Expr::Sample(s) => {
                if step_ns <= 0 {
                    return Err(EngineError::BadRequest(
                        "zero or negative query resolution step widths are not accepted. Try a positive integer".into(),
                    ));
                }
                let steps = metric::Steps {
                    start: start_ns,
                    end: end_ns,
                    step: step_ns,
                };
                metric::eval_range(
                    &self.metric_scope(tenant),
                    &self.limits,
                    s,
                    steps,
                    &mut stats,
                )?
            }
        };
        stats.exec_time_secs = t0.elapsed().as_secs_f64();
        Ok(QueryResponse { result, stats })
    }

    /// `query`: a metric query at one instant. Log queries are refused, as Loki does.
    pub fn query_instant(
        &self,
        tenant: &TenantId,
        expr: &Expr,
        time_ns: Timestamp,
        limit: u32,
        direction: Direction,
    ) -> Result<QueryResponse, EngineError> {
        let _ = direction;
        let t0 = Instant::now();
        let mut stats = QueryStats::default();
        let result = match expr {
            Expr::Log(_) => {
                self.check_limit(limit)?;
                return Err(EngineError::BadRequest(
                    "log queries are not supported as an instant query type, please change your query to a range query type".into(),
                ));
            }
            Expr::Sample(s) => metric::eval_instant(
                &self.metric_scope(tenant),
                &self.limits,
                s,
                time_ns,
                &mut stats,
            )?,
        };
        stats.exec_time_secs = t0.elapsed().as_secs_f64();
        Ok(QueryResponse { result, stats })
    }

    /// `/series`: label sets of streams matching any selector with entries in `[start, end)`.
    pub fn series(
        &self,
        tenant: &TenantId,
        selectors: &[Vec<Matcher>],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<LabelSet>, EngineError> {
        metadata::series(
            self.backend.as_ref(),
            tenant,
            selectors,
            start,
            end,
            self.deadline(),
        )
    }

    /// The scope of a metric query for `tenant` starting now.
    fn metric_scope<'a>(&'a self, tenant: &'a TenantId) -> QueryScope<'a> {
        self.scope(tenant, self.deadline())
    }

    /// When a request starting now must be done ([`QueryLimits::query_timeout`]).
    fn deadline(&self) -> Instant {
        Instant::now() + self.limits.query_timeout
    }

    /// `Timeout` when a request that started at `t0` has run past its budget
    /// (for answers the index gives in one call, checked once it returns).
    fn check_elapsed(&self, t0: Instant) -> Result<(), EngineError> {
        if t0.elapsed() > self.limits.query_timeout {
            return Err(EngineError::Timeout);
        }
        Ok(())
    }

    /// `/labels`: label names, optionally of the streams matching `matchers`.
    pub fn labels(
        &self,
        tenant: &TenantId,
        matchers: Option<&[Matcher]>,
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, EngineError> {
        let t0 = Instant::now();
        let names = metadata::label_names(self.backend.as_ref(), tenant, matchers, start, end)?;
        self.check_elapsed(t0)?;
        Ok(names)
    }

    /// `/index/stats` for one selector.
    pub fn index_stats(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<metadata::IndexStats, EngineError> {
        metadata::index_stats(
            self.backend.as_ref(),
            tenant,
            matchers,
            start,
            end,
            self.deadline(),
        )
    }

    /// `/index/volume`: bytes per group over `[start, end]`, largest first
    /// (see [`metadata::volume`]).
    pub fn volume(
        &self,
        tenant: &TenantId,
        request: &VolumeRequest<'_>,
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<(LabelSet, u64)>, EngineError> {
        metadata::volume(
            &self.scope(tenant, self.deadline()),
            &request.grouping(),
            (start, end),
            request.limit,
        )
    }

    /// `/index/volume_range`: the whole range's volume and each window's
    /// (see [`metadata::volume_range`]).
    pub fn volume_range(
        &self,
        tenant: &TenantId,
        request: &VolumeRequest<'_>,
        range: (Timestamp, Timestamp),
        windows: &[(Timestamp, Timestamp)],
    ) -> Result<metadata::VolumeRange, EngineError> {
        metadata::volume_range(
            &self.scope(tenant, self.deadline()),
            &request.grouping(),
            range,
            windows,
            request.limit,
        )
    }

    /// `/label/<name>/values`.
    pub fn label_values(
        &self,
        tenant: &TenantId,
        name: &str,
        matchers: Option<&[Matcher]>,
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, EngineError> {
        let t0 = Instant::now();
        let values =
            metadata::label_values(self.backend.as_ref(), tenant, name, matchers, start, end)?;
        self.check_elapsed(t0)?;
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemBackend;
    use runakefli_logql::parse_expr;
    use runakefli_model::{BackendError, EntryBatch, ScanControl, ScanRequest, StreamInfo};
    use std::sync::Mutex;

    const S: i64 = 1_000_000_000;

    fn backend() -> Arc<MemBackend> {
        let b = Arc::new(MemBackend::new());
        let body = br#"{"streams":[
            {"stream":{"app":"a"},"values":[["1000000000","x=1 level=info"],["2000000000","x=2 level=error"],["2000000000","x=3 level=info"]]},
            {"stream":{"app":"b"},"values":[["2000000000","{\"x\":5}"],["3000000000","not json"]]}
        ]}"#;
        b.push(
            &TenantId::default_tenant(),
            &MemBackend::parse_push_json(body).unwrap(),
        );
        b
    }

    fn engine() -> Engine {
        Engine::new(backend(), QueryLimits::default())
    }

    fn lines(r: &QueryResponse) -> Vec<(i64, String)> {
        match &r.result {
            QueryResult::Streams(s) => s.iter().flat_map(|s| s.entries.clone()).collect(),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn log_query_limit_direction_and_window() {
        let e = engine();
        let t = TenantId::default_tenant();
        let q = parse_expr(r#"{app=~"a|b"}"#).unwrap();
        let r = e
            .query_range(
                &t,
                &q,
                crate::RangeRequest {
                    start: 0,
                    end: 3 * S,
                    step: 0,
                    limit: 2,
                    direction: Direction::Backward,
                },
            )
            .unwrap();
        // End is exclusive; same-timestamp entries come newest-pushed first.
        let mut got = lines(&r);
        got.sort_by_key(|e| std::cmp::Reverse(e.0));
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|(ts, _)| *ts == 2 * S));
        let r = e
            .query_range(
                &t,
                &q,
                crate::RangeRequest {
                    start: 0,
                    end: 10 * S,
                    step: 0,
                    limit: 1,
                    direction: Direction::Forward,
                },
            )
            .unwrap();
        assert_eq!(lines(&r), vec![(S, "x=1 level=info".to_string())]);
        assert_eq!(r.stats.entries_returned, 1);
    }

    #[test]
    fn limits_and_instant_log_queries_are_refused() {
        let e = engine();
        let t = TenantId::default_tenant();
        let q = parse_expr(r#"{app="a"}"#).unwrap();
        let err = e
            .query_range(
                &t,
                &q,
                crate::RangeRequest {
                    start: 0,
                    end: S,
                    step: 0,
                    limit: 6000,
                    direction: Direction::Backward,
                },
            )
            .unwrap_err();
        assert_eq!(err.status(), 400);
        assert!(err.to_string().contains("(6000 > 5000)"));
        assert_eq!(
            e.query_instant(&t, &q, S, 10, Direction::Backward)
                .unwrap_err()
                .status(),
            400
        );
        let m = parse_expr(r#"count_over_time({app="a"}[1s])"#).unwrap();
        assert_eq!(
            e.query_range(
                &t,
                &m,
                crate::RangeRequest {
                    start: 0,
                    end: S,
                    step: 0,
                    limit: 10,
                    direction: Direction::Backward
                }
            )
            .unwrap_err()
            .status(),
            400
        );
    }

    #[test]
    fn metric_windows_and_pipeline_errors() {
        let e = engine();
        let t = TenantId::default_tenant();
        let q = parse_expr(r#"sum by (level) (count_over_time({app="a"} | logfmt [2s]))"#).unwrap();
        let r = e
            .query_range(
                &t,
                &q,
                crate::RangeRequest {
                    start: S,
                    end: 3 * S,
                    step: S,
                    limit: 100,
                    direction: Direction::Backward,
                },
            )
            .unwrap();
        let QueryResult::Matrix(m) = r.result else {
            panic!("matrix expected")
        };
        let info = m
            .iter()
            .find(|s| s.labels.get("level") == Some("info"))
            .unwrap();
        // Windows (t-2s, t]: info entries at 1s and 2s.
        assert_eq!(info.points, vec![(1000, 1.0), (2000, 2.0), (3000, 1.0)]);
        let bad = parse_expr(r#"count_over_time({app="b"} | json [5s])"#).unwrap();
        let err = e
            .query_instant(&t, &bad, 4 * S, 100, Direction::Backward)
            .unwrap_err();
        assert_eq!(err.status(), 400);
        assert!(err.to_string().starts_with(
            "pipeline error: 'JSONParserErr' for series: '{__error__=\"JSONParserErr\""
        ));
        let scalar = parse_expr("2 ^ 3 ^ 2").unwrap();
        let r = e
            .query_instant(&t, &scalar, 4 * S, 100, Direction::Backward)
            .unwrap();
        assert_eq!(r.result, QueryResult::Scalar(4000, 512.0));
    }

    /// Loki's unwrap (`streamLabelSampleExtractor.Process`): a row whose
    /// label is missing or empty gives no sample and no error, even after a
    /// parser error; a failing row's series keeps all its labels (grouping
    /// and the unwrapped label included), and the series named is one failing
    /// at the first step whose window holds a failure.
    #[test]
    fn unwrap_errors_and_missing_values_as_loki() {
        let b = Arc::new(MemBackend::new());
        let body = br#"{"streams":[
            {"stream":{"app":"u","pod":"p1"},"values":[["1000000000","v=1"],["2000000000","v="],["3000000000","not=here"],["4000000000","{\"bad"],["9000000000","v=oops"]]},
            {"stream":{"app":"u","pod":"p2"},"values":[["5000000000","v=2"],["6000000000","v=zz"]]}
        ]}"#;
        let t = TenantId::default_tenant();
        b.push(&t, &MemBackend::parse_push_json(body).unwrap());
        let e = Engine::new(b, QueryLimits::default());
        // Before the failures: the empty, missing and unparsable-line rows
        // add nothing and raise nothing.
        let q = parse_expr(r#"sum_over_time({app="u"} | logfmt | unwrap v [4s]) by (pod)"#)
            .unwrap_err();
        assert!(q.to_string().contains("grouping not allowed"));
        let q =
            parse_expr(r#"max_over_time({app="u"} | logfmt --strict | unwrap v [4s]) by (pod)"#)
                .unwrap();
        let r = e
            .query_instant(&t, &q, 4 * S, 100, Direction::Backward)
            .unwrap();
        let QueryResult::Vector(v) = r.result else {
            panic!("vector expected")
        };
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].labels.get("pod"), Some("p1"));
        assert_eq!(v[0].value, 1.0);
        // Over the whole range the first failure in time is p2's at 6 s.
        let err = e
            .query_range(
                &t,
                &q,
                crate::RangeRequest {
                    start: 4 * S,
                    end: 10 * S,
                    step: S,
                    limit: 100,
                    direction: Direction::Backward,
                },
            )
            .unwrap_err();
        assert_eq!(err.status(), 400);
        assert!(
            err.to_string().starts_with(
                "pipeline error: 'SampleExtractionErr' for series: '{__error__=\"SampleExtractionErr\", __error_details__=\"strconv.ParseFloat: parsing \\\"zz\\\": invalid syntax\", app=\"u\", pod=\"p2\", v=\"zz\"}'"
            ),
            "{err}"
        );
    }

    #[test]
    fn timeout_stops_the_scan() {
        let limits = QueryLimits {
            query_timeout: std::time::Duration::ZERO,
            ..QueryLimits::default()
        };
        let e = Engine::new(backend(), limits);
        let t = TenantId::default_tenant();
        let q = parse_expr(r#"{app="a"}"#).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(matches!(
            e.query_range(
                &t,
                &q,
                crate::RangeRequest {
                    start: 0,
                    end: 10 * S,
                    step: 0,
                    limit: 10,
                    direction: Direction::Backward
                }
            ),
            Err(EngineError::Timeout)
        ));
    }

    struct Recorder {
        inner: Arc<MemBackend>,
        seen: Mutex<Vec<Vec<String>>>,
    }

    impl Backend for Recorder {
        fn streams(
            &self,
            t: &TenantId,
            m: &[Matcher],
            s: Timestamp,
            e: Timestamp,
        ) -> Result<Vec<StreamInfo>, BackendError> {
            self.inner.streams(t, m, s, e)
        }
        fn label_names(
            &self,
            t: &TenantId,
            s: Timestamp,
            e: Timestamp,
        ) -> Result<Vec<String>, BackendError> {
            self.inner.label_names(t, s, e)
        }
        fn label_values(
            &self,
            t: &TenantId,
            n: &str,
            m: &[Matcher],
            s: Timestamp,
            e: Timestamp,
        ) -> Result<Vec<String>, BackendError> {
            self.inner.label_values(t, n, m, s, e)
        }
        fn scan(
            &self,
            r: &ScanRequest,
            v: &mut dyn FnMut(&StreamInfo, EntryBatch) -> ScanControl,
        ) -> Result<(), BackendError> {
            self.seen
                .lock()
                .unwrap()
                .push(r.required_substrings.clone());
            self.inner.scan(r, v)
        }
    }

    fn runakefli_engine_shards() -> usize {
        crate::parallel::SHARDS as usize
    }

    #[test]
    fn plain_contains_filters_become_scan_hints() {
        let rec = Arc::new(Recorder {
            inner: backend(),
            seen: Mutex::new(Vec::new()),
        });
        let e = Engine::new(rec.clone(), QueryLimits::default());
        let t = TenantId::default_tenant();
        let q = parse_expr(r#"{app="a"} | logfmt |= "x=" |~ "1" | line_format "{{.x}}" |= "2""#)
            .unwrap();
        let r = e
            .query_range(
                &t,
                &q,
                crate::RangeRequest {
                    start: 0,
                    end: 10 * S,
                    step: 0,
                    limit: 10,
                    direction: Direction::Backward,
                },
            )
            .unwrap();
        assert!(lines(&r).is_empty());
        // Every shard's scan gets the hints: the `|=` operand before
        // `line_format` and the literal the `|~` regexp requires.
        let seen = rec.seen.lock().unwrap();
        assert_eq!(seen.len(), runakefli_engine_shards());
        assert!(seen
            .iter()
            .all(|s| *s == vec!["1".to_string(), "x=".to_string()]));
    }
}
