//! A label filter stage's condition as data ([`LabelCondition`]): what
//! LogQL's label filters express (`| level="error"`, `| status >= 500 or
//! latency > 2s`, `| addr = ip("10.0.0.0/8")`), so a backend that compiles
//! filters itself (a SQL backend) translates this tree instead of parsing
//! LogQL text back. It sits in the plan beside the engine's compiled test
//! ([`crate::plan::FieldFilter`]); both say the same thing, and the
//! semantics (absent labels, values that do not convert) are the engine's,
//! as the plan's module documentation fixes them.

use crate::Matcher;

/// A comparison of a label's converted value with a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// `=` or `==`.
    Eq,
    /// `!=`.
    Neq,
    /// `>`.
    Gt,
    /// `>=`.
    Gte,
    /// `<`.
    Lt,
    /// `<=`.
    Lte,
}

/// A label filter's condition (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub enum LabelCondition {
    /// Both hold (`a and b`, `a, b`, `a b`).
    And(Box<LabelCondition>, Box<LabelCondition>),
    /// Either holds (`a or b`); the right side is evaluated only when the
    /// left one fails.
    Or(Box<LabelCondition>, Box<LabelCondition>),
    /// The label's text against a string (`=`, `!=`, `=~`, `!~`; regexps
    /// anchored as in a stream selector), an absent label read as `""`.
    String(Matcher),
    /// The label read as a float (`status >= 500`).
    Number {
        /// The label.
        name: String,
        /// The comparison.
        op: Comparison,
        /// The constant.
        value: f64,
    },
    /// The label read as a Go duration (`latency > 2s`).
    Duration {
        /// The label.
        name: String,
        /// The comparison.
        op: Comparison,
        /// The constant, nanoseconds.
        value: i64,
    },
    /// The label read as a byte size (`size > 20MB`).
    Bytes {
        /// The label.
        name: String,
        /// The comparison.
        op: Comparison,
        /// The constant, bytes.
        value: u64,
    },
    /// The label read as an IP address, within a pattern
    /// (`addr = ip("10.0.0.0/8")`, `addr != ip(…)`).
    Ip {
        /// The label.
        name: String,
        /// `!=`: the address is outside the pattern.
        negated: bool,
        /// The pattern as written in `ip("…")`: an address, a CIDR range
        /// or an `a-b` range.
        pattern: String,
    },
}

impl LabelCondition {
    /// The labels the condition reads, each once, sorted.
    pub fn labels(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_labels(&mut out);
        out.sort();
        out.dedup();
        out
    }

    fn collect_labels(&self, out: &mut Vec<String>) {
        match self {
            LabelCondition::And(a, b) | LabelCondition::Or(a, b) => {
                a.collect_labels(out);
                b.collect_labels(out);
            }
            LabelCondition::String(m) => out.push(m.name.clone()),
            LabelCondition::Number { name, .. }
            | LabelCondition::Duration { name, .. }
            | LabelCondition::Bytes { name, .. }
            | LabelCondition::Ip { name, .. } => out.push(name.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MatchOp;

    #[test]
    fn a_condition_names_each_label_it_reads_once() {
        let c = LabelCondition::Or(
            Box::new(LabelCondition::String(
                Matcher::new("level", MatchOp::Eq, "error").unwrap(),
            )),
            Box::new(LabelCondition::And(
                Box::new(LabelCondition::Number {
                    name: "status".into(),
                    op: Comparison::Gte,
                    value: 500.0,
                }),
                Box::new(LabelCondition::Duration {
                    name: "level".into(),
                    op: Comparison::Lt,
                    value: 1,
                }),
            )),
        );
        assert_eq!(c.labels(), ["level", "status"]);
    }
}
