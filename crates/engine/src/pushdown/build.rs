//! Compiling LogQL pipeline stages into plan pieces.

use crate::pipeline::convert::{parse_bytes, parse_duration, parse_float};
use crate::pipeline::label_filter::LabelFilter;
use crate::pipeline::labels::{LabelsBuilder, ERROR_DETAILS_LABEL, ERROR_LABEL};
use crate::pipeline::line_filter::LineFilterStage;
use crate::pipeline::reorder;
use runakefli_logql::{LabelFilterExpr, LineFilterOp, LineFilterValue, Stage, Unwrap};
use runakefli_model::plan::{
    FieldFilter, FieldStage, FilterOutcome, JsonKey, JsonParser, LineFilter, LineMatch,
    UnwrapConversion, UnwrapField,
};
use std::sync::Arc;

/// A pipeline as plan pieces.
pub struct PipelinePieces {
    /// The line filters (Loki runs them first).
    pub line_filters: Vec<LineFilter>,
    /// `| json` or `| logfmt` and the label filters after it.
    pub fields: Option<FieldStage>,
}

/// The plan pieces of `stages` with an optional unwrap; `None` when a stage
/// has no plan form (other parsers, a `| logfmt` parameter Loki cannot
/// read as a key, two parsers, formatting, `drop`/`keep`, label filters before a parser, pattern and
/// `ip()` line filters, …).
pub fn pipeline_pieces(stages: &[Stage], unwrap: Option<&Unwrap>) -> Option<PipelinePieces> {
    let stages = reorder(stages);
    let mut line_filters = Vec::new();
    let mut i = 0;
    while let Some(Stage::LineFilter(f)) = stages.get(i) {
        line_filters.push(line_filter(f)?);
        i += 1;
    }
    let mut fields = None;
    let parser = match stages.get(i) {
        Some(Stage::Json(params)) => Some(json_parser(params)?),
        Some(Stage::Logfmt {
            strict,
            keep_empty,
            params,
        }) => Some(logfmt_parser(*strict, *keep_empty, params)?),
        _ => None,
    };
    // Label filters (or an unwrap) with no parser before them read the
    // stream's labels and the row's metadata.
    let parsed = parser.is_some();
    let bare = matches!(stages.get(i), Some(Stage::LabelFilter(_))) || unwrap.is_some();
    let parser = parser.or_else(|| bare.then_some(JsonParser::Base));
    if let Some(parser) = parser {
        if parsed {
            i += 1;
        }
        let mut filters = Vec::new();
        let mut drop_errors = false;
        loop {
            match stages.get(i) {
                Some(Stage::LabelFilter(e)) => filters.push(field_filter(e)?),
                // Logs Drilldown's `| drop __error__, __error_details__`.
                Some(Stage::Drop(items)) if drops_only_errors(items) => drop_errors = true,
                _ => break,
            }
            i += 1;
        }
        fields = Some(FieldStage {
            parser,
            filters,
            unwrap: None,
            drop_errors,
        });
    }
    if i != stages.len() {
        return None;
    }
    if let Some(u) = unwrap {
        let f = fields.as_mut()?;
        f.unwrap = Some(unwrap_field(u)?);
    }
    Some(PipelinePieces {
        line_filters,
        fields,
    })
}

/// The plan pieces of a log query whose `stages`, after their leading line
/// filters (once the engine has moved line filters forward), never drop a
/// line: parsers, `line_format`, `label_format`, `decolorize`, `drop`,
/// `keep` (e.g. Logs Drilldown's `| json | logfmt | drop __error__,
/// __error_details__`). The pieces are the line filters alone: the rows a
/// lines plan keeps are exactly the rows the pipeline keeps, and the engine
/// runs the whole pipeline on them for their lines and labels. `None` when
/// a later stage can drop a line (a label filter, `distinct`, a line filter
/// after `line_format` or `unpack`) or a leading line filter has no plan
/// form.
pub fn line_filter_pieces(stages: &[Stage]) -> Option<PipelinePieces> {
    let keeps_every_line = |s: &Stage| {
        matches!(
            s,
            Stage::Json(_)
                | Stage::Logfmt { .. }
                | Stage::Regexp(_)
                | Stage::Pattern(_)
                | Stage::Unpack
                | Stage::LineFormat(_)
                | Stage::LabelFormat(_)
                | Stage::Decolorize
                | Stage::Drop(_)
                | Stage::Keep(_)
        )
    };
    leading_line_filters(stages, keeps_every_line, false)
}

/// The line filters of `stages` when all that follows them is dropping the
/// error labels (`| drop __error__`, with no parser: Logs Drilldown's level
/// volume); `None` otherwise. No row gets an error label without a parser,
/// so for a plan grouped by labels other than those the drop changes
/// nothing (the caller checks the grouping).
pub fn error_drop_pieces(stages: &[Stage]) -> Option<PipelinePieces> {
    let drops_errors = |s: &Stage| matches!(s, Stage::Drop(items) if drops_only_errors(items));
    leading_line_filters(stages, drops_errors, true)
}

/// `stages` (reordered as the engine runs them) as plan pieces of their
/// leading line filters alone, when every stage after those passes `rest`
/// (and, with `needs_rest`, there is one); `None` otherwise, or when a
/// line filter has no plan form.
fn leading_line_filters(
    stages: &[Stage],
    rest: impl Fn(&Stage) -> bool,
    needs_rest: bool,
) -> Option<PipelinePieces> {
    let stages = reorder(stages);
    let first_other = stages
        .iter()
        .position(|s| !matches!(s, Stage::LineFilter(_)))
        .unwrap_or(stages.len());
    if (needs_rest && first_other == stages.len()) || !stages[first_other..].iter().all(rest) {
        return None;
    }
    let line_filters = stages[..first_other]
        .iter()
        .map(|s| match s {
            Stage::LineFilter(f) => line_filter(f),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some(PipelinePieces {
        line_filters,
        fields: None,
    })
}

/// `| json [params]` as the plan's parser; `None` for a parameter that is
/// not a plain top-level key.
fn json_parser(params: &[runakefli_logql::LabelExtraction]) -> Option<JsonParser> {
    if params.is_empty() {
        return Some(JsonParser::All);
    }
    let mut keys = Vec::with_capacity(params.len());
    for p in params {
        let key = p.expression.as_deref().unwrap_or(&p.label);
        let simple = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !simple {
            return None;
        }
        keys.push(JsonKey {
            label: p.label.clone(),
            key: key.to_string(),
        });
    }
    Some(JsonParser::Keys(keys))
}

/// Whether `| drop items` removes error labels only (`__error__`,
/// `__error_details__`, without values).
fn drops_only_errors(items: &[runakefli_logql::LabelSelectorItem]) -> bool {
    !items.is_empty()
        && items.iter().all(|it| {
            it.matcher.is_none() && [ERROR_LABEL, ERROR_DETAILS_LABEL].contains(&it.name.as_str())
        })
}

/// `| logfmt [flags] [params]` as the plan's parser, each parameter's key
/// as the engine's parser compares it with a line's keys; `None` for a
/// parameter expression Loki cannot read as a key.
fn logfmt_parser(
    strict: bool,
    keep_empty: bool,
    params: &[runakefli_logql::LabelExtraction],
) -> Option<JsonParser> {
    let keys = params
        .iter()
        .map(|p| {
            let e = runakefli_logql::logfmt_expr::expression_of(p);
            let key = runakefli_logql::logfmt_expr::logfmt_expression_key(e).ok()?;
            Some(JsonKey {
                label: p.label.clone(),
                key,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(JsonParser::Logfmt {
        strict,
        keep_empty,
        keys,
    })
}

/// A line filter as a plan piece; `None` for pattern and `ip()` filters.
pub fn line_filter(f: &runakefli_logql::LineFilter) -> Option<LineFilter> {
    let (kind, negated) = match f.op {
        LineFilterOp::Contains => (LineMatch::Substring, false),
        LineFilterOp::NotContains => (LineMatch::Substring, true),
        LineFilterOp::Match => (LineMatch::Regex, false),
        LineFilterOp::NotMatch => (LineMatch::Regex, true),
        LineFilterOp::Pattern | LineFilterOp::NotPattern => return None,
    };
    let mut values = Vec::with_capacity(f.values.len());
    for v in &f.values {
        match v {
            LineFilterValue::Str(s) => values.push(s.clone()),
            LineFilterValue::Ip(_) => return None,
        }
    }
    // The engine's own stage decides (before negation).
    let positive = runakefli_logql::LineFilter {
        op: match kind {
            LineMatch::Substring => LineFilterOp::Contains,
            LineMatch::Regex => LineFilterOp::Match,
        },
        values: f.values.clone(),
    };
    let stage = LineFilterStage::new(&positive).ok()?;
    let (any_of, all_of) = match kind {
        LineMatch::Substring => (Some(values.clone()), {
            if values.len() == 1 {
                values.clone()
            } else {
                Vec::new()
            }
        }),
        LineMatch::Regex => regex_literals(&values),
    };
    let split = match (kind, values.as_slice()) {
        (LineMatch::Regex, [re]) => regex_split(re),
        _ => None,
    };
    Some(LineFilter {
        kind,
        negated,
        values,
        any_of,
        all_of,
        test: Arc::new(move |line: &str| stage.keep(line)),
        split,
    })
}

/// `re` as a literal followed by a part that never matches `"`, when its
/// syntax is a concatenation starting with literal bytes.
fn regex_split(re: &str) -> Option<runakefli_model::plan::RegexSplit> {
    use regex_syntax::hir::{Hir, HirKind};
    let hir = regex_syntax::Parser::new().parse(re).ok()?;
    let items: Vec<Hir> = match hir.into_kind() {
        HirKind::Concat(items) => items,
        _ => return None,
    };
    let mut prefix = Vec::new();
    let mut rest_at = 0;
    for (i, h) in items.iter().enumerate() {
        match h.kind() {
            HirKind::Literal(l) => {
                prefix.extend_from_slice(&l.0);
                rest_at = i + 1;
            }
            _ => break,
        }
    }
    let rest = &items[rest_at..];
    if prefix.is_empty() || rest.is_empty() || !rest.iter().all(avoids_quote) {
        return None;
    }
    let prefix = String::from_utf8(prefix).ok()?;
    let rest_hir = Hir::concat(rest.to_vec());
    let anchored = runakefli_model::regex_cache::compile(&format!("^(?:{rest_hir})")).ok()?;
    let rest_all_of = crate::pipeline::hir_required_literals(&rest_hir);
    Some(runakefli_model::plan::RegexSplit {
        prefix,
        rest: Arc::new(move |s: &str| anchored.is_match(s)),
        rest_all_of,
        rest_digit_blind: rest.iter().all(digit_blind),
    })
}

/// Whether a concatenation of these HIRs gives a text and its digit-blind
/// form (each run of ASCII digits replaced by one NUL) the same verdict: it
/// is made of literals without digits or NUL, and unbounded repetitions
/// (from zero) of classes that take every digit and NUL.
fn digit_blind(h: &regex_syntax::hir::Hir) -> bool {
    use regex_syntax::hir::{Class, HirKind};
    let covers = |h: &regex_syntax::hir::Hir| match h.kind() {
        HirKind::Class(Class::Unicode(c)) => ('0'..='9')
            .chain(['\0'])
            .all(|ch| c.ranges().iter().any(|r| r.start() <= ch && ch <= r.end())),
        HirKind::Class(Class::Bytes(c)) => (b'0'..=b'9')
            .chain([0u8])
            .all(|b| c.ranges().iter().any(|r| r.start() <= b && b <= r.end())),
        _ => false,
    };
    match h.kind() {
        HirKind::Literal(l) => !l.0.iter().any(|b| b.is_ascii_digit() || *b == 0),
        HirKind::Repetition(r) => r.min == 0 && r.max.is_none() && covers(&r.sub),
        HirKind::Capture(c) => digit_blind(&c.sub),
        HirKind::Concat(hs) => hs.iter().all(digit_blind),
        _ => false,
    }
}

/// Whether no string a HIR matches contains `"` (and it has no look-around).
fn avoids_quote(h: &regex_syntax::hir::Hir) -> bool {
    use regex_syntax::hir::{Class, HirKind};
    match h.kind() {
        HirKind::Empty => true,
        HirKind::Literal(l) => !l.0.contains(&b'"'),
        HirKind::Class(Class::Unicode(c)) => !c.iter().any(|r| r.start() <= '"' && '"' <= r.end()),
        HirKind::Class(Class::Bytes(c)) => !c.iter().any(|r| r.start() <= b'"' && b'"' <= r.end()),
        HirKind::Look(_) => false,
        HirKind::Repetition(r) => avoids_quote(&r.sub),
        HirKind::Capture(c) => avoids_quote(&c.sub),
        HirKind::Concat(hs) | HirKind::Alternation(hs) => hs.iter().all(avoids_quote),
    }
}

/// For `or`-ed regexps: the literal set they are equivalent to (a line
/// matches iff it contains one), and the literals every match contains.
fn regex_literals(res: &[String]) -> (Option<Vec<String>>, Vec<String>) {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    let mut any: Option<Vec<String>> = Some(Vec::new());
    let mut all = Vec::new();
    for re in res {
        let Ok(hir) = regex_syntax::Parser::new().parse(re) else {
            return (None, Vec::new());
        };
        let no_looks = hir.properties().look_set().is_empty();
        let seq = Extractor::new().kind(ExtractKind::Prefix).extract(&hir);
        let exact: Option<Vec<String>> = match seq.literals() {
            Some(lits) if seq.is_exact() && no_looks && !lits.is_empty() => lits
                .iter()
                .map(|l| {
                    std::str::from_utf8(l.as_bytes())
                        .ok()
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                })
                .collect(),
            _ => None,
        };
        any = match (any, exact) {
            (Some(mut acc), Some(lits)) => {
                acc.extend(lits);
                Some(acc)
            }
            _ => None,
        };
        if res.len() == 1 {
            all.extend(crate::pipeline::hir_required_literals(&hir));
        }
    }
    if let Some(a) = &mut any {
        a.sort();
        a.dedup();
    }
    all.sort();
    all.dedup();
    (any, all)
}

/// Label names a label filter expression reads.
pub(crate) fn filter_names(e: &LabelFilterExpr, out: &mut Vec<String>) {
    match e {
        LabelFilterExpr::And(a, b) | LabelFilterExpr::Or(a, b) => {
            filter_names(a, out);
            filter_names(b, out);
        }
        LabelFilterExpr::Paren(a) => filter_names(a, out),
        LabelFilterExpr::String(m) => out.push(m.name.clone()),
        LabelFilterExpr::Number { name, .. }
        | LabelFilterExpr::Duration { name, .. }
        | LabelFilterExpr::Bytes { name, .. }
        | LabelFilterExpr::Ip { name, .. } => out.push(name.clone()),
    }
}

/// A label filter as a plan piece.
fn field_filter(e: &LabelFilterExpr) -> Option<FieldFilter> {
    let lf = LabelFilter::new(e).ok()?;
    let mut labels = Vec::new();
    filter_names(e, &mut labels);
    labels.sort();
    labels.dedup();
    let names = labels.clone();
    let test = Arc::new(move |vals: &[Option<&str>]| {
        let mut b = LabelsBuilder::default();
        for (n, v) in names.iter().zip(vals) {
            if let Some(v) = v {
                b.set(n, v);
            }
        }
        if !lf.keep(&mut b) {
            FilterOutcome::Drop
        } else if b.has_err() {
            FilterOutcome::Error
        } else {
            FilterOutcome::Keep
        }
    });
    Some(FieldFilter {
        labels,
        condition: e.into(),
        text: e.to_string(),
        test,
    })
}

/// `| unwrap` as a plan piece.
fn unwrap_field(u: &Unwrap) -> Option<UnwrapField> {
    let conversion = match u.conversion {
        runakefli_logql::UnwrapConversion::None => UnwrapConversion::Float,
        runakefli_logql::UnwrapConversion::Duration => UnwrapConversion::Duration,
        runakefli_logql::UnwrapConversion::Bytes => UnwrapConversion::Bytes,
    };
    let convert: runakefli_model::plan::UnwrapConvert = match conversion {
        UnwrapConversion::Float => Arc::new(|s: &str| parse_float(s).ok()),
        UnwrapConversion::Duration => {
            Arc::new(|s: &str| parse_duration(s).ok().map(|ns| ns as f64 / 1e9))
        }
        UnwrapConversion::Bytes => Arc::new(|s: &str| parse_bytes(s).ok().map(|b| b as f64)),
    };
    let mut post_filters = Vec::with_capacity(u.post_filters.len());
    for f in &u.post_filters {
        post_filters.push(field_filter(f)?);
    }
    Some(UnwrapField {
        label: u.label.clone(),
        conversion,
        convert,
        post_filters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pipeline of log query `q`.
    fn stages(q: &str) -> Vec<Stage> {
        match runakefli_logql::parse_expr(q).unwrap() {
            runakefli_logql::Expr::Log(l) => l.pipeline,
            _ => panic!("log query expected"),
        }
    }

    fn pieces(q: &str) -> Option<PipelinePieces> {
        pipeline_pieces(&stages(q), None)
    }

    /// Line filters and error drops alone (no parser) are their line
    /// filters; anything else is not.
    #[test]
    fn error_drops_with_no_parser_leave_the_line_filters() {
        let filters = |q: &str| {
            error_drop_pieces(&stages(q)).map(|p| {
                assert!(p.fields.is_none(), "{q}");
                p.line_filters.len()
            })
        };
        assert_eq!(filters(r#"{a="b"} | drop __error__"#), Some(0));
        assert_eq!(
            filters(r#"{a="b"} |= "x" | drop __error__, __error_details__ |~ "y""#),
            Some(2)
        );
        for q in [
            r#"{a="b"}"#,
            r#"{a="b"} |= "x""#,
            r#"{a="b"} | drop __error__, level"#,
            r#"{a="b"} | json | drop __error__"#,
            r#"{a="b"} | drop __error__ | level="x""#,
        ] {
            assert_eq!(filters(q), None, "{q}");
        }
    }

    /// The line filters of pipelines that drop no line after them; any stage
    /// that can drop one (or a line filter with no plan form) leaves none.
    #[test]
    fn pipelines_that_drop_no_line_after_their_line_filters_are_line_filter_plans() {
        let filters = |q: &str| {
            line_filter_pieces(&stages(q)).map(|p| {
                assert!(p.fields.is_none(), "{q}");
                p.line_filters
                    .iter()
                    .map(|f| f.values.join("|"))
                    .collect::<Vec<_>>()
            })
        };
        for (q, want) in [
            (
                r#"{a="b"} | json | logfmt | drop __error__, __error_details__"#,
                vec![],
            ),
            (
                r#"{a="b"} |= "x" | logfmt | label_format l="{{.x}}" != "y" | keep l"#,
                vec!["x", "y"],
            ),
            (
                r#"{a="b"} | regexp "(?P<w>\\w+)" |~ "z+" | pattern "<_> <v>" | decolorize"#,
                vec!["z+"],
            ),
            // Filters before `line_format` move ahead of it; none after.
            (
                r#"{a="b"} | json |= "x" | line_format "{{.msg}}" | drop a="1""#,
                vec!["x"],
            ),
            (r#"{a="b"} | unpack"#, vec![]),
        ] {
            assert_eq!(
                filters(q),
                Some(want.iter().map(|s| s.to_string()).collect()),
                "{q}"
            );
        }
        for q in [
            r#"{a="b"} | json | level="error""#,
            r#"{a="b"} | logfmt | drop x | level="x" or status >= 400"#,
            r#"{a="b"} | json | line_format "{{.msg}}" |= "x""#,
            r#"{a="b"} | unpack != "x""#,
            r#"{a="b"} | json | drop __error__ | status >= 500"#,
            r#"{a="b"} |> "<_> x" | json"#,
        ] {
            assert_eq!(filters(q), None, "{q}");
        }
    }

    #[test]
    fn regex_splits_know_what_they_need_and_whether_digits_matter() {
        let split = |re: &str| regex_split(re).expect("splits");
        let s = split(r#""msg":"[^"]*request"#);
        assert_eq!(s.rest_all_of, vec!["request".to_string()]);
        assert!(s.rest_digit_blind);
        for (re, blind) in [
            (r#""msg":"[^"]*after [0-9]+ms"#, false),
            (r#""msg":"[a-z ]*ed"#, false),
            (r#""msg":"[^"]*(?:time)[^"]*out"#, true),
            (r#""msg":"[^"]*x2"#, false),
            (r#""msg":"[^"]?x"#, false),
        ] {
            assert_eq!(split(re).rest_digit_blind, blind, "{re}");
        }
        let s = split(r#""msg":"ab[^"]*cd"#);
        assert_eq!(
            (s.prefix.as_str(), s.rest_all_of),
            (r#""msg":"ab"#, vec!["cd".to_string()])
        );
        // Several possible suffixes (0ms … 9ms) fix no single one.
        assert!(split(r#""msg":"[^"]*after [0-9]+ms"#)
            .rest_all_of
            .is_empty());
    }

    #[test]
    fn shapes_with_and_without_plan_form() {
        let p = pieces(r#"{a="b"} |= "x" |~ "y|z" | json | level="error""#).unwrap();
        assert_eq!(p.line_filters.len(), 2);
        assert_eq!(
            p.line_filters[1].any_of,
            Some(vec!["y".to_string(), "z".to_string()])
        );
        let f = p.fields.unwrap();
        assert_eq!(f.parser, JsonParser::All);
        assert_eq!(f.filters[0].labels, vec!["level".to_string()]);
        assert_eq!((f.filters[0].test)(&[Some("error")]), FilterOutcome::Keep);
        assert_eq!((f.filters[0].test)(&[Some("info")]), FilterOutcome::Drop);
        let logfmt = pieces(r#"{a="b"} | logfmt | level="error""#).unwrap();
        assert_eq!(logfmt.fields.unwrap().parser, JsonParser::PLAIN_LOGFMT);
        let strict = pieces(r#"{a="b"} | logfmt --strict --keep-empty l="level", m | x="y""#);
        assert_eq!(
            strict.unwrap().fields.unwrap().parser,
            JsonParser::Logfmt {
                strict: true,
                keep_empty: true,
                keys: vec![
                    JsonKey {
                        label: "l".into(),
                        key: "level".into()
                    },
                    JsonKey {
                        label: "m".into(),
                        key: "m".into()
                    },
                ],
            }
        );
        // Keys as the engine compares them: a quoted path element.
        let quoted = pieces(r#"{a="b"} | logfmt l="\"level\"""#).unwrap();
        assert_eq!(
            quoted.fields.unwrap().parser,
            JsonParser::Logfmt {
                strict: false,
                keep_empty: false,
                keys: vec![JsonKey {
                    label: "l".into(),
                    key: "level".into()
                }],
            }
        );
        assert!(pieces(r#"{a="b"} | unpack"#).is_none());
        // Label filters with no parser read the base labels.
        let bare = pieces(r#"{a="b"} |= "x" | level="error" | n > 2"#).unwrap();
        let bare = bare.fields.unwrap();
        assert_eq!((bare.parser, bare.filters.len()), (JsonParser::Base, 2));
        assert!(pieces(r#"{a="b"} | level="x" | logfmt"#).is_none());
        // Logs Drilldown's `| drop __error__, __error_details__`; other drops
        // have no plan form.
        let dropped = pieces(r#"{a="b"} | json | drop __error__, __error_details__ | n > 2"#);
        let dropped = dropped.unwrap().fields.unwrap();
        assert!(dropped.drop_errors && dropped.filters.len() == 1);
        assert!(
            !pieces(r#"{a="b"} | json"#)
                .unwrap()
                .fields
                .unwrap()
                .drop_errors
        );
        assert!(pieces(r#"{a="b"} | json | drop level"#).is_none());
        assert!(pieces(r#"{a="b"} | json | drop __error__="x""#).is_none());
        assert!(pieces(r#"{a="b"} | regexp "(?P<x>.)""#).is_none());
        assert!(pieces(r#"{a="b"} | level="x" | json"#).is_none());
        assert!(pieces(r#"{a="b"} |> "<_> x""#).is_none());
        let re = pieces(r#"{a="b"} |~ `"msg":"[^"]*request`"#).unwrap();
        assert_eq!(re.line_filters[0].any_of, None);
        let split = re.line_filters[0].split.as_ref().unwrap();
        assert_eq!(split.prefix, r#""msg":""#);
        assert!((split.rest)("a request done"));
        assert!(!(split.rest)("a\" request"));
        assert!(pieces(r#"{a="b"} |~ `"msg":".*request`"#)
            .unwrap()
            .line_filters[0]
            .split
            .is_none());
        assert!(re.line_filters[0].all_of.contains(&"request".to_string()));
        assert!((re.line_filters[0].test)(r#"{"msg":"a request"}"#));
        let anchored = pieces(r#"{a="b"} |~ "^abc""#).unwrap();
        assert_eq!(anchored.line_filters[0].any_of, None);
        let num = pieces(r#"{a="b"} | json | status >= 500"#).unwrap();
        let t = &num.fields.unwrap().filters[0].test;
        assert_eq!(t(&[Some("503")]), FilterOutcome::Keep);
        assert_eq!(t(&[Some("200")]), FilterOutcome::Drop);
        assert_eq!(t(&[Some("abc")]), FilterOutcome::Error);
    }
}
