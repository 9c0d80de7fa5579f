//! Validation Loki performs around parsing: selectors must have a matcher
//! that rejects the empty value, `sort` takes no grouping, pipeline stages
//! must build (regular expressions, templates), `regexp`/`pattern` parsers
//! need captures. Regular-expression errors are worded as Go words them.

use crate::ast::{
    Expr, LabelFilterExpr, LabelFormatOp, LineFilter, LineFilterOp, LineFilterValue, SampleExpr,
    Stage, VectorOp,
};
use crate::errors::ParseError;
use crate::ip::IpPattern;
use crate::template::check_template;
use regex_syntax::ast::ErrorKind as K;
use runakefli_model::Matcher;

/// Loki's message for a selector without a non-empty-compatible matcher.
pub const ERR_EMPTY_COMPATIBLE: &str = "queries require at least one regexp or equality matcher that does not have an empty-compatible value. For instance, app=~\".*\" does not meet this requirement, but app=~\".+\" will";

/// Post-parse validation of a whole query.
pub(crate) fn validate_expr(e: &Expr) -> Result<(), ParseError> {
    match e {
        Expr::Log(l) => {
            validate_matchers(&l.selector)?;
            validate_pipeline(&l.pipeline)
        }
        Expr::Sample(s) => {
            validate_sample(s)?;
            for r in s.log_ranges() {
                validate_pipeline(&r.log.pipeline)?;
            }
            Ok(())
        }
    }
}

/// A selector must contain a matcher that does not match the empty string.
pub fn validate_matchers(m: &[Matcher]) -> Result<(), ParseError> {
    if m.iter().all(|m| m.matches_empty()) {
        return Err(ParseError::plain(ERR_EMPTY_COMPATIBLE));
    }
    Ok(())
}

fn validate_sample(s: &SampleExpr) -> Result<(), ParseError> {
    match s {
        SampleExpr::Binary { lhs, rhs, .. } => {
            validate_sample(lhs)?;
            validate_sample(rhs)
        }
        SampleExpr::Literal(_) | SampleExpr::Vector(_) => Ok(()),
        SampleExpr::VectorAggregation {
            op, expr, grouping, ..
        } => {
            if matches!(op, VectorOp::Sort | VectorOp::SortDesc)
                && grouping.as_ref().is_some_and(|g| !g.labels.is_empty())
            {
                return Err(ParseError::plain(
                    "sort and sort_desc doesn't allow grouping by ",
                ));
            }
            validate_sample(expr)
        }
        SampleExpr::RangeAggregation { range, .. } => validate_matchers(&range.log.selector),
        SampleExpr::LabelReplace { expr, .. } | SampleExpr::Paren(expr) => validate_sample(expr),
    }
}

enum Item<'a> {
    Filters(Vec<&'a LineFilter>),
    Stage(&'a Stage),
}

/// Builds the stages in Loki's order (line filters grouped ahead of the
/// other stages up to a label filter, `line_format` or `unpack`) and reports
/// the first that fails, as `stage '<stage>' : <error>`.
fn validate_pipeline(stages: &[Stage]) -> Result<(), ParseError> {
    let mut order: Vec<Item> = Vec::new();
    let mut filters: Vec<&LineFilter> = Vec::new();
    let mut others: Vec<&Stage> = Vec::new();
    fn flush_into<'a>(
        order: &mut Vec<Item<'a>>,
        filters: &mut Vec<&'a LineFilter>,
        others: &mut Vec<&'a Stage>,
    ) {
        if !filters.is_empty() {
            order.push(Item::Filters(std::mem::take(filters)));
        }
        order.extend(others.drain(..).map(Item::Stage));
    }
    for s in stages {
        match s {
            Stage::LabelFilter(_) => {
                flush_into(&mut order, &mut filters, &mut others);
                order.push(Item::Stage(s));
            }
            Stage::LineFilter(f) => filters.push(f),
            Stage::LineFormat(_) | Stage::Unpack => {
                others.push(s);
                flush_into(&mut order, &mut filters, &mut others);
            }
            _ => others.push(s),
        }
    }
    flush_into(&mut order, &mut filters, &mut others);
    for item in order {
        match item {
            Item::Filters(fs) => {
                if let Some(e) = line_filters_error(&fs) {
                    let text: Vec<String> = fs.iter().map(|f| loki_filter_text(f)).collect();
                    return Err(stage_error(&text.join(" "), &e));
                }
            }
            Item::Stage(Stage::LabelFilter(e)) => {
                // Loki checks the pattern only of an `ip()` filter that is the
                // whole stage (parentheses dropped); inside `and`/`or` a bad
                // pattern matches nothing.
                let mut e = e;
                while let LabelFilterExpr::Paren(inner) = e {
                    e = inner;
                }
                if let LabelFilterExpr::Ip { pattern, .. } = e {
                    if let Err(msg) = IpPattern::parse(pattern) {
                        return Err(stage_error(&format!("| {e}"), &msg));
                    }
                }
            }
            Item::Stage(s) => match s {
                Stage::Logfmt {
                    strict,
                    keep_empty,
                    params,
                } if !params.is_empty() => {
                    for p in params {
                        let e = crate::logfmt_expr::expression_of(p);
                        if let Err(msg) = crate::logfmt_expr::logfmt_expression_key(e) {
                            return Err(stage_error(
                                &crate::logfmt_expr::logfmt_stage_text(
                                    *strict,
                                    *keep_empty,
                                    params,
                                ),
                                &format!("cannot parse expression [{e}]: {msg}"),
                            ));
                        }
                    }
                }
                Stage::LineFormat(t) => {
                    if let Err(e) = check_template("line", t) {
                        return Err(stage_error(
                            &s.to_string(),
                            &format!("invalid line template: {e}"),
                        ));
                    }
                }
                Stage::LabelFormat(ops) => {
                    let mut seen = std::collections::HashSet::new();
                    for op in ops {
                        let dst = match op {
                            LabelFormatOp::Rename { dst, .. }
                            | LabelFormatOp::Template { dst, .. } => dst,
                        };
                        let msg = if dst == "__error__" {
                            format!("{dst} cannot be formatted")
                        } else if !seen.insert(dst.as_str()) {
                            format!("multiple label name '{dst}' not allowed in a single format operation")
                        } else {
                            continue;
                        };
                        return Err(stage_error(&s.to_string(), &msg));
                    }
                    for op in ops {
                        if let LabelFormatOp::Template { dst, template } = op {
                            if let Err(e) = check_template("label", template) {
                                return Err(stage_error(
                                    &s.to_string(),
                                    &format!("invalid template for label '{dst}': {e}"),
                                ));
                            }
                        }
                    }
                }
                _ => {}
            },
        }
    }
    Ok(())
}

/// The error Loki reports for a run of line filters combined into one stage:
/// it builds them from the last to the first, the alternatives of one `|=`,
/// `|~` or `|>` filter left to right, and a negated filter's alternatives
/// (`!= "a" or "b"`, which it reads as `!= "a" != "b"`) from the last.
fn line_filters_error(fs: &[&LineFilter]) -> Option<String> {
    for f in fs.iter().rev() {
        let negated = matches!(
            f.op,
            LineFilterOp::NotContains | LineFilterOp::NotMatch | LineFilterOp::NotPattern
        );
        let values: Vec<&LineFilterValue> = if negated {
            f.values.iter().rev().collect()
        } else {
            f.values.iter().collect()
        };
        for v in values {
            let err = match v {
                LineFilterValue::Ip(p) => {
                    if matches!(f.op, LineFilterOp::Contains | LineFilterOp::NotContains) {
                        IpPattern::parse(p).err()
                    } else {
                        Some("ip: invalid operation".to_string())
                    }
                }
                LineFilterValue::Str(re)
                    if matches!(f.op, LineFilterOp::Match | LineFilterOp::NotMatch) =>
                {
                    go_regex_error(re)
                }
                LineFilterValue::Str(_) => None,
            };
            if err.is_some() {
                return err;
            }
        }
    }
    None
}

/// A line filter as Loki prints it in a stage error: a negated filter's
/// alternatives each with the operator (`!= "a" != "b"`), since Loki turns
/// `!= "a" or "b"` into two filters.
fn loki_filter_text(f: &LineFilter) -> String {
    let negated = matches!(
        f.op,
        LineFilterOp::NotContains | LineFilterOp::NotMatch | LineFilterOp::NotPattern
    );
    if !negated || f.values.len() < 2 {
        return f.to_string();
    }
    f.values
        .iter()
        .map(|v| {
            LineFilter {
                op: f.op,
                values: vec![v.clone()],
            }
            .to_string()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn stage_error(stage: &str, msg: &str) -> ParseError {
    ParseError::plain(format!("stage '{stage}' : {msg}"))
}

/// Go's `regexp.Compile` error for `re` (`error parsing regexp: …`), or
/// `None` when Go would accept it. Close to Go for the common mistakes.
pub fn go_regex_error(re: &str) -> Option<String> {
    let e = match regex_syntax::ast::parse::Parser::new().parse(re) {
        Ok(ast) => {
            if let Some((code, expr)) = go_only_errors(re, &ast) {
                return Some(format!("error parsing regexp: {code}: `{expr}`"));
            }
            return match regex_syntax::hir::translate::Translator::new().translate(re, &ast) {
                Ok(_) => None,
                Err(e) => Some(format!("error parsing regexp: {}", e.kind())),
            };
        }
        Err(e) => e,
    };
    let span = e.span();
    let (s, t) = (
        span.start.offset.min(re.len()),
        span.end.offset.min(re.len()),
    );
    let text = re.get(s..t).unwrap_or("");
    let (code, expr): (&str, String) = match e.kind() {
        K::GroupUnclosed => ("missing closing )", re.to_string()),
        K::GroupUnopened => ("unexpected )", re.to_string()),
        K::ClassUnclosed => ("missing closing ]", re.get(s..).unwrap_or("").to_string()),
        K::RepetitionMissing => (
            "missing argument to repetition operator",
            repetition_op(&re[s..]),
        ),
        K::EscapeUnexpectedEof => ("trailing backslash at end of expression", String::new()),
        K::EscapeUnrecognized
        | K::EscapeHexEmpty
        | K::EscapeHexInvalid
        | K::EscapeHexInvalidDigit
        | K::ClassEscapeInvalid
        | K::UnsupportedBackreference => ("invalid escape sequence", text.to_string()),
        K::ClassRangeInvalid | K::ClassRangeLiteral => {
            ("invalid character class range", text.to_string())
        }
        K::RepetitionCountInvalid => ("invalid repeat count", text.to_string()),
        // Go reads an unfinished `{` as a literal; Go allows duplicate names.
        K::RepetitionCountUnclosed
        | K::RepetitionCountDecimalEmpty
        | K::DecimalEmpty
        | K::GroupNameDuplicate { .. } => return None,
        K::GroupNameInvalid | K::GroupNameEmpty | K::GroupNameUnexpectedEof => {
            let start = re[..s].rfind("(?").unwrap_or(0);
            let end = re[start..]
                .find('>')
                .map(|j| start + j + 1)
                .unwrap_or(re.len());
            ("invalid named capture", re[start..end].to_string())
        }
        K::NestLimitExceeded(_) => ("expression nests too deeply", String::new()),
        _ => {
            let start = re[..s].rfind("(?").unwrap_or(s);
            (
                "invalid or unsupported Perl syntax",
                re.get(start..t.max(start)).unwrap_or("").to_string(),
            )
        }
    };
    Some(format!("error parsing regexp: {code}: `{expr}`"))
}

/// What Go rejects but Rust accepts: nested repetition operators (`a**`)
/// and flags other than `i`, `m`, `s`, `U`.
fn go_only_errors(re: &str, ast: &regex_syntax::ast::Ast) -> Option<(&'static str, String)> {
    use regex_syntax::ast::Ast;
    match ast {
        Ast::Repetition(r) => {
            if let Ast::Repetition(inner) = &*r.ast {
                let text = re
                    .get(inner.op.span.start.offset..r.span.end.offset)
                    .unwrap_or("");
                return Some(("invalid nested repetition operator", text.to_string()));
            }
            go_only_errors(re, &r.ast)
        }
        Ast::Group(g) => {
            if let Some(flags) = g.flags() {
                if let Some(bad) = unsupported_flag(flags) {
                    return Some(bad_flag(re, g.span.start.offset, bad));
                }
            }
            go_only_errors(re, &g.ast)
        }
        Ast::Flags(f) => {
            unsupported_flag(&f.flags).map(|bad| bad_flag(re, f.span.start.offset, bad))
        }
        Ast::Alternation(a) => a.asts.iter().find_map(|x| go_only_errors(re, x)),
        Ast::Concat(c) => c.asts.iter().find_map(|x| go_only_errors(re, x)),
        _ => None,
    }
}

/// End offset of the first flag Go does not know.
fn unsupported_flag(flags: &regex_syntax::ast::Flags) -> Option<usize> {
    use regex_syntax::ast::{Flag, FlagsItemKind};
    flags.items.iter().find_map(|it| match it.kind {
        FlagsItemKind::Flag(Flag::Unicode | Flag::IgnoreWhitespace | Flag::CRLF) => {
            Some(it.span.end.offset)
        }
        _ => None,
    })
}

fn bad_flag(re: &str, start: usize, end: usize) -> (&'static str, String) {
    (
        "invalid or unsupported Perl syntax",
        re.get(start..end).unwrap_or("").to_string(),
    )
}

/// The repetition operator at the start of `rest` (`*`, `+?`, `{2,3}`).
fn repetition_op(rest: &str) -> String {
    let len = if rest.starts_with('{') {
        rest.find('}').map(|j| j + 1).unwrap_or(rest.len())
    } else {
        rest.chars().next().map(char::len_utf8).unwrap_or(0)
    };
    let lazy = usize::from(rest[len..].starts_with('?'));
    rest[..len + lazy].to_string()
}

/// The named groups of a regular expression in order (escapes and classes
/// skipped).
fn capture_names(re: &str) -> Vec<String> {
    let b = re.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut in_class) = (0, false);
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'[' if !in_class => in_class = true,
            b']' if in_class => in_class = false,
            b'(' if !in_class => {
                let rest = &re[i..];
                let name_start = if rest.starts_with("(?P<") {
                    Some(i + 4)
                } else if rest.starts_with("(?<")
                    && !rest.starts_with("(?<=")
                    && !rest.starts_with("(?<!")
                {
                    Some(i + 3)
                } else {
                    None
                };
                if let Some(ns) = name_start {
                    if let Some(j) = re[ns..].find('>') {
                        out.push(re[ns..ns + j].to_string());
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn is_label_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f == '_' || f.is_ascii_alphabetic())
        && c.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Loki's checks for `| regexp "..."`.
pub(crate) fn check_regexp_parser(re: &str) -> Result<(), ParseError> {
    let fail = |m: String| Err(ParseError::plain(format!("invalid regexp parser: {m}")));
    if let Some(e) = go_regex_error(re) {
        return fail(e);
    }
    let names = capture_names(re);
    if names.is_empty() {
        return fail("at least one named capture must be supplied".into());
    }
    let mut seen = std::collections::HashSet::new();
    for n in &names {
        if !is_label_name(n) {
            return fail(format!("invalid extracted label name '{n}'"));
        }
        if !seen.insert(n.as_str()) {
            return fail(format!("duplicate extracted label name '{n}'"));
        }
    }
    Ok(())
}

/// Loki's checks for `| pattern "..."`: at least one named capture.
pub(crate) fn check_pattern_parser(p: &str) -> Result<(), ParseError> {
    let mut named = 0;
    let mut rest = p;
    while let Some(i) = rest.find('<') {
        let after = &rest[i + 1..];
        match after.find('>') {
            Some(j) => {
                let name = &after[..j];
                if is_label_name(name) && name != "_" {
                    named += 1;
                }
                rest = &after[j + 1..];
            }
            None => break,
        }
    }
    if named == 0 {
        return Err(ParseError::plain(
            "invalid pattern parser: at least one capture is required",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(q: &str) -> String {
        crate::parse_expr(q).unwrap_err().to_string()
    }

    /// A logfmt key expression Loki's grammar cannot read is a stage error.
    #[test]
    fn logfmt_expression_errors() {
        assert_eq!(
            err(r#"{app="a"} | logfmt --strict m="http.method", level"#),
            r#"parse error : stage '| logfmt --strict m="http.method",level="level"' : cannot parse expression [http.method]: unexpected char ."#
        );
        assert_eq!(
            err(r#"{app="a"} | logfmt m="1x""#),
            r#"parse error : stage '| logfmt m="1x"' : cannot parse expression [1x]: syntax error: unexpected $end, expecting STRING or KEY"#
        );
        assert!(crate::parse_expr(r#"{app="a"} | logfmt m="\"level\"""#).is_ok());
    }

    /// `ip()` errors as Loki words them: the operation is checked first, the
    /// pattern by Go's `netip`, the stage printed as Loki prints it.
    #[test]
    fn ip_filter_errors() {
        assert_eq!(
            err(r#"{app="a"} |= ip("foo")"#),
            r#"parse error : stage '|= ip("foo")' : ip: invalid pattern: "foo""#
        );
        assert_eq!(
            err(r#"{app="a"} |~ ip("10.0.0.1")"#),
            r#"parse error : stage '|~ ip("10.0.0.1")' : ip: invalid operation"#
        );
        assert_eq!(
            err(r#"{app="a"} |> ip("bad")"#),
            r#"parse error : stage '|> ip("bad")' : ip: invalid operation"#
        );
        assert_eq!(
            err(r#"{app="a"} != ip("10.0.0.1 - 10.0.0.5")"#),
            r#"parse error : stage '!= ip("10.0.0.1 - 10.0.0.5")' : ip: invalid pattern: "10.0.0.1 - 10.0.0.5""#
        );
        assert_eq!(
            err(r#"{app="a"} | json | addr = ip("300.0.0.1")"#),
            r#"parse error : stage '| addr=ip("300.0.0.1")' : ip: invalid pattern: "300.0.0.1""#
        );
        assert_eq!(
            err(r#"{app="a"} | json | (addr != ip("1.2.3.4/33"))"#),
            r#"parse error : stage '| addr!=ip("1.2.3.4/33")' : ip: invalid pattern: "1.2.3.4/33""#
        );
        // inside and/or Loki does not check the pattern
        assert!(crate::parse_expr(r#"{app="a"} | json | addr = ip("bad") or x="y""#).is_ok());
        // filters combined into one stage are built from the last
        assert_eq!(
            err(r#"{app="a"} |= ip("bad1") | json != ip("bad2")"#),
            r#"parse error : stage '|= ip("bad1") != ip("bad2")' : ip: invalid pattern: "bad2""#
        );
        assert_eq!(
            err(r#"{app="a"} != "x" or "y" |~ "(a""#),
            r#"parse error : stage '!= "x" != "y" |~ "(a"' : error parsing regexp: missing closing ): `(a`"#
        );
    }

    #[test]
    fn go_regex_messages() {
        assert_eq!(go_regex_error("a.*b"), None);
        assert_eq!(
            go_regex_error("(?P<bad").unwrap(),
            "error parsing regexp: invalid named capture: `(?P<bad`"
        );
        assert_eq!(
            go_regex_error("(?P<>x)").unwrap(),
            "error parsing regexp: invalid named capture: `(?P<>`"
        );
        assert_eq!(
            go_regex_error("(a").unwrap(),
            "error parsing regexp: missing closing ): `(a`"
        );
        assert_eq!(
            go_regex_error("a)").unwrap(),
            "error parsing regexp: unexpected ): `a)`"
        );
        assert_eq!(
            go_regex_error("[a").unwrap(),
            "error parsing regexp: missing closing ]: `[a`"
        );
        assert_eq!(
            go_regex_error("*a").unwrap(),
            "error parsing regexp: missing argument to repetition operator: `*`"
        );
        assert_eq!(
            go_regex_error(r"\q").unwrap(),
            "error parsing regexp: invalid escape sequence: `\\q`"
        );
        assert_eq!(go_regex_error("(?P<a>x)(?P<a>y)"), None);
        assert_eq!(
            go_regex_error("(?z)").unwrap(),
            "error parsing regexp: invalid or unsupported Perl syntax: `(?z`"
        );
        assert!(go_regex_error("é(?=x)").is_some());
        assert_eq!(
            go_regex_error("a**").unwrap(),
            "error parsing regexp: invalid nested repetition operator: `**`"
        );
        assert_eq!(
            go_regex_error("(?x)a").unwrap(),
            "error parsing regexp: invalid or unsupported Perl syntax: `(?x`"
        );
        assert_eq!(go_regex_error("(?i)a*?(b*)*"), None);
    }

    #[test]
    fn regexp_parser_checks() {
        assert!(check_regexp_parser("(?P<a>x)").is_ok());
        assert_eq!(
            check_regexp_parser("(x)").unwrap_err().to_string(),
            "parse error : invalid regexp parser: at least one named capture must be supplied"
        );
        assert_eq!(
            check_regexp_parser(r"(?P<first>\S+) (?P<first>\S+)")
                .unwrap_err()
                .to_string(),
            "parse error : invalid regexp parser: duplicate extracted label name 'first'"
        );
        assert!(check_pattern_parser("<ip> - <_>").is_ok());
        assert!(check_pattern_parser("no captures").is_err());
    }
}
