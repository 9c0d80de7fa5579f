//! Predicates: stream matchers over `streams.labels`, the time range and
//! line filters over `logs`.

use super::{quote, ts_literal};
use crate::Error;
use runakefli_model::plan::{LineFilter, LineMatch};
use runakefli_model::{MatchOp, Matcher, Timestamp};

/// A matcher over the `labels` map of `streams` (a missing label reads as
/// `''`, which is Prometheus' rule for matchers).
pub fn matcher(m: &Matcher) -> Result<String, Error> {
    let label = format!("labels[{}]", quote(&m.name));
    Ok(match m.op {
        MatchOp::Eq => format!("{label} = {}", quote(&m.value)),
        MatchOp::Neq => format!("{label} != {}", quote(&m.value)),
        MatchOp::Re => format!(
            "match({label}, {})",
            quote(&super::selector_regex(&m.value)?)
        ),
        MatchOp::Nre => format!(
            "NOT match({label}, {})",
            quote(&super::selector_regex(&m.value)?)
        ),
    })
}

/// `start <= timestamp < end` over `logs.timestamp`.
pub fn time_range(start: Timestamp, end: Timestamp) -> String {
    format!(
        "timestamp >= {} AND timestamp < {}",
        ts_literal(start),
        ts_literal(end)
    )
}

/// A `LIKE` pattern for "contains `s`": `\`, `%` and `_` escaped.
pub(super) fn contains_pattern(s: &str) -> String {
    let mut p = String::with_capacity(s.len() + 2);
    p.push('%');
    for c in s.chars() {
        if matches!(c, '\\' | '%' | '_') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

/// A line filter over `logs.line`, from its LogQL operands
/// ([`LineFilter::values`]); regexps outside what re2 reads alike are
/// [`Error::Unsupported`].
pub fn line_filter(f: &LineFilter) -> Result<String, Error> {
    if f.values.is_empty() {
        return Err(Error::Unsupported("line filter without operands".into()));
    }
    let mut alts = Vec::with_capacity(f.values.len());
    for v in &f.values {
        alts.push(match f.kind {
            LineMatch::Substring => format!("line LIKE {}", quote(&contains_pattern(v))),
            LineMatch::Regex => format!("match(line, {})", quote(&super::line_regex(v)?)),
        });
    }
    let test = if alts.len() == 1 {
        alts.pop().unwrap_or_default()
    } else {
        format!("({})", alts.join(" OR "))
    };
    Ok(if f.negated {
        format!("NOT {test}")
    } else {
        test
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::Arc;

    /// A line filter as the engine builds one (its test is not used here).
    pub(crate) fn filter(kind: LineMatch, negated: bool, values: &[&str]) -> LineFilter {
        LineFilter {
            kind,
            negated,
            values: values.iter().map(|s| s.to_string()).collect(),
            any_of: None,
            all_of: Vec::new(),
            test: Arc::new(|_| true),
            split: None,
        }
    }

    #[test]
    fn matchers_read_the_labels_map() {
        let m = |op, v: &str| matcher(&Matcher::new("app", op, v).unwrap()).unwrap();
        assert_eq!(m(MatchOp::Eq, "a'pi"), r"labels['app'] = 'a\'pi'");
        assert_eq!(m(MatchOp::Neq, ""), "labels['app'] != ''");
        assert_eq!(
            m(MatchOp::Re, "api|web"),
            "match(labels['app'], '^(?s:api|web)$')"
        );
        assert_eq!(
            m(MatchOp::Nre, "a.+"),
            "NOT match(labels['app'], '^(?s:a.+)$')"
        );
        assert!(matcher(&Matcher::new("app", MatchOp::Re, r"\d").unwrap()).is_err());
    }

    #[test]
    fn substring_filters_are_escaped_likes() {
        assert_eq!(
            line_filter(&filter(LineMatch::Substring, false, &["50%_a\\b"])).unwrap(),
            r"line LIKE '%50\\%\\_a\\\\b%'"
        );
        assert_eq!(
            line_filter(&filter(LineMatch::Substring, true, &["a", "b"])).unwrap(),
            "NOT (line LIKE '%a%' OR line LIKE '%b%')"
        );
        assert_eq!(
            line_filter(&filter(LineMatch::Substring, false, &[""])).unwrap(),
            "line LIKE '%%'"
        );
    }

    #[test]
    fn regexp_filters_use_match_without_dot_newline() {
        assert_eq!(
            line_filter(&filter(LineMatch::Regex, false, &["err.r"])).unwrap(),
            "match(line, '(?-s:err.r)')"
        );
        assert_eq!(
            line_filter(&filter(LineMatch::Regex, true, &["a", "b'"])).unwrap(),
            r"NOT (match(line, '(?-s:a)') OR match(line, '(?-s:b\')'))"
        );
        assert!(line_filter(&filter(LineMatch::Regex, false, &[r"\d"])).is_err());
    }

    #[test]
    fn time_range_is_half_open() {
        assert_eq!(
            time_range(1, 2),
            "timestamp >= fromUnixTimestamp64Nano(toInt64(1), 'UTC') AND timestamp < fromUnixTimestamp64Nano(toInt64(2), 'UTC')"
        );
    }
}
