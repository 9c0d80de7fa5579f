//! The query plan: a LogQL query cut into pieces a backend may execute.
//!
//! The engine describes what a query reads — stream selector, time range,
//! line filters, `| json` fields with label filters and an unwrap, and what
//! comes out (the newest or oldest `limit` lines, or rows counted into time
//! buckets per group) — and hands the plan to [`Backend::execute`](crate::backend::Backend::execute). A backend
//! either declines the plan (`Ok(None)`: the engine then scans rows with
//! [`Backend::scan`](crate::backend::Backend::scan) and runs every stage itself) or answers it. An answer
//! may leave rows to the engine: *residual* rows are rows the backend could
//! not evaluate past the line filters (lines it cannot split into fields,
//! rows whose fields would carry `__error__`); the engine runs the whole
//! pipeline on them and adds them to the backend's buckets.
//!
//! Semantics are Loki's and are fixed here, so that every backend (the
//! embedded store, a SQL backend) answers alike:
//! - **Rows**: entries of streams matching every [`QueryPlan::selector`]
//!   matcher with `start <= ts < end`, exact duplicates (same timestamp,
//!   line and metadata within a stream) counted once.
//! - **Line filters** hold for the stored line, all of them (see
//!   [`LineFilter`]).
//! - **Fields** ([`FieldStage`]): the labels of a row are its stream labels,
//!   then its structured metadata (a metadata name replaces a stream label of
//!   that name), then what `| json` or `| logfmt` extracts (see
//!   [`JsonParser`]); label
//!   filters and the unwrap read those labels.
//! - **Lines** output: the `limit` rows first in the direction's time order,
//!   ties broken by the stream's labels in their text form
//!   ([`Labels`](crate::Labels)' `Display`), then by position in the stream
//!   (push order; reversed when reading backward).
//! - **Buckets** output: every kept row whose timestamp lies in
//!   `(bounds[i], bounds[i + 1]]` adds to bucket `i` of its group. With
//!   [`BucketPlan::top`], an answer without residual rows may leave out the
//!   groups that are never among the top (see [`TopGroups`]).
//!
//! A SQL backend compiles the pieces itself from their data (a label
//! filter from [`FieldFilter::condition`], never from LogQL text), and the
//! embedded store calls the compiled tests the engine puts into the plan,
//! so both follow the engine's definition of each stage.

use crate::label_condition::LabelCondition;
use crate::{Direction, Entry, Matcher, StreamInfo, TenantId, Timestamp};
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

/// A test of a whole line (the engine's compiled line filter, before negation).
pub type LineTest = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// A label filter over the values of [`FieldFilter::labels`], in that order
/// (`None` for an absent label).
pub type FieldTest = Arc<dyn Fn(&[Option<&str>]) -> FilterOutcome + Send + Sync>;

/// Converts an unwrapped label value to a sample; `None` when the value does
/// not convert (the row would carry `__error__`).
pub type UnwrapConvert = Arc<dyn Fn(&str) -> Option<f64> + Send + Sync>;

/// A query as pieces (see the module documentation).
#[derive(Clone, Debug)]
pub struct QueryPlan {
    /// Whose data.
    pub tenant: TenantId,
    /// Stream selector; every matcher must hold.
    pub selector: Vec<Matcher>,
    /// Inclusive start, nanoseconds.
    pub start: Timestamp,
    /// Exclusive end, nanoseconds.
    pub end: Timestamp,
    /// Line filters, all of which a row's line must pass.
    pub line_filters: Vec<LineFilter>,
    /// `| json` (or `| logfmt`) and the label filters and unwrap after it;
    /// `None` when the query reads no fields.
    pub fields: Option<FieldStage>,
    /// What to return.
    pub output: PlanOutput,
    /// Give up with [`BackendError::Cancelled`](crate::BackendError) after this.
    pub deadline: Option<Instant>,
    /// Give up with [`BackendError::Cancelled`](crate::BackendError) once
    /// this flag is raised (the client of the request went away); checked
    /// where the deadline is.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// How a line filter matches, before negation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineMatch {
    /// `|=` / `!=`: the line contains one of the values.
    Substring,
    /// `|~` / `!~`: one of the values (RE2 syntax, unanchored) matches.
    Regex,
}

/// One line filter: `|= "a" or "b"`, `!~ "x"`, …
#[derive(Clone)]
pub struct LineFilter {
    /// How the values match.
    pub kind: LineMatch,
    /// `!=` / `!~`: the line passes when no value matches.
    pub negated: bool,
    /// The operands (`or` alternatives), at least one.
    pub values: Vec<String>,
    /// When the filter, before negation, holds for exactly the lines that
    /// contain one of these substrings (always so for [`LineMatch::Substring`];
    /// for a regexp that is a set of literals). `None`: no such set.
    pub any_of: Option<Vec<String>>,
    /// Substrings that every line the filter (before negation) keeps
    /// contains: pruning hints, possibly empty.
    pub all_of: Vec<String>,
    /// The exact test, before negation.
    pub test: LineTest,
    /// For a single regexp that is a literal followed by a part that never
    /// matches a `"`: that split (lets a backend decide JSON-aware regexps
    /// like `"msg":"[^"]*request` from one field's values).
    pub split: Option<RegexSplit>,
}

/// A regexp `P R` where `P` is a literal and `R` never matches a `"` byte:
/// a line matches iff at some occurrence of `P`, `R` matches the text right
/// after it.
#[derive(Clone)]
pub struct RegexSplit {
    /// The literal `P`.
    pub prefix: String,
    /// Whether `R` matches at the start of a text (a prefix of it).
    pub rest: LineTest,
    /// Substrings every text that `R` matches contains (possibly none).
    pub rest_all_of: Vec<String>,
    /// `R` gives a text and the text with each run of ASCII digits replaced
    /// by one NUL byte the same verdict (a backend storing values with
    /// their numbers taken out can test `R` without putting them back).
    pub rest_digit_blind: bool,
}

impl fmt::Debug for RegexSplit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} + …", self.prefix)
    }
}

impl LineFilter {
    /// Whether `line` passes the filter.
    pub fn keep(&self, line: &str) -> bool {
        (self.test)(line) != self.negated
    }

    /// The filter in LogQL, e.g. `|~ "a" or "b"`.
    pub fn text(&self) -> String {
        let op = match (self.kind, self.negated) {
            (LineMatch::Substring, false) => "|=",
            (LineMatch::Substring, true) => "!=",
            (LineMatch::Regex, false) => "|~",
            (LineMatch::Regex, true) => "!~",
        };
        let vals: Vec<String> = self
            .values
            .iter()
            .map(|v| crate::labels::quote_go(v))
            .collect();
        format!("{op} {}", vals.join(" or "))
    }
}

impl fmt::Debug for LineFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// The `| json` stage of a plan and what reads its labels.
#[derive(Clone, Debug)]
pub struct FieldStage {
    /// How labels are extracted.
    pub parser: JsonParser,
    /// Label filters after the parser, all of which must keep a row.
    pub filters: Vec<FieldFilter>,
    /// `| unwrap`, for range aggregations over sample values.
    pub unwrap: Option<UnwrapField>,
    /// `| drop __error__, __error_details__` (either or both, without
    /// values) among the filters: a row's error labels are removed there.
    /// A backend whose decided rows never carry an error label (they are
    /// left to the engine, which runs the whole pipeline) may ignore it;
    /// one whose decided rows may carry them must decline the plan.
    pub drop_errors: bool,
}

/// The plan's field parser: Loki's `| json` (with or without parameters),
/// `| logfmt` ([`JsonParser::Logfmt`]), or none ([`JsonParser::Base`]:
/// label filters and an unwrap straight after the line filters); the enum
/// keeps the name it had when `| json` was the only one.
///
/// Without parameters ([`JsonParser::All`]) every scalar member of the line's
/// JSON object becomes a label: nested keys joined with `_`, every byte
/// outside `[A-Za-z0-9_]` replaced by `_`, a leading digit prefixed with `_`;
/// a name the stream labels or the row's metadata already hold gets
/// `_extracted` appended; the first member (in line order) of each final
/// name wins; string values are unescaped; `null` and arrays are skipped.
/// A line that is not such an object leaves the row to the engine.
///
/// With parameters ([`JsonParser::Keys`]) each parameter sets its label (or
/// its `_extracted` form, as above) to the value of the top-level member of
/// that name: a string unescaped, other scalars as written, `""` when the
/// member is absent or `null`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JsonParser {
    /// `| json`.
    All,
    /// `| json label="key", …`, keys of `[A-Za-z0-9_]` only.
    Keys(Vec<JsonKey>),
    /// `| logfmt [--strict] [--keep-empty] [params]`.
    ///
    /// Without parameters each `key=value` pair of the line sets a label
    /// named by the key as `| json` names top-level keys (trimmed,
    /// sanitized, `_extracted` when the base labels hold it); pairs without
    /// a value (`k`, `k=`, `k=""`) are skipped — with `keep_empty` they set
    /// `""` — the first value of each final name wins, a quoted value is
    /// unquoted and U+FFFD in a value becomes a space.
    ///
    /// With parameters (`keys`, each key as the engine compares it with a
    /// line's sanitized keys) only the parameters' labels are set: each
    /// starts `""`, a pair whose key is a parameter's key (the first
    /// parameter of that key), or is a parameter's label and no
    /// parameter's key, sets that label to its value (`""` without one,
    /// and when the value holds U+FFFD), the last such pair wins;
    /// `keep_empty` changes nothing. A label the base labels hold is set
    /// once as `<label>_extracted` and a second pair for it ends the line.
    ///
    /// Only `strict` sets `__error__` (`LogfmtParserErr`, at the first
    /// malformed pair, where it stops reading the line).
    Logfmt {
        /// `--strict`.
        strict: bool,
        /// `--keep-empty`.
        keep_empty: bool,
        /// `| logfmt label="key", …`; empty without parameters.
        keys: Vec<JsonKey>,
    },
    /// No parser: the stage's label filters and unwrap read the row's base
    /// labels only — its stream's labels and its structured metadata — as
    /// Loki's label filters do when no parser comes before them.
    Base,
}

impl JsonParser {
    /// `| logfmt` without flags or parameters.
    pub const PLAIN_LOGFMT: JsonParser = JsonParser::Logfmt {
        strict: false,
        keep_empty: false,
        keys: Vec::new(),
    };
}

/// One `| json` or `| logfmt` parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonKey {
    /// The label to set.
    pub label: String,
    /// The top-level member to read.
    pub key: String,
}

/// What a label filter decides for a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterOutcome {
    /// The row passes.
    Keep,
    /// The row is dropped.
    Drop,
    /// The row would carry `__error__` (a value does not convert): the
    /// backend leaves it to the engine as a residual row.
    Error,
}

/// A label filter stage (`| level="error"`, `| status >= 500 or x=~"y"`),
/// three times: as data for backends that compile it themselves
/// ([`FieldFilter::condition`]), as the engine's compiled test for
/// backends that call it ([`FieldFilter::test`]), and as LogQL text (for
/// messages and plan dumps).
#[derive(Clone)]
pub struct FieldFilter {
    /// The labels it reads, in the order [`FieldFilter::test`] takes them
    /// (sorted, each once: [`LabelCondition::labels`]).
    pub labels: Vec<String>,
    /// The filter as data: what a SQL backend translates.
    pub condition: LabelCondition,
    /// The filter in LogQL, as the query wrote it (normalised).
    pub text: String,
    /// The engine's test.
    pub test: FieldTest,
}

impl fmt::Debug for FieldFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "| {}", self.text)
    }
}

/// How an unwrapped value becomes a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnwrapConversion {
    /// A float, as Go's `strconv.ParseFloat` reads it.
    Float,
    /// `duration(x)`: a Go duration, in seconds.
    Duration,
    /// `bytes(x)`: a byte size.
    Bytes,
}

/// `| unwrap label [| post filters]`.
#[derive(Clone)]
pub struct UnwrapField {
    /// The label holding the sample.
    pub label: String,
    /// How it is read.
    pub conversion: UnwrapConversion,
    /// The engine's conversion.
    pub convert: UnwrapConvert,
    /// Label filters after the unwrap.
    pub post_filters: Vec<FieldFilter>,
}

impl fmt::Debug for UnwrapField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "| unwrap {:?}({})", self.conversion, self.label)?;
        for p in &self.post_filters {
            write!(f, " {p:?}")?;
        }
        Ok(())
    }
}

/// What a plan returns.
#[derive(Clone, Debug)]
pub enum PlanOutput {
    /// The first `limit` rows in `direction` (see the module documentation).
    Lines {
        /// How many.
        limit: usize,
        /// Newest first or oldest first.
        direction: Direction,
    },
    /// Rows counted into time buckets per group.
    Buckets(BucketPlan),
}

/// Time buckets, grouping and the value each row adds.
#[derive(Clone, Debug)]
pub struct BucketPlan {
    /// Strictly increasing bucket bounds: bucket `i` holds the rows with
    /// `bounds[i] < ts <= bounds[i + 1]`; rows outside every bucket are
    /// ignored. At least two bounds.
    pub bounds: Vec<Timestamp>,
    /// Which rows form one group.
    pub group_by: GroupBy,
    /// What each bucket accumulates.
    pub value: BucketValue,
    /// Only the groups among the largest (smallest) at some step are
    /// wanted (`topk`/`bottomk` over the plan's groups); `None`: every group.
    pub top: Option<TopGroups>,
}

/// Which groups of a bucket plan the query keeps: those among the `k`
/// largest (or smallest) window values at some step, as `topk(k, …)`
/// (`bottomk`) over the groups' per-step values picks them.
///
/// A group's window value at step `s` is its row count (for
/// [`BucketValue::LineBytes`], its line bytes) summed over buckets
/// `windows[s].0 .. windows[s].1`; the group is *present* at `s` when that
/// window holds at least one of its rows. The group is **among the top** at
/// `s` when it is present there and fewer than `k` groups present there
/// have a strictly larger (for `bottom`, strictly smaller) value: ties at
/// the `k`-th place are all among the top, so whatever order the engine
/// breaks ties in, the `k` it keeps are there.
///
/// A backend may leave out of an answer every group that is among the top
/// at no step, but only when the answer has no residual rows (those could
/// still add to any group), and only for [`BucketValue::Count`] and
/// [`BucketValue::LineBytes`] plans (the values the engine's `rate`,
/// `count_over_time`, `bytes_rate` and `bytes_over_time` grow with). It may
/// also ignore this and answer every group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopGroups {
    /// How many groups each step keeps (at least 1).
    pub k: usize,
    /// The smallest values instead of the largest (`bottomk`).
    pub bottom: bool,
    /// Each step's window, as the half-open run of buckets `(first, end)`
    /// it sums (empty when `first == end`).
    pub windows: Vec<(u32, u32)>,
    /// Labels of the plan's [`GroupBy::Labels`] that part the groups
    /// (`topk by (…)`, `topk without (…)`): a group is ranked only among
    /// the groups with the same values of these labels, and *among the
    /// top* as above within its part. (A backend may part finer, e.g. an
    /// absent label apart from `""`: it then keeps more groups.)
    /// Empty: all groups are ranked together.
    pub partition: Vec<String>,
}

impl BucketPlan {
    /// Number of buckets.
    pub fn buckets(&self) -> usize {
        self.bounds.len().saturating_sub(1)
    }

    /// The bucket of a row at `ts`, if any.
    pub fn bucket_of(&self, ts: Timestamp) -> Option<usize> {
        let b = &self.bounds;
        if b.len() < 2 || ts <= b[0] || ts > b[b.len() - 1] {
            return None;
        }
        // First bound >= ts, minus one.
        Some(b.partition_point(|&x| x < ts) - 1)
    }

    /// [`BucketPlan::bucket_of`], trying bucket `hint` and the one after it
    /// first: rows read in time order land in the bucket of the row before
    /// them or the next one, so a scan keeping its last bucket as the hint
    /// skips the binary search for nearly every row.
    #[inline]
    pub fn bucket_of_near(&self, ts: Timestamp, hint: usize) -> Option<usize> {
        let b = &self.bounds;
        if hint + 2 < b.len() {
            if b[hint] < ts && ts <= b[hint + 1] {
                return Some(hint);
            }
            if b[hint + 1] < ts && ts <= b[hint + 2] {
                return Some(hint + 1);
            }
        }
        self.bucket_of(ts)
    }
}

/// The groups of a bucket plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupBy {
    /// One group per combination of these labels' values (`None` when a
    /// row lacks the label); an empty list makes one group.
    Labels(Vec<String>),
    /// One group per stream and structured metadata (the row's label set
    /// when the plan has no fields stage).
    Stream,
}

/// What a bucket accumulates from its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketValue {
    /// The number of rows.
    Count,
    /// The number of rows and the sum of their line lengths in bytes.
    LineBytes,
    /// The number of rows and the sum of their unwrapped values.
    Sum,
    /// The number of rows and the smallest unwrapped value.
    Min,
    /// The number of rows and the largest unwrapped value.
    Max,
    /// Every unwrapped value (in no particular order).
    Values,
    /// Every `(timestamp, unwrapped value)`, in no particular order.
    Points,
}

impl BucketValue {
    /// True when rows add unwrapped values (the plan needs an unwrap).
    pub fn needs_unwrap(self) -> bool {
        !matches!(self, BucketValue::Count | BucketValue::LineBytes)
    }
}

/// A backend's answer to a plan.
#[derive(Clone, Debug, Default)]
pub struct PlanAnswer {
    /// The rows or groups the backend computed.
    pub data: AnswerData,
    /// Rows the engine must run the query's whole pipeline on (their line
    /// filters are re-checked); for bucket plans only (a lines answer
    /// carries its undecided rows among its rows, see [`AnswerData::Lines`]).
    pub residual: Vec<ResidualRows>,
    /// What the backend read.
    pub stats: PlanStats,
}

/// The computed part of an answer.
#[derive(Clone, Debug)]
pub enum AnswerData {
    /// For [`PlanOutput::Lines`]: the rows, in answer order, at most `limit`.
    ///
    /// With a fields stage, the rows the backend could not decide (a line
    /// it cannot split into fields as the engine does, a value it cannot
    /// compare exactly) come too, in answer order among the kept ones, up
    /// to the `limit`-th kept row: the engine runs the whole pipeline on
    /// every row (it needs the parsed labels anyway) and keeps the first
    /// `limit` that pass. Rows the backend keeps must pass the pipeline,
    /// rows it leaves out must fail it.
    Lines(Vec<LineRow>),
    /// For [`PlanOutput::Buckets`]: one entry per group with at least one row.
    Buckets(Vec<BucketGroup>),
}

impl Default for AnswerData {
    fn default() -> Self {
        AnswerData::Lines(Vec::new())
    }
}

/// One row of a lines answer.
#[derive(Clone, Debug)]
pub struct LineRow {
    /// Its stream.
    pub stream: StreamInfo,
    /// The row.
    pub entry: Entry,
}

/// Rows of one stream left to the engine.
#[derive(Clone, Debug)]
pub struct ResidualRows {
    /// Their stream.
    pub stream: StreamInfo,
    /// The rows, in no particular order.
    pub entries: Vec<Entry>,
}

/// One group of a bucket answer.
#[derive(Clone, Debug)]
pub struct BucketGroup {
    /// Which group.
    pub key: GroupKey,
    /// Its buckets.
    pub data: BucketData,
}

/// The identity of a group.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum GroupKey {
    /// [`GroupBy::Labels`]: the value of each grouping label, in order.
    Labels(Vec<Option<String>>),
    /// [`GroupBy::Stream`]: the stream and the rows' structured metadata.
    Stream {
        /// The stream's labels.
        labels: Arc<crate::Labels>,
        /// Metadata pairs, sorted by name.
        metadata: Vec<(String, String)>,
    },
}

/// Accumulated buckets of one group, one slot per bucket.
#[derive(Clone, Debug, PartialEq)]
pub enum BucketData {
    /// [`BucketValue::Count`].
    Count(Vec<u64>),
    /// [`BucketValue::LineBytes`] and [`BucketValue::Sum`]: rows and sum.
    Sum(Vec<u64>, Vec<f64>),
    /// [`BucketValue::Min`]: rows and minimum (meaningless where rows are 0).
    Min(Vec<u64>, Vec<f64>),
    /// [`BucketValue::Max`]: rows and maximum (meaningless where rows are 0).
    Max(Vec<u64>, Vec<f64>),
    /// [`BucketValue::Values`].
    Values(Vec<Vec<f64>>),
    /// [`BucketValue::Points`].
    Points(Vec<Vec<(Timestamp, f64)>>),
}

impl BucketData {
    /// Empty buckets of the kind `value` accumulates.
    pub fn new(value: BucketValue, buckets: usize) -> Self {
        match value {
            BucketValue::Count => BucketData::Count(vec![0; buckets]),
            BucketValue::LineBytes | BucketValue::Sum => {
                BucketData::Sum(vec![0; buckets], vec![0.0; buckets])
            }
            BucketValue::Min => BucketData::Min(vec![0; buckets], vec![f64::NAN; buckets]),
            BucketValue::Max => BucketData::Max(vec![0; buckets], vec![f64::NAN; buckets]),
            BucketValue::Values => BucketData::Values(vec![Vec::new(); buckets]),
            BucketValue::Points => BucketData::Points(vec![Vec::new(); buckets]),
        }
    }

    /// Adds one row to bucket `b`: `v` is the line length for
    /// [`BucketValue::LineBytes`], the unwrapped value otherwise (ignored
    /// for [`BucketValue::Count`]).
    #[inline]
    pub fn add(&mut self, b: usize, ts: Timestamp, v: f64) {
        match self {
            BucketData::Count(c) => c[b] += 1,
            BucketData::Sum(c, s) => {
                c[b] += 1;
                s[b] += v;
            }
            BucketData::Min(c, m) => {
                if c[b] == 0 || v < m[b] || m[b].is_nan() {
                    m[b] = v;
                }
                c[b] += 1;
            }
            BucketData::Max(c, m) => {
                if c[b] == 0 || v > m[b] || m[b].is_nan() {
                    m[b] = v;
                }
                c[b] += 1;
            }
            BucketData::Values(vs) => vs[b].push(v),
            BucketData::Points(ps) => ps[b].push((ts, v)),
        }
    }

    /// Adds each `(timestamp, value)` of `rows` to bucket `b`, in order, as
    /// [`BucketData::add`] one by one would; returns how many there were.
    #[inline]
    pub fn add_all(&mut self, b: usize, rows: impl Iterator<Item = (Timestamp, f64)>) -> u64 {
        let mut n = 0u64;
        match self {
            BucketData::Values(vs) => {
                let v = &mut vs[b];
                let before = v.len();
                v.extend(rows.map(|(_, x)| x));
                n = (v.len() - before) as u64;
            }
            BucketData::Points(ps) => {
                let p = &mut ps[b];
                let before = p.len();
                p.extend(rows);
                n = (p.len() - before) as u64;
            }
            _ => {
                for (ts, v) in rows {
                    self.add(b, ts, v);
                    n += 1;
                }
            }
        }
        n
    }

    /// How many rows the buckets hold (each row is in one bucket).
    pub fn total_rows(&self) -> u64 {
        let buckets = match self {
            BucketData::Count(c)
            | BucketData::Sum(c, _)
            | BucketData::Min(c, _)
            | BucketData::Max(c, _) => c.len(),
            BucketData::Values(v) => v.len(),
            BucketData::Points(p) => p.len(),
        };
        (0..buckets).map(|b| self.rows(b)).sum()
    }

    /// Adds `n` rows without values to bucket `b` ([`BucketData::Count`] only).
    #[inline]
    pub fn add_count(&mut self, b: usize, n: u64) {
        if let BucketData::Count(c) = self {
            c[b] += n;
        }
    }

    /// Folds `other` (same kind and bucket count) into `self`.
    pub fn merge(&mut self, other: BucketData) {
        match (self, other) {
            (BucketData::Count(a), BucketData::Count(b)) => {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y)
            }
            (BucketData::Sum(ac, a), BucketData::Sum(bc, b)) => {
                ac.iter_mut().zip(bc).for_each(|(x, y)| *x += y);
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            }
            (BucketData::Min(ac, a), BucketData::Min(bc, b)) => {
                for i in 0..a.len() {
                    if bc[i] > 0 && (ac[i] == 0 || b[i] < a[i] || a[i].is_nan()) {
                        a[i] = b[i];
                    }
                    ac[i] += bc[i];
                }
            }
            (BucketData::Max(ac, a), BucketData::Max(bc, b)) => {
                for i in 0..a.len() {
                    if bc[i] > 0 && (ac[i] == 0 || b[i] > a[i] || a[i].is_nan()) {
                        a[i] = b[i];
                    }
                    ac[i] += bc[i];
                }
            }
            (BucketData::Values(a), BucketData::Values(b)) => {
                a.iter_mut().zip(b).for_each(|(x, mut y)| x.append(&mut y))
            }
            (BucketData::Points(a), BucketData::Points(b)) => {
                a.iter_mut().zip(b).for_each(|(x, mut y)| x.append(&mut y))
            }
            _ => debug_assert!(false, "merging buckets of different kinds"),
        }
    }

    /// Rows in bucket `b`.
    pub fn rows(&self, b: usize) -> u64 {
        match self {
            BucketData::Count(c)
            | BucketData::Sum(c, _)
            | BucketData::Min(c, _)
            | BucketData::Max(c, _) => c[b],
            BucketData::Values(v) => v[b].len() as u64,
            BucketData::Points(p) => p[b].len() as u64,
        }
    }
}

/// What a backend read for a plan (for query statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanStats {
    /// Rows within the time range of the selected streams, before filters.
    pub rows_scanned: u64,
    /// Their line bytes.
    pub bytes_scanned: u64,
    /// Rows that passed every piece the backend executed.
    pub rows_kept: u64,
    /// Of those, rows the backend decided from columns, without their line.
    pub rows_from_columns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adding_rows_at_once_is_adding_them_one_by_one() {
        let rows: Vec<(Timestamp, f64)> = [3.5, -1.0, f64::NAN, 0.1, 0.2, 1e300, -0.0]
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as Timestamp * 10, v))
            .collect();
        for value in [
            BucketValue::Count,
            BucketValue::LineBytes,
            BucketValue::Sum,
            BucketValue::Min,
            BucketValue::Max,
            BucketValue::Values,
            BucketValue::Points,
        ] {
            let mut one = BucketData::new(value, 3);
            let mut all = BucketData::new(value, 3);
            for &(ts, v) in &rows {
                one.add(1, ts, v);
            }
            assert_eq!(all.add_all(1, rows.iter().copied()), rows.len() as u64);
            assert_eq!(all.total_rows(), rows.len() as u64, "{value:?}");
            // NaN is not equal to itself: compare the debug forms.
            assert_eq!(format!("{one:?}"), format!("{all:?}"), "{value:?}");
        }
    }

    #[test]
    fn buckets_are_left_open_right_closed() {
        let p = BucketPlan {
            bounds: vec![0, 10, 20],
            group_by: GroupBy::Stream,
            value: BucketValue::Count,
            top: None,
        };
        assert_eq!(p.buckets(), 2);
        assert_eq!(p.bucket_of(0), None);
        assert_eq!(p.bucket_of(1), Some(0));
        assert_eq!(p.bucket_of(10), Some(0));
        assert_eq!(p.bucket_of(11), Some(1));
        assert_eq!(p.bucket_of(20), Some(1));
        assert_eq!(p.bucket_of(21), None);
        for hint in 0..4 {
            for ts in -1..23 {
                assert_eq!(
                    p.bucket_of_near(ts, hint),
                    p.bucket_of(ts),
                    "ts {ts} hint {hint}"
                );
            }
        }
    }

    #[test]
    fn bucket_data_adds_and_merges() {
        let mut a = BucketData::new(BucketValue::Min, 2);
        a.add(0, 1, 5.0);
        a.add(0, 2, 3.0);
        let mut b = BucketData::new(BucketValue::Min, 2);
        b.add(0, 3, 4.0);
        b.add(1, 4, 9.0);
        a.merge(b);
        assert_eq!(a, BucketData::Min(vec![3, 1], vec![3.0, 9.0]));
        let mut c = BucketData::new(BucketValue::Count, 1);
        c.add(0, 0, 0.0);
        c.add_count(0, 4);
        assert_eq!(c.rows(0), 5);
    }
}
