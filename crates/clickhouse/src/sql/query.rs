//! Whole queries: the streams of a selector, the lines of a lines plan, the
//! buckets of a bucket plan.
//!
//! Rows are read with exact duplicates (same stream, timestamp, line and
//! metadata) collapsed, as the plan module defines; the columns each query
//! returns are documented on it and read back by name.

use super::{day_literal, line_filter, matcher, quote, time_range, ts_literal, RowMask};
use crate::Error;
use runakefli_model::plan::{BucketValue, GroupBy, PlanOutput, QueryPlan};
use runakefli_model::{Direction, Matcher, TenantId, Timestamp};

/// Which streams a query reads: a tenant's streams matching a selector with
/// rows in `[start, end)` (by day).
#[derive(Clone, Copy, Debug)]
pub struct StreamSelect<'a> {
    /// Whose streams.
    pub tenant: &'a TenantId,
    /// Every matcher must hold.
    pub selector: &'a [Matcher],
    /// Inclusive start, nanoseconds.
    pub start: Timestamp,
    /// Exclusive end, nanoseconds.
    pub end: Timestamp,
}

impl<'a> StreamSelect<'a> {
    /// The streams a plan reads.
    pub fn of(plan: &'a QueryPlan) -> Self {
        StreamSelect {
            tenant: &plan.tenant,
            selector: &plan.selector,
            start: plan.start,
            end: plan.end,
        }
    }

    /// The `WHERE` condition over `streams`.
    pub(super) fn condition(&self) -> Result<String, Error> {
        let last = self.end.saturating_sub(1).max(self.start);
        let mut c = format!(
            "tenant = {} AND day >= {} AND day <= {}",
            quote(self.tenant.as_str()),
            day_literal(self.start),
            day_literal(last)
        );
        for m in self.selector {
            c.push_str(" AND ");
            c.push_str(&matcher(m)?);
        }
        Ok(c)
    }
}

/// The matching streams, one row each: `stream_id` (UInt64) and
/// `labels_text` (the canonical label text), ordered by `stream_id`.
pub fn streams_query(sel: &StreamSelect<'_>) -> Result<String, Error> {
    Ok(format!(
        "SELECT stream_id, any(labels_text) AS labels_text FROM streams WHERE {} \
         GROUP BY stream_id ORDER BY stream_id",
        sel.condition()?
    ))
}

/// The `WHERE` condition over `logs`: tenant, streams, time range, line
/// filters, rows hidden by delete requests.
pub(super) fn rows_condition(plan: &QueryPlan, mask: &RowMask) -> Result<String, Error> {
    let sel = StreamSelect::of(plan);
    let mut c = format!(
        "tenant = {} AND stream_id IN (SELECT stream_id FROM streams WHERE {}) AND {}",
        quote(plan.tenant.as_str()),
        sel.condition()?,
        time_range(plan.start, plan.end)
    );
    for f in &plan.line_filters {
        c.push_str(" AND ");
        c.push_str(&line_filter(f)?);
    }
    c.push_str(&mask.clause());
    Ok(c)
}

/// The 0-based bucket of the row's `timestamp` for strictly increasing
/// `bounds` (bucket `i` is `(bounds[i], bounds[i+1]]`); rows outside
/// `(bounds[0], bounds[n]]` must be filtered out beforehand.
pub fn bucket_expr(bounds: &[Timestamp]) -> Result<String, Error> {
    if bounds.len() < 2 || bounds.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::Unsupported(
            "bucket bounds must be at least two, increasing".into(),
        ));
    }
    let ns = "toUnixTimestamp64Nano(timestamp)";
    let step = bounds[1] - bounds[0];
    if bounds.windows(2).all(|w| w[1] - w[0] == step) {
        // ceil((ns - b0) / step) - 1, for ns > b0: the right edge is inclusive.
        return Ok(format!("intDiv({ns} - toInt64({}) - 1, {step})", bounds[0]));
    }
    let rest: Vec<String> = bounds[1..]
        .iter()
        .map(|b| format!("toInt64({b})"))
        .collect();
    Ok(format!(
        "toInt64(arrayFirstIndex(x -> x >= {ns}, [{}])) - 1",
        rest.join(", ")
    ))
}

/// A bucket plan counting rows (and line bytes). Grouped by stream: one
/// row per stream, metadata and non-empty bucket, columns `stream_id`,
/// `meta` (the metadata map sorted by name), `bucket` (0-based), `rows`,
/// `bytes`. Grouped by labels: one row per group and non-empty bucket,
/// columns `key` (the labels' values, `null` where absent), `bucket`,
/// `rows`, `bytes` (see `sql/group.rs`). Rows `mask` hides are left out.
pub fn buckets_query(plan: &QueryPlan, mask: &RowMask) -> Result<String, Error> {
    let PlanOutput::Buckets(b) = &plan.output else {
        return Err(Error::Unsupported("not a bucket plan".into()));
    };
    if let GroupBy::Labels(_) = b.group_by {
        let (rows, streams) = (
            rows_condition(plan, mask)?,
            StreamSelect::of(plan).condition()?,
        );
        let inner = match plan.fields {
            None => super::group::labels_buckets_query(plan, &rows, &streams)?,
            Some(_) => super::fields::fields_buckets_query(plan, &rows, &streams)?,
        };
        return match &b.top {
            Some(top) => super::top::top_groups_query(&inner, b, top, plan.fields.is_some()),
            None => Ok(inner),
        };
    }
    if plan.fields.is_some() {
        return Err(Error::Unsupported(
            "field stages grouped by stream are not translated".into(),
        ));
    }
    if !matches!(b.value, BucketValue::Count | BucketValue::LineBytes) {
        return Err(Error::Unsupported(
            "unwrapped values are not translated yet".into(),
        ));
    }
    let first = b.bounds.first().copied().unwrap_or_default();
    let last = b.bounds.last().copied().unwrap_or_default();
    Ok(format!(
        "SELECT stream_id, mapSort(metadata) AS meta, {bucket} AS bucket, \
         count() AS rows, sum(length(line)) AS bytes \
         FROM (SELECT DISTINCT stream_id, timestamp, line, metadata FROM logs \
         WHERE {rows} AND timestamp > {first} AND timestamp <= {last}) \
         GROUP BY stream_id, meta, bucket ORDER BY stream_id, meta, bucket",
        bucket = bucket_expr(&b.bounds)?,
        rows = rows_condition(plan, mask)?,
        first = ts_literal(first),
        last = ts_literal(last),
    ))
}

/// Label names of a tenant's streams with rows in `[start, end)` (by day),
/// sorted. Column: `name`.
pub fn label_names_query(tenant: &TenantId, start: Timestamp, end: Timestamp) -> String {
    let sel = StreamSelect {
        tenant,
        selector: &[],
        start,
        end,
    };
    // No matchers: the condition cannot fail.
    let cond = sel.condition().unwrap_or_default();
    format!(
        "SELECT DISTINCT arrayJoin(mapKeys(labels)) AS name FROM streams WHERE {cond} ORDER BY name"
    )
}

/// Values of label `name` over the selected streams that have it, sorted.
/// Column: `value`.
pub fn label_values_query(name: &str, sel: &StreamSelect<'_>) -> Result<String, Error> {
    Ok(format!(
        "SELECT DISTINCT labels[{n}] AS value FROM streams WHERE {} AND mapContains(labels, {n}) \
         ORDER BY value",
        sel.condition()?,
        n = quote(name),
    ))
}

/// Each selected stream with rows in `[start, end)`: its label text and the
/// times of its first and last row there, aggregated in ClickHouse (no row
/// is shipped), ordered by `stream_id`. Columns: `stream_id`, `labels_text`,
/// `first` and `last` (Int64 nanoseconds). Rows `mask` hides are left out.
pub fn stream_bounds_query(sel: &StreamSelect<'_>, mask: &RowMask) -> Result<String, Error> {
    Ok(format!(
        "SELECT b.stream_id AS stream_id, s.labels_text AS labels_text, b.first AS first, \
         b.last AS last FROM (SELECT stream_id, toUnixTimestamp64Nano(min(timestamp)) AS first, \
         toUnixTimestamp64Nano(max(timestamp)) AS last FROM logs WHERE tenant = {tenant} \
         AND stream_id IN (SELECT stream_id FROM streams WHERE {cond}) AND {time}{mask} \
         GROUP BY stream_id) AS b INNER JOIN ({streams}) AS s ON b.stream_id = s.stream_id \
         ORDER BY stream_id",
        tenant = quote(sel.tenant.as_str()),
        cond = sel.condition()?,
        time = time_range(sel.start, sel.end),
        mask = mask.clause(),
        streams = streams_query(sel)?,
    ))
}

/// Each selected stream with rows in `[start, end)`, its rows there summed
/// in ClickHouse (exact duplicates once; no row is shipped), ordered by
/// `stream_id`. Columns: `stream_id`, `labels_text`, `first` and `last`
/// (Int64 nanoseconds), `entries`, `line_bytes`, `md_pairs` (metadata pairs,
/// a name given twice on a row counted twice), `md_bytes` (the bytes of each
/// distinct metadata name or value string of the stream, once). Rows `mask`
/// hides are left out.
pub fn stream_totals_query(sel: &StreamSelect<'_>, mask: &RowMask) -> Result<String, Error> {
    Ok(format!(
        "SELECT b.stream_id AS stream_id, s.labels_text AS labels_text, b.first AS first, \
         b.last AS last, b.entries AS entries, b.line_bytes AS line_bytes, \
         b.md_pairs AS md_pairs, b.md_bytes AS md_bytes \
         FROM (SELECT stream_id, toUnixTimestamp64Nano(min(timestamp)) AS first, \
         toUnixTimestamp64Nano(max(timestamp)) AS last, count() AS entries, \
         sum(length(line)) AS line_bytes, sum(length(mapKeys(metadata))) AS md_pairs, \
         arraySum(arrayMap(x -> length(x), \
         groupUniqArrayArray(arrayConcat(mapKeys(metadata), mapValues(metadata))))) AS md_bytes \
         FROM (SELECT DISTINCT stream_id, timestamp, line, metadata FROM logs \
         WHERE tenant = {tenant} AND stream_id IN (SELECT stream_id FROM streams WHERE {cond}) \
         AND {time}{mask}) GROUP BY stream_id) AS b \
         INNER JOIN ({streams}) AS s ON b.stream_id = s.stream_id ORDER BY stream_id",
        tenant = quote(sel.tenant.as_str()),
        cond = sel.condition()?,
        time = time_range(sel.start, sel.end),
        mask = mask.clause(),
        streams = streams_query(sel)?,
    ))
}

/// A scan: the selected streams' rows in `[start, end)` holding every
/// `required` substring, in stream `shard` (`index`, `count`) when given,
/// duplicates once, ordered by stream, then time and push order in the
/// direction. Columns: `stream_id`, `ts`, `line`, `metadata`. Rows `mask`
/// hides are left out.
pub fn scan_query(
    sel: &StreamSelect<'_>,
    direction: Direction,
    required: &[String],
    shard: Option<(u32, u32)>,
    mask: &RowMask,
) -> Result<String, Error> {
    let mut c = format!(
        "tenant = {} AND stream_id IN (SELECT stream_id FROM streams WHERE {}) AND {}",
        quote(sel.tenant.as_str()),
        sel.condition()?,
        time_range(sel.start, sel.end)
    );
    for r in required {
        c.push_str(" AND ");
        c.push_str(&line_filter(&substring(r))?);
    }
    if let Some((index, count)) = shard.filter(|s| s.1 > 1) {
        c.push_str(&format!(" AND stream_id % {count} = {index}"));
    }
    c.push_str(&mask.clause());
    let dir = match direction {
        Direction::Backward => "DESC",
        Direction::Forward => "ASC",
    };
    Ok(format!(
        "SELECT stream_id, toUnixTimestamp64Nano(timestamp) AS ts, line, metadata, \
         min(seq) AS first_seq FROM logs WHERE {c} GROUP BY stream_id, timestamp, line, metadata \
         ORDER BY stream_id, timestamp {dir}, first_seq {dir}"
    ))
}

fn substring(s: &str) -> runakefli_model::plan::LineFilter {
    runakefli_model::plan::LineFilter {
        kind: runakefli_model::plan::LineMatch::Substring,
        negated: false,
        values: vec![s.to_string()],
        any_of: None,
        all_of: Vec::new(),
        test: std::sync::Arc::new(|_| true),
        split: None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sql::filter::tests::filter;
    use runakefli_model::plan::{BucketPlan, LineMatch};
    use runakefli_model::MatchOp;

    pub(crate) fn plan(output: PlanOutput) -> QueryPlan {
        QueryPlan {
            tenant: TenantId::new("t1"),
            selector: vec![Matcher::new("app", MatchOp::Eq, "api").unwrap()],
            start: 86_400_000_000_000,
            end: 2 * 86_400_000_000_000,
            line_filters: vec![filter(LineMatch::Substring, false, &["err"])],
            fields: None,
            output,
            deadline: None,
            cancel: None,
        }
    }

    #[test]
    fn streams_are_selected_by_tenant_day_and_labels() {
        let p = plan(PlanOutput::Lines {
            limit: 10,
            direction: Direction::Backward,
        });
        assert_eq!(
            streams_query(&StreamSelect::of(&p)).unwrap(),
            "SELECT stream_id, any(labels_text) AS labels_text FROM streams WHERE tenant = 't1' \
             AND day >= toDate(fromUnixTimestamp64Nano(toInt64(86400000000000), 'UTC'), 'UTC') \
             AND day <= toDate(fromUnixTimestamp64Nano(toInt64(172799999999999), 'UTC'), 'UTC') \
             AND labels['app'] = 'api' GROUP BY stream_id ORDER BY stream_id"
        );
    }

    #[test]
    fn lines_order_follows_the_direction() {
        let back = crate::sql::lines_query(
            &plan(PlanOutput::Lines {
                limit: 10,
                direction: Direction::Backward,
            }),
            &RowMask::default(),
        )
        .unwrap();
        assert!(back.ends_with("ORDER BY r.timestamp DESC, s.labels_text ASC, r.seq DESC LIMIT 10"));
        assert!(
            back.contains("AND line LIKE '%err%' GROUP BY stream_id, timestamp, line, metadata")
        );
        let fwd = crate::sql::lines_query(
            &plan(PlanOutput::Lines {
                limit: 3,
                direction: Direction::Forward,
            }),
            &RowMask::default(),
        )
        .unwrap();
        assert!(fwd.ends_with("ORDER BY r.timestamp ASC, s.labels_text ASC, r.seq ASC LIMIT 3"));
    }

    #[test]
    fn metadata_and_scan_queries() {
        let t = TenantId::new("t");
        assert!(label_names_query(&t, 0, 1).starts_with(
            "SELECT DISTINCT arrayJoin(mapKeys(labels)) AS name FROM streams WHERE tenant = 't'"
        ));
        let m = [Matcher::new("app", MatchOp::Eq, "api").unwrap()];
        let sel = StreamSelect {
            tenant: &t,
            selector: &m,
            start: 0,
            end: 1,
        };
        let none = RowMask::default();
        let v = label_values_query("env", &sel).unwrap();
        assert!(
            v.ends_with("AND labels['app'] = 'api' AND mapContains(labels, 'env') ORDER BY value")
        );
        let s = scan_query(
            &sel,
            Direction::Backward,
            &["a%".into()],
            Some((1, 8)),
            &none,
        )
        .unwrap();
        assert!(
            s.contains(r"AND line LIKE '%a\\%%' AND stream_id % 8 = 1 GROUP BY"),
            "{s}"
        );
        assert!(s.ends_with("ORDER BY stream_id, timestamp DESC, first_seq DESC"));
        let t = stream_totals_query(&sel, &none).unwrap();
        assert!(
            t.contains("FROM (SELECT DISTINCT stream_id, timestamp, line, metadata FROM logs WHERE tenant = 't'"),
            "{t}"
        );
        assert!(
            t.contains("groupUniqArrayArray(arrayConcat(mapKeys(metadata), mapValues(metadata)))"),
            "{t}"
        );
        assert!(
            t.ends_with("ON b.stream_id = s.stream_id ORDER BY stream_id"),
            "{t}"
        );
        let b = stream_bounds_query(&sel, &none).unwrap();
        assert!(
            b.contains("toUnixTimestamp64Nano(min(timestamp)) AS first"),
            "{b}"
        );
        assert!(
            b.contains("AND labels['app'] = 'api') AND timestamp >= "),
            "{b}"
        );
        assert!(b.contains("GROUP BY stream_id) AS b INNER JOIN (SELECT stream_id"));
        assert!(!b.contains("line"), "no row is read: {b}");
        let s = scan_query(&sel, Direction::Forward, &[], Some((0, 1)), &none).unwrap();
        assert!(!s.contains('%'), "{s}");
    }

    #[test]
    fn bucket_expressions_put_the_right_edge_inside() {
        assert_eq!(
            bucket_expr(&[10, 20, 30]).unwrap(),
            "intDiv(toUnixTimestamp64Nano(timestamp) - toInt64(10) - 1, 10)"
        );
        assert_eq!(
            bucket_expr(&[10, 20, 35]).unwrap(),
            "toInt64(arrayFirstIndex(x -> x >= toUnixTimestamp64Nano(timestamp), [toInt64(20), toInt64(35)])) - 1"
        );
        assert!(bucket_expr(&[10]).is_err());
        assert!(bucket_expr(&[10, 10]).is_err());
    }

    #[test]
    fn bucket_plans_count_by_stream_or_labels_and_decline_unwraps() {
        let mut b = BucketPlan {
            bounds: vec![0, 10],
            group_by: GroupBy::Labels(vec!["app".into()]),
            value: BucketValue::Count,
            top: None,
        };
        let q = buckets_query(&plan(PlanOutput::Buckets(b.clone())), &RowMask::default()).unwrap();
        assert!(q.starts_with("SELECT key, intDiv("), "{q}");
        assert!(q.contains("INNER JOIN (SELECT stream_id, any(labels) AS stream_labels FROM streams WHERE tenant = 't1'"), "{q}");
        assert!(
            q.ends_with("GROUP BY key, bucket ORDER BY key, bucket"),
            "{q}"
        );
        b.value = BucketValue::Max;
        assert!(buckets_query(&plan(PlanOutput::Buckets(b.clone())), &RowMask::default()).is_err());
        b.group_by = GroupBy::Stream;
        b.value = BucketValue::Sum;
        assert!(buckets_query(&plan(PlanOutput::Buckets(b.clone())), &RowMask::default()).is_err());
        b.value = BucketValue::LineBytes;
        let q = buckets_query(&plan(PlanOutput::Buckets(b)), &RowMask::default()).unwrap();
        assert!(q.contains("timestamp > fromUnixTimestamp64Nano(toInt64(0), 'UTC') AND timestamp <= fromUnixTimestamp64Nano(toInt64(10), 'UTC')"));
    }
}
