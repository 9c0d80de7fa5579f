//! Bucket plans grouped by labels ([`GroupBy::Labels`]): rows joined to
//! their stream's labels and counted per (group key, bucket) in ClickHouse,
//! so one row per group and bucket is shipped, not one per stream.
//!
//! A row's label `n` is, as the plan module defines it (and the embedded
//! store reads it): the value of the *last* structured metadata pair named
//! `n`, else the stream label `n`, else absent (`NULL`, a `None` in the
//! group key). ClickHouse's `Map` keeps duplicate keys in push order and
//! `metadata['n']` reads the first, hence `arrayLastIndex`.

use super::{quote, ts_literal};
use crate::Error;
use runakefli_model::plan::{BucketPlan, BucketValue, GroupBy, PlanOutput, QueryPlan};

/// The grouping labels and bucket plan of a label-grouped bucket plan.
pub(super) fn labels_plan(plan: &QueryPlan) -> Result<(&BucketPlan, &[String]), Error> {
    let PlanOutput::Buckets(b) = &plan.output else {
        return Err(Error::Unsupported("not a bucket plan".into()));
    };
    let GroupBy::Labels(names) = &b.group_by else {
        return Err(Error::Unsupported("not grouped by labels".into()));
    };
    Ok((b, names))
}

/// The value of label `name` of a row of `r` (a `logs` row) joined to `s`
/// (its stream, with its `stream_labels` map): the last metadata pair of that
/// name, else the stream label, else `NULL`. Type `Nullable(String)`.
pub(super) fn base_label(name: &str) -> String {
    let n = quote(name);
    format!(
        "if(has(mapKeys(r.metadata), {n}), \
         mapValues(r.metadata)[arrayLastIndex(k -> k = {n}, mapKeys(r.metadata))], \
         if(mapContains(s.stream_labels, {n}), s.stream_labels[{n}], NULL))"
    )
}

/// The group key column: an `Array(Nullable(String))` of `values`.
pub(super) fn key_array(values: &[String]) -> String {
    if values.is_empty() {
        "CAST([], 'Array(Nullable(String))')".to_string()
    } else {
        format!("[{}]", values.join(", "))
    }
}

/// The selected streams with their label maps, one row per stream, for
/// joining as `s`.
pub(super) fn stream_labels(cond: &str) -> String {
    format!("SELECT stream_id, any(labels) AS stream_labels FROM streams WHERE {cond} GROUP BY stream_id")
}

/// The distinct rows of the plan within its buckets, as `r`: rows
/// condition `rows`, bucket bounds `(first, last]`.
pub(super) fn distinct_rows(rows: &str, b: &BucketPlan) -> String {
    let first = b.bounds.first().copied().unwrap_or_default();
    let last = b.bounds.last().copied().unwrap_or_default();
    format!(
        "SELECT DISTINCT stream_id, timestamp, line, metadata FROM logs \
         WHERE {rows} AND timestamp > {} AND timestamp <= {}",
        ts_literal(first),
        ts_literal(last)
    )
}

/// A bucket plan without fields grouped by labels, counting rows (and line
/// bytes): one row per group and non-empty bucket. Columns: `key` (the
/// grouping labels' values in order, `null` where a row lacks one),
/// `bucket` (0-based), `rows`, `bytes`.
pub(super) fn labels_buckets_query(
    plan: &QueryPlan,
    rows: &str,
    streams_cond: &str,
) -> Result<String, Error> {
    let (b, names) = labels_plan(plan)?;
    if plan.fields.is_some() {
        return Err(Error::Unsupported("fields stage".into()));
    }
    if !matches!(b.value, BucketValue::Count | BucketValue::LineBytes) {
        return Err(Error::Unsupported(
            "unwrapped values need a fields stage".into(),
        ));
    }
    let values: Vec<String> = names.iter().map(|n| base_label(n)).collect();
    Ok(format!(
        "SELECT key, {bucket} AS bucket, count() AS rows, sum(length(line)) AS bytes \
         FROM (SELECT r.timestamp AS timestamp, r.line AS line, {key} AS key \
         FROM ({distinct}) AS r INNER JOIN ({streams}) AS s ON r.stream_id = s.stream_id) \
         GROUP BY key, bucket ORDER BY key, bucket",
        bucket = super::bucket_expr(&b.bounds)?,
        key = key_array(&values),
        distinct = distinct_rows(rows, b),
        streams = stream_labels(streams_cond),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_the_last_metadata_pair_else_the_stream_label_else_null() {
        assert_eq!(
            base_label("app"),
            "if(has(mapKeys(r.metadata), 'app'), \
             mapValues(r.metadata)[arrayLastIndex(k -> k = 'app', mapKeys(r.metadata))], \
             if(mapContains(s.stream_labels, 'app'), s.stream_labels['app'], NULL))"
        );
        assert!(base_label("a'b").contains(r"'a\'b'"));
        assert_eq!(key_array(&[]), "CAST([], 'Array(Nullable(String))')");
        assert_eq!(key_array(&["x".into(), "y".into()]), "[x, y]");
    }
}
