//! Delete requests (Loki's `/loki/api/v1/delete`), as every backend sees
//! them: a stream selector, line filters and a time range whose rows are
//! hidden from queries at once and removed for good once the request's
//! cancellation period (`delete_request_cancel_period`) has passed.
//!
//! The server parses the request and talks to the backend through
//! [`Deletes`]; how a backend hides, purges and persists requests is its
//! own (the embedded store: `storage::deletes`; ClickHouse: the
//! `clickhouse` crate's `deletes` module).

use crate::{Labels, Matcher, StoreError, TenantId};
use std::time::Duration;

/// One alternative of a line filter.
#[derive(Clone, Debug)]
pub enum LineTest {
    /// The line contains the string.
    Contains(String),
    /// The line matches the (unanchored) regular expression.
    Regex(regex::Regex),
}

impl LineTest {
    fn matches(&self, line: &str) -> bool {
        match self {
            LineTest::Contains(s) => line.contains(s.as_str()),
            LineTest::Regex(r) => r.is_match(line),
        }
    }
}

/// A line filter of a delete query: `|= "a" or "b"`, `!~ "re"`, …
#[derive(Clone, Debug)]
pub struct LineFilter {
    /// `!=` / `!~`: the line passes when no alternative matches.
    pub negate: bool,
    /// At least one.
    pub alternatives: Vec<LineTest>,
}

impl LineFilter {
    /// Whether `line` passes the filter.
    pub fn passes(&self, line: &str) -> bool {
        self.alternatives.iter().any(|t| t.matches(line)) != self.negate
    }
}

/// Where a delete request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteStatus {
    /// Accepted; rows hidden; cancellable until due.
    Received,
    /// Due and removed from the backend's storage.
    Processed,
}

impl DeleteStatus {
    /// Loki's name of the status.
    pub fn as_str(self) -> &'static str {
        match self {
            DeleteStatus::Received => "received",
            DeleteStatus::Processed => "processed",
        }
    }
}

/// One delete request.
#[derive(Clone, Debug)]
pub struct DeleteRequest {
    /// Loki's `request_id`.
    pub id: String,
    /// The LogQL text as submitted.
    pub query: String,
    /// Its stream selector.
    pub matchers: Vec<Matcher>,
    /// Its line filters, all of which a deleted line passes.
    pub filters: Vec<LineFilter>,
    /// First deleted timestamp, ns (inclusive).
    pub start: i64,
    /// Last deleted timestamp, ns (inclusive).
    pub end: i64,
    /// When it was accepted, ns.
    pub created: i64,
    /// Where it is.
    pub status: DeleteStatus,
}

impl DeleteRequest {
    /// Whether the request applies to a stream with `labels` in `[lo, hi]`.
    pub fn touches(&self, labels: &Labels, lo: i64, hi: i64) -> bool {
        self.start <= hi && self.end >= lo && self.matchers.iter().all(|m| m.matches_labels(labels))
    }

    /// Whether a row of a matching stream is deleted.
    pub fn deletes(&self, ts: i64, line: &str) -> bool {
        ts >= self.start && ts <= self.end && self.filters.iter().all(|f| f.passes(line))
    }

    /// Whether the cancellation period has passed at `now`.
    pub fn is_due(&self, now: i64, cancel_period: Duration) -> bool {
        let p = cancel_period.as_nanos().min(i64::MAX as u128) as i64;
        now.saturating_sub(self.created) >= p
    }

    /// A new request id for this request of `tenant` (created at
    /// `self.created`): 8 hex digits of a hash of the tenant, query, range
    /// and creation time, changed until `taken` says it is free.
    pub fn fresh_id(&self, tenant: &TenantId, taken: impl Fn(&str) -> bool) -> String {
        let mut seed = format!(
            "{}|{}|{}|{}|{}",
            tenant.as_str(),
            self.query,
            self.start,
            self.end,
            self.created
        );
        loop {
            let id = format!("{:08x}", xxhash_rust::xxh3::xxh3_64(seed.as_bytes()) as u32);
            if !taken(&id) {
                return id;
            }
            seed.push('+');
        }
    }
}

/// Why a request was not cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelRefusal {
    /// No request with that id.
    NotFound,
    /// Its cancellation period has passed (it is being or was purged).
    TooLate,
}

/// The delete-request seam: what `/loki/api/v1/delete` asks of a backend.
/// Every backend keeps Loki's semantics: a request's rows are hidden from
/// every query once [`Deletes::add_delete`] returns, come back when it is
/// cancelled, and are removed for good once it is due (it is then
/// [`DeleteStatus::Processed`]); requests survive restarts.
pub trait Deletes: Send + Sync {
    /// Accepts `req` for `tenant`: persists it, then hides its rows. The id
    /// (when empty), creation time and status are set here; the request as
    /// stored is returned. A request the backend cannot carry out exactly is
    /// [`StoreError::Invalid`].
    fn add_delete(
        &self,
        tenant: &TenantId,
        req: DeleteRequest,
    ) -> Result<DeleteRequest, StoreError>;

    /// The requests of `tenant`, oldest first.
    fn delete_requests(&self, tenant: &TenantId) -> Result<Vec<DeleteRequest>, StoreError>;

    /// Cancels request `id` of `tenant` while its cancellation period runs
    /// (or, with `force`, any request not yet processed); its rows become
    /// visible again.
    fn cancel_delete(
        &self,
        tenant: &TenantId,
        id: &str,
        force: bool,
    ) -> Result<Result<(), CancelRefusal>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MatchOp;

    #[test]
    fn selector_range_and_filters_decide() {
        let r = DeleteRequest {
            id: "x".into(),
            query: String::new(),
            matchers: vec![Matcher::new("app", MatchOp::Eq, "api").unwrap()],
            filters: vec![
                LineFilter {
                    negate: false,
                    alternatives: vec![
                        LineTest::Contains("secret".into()),
                        LineTest::Regex(regex::Regex::new("pass(word)?=").unwrap()),
                    ],
                },
                LineFilter {
                    negate: true,
                    alternatives: vec![LineTest::Contains("keep".into())],
                },
            ],
            start: 100,
            end: 200,
            created: 0,
            status: DeleteStatus::Received,
        };
        let api = Labels::parse(r#"{app="api"}"#).unwrap();
        let web = Labels::parse(r#"{app="web"}"#).unwrap();
        assert!(r.touches(&api, 0, 100));
        assert!(!r.touches(&api, 201, 300));
        assert!(!r.touches(&web, 0, 300));
        assert!(r.deletes(150, "a secret"));
        assert!(r.deletes(200, "password=1"));
        assert!(!r.deletes(150, "a secret to keep"));
        assert!(!r.deletes(99, "a secret"));
        assert!(!r.deletes(150, "nothing"));
        assert!(r.is_due(10, Duration::ZERO));
        assert!(!r.is_due(10, Duration::from_nanos(11)));
        let t = TenantId::new("t");
        let first = r.fresh_id(&t, |_| false);
        assert_eq!(first.len(), 8);
        let second = r.fresh_id(&t, |id| id == first);
        assert_ne!(first, second);
        assert_eq!(second.len(), 8);
    }
}
