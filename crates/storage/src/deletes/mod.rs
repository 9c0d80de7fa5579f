//! Delete requests (Loki's `/loki/api/v1/delete`): a stream selector, line
//! filters and a time range whose rows are hidden from every scan at once
//! and purged from disk once the request's cancellation period has passed.
//!
//! - **Hiding.** Scans drop deleted rows where rows leave the store
//!   (`backend.rs`, `column_scan.rs`); plans that could see a deleted row are
//!   declined (`exec/mod.rs`), so the engine falls back to the filtered scan.
//! - **Purging.** Once a request is due (created more than the cancel period
//!   ago), merges leave its rows out of their output, and the maintenance
//!   thread flushes the memtable and rewrites every partition holding rows
//!   it deletes ([`crate::merge::rewrite_parts`]); the request is then
//!   `processed`. Processed requests still hide rows (a late push into the
//!   range stays hidden until the next merge drops it).
//! - **Persistence.** Each tenant's requests are one file, `deletes`
//!   ([`file`]), replaced atomically on every change.
//! - **Cancelling** is possible until the request is due; the rows come back.

pub mod api;
pub mod file;

use runakefli_model::{Labels, Matcher, StreamId};
use std::sync::Arc;

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
    /// Due and purged from every part that held its rows.
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
    pub fn is_due(&self, now: i64, cancel_period: std::time::Duration) -> bool {
        let p = cancel_period.as_nanos().min(i64::MAX as u128) as i64;
        now.saturating_sub(self.created) >= p
    }
}

/// The requests that apply to one stream in one scan.
#[derive(Clone, Debug, Default)]
pub struct StreamDeletes(Vec<Arc<DeleteRequest>>);

impl StreamDeletes {
    /// The requests of `all` touching a stream with `labels` in `[lo, hi]`.
    pub fn for_stream(all: &[Arc<DeleteRequest>], labels: &Labels, lo: i64, hi: i64) -> Self {
        StreamDeletes(
            all.iter()
                .filter(|r| r.touches(labels, lo, hi))
                .cloned()
                .collect(),
        )
    }

    /// True when no request applies.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a row is deleted by any of the requests.
    pub fn deletes(&self, ts: i64, line: &str) -> bool {
        self.0.iter().any(|r| r.deletes(ts, line))
    }
}

/// The merge filter of due requests: rows they delete are left out of a
/// rewritten part.
pub struct PurgeFilter<'a> {
    /// Due requests of the partition's tenant.
    pub requests: &'a [Arc<DeleteRequest>],
    /// Labels of the tenant's streams (from the stream index).
    pub labels: &'a dyn Fn(StreamId) -> Option<Arc<Labels>>,
    /// The partition's day range, inclusive ns.
    pub range: (i64, i64),
    /// Per stream, the requests that apply (filled lazily).
    pub cache: std::cell::RefCell<std::collections::HashMap<StreamId, StreamDeletes>>,
}

impl PurgeFilter<'_> {
    fn of(&self, sid: StreamId) -> StreamDeletes {
        self.cache
            .borrow_mut()
            .entry(sid)
            .or_insert_with(|| match (self.labels)(sid) {
                Some(l) => StreamDeletes::for_stream(self.requests, &l, self.range.0, self.range.1),
                None => StreamDeletes::default(),
            })
            .clone()
    }
}

impl crate::merge::RowFilter for PurgeFilter<'_> {
    fn stream(&self, sid: StreamId) -> crate::merge::StreamKeep {
        if self.of(sid).is_empty() {
            crate::merge::StreamKeep::All
        } else {
            crate::merge::StreamKeep::Rows
        }
    }

    fn keep(&self, sid: StreamId, row: &runakefli_model::Entry) -> bool {
        !self.of(sid).deletes(row.ts, &row.line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::MatchOp;

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
        assert!(r.is_due(10, std::time::Duration::ZERO));
        assert!(!r.is_due(10, std::time::Duration::from_nanos(11)));
    }
}
