//! Log pipelines: the stages after a stream selector, compiled once per query
//! and run per entry over a reusable [`labels::LabelsBuilder`].

pub mod builtins;
pub mod convert;
pub mod format;
pub mod funcs;
pub mod ip;
pub mod jsonscan;
pub mod label_filter;
pub mod labels;
pub mod line_filter;
pub mod logfmt;
pub mod parsers;
pub mod pattern;
pub mod select;
pub mod template;
pub mod time_parse;
pub mod zone;

use crate::fast_hash::FastMap;
use crate::labelset::LabelSet;
use format::{LabelFormat, LineFormat};
use label_filter::LabelFilter;
use labels::LabelsBuilder;
use line_filter::LineFilterStage;
use parsers::{
    JsonExprParser, JsonParser, LogfmtParser, PatternParser, RegexpParser, UnpackParser,
};
use regex::Regex;
use runakefli_logql::{LabelSelectorItem, LineFilterOp, LineFilterValue, Stage};

#[derive(Debug)]
enum Compiled {
    LineFilter(LineFilterStage),
    Json(JsonParser),
    JsonExpr(JsonExprParser),
    Logfmt(LogfmtParser),
    Regexp(RegexpParser),
    Pattern(PatternParser),
    Unpack(UnpackParser),
    LabelFilter(LabelFilter),
    LineFormat(LineFormat),
    LabelFormat(LabelFormat),
    Decolorize(Regex),
    Drop(Vec<LabelSelectorItem>),
    Keep(Vec<LabelSelectorItem>),
    Distinct(select::Distinct),
}

/// Loki runs line filters as early as possible: each moves before the stages
/// preceding it, but never across a stage that rewrites the line
/// (`line_format`, `unpack`). (`decolorize` is not a barrier, as in Loki.)
pub fn reorder(stages: &[Stage]) -> Vec<Stage> {
    let mut out: Vec<Stage> = Vec::with_capacity(stages.len());
    let mut filters: Vec<Stage> = Vec::new();
    let mut rest: Vec<Stage> = Vec::new();
    for s in stages {
        match s {
            Stage::LineFilter(_) => filters.push(s.clone()),
            Stage::LineFormat(_) | Stage::Unpack => {
                out.append(&mut filters);
                out.append(&mut rest);
                out.push(s.clone());
            }
            _ => rest.push(s.clone()),
        }
    }
    out.append(&mut filters);
    out.append(&mut rest);
    out
}

/// Every label name a label filter reads, appended to `out`.
pub fn label_filter_names(e: &runakefli_logql::LabelFilterExpr, out: &mut Vec<String>) {
    use runakefli_logql::LabelFilterExpr as F;
    match e {
        F::And(a, b) | F::Or(a, b) => {
            label_filter_names(a, out);
            label_filter_names(b, out);
        }
        F::Paren(a) => label_filter_names(a, out),
        F::String(m) => out.push(m.name.clone()),
        F::Number { name, .. }
        | F::Duration { name, .. }
        | F::Bytes { name, .. }
        | F::Ip { name, .. } => out.push(name.clone()),
    }
}

/// Substrings every kept line contains (pruning hints for the backend): the
/// operands of plain `|=` filters, and the literal that every match of a `|~`
/// regexp must start or end with, when there is exactly one such literal.
/// Only filters that see the stored line count (those before `line_format`
/// or `unpack`, after the engine's reordering).
pub fn required_substrings(stages: &[Stage]) -> Vec<String> {
    let mut out = Vec::new();
    for s in reorder(stages) {
        match s {
            Stage::LineFilter(f) if f.values.len() == 1 => match (&f.op, &f.values[0]) {
                (LineFilterOp::Contains, LineFilterValue::Str(v)) if !v.is_empty() => {
                    out.push(v.clone());
                }
                (LineFilterOp::Match, LineFilterValue::Str(re)) => {
                    out.extend(regex_required_literals(re));
                }
                _ => {}
            },
            Stage::LineFormat(_) | Stage::Unpack => break,
            _ => {}
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Literals every match of `re` (as the line filter compiles it) contains:
/// its one prefix literal and its one suffix literal, when the regexp's
/// syntax fixes a single one (a set of alternatives proves nothing here).
fn regex_required_literals(re: &str) -> Vec<String> {
    match regex_syntax::Parser::new().parse(re) {
        Ok(hir) => hir_required_literals(&hir),
        Err(_) => Vec::new(),
    }
}

/// The one prefix literal and the one suffix literal of every match of `hir`,
/// when its syntax fixes a single one.
pub(crate) fn hir_required_literals(hir: &regex_syntax::hir::Hir) -> Vec<String> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    let mut out = Vec::new();
    for kind in [ExtractKind::Prefix, ExtractKind::Suffix] {
        let seq = Extractor::new().kind(kind).extract(hir);
        if let Some([lit]) = seq.literals() {
            if let Ok(text) = std::str::from_utf8(lit.as_bytes()) {
                if !text.is_empty() {
                    out.push(text.to_string());
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The escape sequences `| decolorize` removes.
const ANSI: &str = r"[\x1b\x{9b}][\[\]()#;?]*(?:(?:(?:[a-zA-Z\d]*(?:;[a-zA-Z\d]*)*)?\x07)|(?:(?:\d{1,4}(?:;\d{0,4})*)?[\dA-PRZcf-ntqry=><~]))";

/// [`ANSI`], compiled once for the process: compiling it costs more than a
/// small query's whole scan, and most pipelines never use it.
static ANSI_RE: std::sync::LazyLock<Regex> =
    std::sync::LazyLock::new(|| Regex::new(ANSI).expect("the ANSI pattern compiles"));

/// Most label sets [`Pipeline::intern_labels`] keeps for sharing; past it
/// the table starts afresh. A query whose every line makes its own label set
/// (`| json` over lines with a counter or an id) would otherwise hold one set
/// per line scanned, whatever its limits.
pub const INTERN_CAP: usize = 16_384;

/// A compiled pipeline with its reusable buffers.
#[derive(Debug)]
pub struct Pipeline {
    stages: Vec<Compiled>,
    lbs: LabelsBuilder,
    line: String,
    interned: FastMap<u64, Vec<LabelSet>>,
    /// Sets in `interned`.
    interned_len: usize,
}

impl Pipeline {
    /// Compiles stages; the error is Loki's text after `parse error : `.
    pub fn new(stages: &[Stage]) -> Result<Self, String> {
        let mut out = Vec::with_capacity(stages.len());
        for s in reorder(stages) {
            out.push(match &s {
                Stage::LineFilter(f) => Compiled::LineFilter(LineFilterStage::new(f)?),
                Stage::Json(p) if p.is_empty() => Compiled::Json(JsonParser::default()),
                Stage::Json(p) => Compiled::JsonExpr(JsonExprParser::new(p)?),
                Stage::Logfmt {
                    strict,
                    keep_empty,
                    params,
                } => Compiled::Logfmt(LogfmtParser::new(*strict, *keep_empty, params)),
                Stage::Regexp(r) => Compiled::Regexp(RegexpParser::new(r)?),
                Stage::Pattern(p) => Compiled::Pattern(PatternParser::new(p)?),
                Stage::Unpack => Compiled::Unpack(UnpackParser::default()),
                Stage::LabelFilter(e) => Compiled::LabelFilter(LabelFilter::new(e)?),
                Stage::LineFormat(t) => Compiled::LineFormat(LineFormat::new(t)?),
                Stage::LabelFormat(ops) => Compiled::LabelFormat(LabelFormat::new(ops)?),
                Stage::Decolorize => Compiled::Decolorize(ANSI_RE.clone()),
                Stage::Drop(items) => Compiled::Drop(items.clone()),
                Stage::Keep(items) => Compiled::Keep(items.clone()),
                Stage::Distinct(l) => Compiled::Distinct(select::Distinct::new(l)),
            });
        }
        Ok(Pipeline {
            stages: out,
            lbs: LabelsBuilder::default(),
            line: String::new(),
            interned: FastMap::default(),
            interned_len: 0,
        })
    }

    /// Compiles stages for a query that reads only the labels in `read`
    /// after the pipeline (a `by (…)` grouping, the unwrapped label, the
    /// filters after `unwrap`): `| json` stages then set only those labels
    /// and the ones the pipeline's own label filters read. Only pipelines of
    /// line filters, label filters and `| json` stages are narrowed; any
    /// other stage may read or rename any label, so they keep every label.
    /// The kept rows, their values and their keys are those of [`Pipeline::new`].
    pub fn reading_only(stages: &[Stage], read: &[String]) -> Result<Self, String> {
        let narrow = stages.iter().all(|s| match s {
            Stage::LineFilter(_) | Stage::LabelFilter(_) => true,
            Stage::Json(p) => p.is_empty(),
            _ => false,
        });
        let mut p = Pipeline::new(stages)?;
        if !narrow {
            return Ok(p);
        }
        let mut wanted: Vec<String> = read.to_vec();
        for s in stages {
            if let Stage::LabelFilter(e) = s {
                label_filter_names(e, &mut wanted);
            }
        }
        wanted.sort_unstable();
        wanted.dedup();
        for st in &mut p.stages {
            if let Compiled::Json(j) = st {
                *j = JsonParser::only(wanted.clone());
            }
        }
        Ok(p)
    }

    /// True when the pipeline has no stages.
    pub fn is_noop(&self) -> bool {
        self.stages.is_empty()
    }

    /// Runs one entry. Returns the final line and label set, or `None` when
    /// the entry is filtered out. `base` are the stream labels.
    pub fn process(
        &mut self,
        ts: i64,
        line: &str,
        base: &LabelSet,
        metadata: &[(String, String)],
    ) -> Option<(&str, LabelSet)> {
        if !self.run(ts, line, base, metadata) {
            return None;
        }
        let labels = self.intern_labels();
        Some((&self.line, labels))
    }

    /// Runs the stages on one entry, leaving the line and labels in the
    /// pipeline's buffers; false when the entry is filtered out.
    pub fn run(
        &mut self,
        ts: i64,
        line: &str,
        base: &LabelSet,
        metadata: &[(String, String)],
    ) -> bool {
        self.lbs.reset(base, metadata);
        self.line.clear();
        self.line.push_str(line);
        for st in &mut self.stages {
            let keep = match st {
                Compiled::LineFilter(f) => f.keep(&self.line),
                Compiled::Json(p) => {
                    p.process(&self.line, &mut self.lbs);
                    true
                }
                Compiled::JsonExpr(p) => {
                    p.process(&self.line, &mut self.lbs);
                    true
                }
                Compiled::Logfmt(p) => {
                    p.process(&self.line, &mut self.lbs);
                    true
                }
                Compiled::Regexp(p) => {
                    p.process(&self.line, &mut self.lbs);
                    true
                }
                Compiled::Pattern(p) => {
                    p.process(&self.line, &mut self.lbs);
                    true
                }
                Compiled::Unpack(p) => {
                    p.process(&mut self.line, &mut self.lbs);
                    true
                }
                Compiled::LabelFilter(f) => f.keep(&mut self.lbs),
                Compiled::LineFormat(f) => {
                    f.process(ts, &mut self.line, &mut self.lbs);
                    true
                }
                Compiled::LabelFormat(f) => {
                    f.process(ts, &self.line, &mut self.lbs);
                    true
                }
                Compiled::Decolorize(re) => {
                    if let std::borrow::Cow::Owned(s) = re.replace_all(&self.line, "") {
                        self.line = s;
                    }
                    true
                }
                Compiled::Drop(items) => {
                    select::drop(items, &mut self.lbs);
                    true
                }
                Compiled::Keep(items) => {
                    select::keep(items, &mut self.lbs);
                    true
                }
                Compiled::Distinct(d) => d.keep(&self.lbs),
            };
            if !keep {
                return false;
            }
        }
        true
    }

    /// The line after the last [`Pipeline::run`].
    pub fn line(&self) -> &str {
        &self.line
    }

    /// The label buffer after the last [`Pipeline::run`] (unwrap reads and
    /// post-filters it).
    pub fn labels_builder_mut(&mut self) -> &mut LabelsBuilder {
        &mut self.lbs
    }

    /// The final label set of the last run, shared with equal earlier sets
    /// (among the last [`INTERN_CAP`] distinct ones at least).
    pub fn intern_labels(&mut self) -> LabelSet {
        if self.lbs.is_base() {
            return self.lbs.base().clone();
        }
        let h = self.lbs.view_hash();
        if let Some(l) = self
            .interned
            .get(&h)
            .and_then(|b| b.iter().find(|l| self.lbs.view_eq(l)))
        {
            return l.clone();
        }
        if self.interned_len >= INTERN_CAP {
            self.interned.clear();
            self.interned_len = 0;
        }
        let l = self.lbs.labels();
        self.interned.entry(h).or_default().push(l.clone());
        self.interned_len += 1;
        l
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_logql::LineFilter;

    fn contains(s: &str) -> Stage {
        Stage::LineFilter(LineFilter {
            op: LineFilterOp::Contains,
            values: vec![LineFilterValue::Str(s.into())],
        })
    }

    #[test]
    fn reorder_and_hints() {
        let stages = vec![
            Stage::Json(vec![]),
            contains("a"),
            Stage::LineFormat("{{.x}}".into()),
            contains("b"),
        ];
        let r = reorder(&stages);
        assert!(matches!(r[0], Stage::LineFilter(_)));
        assert_eq!(required_substrings(&stages), vec!["a".to_string()]);
    }

    fn stages_of(q: &str) -> Vec<Stage> {
        match runakefli_logql::parse_expr(q).expect("a valid query") {
            runakefli_logql::Expr::Log(l) => l.pipeline,
            other => panic!("not a log query: {other:?}"),
        }
    }

    /// A narrowed pipeline keeps the same rows and gives the same values to
    /// the labels it reads, renames and errors included; other parsed labels
    /// are left out. Stages that may read any label keep every label.
    #[test]
    fn reading_only_keeps_rows_and_read_labels_as_the_full_pipeline() {
        let base = LabelSet::new(vec![
            ("app".into(), "api".into()),
            ("level".into(), "stream".into()),
        ]);
        let lines = [
            r#"{"level":"error","status":503,"id":"a1","req":{"path":"/x","ms":3}}"#,
            r#"{"level":"info","status":200,"id":"a2","level_extracted":"odd"}"#,
            r#"{"status":"abc","id":"a3"}"#,
            r#"{"status":500,"status":200,"id":"dup"}"#,
            r#"{"status":501, broken"#,
            "not json at all status=500",
            r#"{"app":"inner","status":502,"req":{"ms":"7"}}"#,
        ];
        let read = ["level_extracted".to_string(), "req_ms".to_string()];
        for q in [
            r#"{app="api"} | json | status >= 500"#,
            r#"{app="api"} |= "status" | json | status >= 500 or id="a2""#,
            r#"{app="api"} | json"#,
            r#"{app="api"} | json | app="api""#,
        ] {
            let stages = stages_of(q);
            let mut full = Pipeline::new(&stages).unwrap();
            let mut narrow = Pipeline::reading_only(&stages, &read).unwrap();
            let mut names: Vec<String> = read.to_vec();
            for s in &stages {
                if let Stage::LabelFilter(e) = s {
                    label_filter_names(e, &mut names);
                }
            }
            names.extend(["__error__", "__error_details__", "app", "level"].map(String::from));
            for line in lines {
                let kept = full.run(1, line, &base, &[]);
                assert_eq!(kept, narrow.run(1, line, &base, &[]), "{q} on {line}");
                if !kept {
                    continue;
                }
                for n in &names {
                    assert_eq!(
                        full.labels_builder_mut().get(n).map(str::to_string),
                        narrow.labels_builder_mut().get(n).map(str::to_string),
                        "{q} on {line}: label {n}"
                    );
                }
            }
        }
        // Narrowed: `id` is parsed by the full pipeline only.
        let stages = stages_of(r#"{app="api"} | json | status >= 500"#);
        let mut narrow = Pipeline::reading_only(&stages, &read).unwrap();
        assert!(narrow.run(1, lines[0], &base, &[]));
        assert_eq!(narrow.labels_builder_mut().get("id"), None);
        assert_eq!(narrow.labels_builder_mut().get("status"), Some("503"));
        // A stage that may read any label: not narrowed.
        let stages = stages_of(r#"{app="api"} | json | line_format "{{.id}}""#);
        let mut p = Pipeline::reading_only(&stages, &read).unwrap();
        assert!(p.run(1, lines[0], &base, &[]));
        assert_eq!(p.labels_builder_mut().get("id"), Some("a1"));
        assert_eq!(p.line(), "a1");
    }

    #[test]
    fn decolorize_then_filter_sees_raw_line() {
        let stages = vec![Stage::Decolorize, contains("\x1b[31m")];
        let mut p = Pipeline::new(&stages).unwrap();
        let base = LabelSet::new(vec![("app".into(), "x".into())]);
        let (line, _) = p.process(1, "\x1b[31mred\x1b[0m", &base, &[]).unwrap();
        assert_eq!(line, "red");
    }

    #[test]
    fn interned_label_sets_stay_bounded_and_shared() {
        // Regression: `| json` over lines with a counter interned one label
        // set per line scanned (1.2 GB in the overload test).
        let mut p = Pipeline::new(&[Stage::Json(vec![])]).unwrap();
        let base = LabelSet::new(vec![("app".into(), "x".into())]);
        let mut last = None;
        for n in 0..3 * INTERN_CAP {
            assert!(p.run(1, &format!(r#"{{"n":{n}}}"#), &base, &[]));
            last = Some(p.intern_labels());
            assert!(p.interned_len <= INTERN_CAP);
        }
        assert!(p.interned.values().map(Vec::len).sum::<usize>() <= INTERN_CAP);
        // An equal set seen lately is still the same one.
        let n = 3 * INTERN_CAP - 1;
        assert!(p.run(1, &format!(r#"{{"n":{n}}}"#), &base, &[]));
        assert_eq!(p.intern_labels().id(), last.unwrap().id());
    }
}

#[cfg(test)]
mod required_tests {
    use super::*;

    fn req(q: &str) -> Vec<String> {
        let e = runakefli_logql::parse_expr(q).unwrap();
        let runakefli_logql::Expr::Log(l) = e else {
            panic!("log query expected")
        };
        required_substrings(&l.pipeline)
    }

    #[test]
    fn regexp_prefix_and_suffix_literals_are_required() {
        assert_eq!(
            req(r#"{a="b"} |~ `"msg":"[^"]*request`"#),
            vec!["\"msg\":\"".to_string(), "request".to_string()]
        );
        assert_eq!(req(r#"{a="b"} |~ "timeout""#), vec!["timeout".to_string()]);
        // Alternatives, case folding and optional parts prove nothing.
        assert!(req(r#"{a="b"} |~ "a|b""#).is_empty());
        assert!(req(r#"{a="b"} |~ "(?i)error""#).is_empty());
        assert!(req(r#"{a="b"} |~ ".*""#).is_empty());
        assert!(req(r#"{a="b"} !~ "x""#).is_empty());
        assert_eq!(
            req(r#"{a="b"} |= "x" | line_format "y" |= "z""#),
            vec!["x".to_string()]
        );
    }
}
