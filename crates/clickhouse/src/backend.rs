//! [`ClickHouseBackend`]: `model::Backend` over the tables of [`crate::schema`],
//! plus pushes. Plans the SQL of [`crate::sql`] cannot translate exactly are
//! declined (`Ok(None)`), so the engine scans and evaluates them itself.

use crate::buckets::{BucketReader, MetricLegs, DEFAULT_RESIDUAL_BUDGET};
use crate::client::{Client, ReadProgress, Request};
use crate::deletes::Book;
use crate::group_commit::{Backlog, BatchLimits, GroupCommit, PushStats};
use crate::housekeeping::{self, Housekeeping, Jobs};
use crate::insert::encode_push;
use crate::lines::{LinesPaging, LinesReader};
use crate::push::PushRetry;
use crate::retention::{self, RetentionReport};
use crate::rows::{i64_of, str_of, u64_of};
use crate::scan::ScanBatcher;
use crate::selector::Split;
use crate::sql::{self, RowMask, StreamSelect};
use crate::stats::{Counters, HousekeepingCounters, HousekeepingStats, SqlStats};
use crate::stream_catalog::{kept_stream, StreamCatalog};
use crate::Error;
use runakefli_model::deletes::{CancelRefusal, DeleteRequest};
use runakefli_model::plan::{AnswerData, PlanAnswer, PlanOutput, PlanStats, QueryPlan};
use runakefli_model::{
    Backend, BackendError, EntryBatch, Matcher, PushRequest, ScanControl, ScanRequest,
    StreamBounds, StreamInfo, StreamTotals, TenantId, Timestamp,
};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A ClickHouse database as a Rúnakefli backend.
pub struct ClickHouseBackend {
    client: Client,
    next_seq: AtomicU64,
    counters: Counters,
    retry: PushRetry,
    /// Pushes waiting for ClickHouse, written in shared inserts.
    commits: GroupCommit,
    /// Delete requests, as stored in `delete_requests` (`crate::deletes`).
    deletes: Book,
    /// Retention and the delete cancellation period.
    housekeeping: Housekeeping,
    /// How lines plans are paged (`crate::lines`).
    lines_paging: LinesPaging,
    /// How bucket plans are split into legs read at once (`crate::buckets`).
    metric_legs: MetricLegs,
    /// Bytes of residual rows a bucket plan's answer may hold
    /// (`crate::buckets`); past them the plan is declined.
    residual_budget: usize,
}

impl ClickHouseBackend {
    /// A backend over `client`'s database, creating or migrating its schema
    /// and reading its delete requests. Nothing expires and delete requests
    /// are due after 24 h until [`ClickHouseBackend::with_housekeeping`].
    pub fn open(client: Client) -> Result<Self, Error> {
        crate::schema::ensure(&client)?;
        // Push order across restarts: microseconds since the epoch × 4096.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        let backend = ClickHouseBackend {
            client,
            next_seq: AtomicU64::new(now << 12),
            counters: Counters::default(),
            retry: PushRetry::default(),
            commits: GroupCommit::new(BatchLimits::default(), Backlog::default()),
            deletes: Book::default(),
            housekeeping: Housekeeping::default(),
            lines_paging: LinesPaging::default(),
            metric_legs: MetricLegs::default(),
            residual_budget: DEFAULT_RESIDUAL_BUDGET,
        };
        backend.deletes.reload(&backend.client)?;
        Ok(backend)
    }

    /// The backend with `housekeeping`'s retention and delete cancellation
    /// period (the thread applying them: [`ClickHouseBackend::spawn_housekeeping`]).
    pub fn with_housekeeping(mut self, housekeeping: Housekeeping) -> Self {
        self.housekeeping = housekeeping;
        self
    }

    /// The backend with `retry` instead of [`PushRetry::default`].
    pub fn with_push_retry(mut self, retry: PushRetry) -> Self {
        self.retry = retry;
        self
    }

    /// The backend with batches bounded by `limits` instead of
    /// [`BatchLimits::default`].
    pub fn with_batch_limits(mut self, limits: BatchLimits) -> Self {
        self.commits.limits = limits;
        self
    }

    /// The backend with `backlog` bounding the pushes waiting for
    /// ClickHouse instead of [`Backlog::default`].
    pub fn with_backlog(mut self, backlog: Backlog) -> Self {
        self.commits.backlog = backlog;
        self
    }

    /// The backend with lines plans paged by `paging` instead of
    /// [`LinesPaging::default`].
    pub fn with_lines_paging(mut self, paging: LinesPaging) -> Self {
        self.lines_paging = paging;
        self
    }

    /// The backend with bucket plans declined (left to the engine's scan)
    /// once their residual rows pass `bytes` instead of
    /// [`DEFAULT_RESIDUAL_BUDGET`].
    pub fn with_residual_budget(mut self, bytes: usize) -> Self {
        self.residual_budget = bytes;
        self
    }

    /// The backend with bucket plans split into legs as `legs` says instead
    /// of [`MetricLegs::default`].
    pub fn with_metric_legs(mut self, legs: MetricLegs) -> Self {
        self.metric_legs = legs;
        self
    }

    /// Starts the housekeeping thread ([`crate::housekeeping`]). It holds
    /// the backend weakly and ends within a [`housekeeping::TICK`] once the
    /// backend is dropped. Failures are logged and the job is tried again
    /// on its next turn.
    pub fn spawn_housekeeping(self: &Arc<Self>) -> std::io::Result<std::thread::JoinHandle<()>> {
        housekeeping::spawn(self)
    }

    /// Runs one retention pass at `now` (ns since the epoch), as the
    /// housekeeping thread does every `retention_interval`
    /// ([`crate::retention`]).
    pub fn apply_retention(&self, now: i64) -> Result<RetentionReport, Error> {
        retention::apply(&self.client, &self.housekeeping.retention, now)
    }

    /// Accepts a delete request ([`crate::deletes`]): stored, and its rows
    /// hidden from every query from now on.
    pub fn add_delete(
        &self,
        tenant: &TenantId,
        req: DeleteRequest,
    ) -> Result<DeleteRequest, Error> {
        self.deletes.add(&self.client, tenant, req)
    }

    /// The tenant's delete requests not cancelled, oldest first.
    pub fn delete_requests(&self, tenant: &TenantId) -> Vec<DeleteRequest> {
        self.deletes.live(tenant.as_str())
    }

    /// Cancels a delete request not yet due (`force`: due but not yet
    /// processed, too).
    pub fn cancel_delete(
        &self,
        tenant: &TenantId,
        id: &str,
        force: bool,
    ) -> Result<Result<(), CancelRefusal>, Error> {
        let period = self.housekeeping.delete_cancel_period;
        self.deletes.cancel(&self.client, tenant, id, force, period)
    }

    /// Purges the delete requests due at `now` and marks them processed;
    /// how many were.
    pub fn process_due_deletes(&self, now: Timestamp) -> Result<usize, Error> {
        let period = self.housekeeping.delete_cancel_period;
        self.deletes.process_due(&self.client, now, period)
    }

    /// The rows of the tenant's delete requests overlapping `[start, end)`,
    /// to leave out of a read.
    fn mask(&self, tenant: &TenantId, start: Timestamp, end: Timestamp) -> Result<RowMask, Error> {
        self.deletes.mask(&self.client, tenant, start, end)
    }

    /// Inserts retried by [`ClickHouseBackend::push`] since the backend was opened.
    pub fn push_retries(&self) -> u64 {
        self.commits.retries.load(Ordering::Relaxed)
    }

    /// What pushes did since [`ClickHouseBackend::open`]: batches written
    /// and failed, pushes and rows in them, retries, backlog refusals, and
    /// the pushes waiting now.
    pub fn push_stats(&self) -> PushStats {
        self.commits.stats()
    }

    /// What retention and delete processing did since
    /// [`ClickHouseBackend::open`].
    pub fn housekeeping_stats(&self) -> HousekeepingStats {
        self.counters.housekeeping_stats()
    }

    /// How much of the queries since [`ClickHouseBackend::open`] ran in SQL.
    pub fn sql_stats(&self) -> SqlStats {
        self.counters.sql_stats()
    }

    /// Stores a push; ClickHouse has written it when this returns `Ok`.
    ///
    /// The push's rows are encoded here and written together with the
    /// pushes that arrived while the previous insert was in flight, one
    /// `streams` and one `logs` insert per batch ([`crate::group_commit`]);
    /// a push that finds no insert in flight is written at once, alone.
    /// When as many pushes or bytes as the [`Backlog`] allows already wait,
    /// the push is refused at once with [`Error::Backlog`], nothing stored.
    ///
    /// Each insert's deduplication token depends only on the content of its
    /// batch ([`crate::insert::encode_batch`]; a push alone carries its own
    /// pushed content's token), so the backend's retry of a batch, and a
    /// collector re-sending a push that was written alone (after a 503, a
    /// timeout or a restart of Rúnakefli), store nothing more while the
    /// first insert is within the table's deduplication window. A retryable
    /// failure is retried here first, as [`PushRetry`] says; the last
    /// failure is every member's answer.
    pub fn push(&self, tenant: &TenantId, push: &PushRequest) -> Result<(), Error> {
        let n = push.entry_count() as u64;
        let first = self.next_seq.fetch_add(n, Ordering::Relaxed);
        let ins = encode_push(tenant, push, first);
        if ins.is_empty() {
            return Ok(());
        }
        self.commits.submit(ins, |batch| {
            self.retry
                .insert_pair(&self.client, batch, &self.commits.retries)
        })
    }

    /// Whether ClickHouse answers `SELECT 1` in the configured database.
    pub fn ping(&self) -> Result<(), Error> {
        self.client
            .query("SELECT 1", &Request::default())
            .map(|_| ())
    }

    fn rows(&self, sql: &str, deadline: Option<std::time::Instant>) -> Result<Vec<Value>, Error> {
        self.client.rows(
            sql,
            &Request {
                deadline,
                ..Request::default()
            },
        )
    }

    /// Like [`Self::rows`], each row handed to `row` as it arrives
    /// ([`crate::Client::each_row`]); what ClickHouse read is added to
    /// `progress` if given.
    fn each_row(
        &self,
        sql: &str,
        deadline: Option<std::time::Instant>,
        progress: Option<&ReadProgress>,
        row: &mut dyn FnMut(Value) -> Result<bool, Error>,
    ) -> Result<(), Error> {
        self.client.each_row(
            sql,
            &Request {
                deadline,
                progress,
                ..Request::default()
            },
            row,
        )
    }

    /// The selected streams, read again when a row names one not seen
    /// ([`StreamCatalog`]).
    pub fn stream_catalog<'a>(&'a self, sel: StreamSelect<'a>) -> Result<StreamCatalog<'a>, Error> {
        StreamCatalog::read(&self.client, sel)
    }

    /// Each selected stream with rows in the window and its first and last
    /// time there, from one aggregate query; matchers SQL cannot evaluate
    /// exactly are checked on the labels ([`Split`]).
    fn bounds(
        &self,
        sel: &StreamSelect<'_>,
        deadline: Option<Instant>,
    ) -> Result<Vec<StreamBounds>, Error> {
        let c = &self.counters;
        self.per_stream(
            sel,
            deadline,
            sql::stream_bounds_query,
            (&c.bounds_queries, &c.bounds_rows),
            |r, stream| {
                Ok(StreamBounds {
                    stream,
                    first: i64_of(r, "first")?,
                    last: i64_of(r, "last")?,
                })
            },
        )
    }

    /// Each selected stream with rows in the window and those rows summed,
    /// from one aggregate query; matchers SQL cannot evaluate exactly are
    /// checked on the labels ([`Split`]).
    fn totals(
        &self,
        sel: &StreamSelect<'_>,
        deadline: Option<Instant>,
    ) -> Result<Vec<StreamTotals>, Error> {
        let c = &self.counters;
        self.per_stream(
            sel,
            deadline,
            sql::stream_totals_query,
            (&c.totals_queries, &c.totals_rows),
            |r, stream| {
                Ok(StreamTotals {
                    stream,
                    first: i64_of(r, "first")?,
                    last: i64_of(r, "last")?,
                    entries: u64_of(r, "entries")?,
                    line_bytes: u64_of(r, "line_bytes")?,
                    metadata_pairs: u64_of(r, "md_pairs")?,
                    metadata_distinct_bytes: u64_of(r, "md_bytes")?,
                })
            },
        )
    }

    /// The rows of a one-row-per-stream aggregate `query` over the streams
    /// `sel` selects (matchers SQL cannot evaluate exactly left out of the
    /// SQL and checked on each row's labels), each made into a `T` by
    /// `make`; counts the query and its rows in `counters`.
    fn per_stream<T>(
        &self,
        sel: &StreamSelect<'_>,
        deadline: Option<Instant>,
        query: fn(&StreamSelect<'_>, &RowMask) -> Result<String, Error>,
        counters: (&AtomicU64, &AtomicU64),
        make: impl Fn(&Value, StreamInfo) -> Result<T, Error>,
    ) -> Result<Vec<T>, Error> {
        let split = Split::of(sel.selector);
        let sql_sel = StreamSelect {
            selector: &split.sql,
            ..*sel
        };
        let mask = self.mask(sel.tenant, sel.start, sel.end)?;
        let rows = self.rows(&query(&sql_sel, &mask)?, deadline)?;
        counters.0.fetch_add(1, Ordering::Relaxed);
        counters.1.fetch_add(rows.len() as u64, Ordering::Relaxed);
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            if let Some(stream) = kept_stream(&r, &split)? {
                out.push(make(&r, stream)?);
            }
        }
        Ok(out)
    }

    fn answer(&self, plan: &QueryPlan) -> Result<PlanAnswer, Error> {
        let streams = self.stream_catalog(StreamSelect::of(plan))?;
        let mask = self.mask(&plan.tenant, plan.start, plan.end)?;
        let stream = |id| streams.kept(id);
        let read = ReadProgress::default();
        let (data, residual, rows_kept) = match &plan.output {
            PlanOutput::Lines { .. } => {
                let reader = LinesReader {
                    client: &self.client,
                    counters: &self.counters,
                    paging: self.lines_paging,
                };
                let (lines, kept) = reader.read(plan, &mask, &stream, &read)?;
                (AnswerData::Lines(lines), Vec::new(), kept)
            }
            PlanOutput::Buckets(b) => {
                let reader = BucketReader {
                    client: &self.client,
                    counters: &self.counters,
                    legs: self.metric_legs,
                    residual_budget: self.residual_budget,
                };
                let a = reader.read(plan, b, &mask, &stream, &read)?;
                let kept = a.groups.iter().map(|g| g.data.total_rows()).sum();
                (AnswerData::Buckets(a.groups), a.residual, kept)
            }
        };
        Ok(PlanAnswer {
            data,
            residual,
            stats: PlanStats {
                rows_scanned: read.rows(),
                bytes_scanned: read.bytes(),
                rows_kept,
                rows_from_columns: 0,
            },
        })
    }
}

impl Backend for ClickHouseBackend {
    fn streams(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<StreamInfo>, BackendError> {
        let sel = StreamSelect {
            tenant,
            selector: matchers,
            start,
            end,
        };
        let mut v: Vec<StreamInfo> = self
            .stream_catalog(sel)
            .map_err(BackendError::from)?
            .into_kept()
            .into_values()
            .collect();
        v.sort_by_key(|s| s.id);
        Ok(v)
    }

    fn label_names(
        &self,
        tenant: &TenantId,
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, BackendError> {
        let rows = self
            .rows(&sql::label_names_query(tenant, start, end), None)
            .map_err(BackendError::from)?;
        rows.iter()
            .map(|r| str_of(r, "name").map(str::to_string))
            .collect::<Result<_, _>>()
            .map_err(BackendError::from)
    }

    fn label_values(
        &self,
        tenant: &TenantId,
        name: &str,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, BackendError> {
        let sel = StreamSelect {
            tenant,
            selector: matchers,
            start,
            end,
        };
        let run = || -> Result<Vec<String>, Error> {
            if !Split::of(matchers).residual.is_empty() {
                // Read from the streams the whole selector keeps.
                let values: std::collections::BTreeSet<String> = self
                    .stream_catalog(sel)?
                    .into_kept()
                    .into_values()
                    .filter_map(|s| s.labels.get(name).map(str::to_string))
                    .collect();
                return Ok(values.into_iter().collect());
            }
            let rows = self.rows(&sql::label_values_query(name, &sel)?, None)?;
            rows.iter()
                .map(|r| str_of(r, "value").map(str::to_string))
                .collect()
        };
        run().map_err(BackendError::from)
    }

    fn scan(
        &self,
        request: &ScanRequest,
        visit: &mut dyn FnMut(&StreamInfo, EntryBatch) -> ScanControl,
    ) -> Result<(), BackendError> {
        let sel = StreamSelect {
            tenant: &request.tenant,
            selector: &request.matchers,
            start: request.start,
            end: request.end,
        };
        let split = Split::of(&request.matchers);
        let streams = self.stream_catalog(sel).map_err(BackendError::from)?;
        let mask = self
            .mask(sel.tenant, sel.start, sel.end)
            .map_err(BackendError::from)?;
        let q = sql::scan_query(
            &StreamSelect {
                selector: &split.sql,
                ..sel
            },
            request.direction,
            &request.required_substrings,
            request.shard.map(|s| (s.index, s.count)),
            &mask,
        )
        .map_err(BackendError::from)?;
        self.counters.scans.fetch_add(1, Ordering::Relaxed);
        // Rows arrive grouped by stream, in the scan's order within each,
        // and are handed on in batches of at most `SCAN_BATCH` as they
        // come: a scan over everything never holds everything.
        let mut batcher = ScanBatcher::new(&streams, visit);
        let scan_rows = &self.counters.scan_rows;
        let streamed = self.each_row(&q, None, None, &mut |row| {
            scan_rows.fetch_add(1, Ordering::Relaxed);
            batcher.row(&row)
        });
        streamed
            .and_then(|()| batcher.finish())
            .map_err(BackendError::from)
    }

    /// One aggregate query over `logs` joined to `streams`
    /// ([`sql::stream_bounds_query`]): one row per stream, no log row shipped.
    fn stream_bounds(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
        deadline: Option<Instant>,
    ) -> Result<Option<Vec<StreamBounds>>, BackendError> {
        let sel = StreamSelect {
            tenant,
            selector: matchers,
            start,
            end,
        };
        self.bounds(&sel, deadline)
            .map(Some)
            .map_err(BackendError::from)
    }

    /// One aggregate query over `logs` joined to `streams`
    /// ([`sql::stream_totals_query`]): one row per stream, no log row shipped.
    fn stream_totals(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
        deadline: Option<Instant>,
    ) -> Result<Option<Vec<StreamTotals>>, BackendError> {
        let sel = StreamSelect {
            tenant,
            selector: matchers,
            start,
            end,
        };
        self.totals(&sel, deadline)
            .map(Some)
            .map_err(BackendError::from)
    }

    fn execute(&self, plan: &QueryPlan) -> Result<Option<PlanAnswer>, BackendError> {
        // Translate first: a plan the SQL cannot express exactly is the engine's.
        let translatable = match &plan.output {
            PlanOutput::Lines { .. } => sql::lines_query(plan, &RowMask::default()).is_ok(),
            PlanOutput::Buckets(_) => sql::buckets_query(plan, &RowMask::default()).is_ok(),
        };
        if !translatable {
            self.counters.plans_declined.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        }
        let answer = match self.answer(plan) {
            Ok(a) => a,
            // Too large to hold whole: the engine's scan reads it streamed.
            Err(Error::Declined(_)) => {
                self.counters.plans_declined.fetch_add(1, Ordering::Relaxed);
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        self.counters.plans_answered.fetch_add(1, Ordering::Relaxed);
        Ok(Some(answer))
    }
}

impl Jobs for ClickHouseBackend {
    fn settings(&self) -> &Housekeeping {
        &self.housekeeping
    }

    fn counters(&self) -> &HousekeepingCounters {
        &self.counters.housekeeping
    }

    fn reload_deletes(&self) -> Result<(), Error> {
        self.deletes.reload(&self.client)
    }

    fn apply_retention(&self, now: i64) -> Result<RetentionReport, Error> {
        ClickHouseBackend::apply_retention(self, now)
    }

    fn process_due_deletes(&self, now: i64) -> Result<usize, Error> {
        ClickHouseBackend::process_due_deletes(self, now)
    }
}
