//! Label matchers (`=`, `!=`, `=~`, `!~`) as stream selectors use them.

use regex::Regex;
use std::fmt;
use thiserror::Error;

/// The comparison a matcher makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchOp {
    /// `=`
    Eq,
    /// `!=`
    Neq,
    /// `=~` (fully anchored regular expression)
    Re,
    /// `!~`
    Nre,
}

impl MatchOp {
    /// The operator as written in LogQL.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchOp::Eq => "=",
            MatchOp::Neq => "!=",
            MatchOp::Re => "=~",
            MatchOp::Nre => "!~",
        }
    }
}

/// A matcher whose regular expression could not be compiled.
#[derive(Debug, Error)]
#[error("error parsing regexp: {0}")]
pub struct MatcherError(pub String);

/// One label matcher. A missing label matches as the empty string, as in Prometheus.
#[derive(Clone, Debug)]
pub struct Matcher {
    /// Label name.
    pub name: String,
    /// Comparison.
    pub op: MatchOp,
    /// Value or regular expression as written.
    pub value: String,
    re: Option<Regex>,
}

impl PartialEq for Matcher {
    fn eq(&self, o: &Self) -> bool {
        self.name == o.name && self.op == o.op && self.value == o.value
    }
}

impl Matcher {
    /// Builds a matcher, compiling the anchored regular expression for `=~` and `!~`.
    pub fn new(
        name: impl Into<String>,
        op: MatchOp,
        value: impl Into<String>,
    ) -> Result<Self, MatcherError> {
        let value = value.into();
        let re = match op {
            MatchOp::Re | MatchOp::Nre => Some(
                crate::regex_cache::compile(&format!("^(?s:{value})$"))
                    .map_err(|e| MatcherError(e.to_string()))?,
            ),
            _ => None,
        };
        Ok(Matcher {
            name: name.into(),
            op,
            value,
            re,
        })
    }

    /// Whether a label value (empty when the label is absent) satisfies the matcher.
    pub fn matches(&self, value: &str) -> bool {
        match self.op {
            MatchOp::Eq => value == self.value,
            MatchOp::Neq => value != self.value,
            MatchOp::Re => self.re.as_ref().is_some_and(|r| r.is_match(value)),
            MatchOp::Nre => !self.re.as_ref().is_some_and(|r| r.is_match(value)),
        }
    }

    /// True when the matcher accepts the empty string (so it also selects streams
    /// that lack the label).
    pub fn matches_empty(&self) -> bool {
        self.matches("")
    }

    /// Whether a label set satisfies this matcher.
    pub fn matches_labels(&self, labels: &crate::Labels) -> bool {
        self.matches(labels.get(&self.name).unwrap_or(""))
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}{}",
            self.name,
            crate::labels::name_op_gap(&self.name),
            self.op.as_str(),
            crate::labels::quote_go(&self.value)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_is_anchored_and_empty_matches_absent() {
        let m = Matcher::new("app", MatchOp::Re, "api|web").unwrap();
        assert!(m.matches("api"));
        assert!(!m.matches("xapi"));
        let n = Matcher::new("app", MatchOp::Re, ".*").unwrap();
        assert!(n.matches_empty());
        let labels = crate::Labels::new(vec![("env".into(), "prod".into())]);
        assert!(Matcher::new("app", MatchOp::Neq, "x")
            .unwrap()
            .matches_labels(&labels));
        assert!(!Matcher::new("app", MatchOp::Re, ".+")
            .unwrap()
            .matches_labels(&labels));
    }

    #[test]
    fn bad_regex_is_an_error() {
        assert!(Matcher::new("a", MatchOp::Re, "(").is_err());
    }
}
