//! Line filters: `|=`, `!=`, `|~`, `!~`, `|>`, `!>`, with `or` alternatives and
//! `ip("…")` operands.

use super::ip::IpMatcher;
use super::pattern::Pattern;
use regex::Regex;
use runakefli_logql::{LineFilter, LineFilterOp, LineFilterValue};

#[derive(Debug)]
enum Test {
    Contains(String),
    Regex(Regex),
    Pattern(Pattern),
    Ip(IpMatcher),
}

impl Test {
    fn matches(&self, line: &str) -> bool {
        match self {
            Test::Contains(s) => memchr::memmem::find(line.as_bytes(), s.as_bytes()).is_some(),
            Test::Regex(r) => r.is_match(line),
            Test::Pattern(p) => p.test(line),
            Test::Ip(m) => m.matches_line(line),
        }
    }
}

/// A compiled line filter.
#[derive(Debug)]
pub struct LineFilterStage {
    negate: bool,
    alternatives: Vec<Test>,
}

/// Loki's text for a filter stage in error messages, e.g. `|~ "(?P<bad"`.
fn stage_text(f: &LineFilter) -> String {
    let op = match f.op {
        LineFilterOp::Contains => "|=",
        LineFilterOp::NotContains => "!=",
        LineFilterOp::Match => "|~",
        LineFilterOp::NotMatch => "!~",
        LineFilterOp::Pattern => "|>",
        LineFilterOp::NotPattern => "!>",
    };
    let vals: Vec<String> = f
        .values
        .iter()
        .map(|v| match v {
            LineFilterValue::Str(s) => runakefli_model::labels::quote_go(s),
            LineFilterValue::Ip(s) => format!("ip({})", runakefli_model::labels::quote_go(s)),
        })
        .collect();
    format!("{op} {}", vals.join(" or "))
}

impl LineFilterStage {
    /// Compiles a filter; the error is Loki's message without the `parse error : ` prefix.
    pub fn new(f: &LineFilter) -> Result<Self, String> {
        let negate = matches!(
            f.op,
            LineFilterOp::NotContains | LineFilterOp::NotMatch | LineFilterOp::NotPattern
        );
        let mut alternatives = Vec::new();
        for v in &f.values {
            let t = match (f.op, v) {
                // Loki's ip line filter knows only `|=` and `!=`, and checks
                // the operation before the pattern.
                (LineFilterOp::Contains | LineFilterOp::NotContains, LineFilterValue::Ip(p)) => {
                    Test::Ip(
                        IpMatcher::new(p)
                            .map_err(|e| format!("stage '{}' : {e}", stage_text(f)))?,
                    )
                }
                (_, LineFilterValue::Ip(_)) => {
                    return Err(format!("stage '{}' : ip: invalid operation", stage_text(f)))
                }
                (LineFilterOp::Contains | LineFilterOp::NotContains, LineFilterValue::Str(s)) => {
                    Test::Contains(s.clone())
                }
                (LineFilterOp::Match | LineFilterOp::NotMatch, LineFilterValue::Str(s)) => {
                    Test::Regex(
                        runakefli_model::regex_cache::compile(s).map_err(|e| {
                            format!("stage '{}' : {}", stage_text(f), regex_error(&e))
                        })?,
                    )
                }
                (_, LineFilterValue::Str(s)) => Test::Pattern(
                    Pattern::new(s).map_err(|e| format!("stage '{}' : {e}", stage_text(f)))?,
                ),
            };
            alternatives.push(t);
        }
        Ok(LineFilterStage {
            negate,
            alternatives,
        })
    }

    /// Whether the line passes.
    pub fn keep(&self, line: &str) -> bool {
        let any = self.alternatives.iter().any(|t| t.matches(line));
        any != self.negate
    }
}

/// Go's wording for regexp compile errors, approximated from the regex crate's.
pub fn regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    format!(
        "error parsing regexp: {}",
        last.trim_start_matches("error: ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(op: LineFilterOp, vals: &[&str]) -> LineFilterStage {
        LineFilterStage::new(&LineFilter {
            op,
            values: vals
                .iter()
                .map(|s| LineFilterValue::Str(s.to_string()))
                .collect(),
        })
        .unwrap()
    }

    #[test]
    fn ops_and_or_chains() {
        assert!(f(LineFilterOp::Contains, &["a", "b"]).keep("xbx"));
        assert!(!f(LineFilterOp::NotContains, &["a", "b"]).keep("xbx"));
        assert!(f(LineFilterOp::NotContains, &["a", "b"]).keep("xcx"));
        assert!(!f(LineFilterOp::NotContains, &[""]).keep("x"));
        assert!(f(LineFilterOp::Match, &["(?i)ERR"]).keep("an error"));
        assert!(f(LineFilterOp::NotPattern, &["<_> GET <_>"]).keep("a POST b"));
    }
}
