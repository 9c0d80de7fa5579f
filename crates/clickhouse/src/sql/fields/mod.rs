//! The `| json` stage (with parameters, [`JsonParser::Keys`]; without,
//! see `json::Fields::new`), the label filters after it and the unwrap, in
//! label-grouped bucket plans and in lines plans.
//!
//! Loki's rules (the engine's `JsonExprParser`, the plan module's
//! [`JsonParser`]) by the line's first byte:
//! - an empty line sets no label;
//! - `"` or `[`: every parameter's label is `""` (no top-level member);
//! - `{`: each parameter's label is its top-level member (the first of that
//!   name): a string unescaped (`""` when the text holds U+FFFD, as Loki's
//!   `unescapeJSONString`), `""` when absent or `null`, other values as
//!   written;
//! - anything else: `__error__` (`JSONParserErr`).
//!
//! The label is named `label_extracted` when the stream labels or the row's
//! structured metadata hold `label`; a later parameter of the same final
//! name overwrites an earlier one.
//!
//! ClickHouse reads the object with `JSONExtractKeysAndValues(line,
//! 'Dynamic')`, which is strict JSON and re-prints what it parsed, so the
//! SQL decides a row only where that provably gives Loki's text; every other
//! row is *residual*, shipped whole for the engine to run the pipeline on:
//! - lines starting with `{` that are not valid JSON (Loki's lenient scanner
//!   may still read members of them), and lines of the `__error__` kind;
//! - a label a filter or the grouping reads as text whose member is a
//!   float, an object or an array (ClickHouse re-prints them, e.g. `1e2` as
//!   `100`), or the integer `0` on a line holding a `-0` token after a `:`.
//!   Strings, `true`/`false`, integers (Int64/UInt64 as written; JSON
//!   integers beyond them come back as their digits, as written) and absent
//!   or `null` members are exact.
//!
//! Strings are read as strings (`SETTINGS` turn off ClickHouse's inference
//! of dates, times and numbers in them); any other type is residual too.
//!
//! Numeric label filters and the unwrap read a label as a number where
//! `number` proves the engine's `f64` (plain decimals, floats included, read
//! from the line's text for `Float64` members); any other value a numeric
//! comparison or the unwrap reads makes the row residual (Loki's
//! conversion, or its `__error__`, is the engine's).
//!
//! Filters, the unwrap, the filters after it and the grouping are stages in
//! order: a row is residual where a stage is undecided and the stages
//! before it kept the row.
//!
//! Declined: duration, byte-size and `ip()` filters, `duration()` and
//! `bytes()` unwraps, `| json` without parameters reading a label ending in
//! `_extracted`, and parameters labelled `__…`.

mod filters;
mod json;
mod logfmt;
mod number;

pub use number::{exact_bytes, exact_duration_ns, exact_float, exact_ipv4, exact_ipv6};

use super::group::{distinct_rows, key_array, labels_plan};
use super::{bucket_expr, quote};
use crate::Error;
use filters::{compile, unwrap_stage, Compiled};
use json::Fields;
use runakefli_model::plan::{BucketValue, FieldStage, PlanOutput, QueryPlan};
use runakefli_model::Direction;

/// Labels whose value reads Loki's error state, never a stored label: rows
/// the SQL decides have no error, so they are absent there.
const ERROR_LABELS: [&str; 2] = ["__error__", "__error_details__"];

/// Keeps `JSONExtractKeysAndValues(…, 'Dynamic')` from reading strings as
/// dates, times or numbers (which it would print back otherwise, e.g.
/// `"2024-01-01 10:00:00.50"` with nine fraction digits): strings stay
/// `String`, whatever a server's defaults.
///
/// And turns short-circuit evaluation off: the label expressions share
/// subexpressions through aliases (a number's text reads the label's
/// member, its kind, its text), which ClickHouse computes once per block —
/// unless `AND`/`OR`/`if` evaluate their branches on subsets of the rows,
/// which then recompute each shared part per branch. Measured on a numeric
/// filter's lines plan over 31,328 rows (26.9): 19.2 s with, 0.9 s without.
/// Nothing here needs a branch skipped: conversions that could fail are the
/// `…OrNull` forms, and the integer casts take finite products.
const INFER: &str = "input_format_try_infer_dates = 0, input_format_try_infer_datetimes = 0, \
                     input_format_json_try_infer_numbers_from_strings = 0, \
                     short_circuit_function_evaluation = 'disable'";

/// The per-row part of a plan with a fields stage, over a row `r` (columns
/// `stream_id`, `timestamp`, `line`, `metadata`) joined to its stream `s`
/// (`stream_labels`).
struct RowStages {
    /// Select items (`expr AS name`): `sid`, `ts`, `line`, `metadata`, the
    /// parser's columns, per read label `i` `lv{i}`, `lu{i}`, `ln{i}`,
    /// `lf{i}` (text, undecided, number text, exact number), `uv` (the
    /// unwrapped value) with an unwrap, and the group labels first in
    /// `lv{0…}`.
    cols: Vec<String>,
    /// The row goes to the engine.
    residual: String,
    /// Every stage keeps the row (meaningful where `residual` does not hold).
    keep: String,
}

/// The stages of `stage` for a plan grouping by `names` (none for lines).
fn row_stages(stage: &FieldStage, names: &[String]) -> Result<RowStages, Error> {
    if let Some(u) = &stage.unwrap {
        if names.contains(&u.label) {
            return Err(Error::Unsupported(format!("unwrap {u:?}")));
        }
    }
    let filters = &stage.filters;
    let post = stage
        .unwrap
        .as_ref()
        .map_or(&[][..], |u| &u.post_filters[..]);
    let unwrap_label = stage
        .unwrap
        .as_ref()
        .map(|u| (u.label.clone(), u.conversion));
    let mut read: Vec<String> = names.to_vec();
    let all_filters = stage
        .filters
        .iter()
        .chain(stage.unwrap.iter().flat_map(|u| u.post_filters.iter()));
    for l in all_filters
        .flat_map(|f| f.labels.iter().cloned())
        .chain(unwrap_label.iter().map(|(l, _)| l.clone()))
    {
        if !read.contains(&l) {
            read.push(l);
        }
    }
    let fields = Fields::new(stage, &read)?;
    let mut cols = vec![
        "r.stream_id AS sid".to_string(),
        "toUnixTimestamp64Nano(r.timestamp) AS ts".to_string(),
        "r.line AS line".to_string(),
        "r.metadata AS metadata".to_string(),
        format!("{} AS jkind", fields.line_kind("r.line")),
    ];
    cols.extend(fields.columns());
    for (i, n) in read.iter().enumerate() {
        let l = fields.label(n);
        cols.push(format!("{} AS lv{i}", l.value));
        cols.push(format!("{} AS lu{i}", l.undecided));
        cols.push(format!("{} AS ln{i}", l.number));
        cols.push(format!(
            "{} AS lf{i}",
            number::exact_float(&format!("ln{i}"))
        ));
    }
    // The stages in order: filters, the unwrap, filters after it, the
    // grouping. A row is residual when a stage is undecided and every stage
    // before it kept the row; kept when every stage keeps it.
    let col = |name: &str| read.iter().position(|n| n == name).unwrap_or(0);
    let mut stages: Vec<Compiled> = Vec::new();
    for f in filters {
        stages.push(compile(&f.condition, &col)?);
    }
    if let Some((l, conversion)) = &unwrap_label {
        let i = col(l);
        let (value, stage) = unwrap_stage(i, *conversion);
        cols.push(format!("{value} AS uv"));
        stages.push(stage);
    }
    for f in post {
        stages.push(compile(&f.condition, &col)?);
    }
    if !names.is_empty() {
        let any: Vec<String> = (0..names.len()).map(|i| format!("lu{i}")).collect();
        stages.push(Compiled {
            keep: "1".into(),
            undecided: format!("({})", any.join(" OR ")),
        });
    }
    let mut keeps: Vec<String> = Vec::new();
    let mut residual = vec!["jkind = 3".to_string()];
    for c in &stages {
        let before = if keeps.is_empty() {
            String::new()
        } else {
            format!("{} AND ", keeps.join(" AND "))
        };
        residual.push(format!("({before}{})", c.undecided));
        keeps.push(format!("({})", c.keep));
    }
    let keep = if keeps.is_empty() {
        "1".to_string()
    } else {
        keeps.join(" AND ")
    };
    Ok(RowStages {
        cols,
        residual: residual.join(" OR "),
        keep,
    })
}

/// A label-grouped bucket plan with a `| json` stage: one row per group and
/// non-empty bucket for the rows SQL decides (`res` 0), and one row per
/// residual row (`res` 1, grouped by a hash of the row, `rrow`: its
/// `residual` array of `[stream_id, ts, line, metadata]` holds that row, or
/// the few that share the hash), so that an answer with many residual rows
/// can be read, and refused, row by row. Columns: `res`, `rsid`, `rrow`,
/// `key`, `bucket`, `rows`, `bytes`, `residual`, and with an unwrap
/// `unwrapped`: the smallest or
/// largest value as text (min/max), every value as text (values), or every
/// `[ts, value text]` (points); values are `toString(Float64)`, which reads
/// back as the same `f64`.
pub(super) fn fields_buckets_query(
    plan: &QueryPlan,
    rows: &str,
    streams_cond: &str,
) -> Result<String, Error> {
    let (b, names) = labels_plan(plan)?;
    let stage = plan
        .fields
        .as_ref()
        .ok_or_else(|| Error::Unsupported("no fields stage".into()))?;
    // What each kept row adds: a row (and its line's bytes), or its
    // unwrapped value (the smallest, the largest, all of them, or all of
    // them with their times: sums depend on the order of their terms, which
    // the engine fixes by sorting the points by time).
    let agg = match (b.value, &stage.unwrap) {
        (BucketValue::Count | BucketValue::LineBytes, None) => None,
        (BucketValue::Min, Some(_)) => Some("toString(min(uv))"),
        (BucketValue::Max, Some(_)) => Some("toString(max(uv))"),
        (BucketValue::Values, Some(_)) => Some("groupArray(toString(uv))"),
        (BucketValue::Points, Some(_)) => Some("groupArray((ts, toString(uv)))"),
        _ => {
            return Err(Error::Unsupported(format!(
                "bucket value {:?} is not translated",
                b.value
            )))
        }
    };
    let mut rs = row_stages(stage, names)?;
    let key: Vec<String> = (0..names.len()).map(|i| format!("lv{i}")).collect();
    rs.cols.push(format!("({}) AS res", rs.residual));
    rs.cols.push(format!("(NOT res AND {}) AS kept", rs.keep));
    let agg = agg.map_or(String::new(), |a| format!(", {a} AS unwrapped"));
    Ok(format!(
        "SELECT res, if(res, sid, 0) AS rsid, if(res, cityHash64(ts, line), 0) AS rrow, \
         if(res, {empty}, {key}) AS key, \
         if(res, 0, {bucket}) AS bucket, count() AS rows, sum(length(line)) AS bytes, \
         groupArrayIf((sid, ts, line, metadata), res) AS residual{agg} \
         FROM (SELECT r.timestamp AS timestamp, {cols} \
         FROM ({distinct}) AS r INNER JOIN ({streams}) AS s ON r.stream_id = s.stream_id) \
         WHERE res OR kept GROUP BY res, rsid, rrow, key, bucket \
         ORDER BY res, rsid, rrow, key, bucket \
         SETTINGS {INFER}",
        empty = key_array(&[]),
        key = key_array(&key),
        bucket = bucket_expr(&b.bounds)?,
        cols = rs.cols.join(", "),
        distinct = distinct_rows(rows, b),
        streams = super::group::stream_labels(streams_cond),
    ))
}

/// A lines plan with a `| json` stage: in the plan's answer order (time in
/// the direction, the stream's label text, push order — reversed reading
/// backward), the rows the SQL keeps and the rows it cannot decide (`res`
/// 1), up to and including the `limit`-th kept row. The engine runs the
/// pipeline on each (it needs the parsed labels anyway) and keeps the first
/// `limit` that pass: every row the SQL keeps passes, every row it drops
/// fails, so those are the answer. Columns as [`super::lines_query`]'s,
/// plus `res`. `after` (a keyset condition over `ts`, `labels_text`, `seq`)
/// keeps only the rows after a page's key, counting kept rows from there;
/// `page_limit` (` LIMIT n WITH TIES` or nothing) bounds the rows shipped.
pub(super) fn fields_lines_query(
    plan: &QueryPlan,
    rows: &str,
    streams_cond: &str,
    after: Option<&str>,
    page_limit: &str,
) -> Result<String, Error> {
    let PlanOutput::Lines { limit, direction } = plan.output else {
        return Err(Error::Unsupported("not a lines plan".into()));
    };
    let stage = plan
        .fields
        .as_ref()
        .ok_or_else(|| Error::Unsupported("no fields stage".into()))?;
    if stage.unwrap.is_some() {
        return Err(Error::Unsupported("unwrap in a lines plan".into()));
    }
    let mut rs = row_stages(stage, &[])?;
    rs.cols.push("s.labels_text AS labels_text".into());
    rs.cols.push("r.seq AS seq".into());
    rs.cols.push(format!("({}) AS res", rs.residual));
    rs.cols.push(format!("(NOT res AND {}) AS kept", rs.keep));
    let dir = match direction {
        Direction::Backward => "DESC",
        Direction::Forward => "ASC",
    };
    let order = format!("ts {dir}, labels_text ASC, seq {dir}");
    Ok(format!(
        "SELECT sid AS stream_id, labels_text, ts, line, metadata, seq, res FROM \
         (SELECT sid, labels_text, ts, line, metadata, seq, res, \
         sum(kept) OVER (ORDER BY {order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - kept \
         AS kept_before FROM (SELECT {cols} \
         FROM (SELECT stream_id, timestamp, line, metadata, min(seq) AS seq FROM logs \
         WHERE {rows} GROUP BY stream_id, timestamp, line, metadata) AS r \
         INNER JOIN (SELECT stream_id, any(labels) AS stream_labels, \
         any(labels_text) AS labels_text FROM streams WHERE {streams_cond} GROUP BY stream_id) AS s \
         ON r.stream_id = s.stream_id) WHERE (res OR kept){after}) \
         WHERE kept_before < {limit} ORDER BY {order}{page_limit} SETTINGS {INFER}",
        cols = rs.cols.join(", "),
        after = after.map_or(String::new(), |k| format!(" AND {k}")),
    ))
}

#[cfg(test)]
mod tests {
    use super::filters::tests::ff;
    use super::*;
    use runakefli_model::plan::UnwrapConversion;
    use runakefli_model::plan::{BucketPlan, GroupBy, JsonKey, JsonParser, UnwrapField};
    use std::sync::Arc;

    #[test]
    fn json_parameter_plans_translate_and_others_decline() {
        let mut p = crate::sql::query::tests::plan(PlanOutput::Buckets(BucketPlan {
            bounds: vec![0, 10, 20],
            group_by: GroupBy::Labels(vec!["level".into()]),
            value: BucketValue::Count,
            top: None,
        }));
        p.fields = Some(FieldStage {
            parser: JsonParser::Keys(vec![JsonKey {
                label: "level".into(),
                key: "lvl".into(),
            }]),
            filters: vec![ff(r#"level!="debug""#, &["level"])],
            unwrap: None,
            drop_errors: false,
        });
        let q = crate::sql::buckets_query(&p, &Default::default()).unwrap();
        assert!(
            q.contains("JSONExtractKeysAndValues(r.line, 'Dynamic') AS jkv"),
            "{q}"
        );
        assert!(
            q.contains("arrayFirst(p -> p.1 = 'lvl', jkv).2 AS jp0"),
            "{q}"
        );
        assert!(
            q.contains("(jkind = 3 OR (lu0) OR ((coalesce(lv0, '') != 'debug') AND (lu0))) AS res"),
            "{q}"
        );
        assert!(
            q.contains("groupArrayIf((sid, ts, line, metadata), res) AS residual"),
            "{q}"
        );
        // Residual rows leave one by one, not gathered per stream.
        assert!(
            q.contains("if(res, cityHash64(ts, line), 0) AS rrow"),
            "{q}"
        );
        assert!(q.contains("GROUP BY res, rsid, rrow, key, bucket"), "{q}");
        assert!(q.ends_with(&format!("SETTINGS {INFER}")), "{q}");
        let mut declined = Vec::new();
        let mut all = p.clone();
        all.fields.as_mut().unwrap().parser = JsonParser::All;
        let q = crate::sql::buckets_query(&all, &Default::default()).unwrap();
        assert!(
            q.contains("if(startsWith(r.line, '{') AND isValidJSON(r.line), 1, 3) AS jkind"),
            "{q}"
        );
        assert!(q.contains("arrayFirst(p -> p.1 = 'level' AND dynamicType(p.2) IN ('String', 'Int64', 'UInt64', 'Float64', 'Bool'), jkv).2 AS ap0"), "{q}");
        assert!(q.contains("if(NOT ah0 AND at0 != 'None', av0, "), "{q}");
        // A label with `_` is read from its own key, other keys that may
        // give it make the row residual; `…_extracted` declines.
        if let PlanOutput::Buckets(b) = &mut all.output {
            b.group_by = GroupBy::Labels(vec!["user_id".into()]);
        }
        assert!(crate::sql::buckets_query(&all, &Default::default()).is_ok());
        if let PlanOutput::Buckets(b) = &mut all.output {
            b.group_by = GroupBy::Labels(vec!["level_extracted".into()]);
        }
        declined.push(all);
        let mut unwrap = p.clone();
        unwrap.fields.as_mut().unwrap().unwrap = Some(UnwrapField {
            label: "latency".into(),
            conversion: UnwrapConversion::Float,
            convert: Arc::new(|s: &str| s.parse().ok()),
            post_filters: Vec::new(),
        });
        declined.push(unwrap.clone());
        // An unwrap with a min/max/values/points plan is translated; other
        // conversions and values decline.
        let with = |value: BucketValue, conversion: UnwrapConversion| {
            let mut q = unwrap.clone();
            if let PlanOutput::Buckets(b) = &mut q.output {
                b.value = value;
            }
            q.fields
                .as_mut()
                .unwrap()
                .unwrap
                .as_mut()
                .unwrap()
                .conversion = conversion;
            q
        };
        let q = crate::sql::buckets_query(
            &with(BucketValue::Max, UnwrapConversion::Float),
            &Default::default(),
        )
        .unwrap();
        assert!(q.contains("lf1 AS uv"), "{q}");
        assert!(q.contains("toString(max(uv)) AS unwrapped"), "{q}");
        assert!(
            q.contains(&unwrap_stage(1, UnwrapConversion::Float).1.undecided),
            "{q}"
        );
        let q = crate::sql::buckets_query(
            &with(BucketValue::Points, UnwrapConversion::Float),
            &Default::default(),
        )
        .unwrap();
        assert!(
            q.contains("groupArray((ts, toString(uv))) AS unwrapped"),
            "{q}"
        );
        let q = crate::sql::buckets_query(
            &with(BucketValue::Max, UnwrapConversion::Duration),
            &Default::default(),
        )
        .unwrap();
        assert!(q.contains(&exact_duration_ns("lv1")), "{q}");
        declined.push(with(BucketValue::Sum, UnwrapConversion::Float));
        let mut error_label = p.clone();
        error_label.fields.as_mut().unwrap().parser = JsonParser::Keys(vec![JsonKey {
            label: "__error__".into(),
            key: "x".into(),
        }]);
        declined.push(error_label);
        let mut duration = p.clone();
        duration.fields.as_mut().unwrap().filters = vec![ff("took > 1s", &["took"])];
        let q = crate::sql::buckets_query(&duration, &Default::default()).unwrap();
        assert!(q.contains(&exact_duration_ns("lv1")), "{q}");
        let mut ip = p.clone();
        ip.fields.as_mut().unwrap().filters = vec![ff(r#"addr = ip("::1")"#, &["addr"])];
        let q = crate::sql::buckets_query(&ip, &Default::default()).unwrap();
        assert!(q.contains(&crate::sql::exact_ipv6("lv1")), "{q}");
        // A zoned address matches nothing: declined.
        ip.fields.as_mut().unwrap().filters = vec![ff(r#"addr = ip("fe80::1%eth0")"#, &["addr"])];
        declined.push(ip);
        let mut by_stream = p;
        if let PlanOutput::Buckets(b) = &mut by_stream.output {
            b.group_by = GroupBy::Stream;
        }
        declined.push(by_stream);
        for d in declined {
            assert!(
                crate::sql::buckets_query(&d, &Default::default()).is_err(),
                "{d:?}"
            );
        }
    }

    #[test]
    fn lines_plans_ship_rows_up_to_the_limit_th_kept_one() {
        let mut p = crate::sql::query::tests::plan(PlanOutput::Lines {
            limit: 7,
            direction: Direction::Backward,
        });
        p.fields = Some(FieldStage {
            parser: JsonParser::All,
            filters: vec![ff(r#"level="error""#, &["level"])],
            unwrap: None,
            drop_errors: false,
        });
        let q = crate::sql::lines_query(&p, &Default::default()).unwrap();
        assert!(
            q.starts_with(
                "SELECT sid AS stream_id, labels_text, ts, line, metadata, seq, res FROM"
            ),
            "{q}"
        );
        assert!(q.contains("sum(kept) OVER (ORDER BY ts DESC, labels_text ASC, seq DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - kept AS kept_before"), "{q}");
        assert!(q.contains("WHERE (res OR kept)) WHERE kept_before < 7 ORDER BY ts DESC, labels_text ASC, seq DESC SETTINGS"), "{q}");
        assert!(q.contains("(jkind = 3 OR (lu0)) AS res"), "{q}");
        assert!(q.contains("WHERE tenant = 't1' AND stream_id IN"), "{q}");
        p.output = PlanOutput::Lines {
            limit: 3,
            direction: Direction::Forward,
        };
        let q = crate::sql::lines_query(&p, &Default::default()).unwrap();
        assert!(
            q.contains("ORDER BY ts ASC, labels_text ASC, seq ASC"),
            "{q}"
        );
        // A page: the rows after the key, kept rows counted from there, at
        // most a page of rows (kept or undecided) with ties.
        let key = crate::sql::LinesKey {
            ts: 86_400_000_000_009,
            labels_text: r#"{app="api"}"#.into(),
            seq: 4,
        };
        let read = crate::sql::LinesRead {
            start: 86_400_000_000_000,
            end: 2 * 86_400_000_000_000,
            after: Some(&key),
            wanted: 2,
            page: Some(50),
        };
        let q = crate::sql::lines_read_query(&p, &Default::default(), &read).unwrap();
        assert!(q.contains("WHERE (res OR kept) AND (ts > 86400000000009 OR (ts = 86400000000009 AND (labels_text > '{app=\"api\"}' OR (labels_text = '{app=\"api\"}' AND seq > 4))))) WHERE kept_before < 2 ORDER BY ts ASC, labels_text ASC, seq ASC LIMIT 50 WITH TIES SETTINGS"), "{q}");
        assert!(
            q.contains("AND timestamp >= fromUnixTimestamp64Nano(toInt64(86400000000009), 'UTC')"),
            "{q}"
        );
        // Undecidable pieces decline as in bucket plans.
        p.fields.as_mut().unwrap().filters = vec![ff(r#"addr = ip("fe80::1%eth0")"#, &["addr"])];
        assert!(crate::sql::lines_query(&p, &Default::default()).is_err());
    }

    /// Every read of `logs` of a field plan — lines plans, bucket plans
    /// with unwrapped points, `| json` and `| logfmt` — leaves out the rows
    /// delete requests hide, the residual rows included (they come from
    /// the same read).
    #[test]
    fn field_plans_read_logs_under_the_delete_mask() {
        let mask = crate::sql::RowMask::hiding(vec!["(stream_id IN (7))".into()]);
        let clause = " AND NOT ((stream_id IN (7)))";
        let mut lines = crate::sql::query::tests::plan(PlanOutput::Lines {
            limit: 5,
            direction: Direction::Forward,
        });
        lines.fields = Some(FieldStage {
            parser: JsonParser::All,
            filters: vec![ff(r#"level="error""#, &["level"])],
            unwrap: None,
            drop_errors: false,
        });
        let mut points = crate::sql::query::tests::plan(PlanOutput::Buckets(BucketPlan {
            bounds: vec![0, 10, 20],
            group_by: GroupBy::Labels(vec!["level".into()]),
            value: BucketValue::Points,
            top: None,
        }));
        points.fields = Some(FieldStage {
            parser: JsonParser::All,
            filters: Vec::new(),
            unwrap: Some(UnwrapField {
                label: "latency".into(),
                conversion: UnwrapConversion::Float,
                convert: Arc::new(|s: &str| s.parse().ok()),
                post_filters: Vec::new(),
            }),
            drop_errors: false,
        });
        let mut plans = vec![lines, points];
        for i in 0..2 {
            let mut logfmt = plans[i].clone();
            logfmt.fields.as_mut().unwrap().parser = JsonParser::PLAIN_LOGFMT;
            plans.push(logfmt);
        }
        for p in &plans {
            let q = match p.output {
                PlanOutput::Lines { .. } => crate::sql::lines_query(p, &mask),
                PlanOutput::Buckets(_) => crate::sql::buckets_query(p, &mask),
            }
            .unwrap_or_else(|e| panic!("{p:?}: {e}"));
            assert_eq!(q.matches("FROM logs").count(), 1, "{q}");
            assert_eq!(q.matches(clause).count(), 1, "{q}");
            // In the `WHERE` of that very read, before its grouping or
            // its bucket bounds.
            let read = &q[q.find("FROM logs").unwrap()..];
            let after = &read[read.find(clause).unwrap() + clause.len()..];
            assert!(
                after.starts_with(" GROUP BY") || after.starts_with(" AND timestamp > "),
                "{q}"
            );
        }
    }
}
