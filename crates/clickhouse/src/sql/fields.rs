//! The `| json` stage (with parameters, [`JsonParser::Keys`]; without, for
//! labels without `_`, see `Fields::new`), the label filters after it and
//! the unwrap, in label-grouped bucket plans.
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
//! - a label a filter or the grouping reads whose member is a float, an
//!   object or an array (ClickHouse re-prints them, e.g. `1e2` as `100`), or
//!   the integer `0` on a line holding a `-0` token after a `:` (`-0` is
//!   re-printed as `0`). Strings, `true`/`false`, integers (Int64/UInt64 as written; JSON
//!   integers beyond them come back as their digits, as written) and absent
//!   or `null` members are exact.
//!
//! Strings are read as strings (`SETTINGS` turn off ClickHouse's inference
//! of dates, times and numbers in them); any other type is residual too.
//!
//! Label filters are parsed from their LogQL text ([`FieldFilter::text`])
//! and compiled where the SQL provably decides as the engine does: string
//! matchers (`=`, `!=`, `=~`, `!~`, regexps within the shared RE2 subset of
//! `sql/regex.rs`), `and`, `or`, parentheses, and numeric comparisons on
//! values that are integers of at most 15 digits (exact as `f64`, compared
//! as integers against the constant's floor or ceiling); any other value a
//! numeric comparison reads makes the row residual (Loki's conversion, or its
//! `__error__`, is the engine's).
//!
//! `| unwrap label` (float conversion) feeds `min`, `max` or `groupArray`
//! for min/max/quantile plans; the value is exact for integers of at most
//! 15 digits (not `-0`), any other value makes the row residual. Filters,
//! the unwrap, the filters after it and the grouping are stages in order:
//! a row is residual where a stage is undecided and the stages before it
//! kept the row.
//!
//! Declined: duration, byte-size and `ip()` filters, `duration()` and
//! `bytes()` unwraps, unwraps into sums or points (sum, avg, rate, first,
//! last, stddev over time), `| json` without parameters reading a label
//! with `_`, and parameters labelled `__…`.

use super::group::{base_label, distinct_rows, key_array, labels_plan, stream_labels};
use super::{bucket_expr, quote, selector_regex};
use crate::Error;
use runakefli_logql::{CmpOp, Expr, LabelFilterExpr, Stage};
use runakefli_model::plan::{
    BucketValue, FieldFilter, FieldStage, JsonKey, JsonParser, QueryPlan, UnwrapConversion,
};
use runakefli_model::{MatchOp, Matcher};

/// Labels whose value reads Loki's error state, never a stored label: rows
/// the SQL decides have no error, so they are absent there.
const ERROR_LABELS: [&str; 2] = ["__error__", "__error_details__"];

/// Keeps `JSONExtractKeysAndValues(…, 'Dynamic')` from reading strings as
/// dates, times or numbers (which it would print back otherwise, e.g.
/// `"2024-01-01 10:00:00.50"` with nine fraction digits): strings stay
/// `String`, whatever a server's defaults.
const INFER: &str = "input_format_try_infer_dates = 0, input_format_try_infer_datetimes = 0, \
                     input_format_json_try_infer_numbers_from_strings = 0";

/// Whether the line may hold the JSON number `-0` as a member's value
/// (ClickHouse reads it as the integer `0`; Loki keeps the text `-0`): a
/// `-0` token after a `:`. Also true for such text inside strings, which
/// only makes more rows residual.
const NEG_ZERO: &str = r"match(r.line, ':\\s*-0\\s*[,}\\]]')";

/// Largest magnitude of an integer value compared in SQL: 15 digits, well
/// inside `f64`'s exact integers (2^53).
const MAX_EXACT: f64 = 999_999_999_999_999.0;

/// A label-grouped bucket plan with a `| json` stage: one row per group and
/// non-empty bucket for the rows SQL decides (`res` 0), and per stream one
/// row of residual rows (`res` 1, their `residual` array of `[stream_id,
/// ts, line, metadata]`). Columns: `res`, `rsid`, `key`, `bucket`, `rows`,
/// `bytes`, `residual`.
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
    // unwrapped value (the smallest, the largest, or all of them).
    let agg = match (b.value, &stage.unwrap) {
        (BucketValue::Count | BucketValue::LineBytes, None) => None,
        (BucketValue::Min, Some(_)) => Some("min(uv)"),
        (BucketValue::Max, Some(_)) => Some("max(uv)"),
        (BucketValue::Values, Some(_)) => Some("groupArray(uv)"),
        _ => {
            return Err(Error::Unsupported(format!(
                "bucket value {:?} is not translated",
                b.value
            )))
        }
    };
    if let Some(u) = &stage.unwrap {
        if u.conversion != UnwrapConversion::Float || names.contains(&u.label) {
            return Err(Error::Unsupported(format!("unwrap {u:?}")));
        }
    }
    let mut read: Vec<String> = names.to_vec();
    let parse = |fs: &[FieldFilter]| fs.iter().map(filter_expr).collect::<Result<Vec<_>, _>>();
    let filters = parse(&stage.filters)?;
    let post = parse(
        stage
            .unwrap
            .as_ref()
            .map_or(&[][..], |u| &u.post_filters[..]),
    )?;
    let unwrap_label = stage.unwrap.as_ref().map(|u| u.label.clone());
    let all_filters = stage
        .filters
        .iter()
        .chain(stage.unwrap.iter().flat_map(|u| u.post_filters.iter()));
    for l in all_filters
        .flat_map(|f| f.labels.iter().cloned())
        .chain(unwrap_label.clone())
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
        "JSONExtractKeysAndValues(r.line, 'Dynamic') AS jkv".to_string(),
    ];
    cols.extend(fields.columns());
    for (i, n) in read.iter().enumerate() {
        let (v, u) = fields.label(n);
        cols.push(format!("{v} AS lv{i}"));
        cols.push(format!("{u} AS lu{i}"));
    }
    // The stages in order: filters, the unwrap, filters after it, the
    // grouping. A row is residual when a stage is undecided and every stage
    // before it kept the row; kept when every stage keeps it.
    let col = |name: &str| read.iter().position(|n| n == name).unwrap_or(0);
    let mut stages: Vec<Compiled> = Vec::new();
    for f in &filters {
        stages.push(compile(f, &col)?);
    }
    if let Some(l) = &unwrap_label {
        let i = col(l);
        let v = format!("toFloat64(toInt64OrZero(lv{i}))");
        cols.push(format!("{v} AS uv"));
        stages.push(Compiled {
            keep: "1".into(),
            undecided: unwrap_undecided(i),
        });
    }
    for f in &post {
        stages.push(compile(f, &col)?);
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
    let all_keep = if keeps.is_empty() {
        "1".to_string()
    } else {
        keeps.join(" AND ")
    };
    let key: Vec<String> = (0..names.len()).map(|i| format!("lv{i}")).collect();
    cols.push(format!("({}) AS res", residual.join(" OR ")));
    cols.push(format!("(NOT res AND {all_keep}) AS kept"));
    let agg = agg.map_or(String::new(), |a| format!(", {a} AS unwrapped"));
    Ok(format!(
        "SELECT res, if(res, sid, 0) AS rsid, if(res, {empty}, {key}) AS key, \
         if(res, 0, {bucket}) AS bucket, count() AS rows, sum(length(line)) AS bytes, \
         groupArrayIf((sid, ts, line, metadata), res) AS residual{agg} \
         FROM (SELECT r.timestamp AS timestamp, {cols} \
         FROM ({distinct}) AS r INNER JOIN ({streams}) AS s ON r.stream_id = s.stream_id) \
         WHERE res OR kept GROUP BY res, rsid, key, bucket ORDER BY res, rsid, key, bucket \
         SETTINGS {INFER}",
        empty = key_array(&[]),
        key = key_array(&key),
        bucket = bucket_expr(&b.bounds)?,
        cols = cols.join(", "),
        distinct = distinct_rows(rows, b),
        streams = stream_labels(streams_cond),
    ))
}

/// A member ClickHouse reads as Loki writes it (see the module
/// documentation): absent or `null` (`None`), a string, `true`/`false`, a
/// 64-bit integer. Other types are residual.
const EXACT_TYPES: &str = "('None', 'String', 'Bool', 'Int64', 'UInt64')";

/// The members `| json` without parameters turns into labels: scalars.
const SCALAR_TYPES: &str = "('String', 'Int64', 'UInt64', 'Float64', 'Bool')";

/// How labels are extracted.
enum Mode<'a> {
    /// `| json label="key", …`.
    Keys(&'a [JsonKey]),
    /// `| json`: only labels read by the plan matter, each without `_`.
    All(Vec<String>),
}

/// The `| json` stage as SQL columns and label look-ups.
struct Fields<'a> {
    mode: Mode<'a>,
}

impl<'a> Fields<'a> {
    /// The stage's parser, for a plan reading the labels `read`.
    ///
    /// `| json` without parameters flattens nested members into names
    /// joined by `_`, sanitizes and trims keys and skips `null`s and arrays
    /// (first scalar of each final name wins); a label without `_` can only
    /// come from a top-level key equal to it after trimming, or from the
    /// members of an object under a key that trims to nothing (which Loki
    /// reads as top level). The SQL reads the first scalar member of exactly
    /// that key and leaves rows with a key holding the label plus other
    /// characters that are not `[A-Za-z0-9_]` (e.g. `" level"`), or with an
    /// object under a key without any `[A-Za-z0-9_]`, to the engine. Labels
    /// with `_` (other than `__error__`/`__error_details__`) decline.
    fn new(stage: &'a FieldStage, read: &[String]) -> Result<Self, Error> {
        let keys = match &stage.parser {
            JsonParser::Keys(keys) => keys,
            JsonParser::All => {
                for n in read {
                    if n.contains('_') && !ERROR_LABELS.contains(&n.as_str()) {
                        return Err(Error::Unsupported(format!(
                            "| json without parameters: label {n} (names with `_` are not translated)"
                        )));
                    }
                }
                return Ok(Fields {
                    mode: Mode::All(read.to_vec()),
                });
            }
        };
        for k in keys {
            let simple = !k.key.is_empty()
                && k.key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !simple || k.label.starts_with("__") {
                return Err(Error::Unsupported(format!(
                    "| json parameter {}={:?}",
                    k.label, k.key
                )));
            }
        }
        Ok(Fields {
            mode: Mode::Keys(keys),
        })
    }

    /// The kind of a line: 0 empty (no label set), 1 a JSON object
    /// ClickHouse parses, 2 `"` or `[` (every parameter's label `""`), 3
    /// residual (Loki's `__error__`, or a `{` line that is not valid JSON).
    /// Without parameters every line but a valid object is residual (Loki's
    /// walk wants an object).
    fn line_kind(&self, line: &str) -> String {
        match self.mode {
            Mode::Keys(_) => format!(
                "multiIf({line} = '', 0, startsWith({line}, '{{'), if(isValidJSON({line}), 1, 3), \
                 startsWith({line}, '\"') OR startsWith({line}, '['), 2, 3)"
            ),
            Mode::All(_) => format!("if(startsWith({line}, '{{') AND isValidJSON({line}), 1, 3)"),
        }
    }

    /// Per parameter `i`: its member (`jp{i}`), the member's type (`jt{i}`),
    /// its text for rows of kind 1 or 2 (`jv{i}`), whether that text is
    /// not provably Loki's (`jb{i}`) and whether the base labels hold the
    /// parameter's label (`jh{i}`: then it is named `…_extracted`).
    fn columns(&self) -> Vec<String> {
        let keys = match &self.mode {
            Mode::Keys(keys) => *keys,
            Mode::All(read) => return all_columns(read),
        };
        let mut out = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            let l = quote(&k.label);
            out.push(format!(
                "arrayFirst(p -> p.1 = {}, jkv).2 AS jp{i}",
                quote(&k.key)
            ));
            out.push(format!("dynamicType(jp{i}) AS jt{i}"));
            out.push(format!(
                "multiIf(jkind = 2, '', jt{i} = 'String' AND position(toString(jp{i}), '\u{FFFD}') > 0, '', \
                 toString(jp{i})) AS jv{i}"
            ));
            out.push(format!(
                "(jkind = 1 AND (jt{i} NOT IN {EXACT_TYPES} \
                 OR (jt{i} = 'Int64' AND jv{i} = '0' AND {NEG_ZERO}))) AS jb{i}"
            ));
            out.push(format!(
                "(mapContains(s.stream_labels, {l}) OR has(mapKeys(r.metadata), {l})) AS jh{i}"
            ));
        }
        out
    }

    /// The value (`Nullable(String)`, `NULL` when absent) and the undecided
    /// flag of label `name` for a row: the last parameter whose final name
    /// is `name`, else the row's metadata or stream label.
    fn label(&self, name: &str) -> (String, String) {
        let (mut value, mut undecided) = if ERROR_LABELS.contains(&name) {
            (
                "CAST(NULL, 'Nullable(String)')".to_string(),
                "0".to_string(),
            )
        } else {
            (base_label(name), "0".to_string())
        };
        let keys = match &self.mode {
            Mode::Keys(keys) => *keys,
            Mode::All(read) => {
                return match read.iter().position(|n| n == name) {
                    Some(i) if !ERROR_LABELS.contains(&name) => (
                        format!("if(NOT ah{i} AND at{i} != 'None', av{i}, {value})"),
                        format!("(NOT ah{i} AND ab{i})"),
                    ),
                    _ => (value, undecided),
                };
            }
        };
        for (i, k) in keys.iter().enumerate() {
            let cond = if k.label == name {
                format!("jkind IN (1, 2) AND NOT jh{i}")
            } else if format!("{}_extracted", k.label) == name {
                format!("jkind IN (1, 2) AND jh{i}")
            } else {
                continue;
            };
            value = format!("if({cond}, jv{i}, {value})");
            undecided = format!("if({cond}, jb{i}, {undecided})");
        }
        (value, undecided)
    }
}

/// Columns of `| json` without parameters, per read label `i` (named `n`,
/// without `_`): its first scalar top-level member (`ap{i}`), its type
/// (`at{i}`, `None` when there is none), its text (`av{i}`), whether the
/// SQL cannot tell Loki's value (`ab{i}`: a type printed back otherwise,
/// `-0`, a key that trims to `n`, an object under a key that may trim to
/// nothing) and whether the base labels hold `n` (`ah{i}`: then the member
/// is named `n_extracted` and `n` keeps the base value).
fn all_columns(read: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, n) in read.iter().enumerate() {
        if ERROR_LABELS.contains(&n.as_str()) {
            continue;
        }
        let q = quote(n);
        out.push(format!(
            "arrayFirst(p -> p.1 = {q} AND dynamicType(p.2) IN {SCALAR_TYPES}, jkv).2 AS ap{i}"
        ));
        out.push(format!("dynamicType(ap{i}) AS at{i}"));
        out.push(format!(
            "if(at{i} = 'String' AND position(toString(ap{i}), '\u{FFFD}') > 0, '', toString(ap{i})) AS av{i}"
        ));
        out.push(format!(
            "(at{i} NOT IN {EXACT_TYPES} \
             OR (at{i} = 'Int64' AND av{i} = '0' AND {NEG_ZERO}) \
             OR arrayExists(p -> p.1 != {q} AND position(p.1, {q}) > 0 \
             AND NOT match(replaceOne(p.1, {q}, ''), '[A-Za-z0-9_]'), jkv) \
             OR arrayExists(p -> NOT match(p.1, '[A-Za-z0-9_]') AND dynamicType(p.2) = 'JSON', jkv)) AS ab{i}"
        ));
        out.push(format!(
            "(mapContains(s.stream_labels, {q}) OR has(mapKeys(r.metadata), {q})) AS ah{i}"
        ));
    }
    out
}

/// A label filter's expression, parsed back from its LogQL text.
fn filter_expr(f: &FieldFilter) -> Result<LabelFilterExpr, Error> {
    let unsupported = || Error::Unsupported(format!("label filter {}", f.text));
    let expr = runakefli_logql::parse_expr(&format!("{{x=\"y\"}} | {}", f.text))
        .map_err(|_| unsupported())?;
    let Expr::Log(log) = expr else {
        return Err(unsupported());
    };
    match log.pipeline.as_slice() {
        [Stage::LabelFilter(e)] => Ok(e.clone()),
        _ => Err(unsupported()),
    }
}

/// A filter as SQL: `keep` holds when the row passes (meaningful only
/// where `undecided` does not hold), `undecided` when the SQL cannot tell
/// (the row goes to the engine).
struct Compiled {
    keep: String,
    undecided: String,
}

/// Compiles a filter over the label columns (`lv{i}`, `lu{i}`; `col` gives
/// a label's index).
fn compile(e: &LabelFilterExpr, col: &dyn Fn(&str) -> usize) -> Result<Compiled, Error> {
    Ok(match e {
        LabelFilterExpr::And(a, b) => {
            let (a, b) = (compile(a, col)?, compile(b, col)?);
            Compiled {
                keep: format!("({} AND {})", a.keep, b.keep),
                undecided: format!("({} OR {})", a.undecided, b.undecided),
            }
        }
        // The right side runs only when the left one fails.
        LabelFilterExpr::Or(a, b) => {
            let (a, b) = (compile(a, col)?, compile(b, col)?);
            Compiled {
                keep: format!("({} OR {})", a.keep, b.keep),
                undecided: format!("({} OR (NOT {} AND {}))", a.undecided, a.keep, b.undecided),
            }
        }
        LabelFilterExpr::Paren(a) => compile(a, col)?,
        LabelFilterExpr::String(m) => {
            let i = col(&m.name);
            Compiled {
                keep: string_match(&format!("coalesce(lv{i}, '')"), m)?,
                undecided: format!("lu{i}"),
            }
        }
        LabelFilterExpr::Number { name, op, value } => {
            let i = col(name);
            let int = format!("match(lv{i}, '^-?[0-9]{{1,15}}$')");
            Compiled {
                // An absent label drops the row (no error).
                keep: format!(
                    "(isNotNull(lv{i}) AND {int} AND {})",
                    int_compare(&format!("toInt64OrZero(lv{i})"), *op, *value)
                ),
                undecided: format!("(lu{i} OR (isNotNull(lv{i}) AND NOT {int}))"),
            }
        }
        other => {
            return Err(Error::Unsupported(format!(
                "label filter {other:?} is not translated"
            )))
        }
    })
}

/// A string matcher over a `String` expression, as the engine's `Matcher`
/// decides it (regexps anchored, `.` matching newlines).
fn string_match(v: &str, m: &Matcher) -> Result<String, Error> {
    Ok(match m.op {
        MatchOp::Eq => format!("{v} = {}", quote(&m.value)),
        MatchOp::Neq => format!("{v} != {}", quote(&m.value)),
        MatchOp::Re => format!("match({v}, {})", quote(&selector_regex(&m.value)?)),
        MatchOp::Nre => format!("NOT match({v}, {})", quote(&selector_regex(&m.value)?)),
    })
}

/// Whether the unwrap of label column `i` is undecided in SQL: it is
/// exact only for integers of at most 15 digits (`f64` holds them exactly,
/// as Go's `ParseFloat` reads them), not `-0` (which is `-0.0` in `f64`).
/// An absent label, or any other text, is the engine's (its conversion or
/// its `__error__`).
fn unwrap_undecided(i: usize) -> String {
    format!(
        "(lu{i} OR isNull(lv{i}) OR NOT match(lv{i}, '^-?[0-9]{{1,15}}$') OR match(lv{i}, '^-0+$'))"
    )
}

/// `x op c` for an integer `x` with `|x| <= MAX_EXACT` and a float `c`, as
/// `f64` compares them, written with integer constants only.
fn int_compare(x: &str, op: CmpOp, c: f64) -> String {
    if c.is_nan() {
        // Every comparison with NaN is false but `!=`.
        return if op == CmpOp::Neq { "1" } else { "0" }.to_string();
    }
    // Constants beyond every compared integer decide alike for all of them.
    let (lo, hi) = (-MAX_EXACT - 1.0, MAX_EXACT + 1.0);
    let c = c.clamp(lo, hi);
    let is_int = c.fract() == 0.0 && c > lo && c < hi;
    let (floor, ceil) = (c.floor() as i64, c.ceil() as i64);
    match op {
        CmpOp::Eq if is_int => format!("{x} = {floor}"),
        CmpOp::Eq => "0".to_string(),
        CmpOp::Neq if is_int => format!("{x} != {floor}"),
        CmpOp::Neq => "1".to_string(),
        CmpOp::Gt => format!("{x} > {floor}"),
        CmpOp::Gte => format!("{x} >= {ceil}"),
        CmpOp::Lt => format!("{x} < {ceil}"),
        CmpOp::Lte => format!("{x} <= {floor}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn ff(text: &str, labels: &[&str]) -> FieldFilter {
        FieldFilter {
            labels: labels.iter().map(|s| s.to_string()).collect(),
            text: text.into(),
            test: Arc::new(|_| runakefli_model::plan::FilterOutcome::Keep),
        }
    }

    fn compiled(text: &str) -> Result<Compiled, Error> {
        compile(&filter_expr(&ff(text, &[]))?, &|n| match n {
            "level" => 0,
            _ => 1,
        })
    }

    #[test]
    fn integer_comparisons_use_the_constants_floor_or_ceiling() {
        let x = "x";
        assert_eq!(int_compare(x, CmpOp::Gte, 500.0), "x >= 500");
        assert_eq!(int_compare(x, CmpOp::Gte, 499.5), "x >= 500");
        assert_eq!(int_compare(x, CmpOp::Gt, 499.5), "x > 499");
        assert_eq!(int_compare(x, CmpOp::Lt, -1.5), "x < -1");
        assert_eq!(int_compare(x, CmpOp::Lte, -1.5), "x <= -2");
        assert_eq!(int_compare(x, CmpOp::Eq, 1.5), "0");
        assert_eq!(int_compare(x, CmpOp::Neq, 1.5), "1");
        assert_eq!(int_compare(x, CmpOp::Eq, 7.0), "x = 7");
        assert_eq!(int_compare(x, CmpOp::Neq, f64::NAN), "1");
        assert_eq!(int_compare(x, CmpOp::Lt, f64::NAN), "0");
        // Beyond every 15-digit integer: all of them compare alike.
        assert_eq!(int_compare(x, CmpOp::Lt, 1e300), "x < 1000000000000000");
        assert_eq!(int_compare(x, CmpOp::Eq, 1e300), "0");
        assert_eq!(
            int_compare(x, CmpOp::Gt, f64::NEG_INFINITY),
            "x > -1000000000000000"
        );
        // Every comparison of an integer with these holds as in f64.
        for c in [-3.5, -3.0, -0.0, 0.0, 0.25, 2.0, 2.999] {
            for xv in -5i64..=5 {
                for op in [
                    CmpOp::Eq,
                    CmpOp::Neq,
                    CmpOp::Gt,
                    CmpOp::Gte,
                    CmpOp::Lt,
                    CmpOp::Lte,
                ] {
                    let want = match op {
                        CmpOp::Eq => xv as f64 == c,
                        CmpOp::Neq => xv as f64 != c,
                        CmpOp::Gt => xv as f64 > c,
                        CmpOp::Gte => xv as f64 >= c,
                        CmpOp::Lt => (xv as f64) < c,
                        CmpOp::Lte => xv as f64 <= c,
                    };
                    let sql = int_compare("x", op, c);
                    let got = match sql.as_str() {
                        "0" => false,
                        "1" => true,
                        s => {
                            let (lhs, n) = s.rsplit_once(' ').unwrap();
                            let n: i64 = n.parse().unwrap();
                            match lhs {
                                "x =" => xv == n,
                                "x !=" => xv != n,
                                "x >" => xv > n,
                                "x >=" => xv >= n,
                                "x <" => xv < n,
                                "x <=" => xv <= n,
                                _ => panic!("{s}"),
                            }
                        }
                    };
                    assert_eq!(got, want, "{xv} {op:?} {c} as {sql}");
                }
            }
        }
    }

    #[test]
    fn filters_compile_from_their_text_or_decline() {
        let c = compiled(r#"level="error""#).unwrap();
        assert_eq!(c.keep, "coalesce(lv0, '') = 'error'");
        assert_eq!(c.undecided, "lu0");
        let c = compiled(r#"level=~"err.*" or status >= 500"#).unwrap();
        assert_eq!(
            c.keep,
            "(match(coalesce(lv0, ''), '^(?s:err.*)$') OR (isNotNull(lv1) AND match(lv1, '^-?[0-9]{1,15}$') AND toInt64OrZero(lv1) >= 500))"
        );
        assert_eq!(
            c.undecided,
            "(lu0 OR (NOT match(coalesce(lv0, ''), '^(?s:err.*)$') AND (lu1 OR (isNotNull(lv1) AND NOT match(lv1, '^-?[0-9]{1,15}$')))))"
        );
        for declined in [
            "latency > 5s",
            "size > 20MB",
            r#"addr = ip("10.0.0.0/8")"#,
            r#"level=~"\\d+""#,
        ] {
            assert!(compiled(declined).is_err(), "{declined}");
        }
    }

    #[test]
    fn json_parameter_plans_translate_and_others_decline() {
        use runakefli_model::plan::{
            BucketPlan, GroupBy, PlanOutput, UnwrapConversion, UnwrapField,
        };
        let mut p = crate::sql::query::tests::plan(PlanOutput::Buckets(BucketPlan {
            bounds: vec![0, 10, 20],
            group_by: GroupBy::Labels(vec!["level".into()]),
            value: BucketValue::Count,
        }));
        p.fields = Some(FieldStage {
            parser: JsonParser::Keys(vec![JsonKey {
                label: "level".into(),
                key: "lvl".into(),
            }]),
            filters: vec![ff(r#"level!="debug""#, &["level"])],
            unwrap: None,
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
        // A label with `_` may come from nested members: declined.
        if let PlanOutput::Buckets(b) = &mut all.output {
            b.group_by = GroupBy::Labels(vec!["user_id".into()]);
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
        // An unwrap with a min/max/values plan is translated; other
        // conversions and values (points: order-dependent sums) decline.
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
        assert!(q.contains("toFloat64(toInt64OrZero(lv1)) AS uv"), "{q}");
        assert!(q.contains("max(uv) AS unwrapped"), "{q}");
        assert!(q.contains(&unwrap_undecided(1)), "{q}");
        declined.push(with(BucketValue::Max, UnwrapConversion::Duration));
        declined.push(with(BucketValue::Points, UnwrapConversion::Float));
        declined.push(with(BucketValue::Sum, UnwrapConversion::Float));
        let mut error_label = p.clone();
        error_label.fields.as_mut().unwrap().parser = JsonParser::Keys(vec![JsonKey {
            label: "__error__".into(),
            key: "x".into(),
        }]);
        declined.push(error_label);
        let mut duration = p.clone();
        duration.fields.as_mut().unwrap().filters = vec![ff("took > 1s", &["took"])];
        declined.push(duration);
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
    fn labels_take_the_last_parameter_of_their_final_name_else_the_base() {
        let keys = vec![
            JsonKey {
                label: "level".into(),
                key: "lvl".into(),
            },
            JsonKey {
                label: "level_extracted".into(),
                key: "other".into(),
            },
        ];
        let f = Fields {
            mode: Mode::Keys(&keys),
        };
        let (v, u) = f.label("level_extracted");
        assert!(v.starts_with("if(jkind IN (1, 2) AND NOT jh1, jv1, if(jkind IN (1, 2) AND jh0, jv0, if(has(mapKeys(r.metadata), 'level_extracted')"), "{v}");
        assert_eq!(
            u,
            "if(jkind IN (1, 2) AND NOT jh1, jb1, if(jkind IN (1, 2) AND jh0, jb0, 0))"
        );
        assert_eq!(f.label("__error__").0, "CAST(NULL, 'Nullable(String)')");
        assert_eq!(f.label("other").1, "0");
        assert!(f
            .line_kind("l")
            .starts_with("multiIf(l = '', 0, startsWith(l, '{'), if(isValidJSON(l), 1, 3)"));
    }
}
