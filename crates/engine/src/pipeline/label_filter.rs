//! Label filter expressions: string matchers, numbers, durations, byte sizes
//! and IPs, combined with `and` / `or`; conversion failures set
//! `__error__="LabelFilterErr"` and keep the entry, as Loki does.

use super::convert::{loki_bytes_round_trip, parse_bytes, parse_duration, parse_float};
use super::ip::IpMatcher;
use super::labels::LabelsBuilder;
use runakefli_logql::{CmpOp, LabelFilterExpr};
use runakefli_model::Matcher;

/// Error name set when a label cannot be converted for a comparison.
pub const ERR_LABEL_FILTER: &str = "LabelFilterErr";

/// A compiled label filter.
#[derive(Debug)]
pub enum LabelFilter {
    /// Both must hold (the right side always runs).
    And(Box<LabelFilter>, Box<LabelFilter>),
    /// Either holds (the right side runs only when the left fails).
    Or(Box<LabelFilter>, Box<LabelFilter>),
    /// `name op "value"`.
    String(Matcher),
    /// `name cmp number`.
    Number(String, CmpOp, f64),
    /// `name cmp duration`.
    Duration(String, CmpOp, i64),
    /// `name cmp bytes`.
    Bytes(String, CmpOp, u64),
    /// `name (=|!=) ip("…")`; `None` for a pattern Loki cannot read inside
    /// `and`/`or` (a whole stage with one is a parse error), which matches
    /// nothing.
    Ip(String, bool, Option<IpMatcher>),
}

fn cmp<T: PartialOrd>(op: CmpOp, a: T, b: T) -> bool {
    match op {
        CmpOp::Eq => a == b,
        CmpOp::Neq => a != b,
        CmpOp::Gt => a > b,
        CmpOp::Gte => a >= b,
        CmpOp::Lt => a < b,
        CmpOp::Lte => a <= b,
    }
}

impl LabelFilter {
    /// Compiles an AST filter.
    pub fn new(e: &LabelFilterExpr) -> Result<Self, String> {
        Ok(match e {
            LabelFilterExpr::And(a, b) => {
                LabelFilter::And(Box::new(Self::new(a)?), Box::new(Self::new(b)?))
            }
            LabelFilterExpr::Or(a, b) => {
                LabelFilter::Or(Box::new(Self::new(a)?), Box::new(Self::new(b)?))
            }
            LabelFilterExpr::Paren(a) => Self::new(a)?,
            LabelFilterExpr::String(m) => LabelFilter::String(m.clone()),
            LabelFilterExpr::Number { name, op, value } => {
                LabelFilter::Number(name.clone(), *op, *value)
            }
            LabelFilterExpr::Duration { name, op, value } => {
                LabelFilter::Duration(name.clone(), *op, *value)
            }
            // Loki compares with the size as its query text prints it.
            LabelFilterExpr::Bytes { name, op, value } => {
                LabelFilter::Bytes(name.clone(), *op, loki_bytes_round_trip(*value))
            }
            LabelFilterExpr::Ip {
                name,
                negated,
                pattern,
            } => LabelFilter::Ip(name.clone(), *negated, IpMatcher::new(pattern).ok()),
        })
    }

    /// True when the entry passes; may set error labels.
    pub fn keep(&self, lbs: &mut LabelsBuilder) -> bool {
        match self {
            LabelFilter::And(a, b) => {
                let l = a.keep(lbs);
                let r = b.keep(lbs);
                l && r
            }
            LabelFilter::Or(a, b) => a.keep(lbs) || b.keep(lbs),
            LabelFilter::String(m) => m.matches(lbs.get(&m.name).unwrap_or("")),
            LabelFilter::Number(name, op, v) => {
                Self::convert(lbs, name, parse_float, |x| cmp(*op, x, *v))
            }
            LabelFilter::Duration(name, op, v) => {
                Self::convert(lbs, name, parse_duration, |x| cmp(*op, x, *v))
            }
            LabelFilter::Bytes(name, op, v) => {
                Self::convert(lbs, name, parse_bytes, |x| cmp(*op, x, *v))
            }
            LabelFilter::Ip(name, negated, m) => {
                if lbs.has_err() {
                    return true;
                }
                match (lbs.get(name), m) {
                    (Some(v), Some(m)) => m.matches_line(v) != *negated,
                    _ => false,
                }
            }
        }
    }

    fn convert<T>(
        lbs: &mut LabelsBuilder,
        name: &str,
        parse: fn(&str) -> Result<T, String>,
        test: impl FnOnce(T) -> bool,
    ) -> bool {
        let Some(v) = lbs.get(name) else { return false };
        match parse(v) {
            Ok(x) => test(x),
            Err(e) => {
                // An earlier error is kept: it is likely the more useful one.
                if !lbs.has_err() {
                    lbs.set_err(ERR_LABEL_FILTER);
                    lbs.set_err_details(&e);
                }
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labelset::LabelSet;
    use runakefli_model::MatchOp;

    #[test]
    fn numbers_errors_and_logic() {
        let base = LabelSet::new(vec![("s".into(), "500".into()), ("d".into(), "n/a".into())]);
        let mut b = LabelsBuilder::default();
        b.reset(&base, &[]);
        assert!(LabelFilter::Number("s".into(), CmpOp::Gt, 499.0).keep(&mut b));
        assert!(!LabelFilter::Number("missing".into(), CmpOp::Gt, 1.0).keep(&mut b));
        let or = LabelFilter::Or(
            Box::new(LabelFilter::String(
                Matcher::new("s", MatchOp::Eq, "1").unwrap(),
            )),
            Box::new(LabelFilter::String(
                Matcher::new("s", MatchOp::Re, "5.*").unwrap(),
            )),
        );
        assert!(or.keep(&mut b));
        assert!(LabelFilter::Number("d".into(), CmpOp::Gt, 1.0).keep(&mut b));
        assert_eq!(b.get("__error__"), Some(ERR_LABEL_FILTER));
    }
}
