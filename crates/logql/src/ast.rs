//! The LogQL abstract syntax tree: every construct of the language.
//!
//! Durations are nanoseconds (`i64`). Label matchers reuse
//! [`runakefli_model::Matcher`].

use runakefli_model::Matcher;

/// A whole query: either a log query or a metric (sample) query.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A log query, e.g. `{app="api"} |= "error" | json`.
    Log(LogExpr),
    /// A metric query, e.g. `sum(rate({app="api"}[5m]))`.
    Sample(SampleExpr),
}

/// A stream selector followed by a pipeline.
#[derive(Clone, Debug, PartialEq)]
pub struct LogExpr {
    /// `{name op "value", ...}`; at least one matcher.
    pub selector: Vec<Matcher>,
    /// Pipeline stages in order.
    pub pipeline: Vec<Stage>,
}

/// One stage of a log pipeline.
#[derive(Clone, Debug, PartialEq)]
pub enum Stage {
    /// A line filter, possibly with `or` alternatives: `|= "a" or "b"`.
    LineFilter(LineFilter),
    /// `| json` with optional extraction parameters `| json a="x.y", b`.
    Json(Vec<LabelExtraction>),
    /// `| logfmt` with flags and optional extraction parameters.
    Logfmt {
        /// `--strict`: stop at the first malformed pair and report an error.
        strict: bool,
        /// `--keep-empty`: keep standalone keys as empty labels.
        keep_empty: bool,
        /// `| logfmt a="key", b`.
        params: Vec<LabelExtraction>,
    },
    /// `| regexp "(?P<name>...)"`.
    Regexp(String),
    /// `| pattern "<ip> - <_> ..."`.
    Pattern(String),
    /// `| unpack`.
    Unpack,
    /// `| label filter expression`.
    LabelFilter(LabelFilterExpr),
    /// `| line_format "template"`.
    LineFormat(String),
    /// `| label_format a=b, c="{{.x}}"`.
    LabelFormat(Vec<LabelFormatOp>),
    /// `| decolorize`.
    Decolorize,
    /// `| drop a, b="v"`.
    Drop(Vec<LabelSelectorItem>),
    /// `| keep a, b="v"`.
    Keep(Vec<LabelSelectorItem>),
    /// `| distinct a, b`.
    Distinct(Vec<String>),
}

/// Kind of line filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineFilterOp {
    /// `|=` contains.
    Contains,
    /// `!=` does not contain.
    NotContains,
    /// `|~` matches the regular expression.
    Match,
    /// `!~` does not match.
    NotMatch,
    /// `|>` matches the pattern.
    Pattern,
    /// `!>` does not match the pattern.
    NotPattern,
}

/// The operand of a line filter.
#[derive(Clone, Debug, PartialEq)]
pub enum LineFilterValue {
    /// A string (substring, regular expression or pattern, by op).
    Str(String),
    /// `ip("192.168.0.0/16")`.
    Ip(String),
}

/// A line filter with its `or` alternatives: `|= "a" or "b"` keeps lines that
/// contain a or b; `!= "a" or "b"` drops lines that contain a or b.
#[derive(Clone, Debug, PartialEq)]
pub struct LineFilter {
    /// The operator.
    pub op: LineFilterOp,
    /// First operand and `or` alternatives, at least one.
    pub values: Vec<LineFilterValue>,
}

/// `name` or `name="expression"` in `| json` / `| logfmt` parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct LabelExtraction {
    /// The label to produce.
    pub label: String,
    /// The path/key expression; `None` means the label name itself.
    pub expression: Option<String>,
}

/// `name` or `name op "value"` in `| drop` / `| keep`.
#[derive(Clone, Debug, PartialEq)]
pub struct LabelSelectorItem {
    /// The label.
    pub name: String,
    /// Only when the value matches.
    pub matcher: Option<Matcher>,
}

/// One operation of `| label_format`.
#[derive(Clone, Debug, PartialEq)]
pub enum LabelFormatOp {
    /// `dst=src`: rename.
    Rename {
        /// New name.
        dst: String,
        /// Existing label.
        src: String,
    },
    /// `dst="{{ template }}"`.
    Template {
        /// Label to set.
        dst: String,
        /// Go text/template source.
        template: String,
    },
}

/// Comparison in numeric, duration and byte label filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    /// `==` or `=`
    Eq,
    /// `!=`
    Neq,
    /// `>`
    Gt,
    /// `>=`
    Gte,
    /// `<`
    Lt,
    /// `<=`
    Lte,
}

/// A label filter expression tree.
#[derive(Clone, Debug, PartialEq)]
pub enum LabelFilterExpr {
    /// `a and b` (also written `a, b` or `a b`... as Loki accepts).
    And(Box<LabelFilterExpr>, Box<LabelFilterExpr>),
    /// `a or b`.
    Or(Box<LabelFilterExpr>, Box<LabelFilterExpr>),
    /// `( ... )`, kept so the printer reproduces the grouping.
    Paren(Box<LabelFilterExpr>),
    /// `name op "string"` with `=`, `!=`, `=~`, `!~`.
    String(Matcher),
    /// `name cmp 1.5`.
    Number {
        /// Label.
        name: String,
        /// Comparison.
        op: CmpOp,
        /// Number to compare with.
        value: f64,
    },
    /// `name cmp 5m` (label parsed as a Go duration).
    Duration {
        /// Label.
        name: String,
        /// Comparison.
        op: CmpOp,
        /// Nanoseconds.
        value: i64,
    },
    /// `name cmp 20MB` (label parsed as a byte size).
    Bytes {
        /// Label.
        name: String,
        /// Comparison.
        op: CmpOp,
        /// Bytes.
        value: u64,
    },
    /// `name = ip("10.0.0.0/8")` or `name != ip(...)`.
    Ip {
        /// Label.
        name: String,
        /// True for `!=`.
        negated: bool,
        /// The address, range or CIDR as written.
        pattern: String,
    },
}

/// Conversion applied by `unwrap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnwrapConversion {
    /// Plain number.
    None,
    /// `duration(label)` / `duration_seconds(label)`: Go duration → seconds.
    Duration,
    /// `bytes(label)`: byte size → bytes.
    Bytes,
}

/// `| unwrap label` with its conversion and the label filters that follow it.
#[derive(Clone, Debug, PartialEq)]
pub struct Unwrap {
    /// Label whose value becomes the sample.
    pub label: String,
    /// Conversion.
    pub conversion: UnwrapConversion,
    /// Label filters after the unwrap (e.g. `| __error__=""`).
    pub post_filters: Vec<LabelFilterExpr>,
}

/// A log range: `{..} | pipeline [5m] offset 1h`, possibly with unwrap.
#[derive(Clone, Debug, PartialEq)]
pub struct LogRange {
    /// The log query.
    pub log: LogExpr,
    /// Range in nanoseconds.
    pub range: i64,
    /// Offset in nanoseconds (0 when absent).
    pub offset: i64,
    /// `| unwrap ...`.
    pub unwrap: Option<Unwrap>,
}

/// Range aggregation functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeOp {
    /// `count_over_time`
    CountOverTime,
    /// `rate`
    Rate,
    /// `rate_counter`
    RateCounter,
    /// `bytes_over_time`
    BytesOverTime,
    /// `bytes_rate`
    BytesRate,
    /// `absent_over_time`
    AbsentOverTime,
    /// `sum_over_time`
    SumOverTime,
    /// `avg_over_time`
    AvgOverTime,
    /// `min_over_time`
    MinOverTime,
    /// `max_over_time`
    MaxOverTime,
    /// `stddev_over_time`
    StddevOverTime,
    /// `stdvar_over_time`
    StdvarOverTime,
    /// `quantile_over_time`
    QuantileOverTime,
    /// `first_over_time`
    FirstOverTime,
    /// `last_over_time`
    LastOverTime,
}

/// Vector aggregation operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VectorOp {
    /// `sum`
    Sum,
    /// `avg`
    Avg,
    /// `min`
    Min,
    /// `max`
    Max,
    /// `count`
    Count,
    /// `stddev`
    Stddev,
    /// `stdvar`
    Stdvar,
    /// `topk`
    Topk,
    /// `bottomk`
    Bottomk,
    /// `sort`
    Sort,
    /// `sort_desc`
    SortDesc,
}

/// `by (a, b)` or `without (a, b)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grouping {
    /// True for `without`.
    pub without: bool,
    /// The labels (may be empty: `by ()`).
    pub labels: Vec<String>,
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `^`
    Pow,
    /// `==`
    Eq,
    /// `!=`
    Neq,
    /// `>`
    Gt,
    /// `>=`
    Gte,
    /// `<`
    Lt,
    /// `<=`
    Lte,
    /// `and`
    And,
    /// `or`
    Or,
    /// `unless`
    Unless,
}

/// `on (..)` / `ignoring (..)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorMatching {
    /// True for `on`, false for `ignoring`.
    pub on: bool,
    /// The labels.
    pub labels: Vec<String>,
}

/// `group_left (..)` / `group_right (..)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupModifier {
    /// True for `group_left`.
    pub left: bool,
    /// Extra labels to copy from the "one" side.
    pub include: Vec<String>,
}

/// Modifiers of a binary operation.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BinModifier {
    /// `bool` after a comparison operator.
    pub return_bool: bool,
    /// `on`/`ignoring`.
    pub matching: Option<VectorMatching>,
    /// `group_left`/`group_right`.
    pub group: Option<GroupModifier>,
}

/// A metric query expression.
#[derive(Clone, Debug, PartialEq)]
pub enum SampleExpr {
    /// `op(log_range)` with optional parameter (quantile) and grouping.
    RangeAggregation {
        /// The function.
        op: RangeOp,
        /// The log range it aggregates.
        range: Box<LogRange>,
        /// `quantile_over_time(0.99, ...)`'s first argument.
        param: Option<f64>,
        /// `by`/`without` after the call (only for unwrapped ranges).
        grouping: Option<Grouping>,
    },
    /// `op by (..) (expr)` / `topk(k, expr)`.
    VectorAggregation {
        /// The operator.
        op: VectorOp,
        /// Inner expression.
        expr: Box<SampleExpr>,
        /// `by`/`without`, before or after the parentheses.
        grouping: Option<Grouping>,
        /// `k` of topk/bottomk.
        param: Option<f64>,
    },
    /// `lhs op rhs`.
    Binary {
        /// The operator.
        op: BinOp,
        /// Left operand.
        lhs: Box<SampleExpr>,
        /// Right operand.
        rhs: Box<SampleExpr>,
        /// `bool`, `on`, `group_left`, ….
        modifier: BinModifier,
    },
    /// A number literal, e.g. `2` or `-1.5`.
    Literal(f64),
    /// `vector(1)`.
    Vector(f64),
    /// `label_replace(expr, "dst", "replacement", "src", "regex")`.
    LabelReplace {
        /// Inner expression.
        expr: Box<SampleExpr>,
        /// Destination label.
        dst: String,
        /// Replacement with `$1` references.
        replacement: String,
        /// Source label.
        src: String,
        /// Regular expression (fully anchored when evaluated).
        regex: String,
    },
    /// `( expr )`, kept so the printer reproduces the grouping.
    Paren(Box<SampleExpr>),
}
