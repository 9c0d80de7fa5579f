//! The reads of a lines plan: one query per leg (a time slice of the plan's
//! range, see `crate::lines`) and page (a bounded run of rows after a key in
//! the answer order).
//!
//! The answer order is time in the direction, then the stream's label text
//! (ascending), then push order (`seq`, reversed backward) — Loki's tie
//! order. Exact duplicates are collapsed before ordering (one row per
//! (stream, timestamp, line, metadata), `min(seq)` as its push order), so a
//! page never holds part of a duplicate group, and every row's key
//! ([`LinesKey`]) is that of exactly one collapsed row (the label text names
//! one stream; `seq` is unique within a stream). Pages end with `LIMIT n
//! WITH TIES`, so rows sharing the last row's key — which only rows pushed
//! with the same `seq` by two writers could — come in the same page too, and
//! the next page starts strictly after that key.
//!
//! The keyset condition cannot be a tuple comparison (the label text runs
//! ascending in both directions, time and `seq` follow the direction), so it
//! is spelled out; the page's time range is narrowed to the key's time as
//! well, so ClickHouse prunes on the primary key as for any range.

use super::query::rows_condition;
use super::{quote, streams_query, RowMask, StreamSelect};
use crate::Error;
use runakefli_model::plan::{PlanOutput, QueryPlan};
use runakefli_model::{Direction, Timestamp};

/// Where a page starts: the answer-order key of the last row shipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinesKey {
    /// The row's timestamp, nanoseconds.
    pub ts: Timestamp,
    /// Its stream's canonical label text.
    pub labels_text: String,
    /// Its push order (`min(seq)` of its duplicates).
    pub seq: u64,
}

/// A lines plan: at most `limit` rows in the plan's answer order (time in
/// the direction, then the stream's label text, then push order — reversed
/// reading backward). Columns: `stream_id`, `labels_text`, `ts` (Int64
/// nanoseconds), `line`, `metadata` (a map in push order), `seq` (push
/// order). With a `| json` stage, the rows the SQL cannot decide come in
/// that order too, flagged by a column `res` (see `sql/fields`). Rows
/// `mask` hides are left out. The backend reads the same rows by legs and
/// pages ([`lines_read_query`]); this is the plan in one read.
pub fn lines_query(plan: &QueryPlan, mask: &RowMask) -> Result<String, Error> {
    lines_read_query(plan, mask, &LinesRead::whole(plan)?)
}

/// One read of a lines plan.
#[derive(Clone, Copy, Debug)]
pub struct LinesRead<'a> {
    /// Inclusive start of the leg, nanoseconds (within the plan's range).
    pub start: Timestamp,
    /// Exclusive end of the leg, nanoseconds.
    pub end: Timestamp,
    /// Only rows after this key in the answer order.
    pub after: Option<&'a LinesKey>,
    /// Rows still wanted: kept rows with a fields stage (the rows the SQL
    /// cannot decide come too, up to the `wanted`-th kept one).
    pub wanted: usize,
    /// At most this many rows per read (plus rows tied with the last on the
    /// whole key); `None`: no page bound, the plan's `LIMIT` only.
    pub page: Option<usize>,
}

impl<'a> LinesRead<'a> {
    /// The whole plan in one read, as before legs and pages.
    pub fn whole(plan: &QueryPlan) -> Result<Self, Error> {
        let PlanOutput::Lines { limit, .. } = plan.output else {
            return Err(Error::Unsupported("not a lines plan".into()));
        };
        Ok(LinesRead {
            start: plan.start,
            end: plan.end,
            after: None,
            wanted: limit,
            page: None,
        })
    }

    /// The plan restricted to this read: the leg's range narrowed to the
    /// key's time (inclusive: rows tied with it in time may follow it), the
    /// limit set to the rows wanted.
    pub(super) fn narrowed(&self, plan: &QueryPlan) -> Result<(QueryPlan, Direction), Error> {
        let PlanOutput::Lines { direction, .. } = plan.output else {
            return Err(Error::Unsupported("not a lines plan".into()));
        };
        let mut p = plan.clone();
        p.start = self.start.max(plan.start);
        p.end = self.end.min(plan.end);
        if let Some(k) = self.after {
            match direction {
                Direction::Backward => p.end = p.end.min(k.ts.saturating_add(1)),
                Direction::Forward => p.start = p.start.max(k.ts),
            }
        }
        p.output = PlanOutput::Lines {
            limit: self.wanted,
            direction,
        };
        Ok((p, direction))
    }

    /// The `LIMIT` clause: ` LIMIT n` for a whole read, ` LIMIT n WITH
    /// TIES` for a page (`n` the smaller of the page and `cap`).
    pub(super) fn limit_clause(&self, cap: Option<usize>) -> String {
        match (self.page, cap) {
            (Some(p), Some(c)) => format!(" LIMIT {} WITH TIES", p.min(c)),
            (Some(p), None) => format!(" LIMIT {p} WITH TIES"),
            (None, Some(c)) => format!(" LIMIT {c}"),
            (None, None) => String::new(),
        }
    }
}

/// The rows strictly after `key` in the answer order of `direction`, over
/// the expressions of a row's time (Int64 nanoseconds), label text and push
/// order.
pub fn keyset_condition(
    key: &LinesKey,
    direction: Direction,
    (ts, labels, seq): (&str, &str, &str),
) -> String {
    let after = match direction {
        Direction::Backward => "<",
        Direction::Forward => ">",
    };
    format!(
        "({ts} {after} {t} OR ({ts} = {t} AND ({labels} > {l} OR ({labels} = {l} AND {seq} {after} {s}))))",
        t = key.ts,
        l = quote(&key.labels_text),
        s = key.seq,
    )
}

/// One read of a lines plan (see [`lines_query`] for the columns;
/// `seq` is there too, the row's push order, for the next page's key).
pub fn lines_read_query(
    plan: &QueryPlan,
    mask: &RowMask,
    read: &LinesRead<'_>,
) -> Result<String, Error> {
    let (p, direction) = read.narrowed(plan)?;
    if p.fields.is_some() {
        let after = read
            .after
            .map(|k| keyset_condition(k, direction, ("ts", "labels_text", "seq")));
        return super::fields::fields_lines_query(
            &p,
            &rows_condition(&p, mask)?,
            &StreamSelect::of(&p).condition()?,
            after.as_deref(),
            &read.limit_clause(None),
        );
    }
    let (time, seq) = match direction {
        Direction::Backward => ("DESC", "DESC"),
        Direction::Forward => ("ASC", "ASC"),
    };
    let after = read.after.map_or(String::new(), |k| {
        format!(
            " WHERE {}",
            keyset_condition(
                k,
                direction,
                (
                    "toUnixTimestamp64Nano(r.timestamp)",
                    "s.labels_text",
                    "r.seq"
                )
            )
        )
    });
    Ok(format!(
        "SELECT r.stream_id AS stream_id, s.labels_text AS labels_text, \
         toUnixTimestamp64Nano(r.timestamp) AS ts, r.line AS line, r.metadata AS metadata, \
         r.seq AS seq \
         FROM (SELECT stream_id, timestamp, line, metadata, min(seq) AS seq FROM logs \
         WHERE {rows} GROUP BY stream_id, timestamp, line, metadata) AS r \
         INNER JOIN ({streams}) AS s ON r.stream_id = s.stream_id{after} \
         ORDER BY r.timestamp {time}, s.labels_text ASC, r.seq {seq}{limit}",
        rows = rows_condition(&p, mask)?,
        streams = streams_query(&StreamSelect::of(&p))?,
        limit = read.limit_clause(Some(read.wanted)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::query::tests::plan;

    const DAY: i64 = 86_400_000_000_000;

    fn key() -> LinesKey {
        LinesKey {
            ts: DAY + 500,
            labels_text: r#"{app="a'b"}"#.into(),
            seq: 42,
        }
    }

    #[test]
    fn keysets_follow_the_tie_order_of_each_direction() {
        let cols = ("ts", "labels_text", "seq");
        assert_eq!(
            keyset_condition(&key(), Direction::Backward, cols),
            r#"(ts < 86400000000500 OR (ts = 86400000000500 AND (labels_text > '{app="a\'b"}' OR (labels_text = '{app="a\'b"}' AND seq < 42))))"#
        );
        assert_eq!(
            keyset_condition(&key(), Direction::Forward, cols),
            r#"(ts > 86400000000500 OR (ts = 86400000000500 AND (labels_text > '{app="a\'b"}' OR (labels_text = '{app="a\'b"}' AND seq > 42))))"#
        );
    }

    #[test]
    fn a_page_reads_its_leg_after_the_key_with_ties() {
        let p = plan(PlanOutput::Lines {
            limit: 5000,
            direction: Direction::Backward,
        });
        let k = key();
        let read = LinesRead {
            start: DAY,
            end: 2 * DAY,
            after: Some(&k),
            wanted: 4000,
            page: Some(1000),
        };
        let q = lines_read_query(&p, &RowMask::default(), &read).unwrap();
        // Backward: the range ends just after the key's time.
        assert!(
            q.contains("AND timestamp < fromUnixTimestamp64Nano(toInt64(86400000000501), 'UTC')"),
            "{q}"
        );
        assert!(
            q.contains("ON r.stream_id = s.stream_id WHERE (toUnixTimestamp64Nano(r.timestamp) < 86400000000500 OR"),
            "{q}"
        );
        assert!(
            q.ends_with(
                "ORDER BY r.timestamp DESC, s.labels_text ASC, r.seq DESC LIMIT 1000 WITH TIES"
            ),
            "{q}"
        );
        assert!(q.contains("r.seq AS seq FROM"), "{q}");
        // Forward: the range starts at the key's time; fewer wanted than a page.
        let mut p = p;
        p.output = PlanOutput::Lines {
            limit: 5000,
            direction: Direction::Forward,
        };
        let read = LinesRead { wanted: 7, ..read };
        let q = lines_read_query(&p, &RowMask::default(), &read).unwrap();
        assert!(
            q.contains("AND timestamp >= fromUnixTimestamp64Nano(toInt64(86400000000500), 'UTC') AND timestamp < fromUnixTimestamp64Nano(toInt64(172800000000000), 'UTC')"),
            "{q}"
        );
        assert!(q.ends_with("r.seq ASC LIMIT 7 WITH TIES"), "{q}");
    }

    #[test]
    fn a_leg_narrows_the_streams_to_its_days_and_keeps_the_mask() {
        let mut p = plan(PlanOutput::Lines {
            limit: 10,
            direction: Direction::Backward,
        });
        p.start = 0;
        p.end = 7 * DAY;
        let mask = RowMask::hiding(vec!["(hidden)".into()]);
        let read = LinesRead {
            start: 6 * DAY,
            end: 7 * DAY,
            after: None,
            wanted: 10,
            page: Some(1000),
        };
        let q = lines_read_query(&p, &mask, &read).unwrap();
        assert!(q.contains("AND day >= toDate(fromUnixTimestamp64Nano(toInt64(518400000000000), 'UTC'), 'UTC') AND day <= toDate(fromUnixTimestamp64Nano(toInt64(604799999999999), 'UTC'), 'UTC')"), "{q}");
        assert!(q.contains("AND NOT ((hidden)) GROUP BY"), "{q}");
        assert!(!q.contains(" WHERE (toUnix"), "no key, no keyset: {q}");
        assert!(q.ends_with("LIMIT 10 WITH TIES"), "{q}");
        // The whole plan in one read: the query as before legs and pages.
        let whole = lines_read_query(&p, &mask, &LinesRead::whole(&p).unwrap()).unwrap();
        assert!(whole.ends_with("r.seq DESC LIMIT 10"), "{whole}");
    }
}
