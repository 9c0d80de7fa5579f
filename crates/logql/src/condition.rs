//! A parsed label filter ([`LabelFilterExpr`]) as the query plan's data
//! ([`LabelCondition`]), which backends compiling filters themselves read.

use crate::{CmpOp, LabelFilterExpr};
use runakefli_model::label_condition::{Comparison, LabelCondition};

impl From<CmpOp> for Comparison {
    fn from(op: CmpOp) -> Self {
        match op {
            CmpOp::Eq => Comparison::Eq,
            CmpOp::Neq => Comparison::Neq,
            CmpOp::Gt => Comparison::Gt,
            CmpOp::Gte => Comparison::Gte,
            CmpOp::Lt => Comparison::Lt,
            CmpOp::Lte => Comparison::Lte,
        }
    }
}

impl From<&LabelFilterExpr> for LabelCondition {
    /// The same condition; parentheses (kept in the syntax tree for the
    /// printer) are the tree's shape.
    fn from(e: &LabelFilterExpr) -> Self {
        let both = |a: &LabelFilterExpr, b: &LabelFilterExpr| {
            (Box::new(Self::from(a)), Box::new(Self::from(b)))
        };
        match e {
            LabelFilterExpr::And(a, b) => {
                let (a, b) = both(a, b);
                LabelCondition::And(a, b)
            }
            LabelFilterExpr::Or(a, b) => {
                let (a, b) = both(a, b);
                LabelCondition::Or(a, b)
            }
            LabelFilterExpr::Paren(a) => Self::from(&**a),
            LabelFilterExpr::String(m) => LabelCondition::String(m.clone()),
            LabelFilterExpr::Number { name, op, value } => LabelCondition::Number {
                name: name.clone(),
                op: (*op).into(),
                value: *value,
            },
            LabelFilterExpr::Duration { name, op, value } => LabelCondition::Duration {
                name: name.clone(),
                op: (*op).into(),
                value: *value,
            },
            LabelFilterExpr::Bytes { name, op, value } => LabelCondition::Bytes {
                name: name.clone(),
                op: (*op).into(),
                value: *value,
            },
            LabelFilterExpr::Ip {
                name,
                negated,
                pattern,
            } => LabelCondition::Ip {
                name: name.clone(),
                negated: *negated,
                pattern: pattern.clone(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_expr, Expr, Stage};

    fn condition(filter: &str) -> LabelCondition {
        let Ok(Expr::Log(log)) = parse_expr(&format!("{{a=\"b\"}} | {filter}")) else {
            panic!("{filter}")
        };
        let [Stage::LabelFilter(e)] = log.pipeline.as_slice() else {
            panic!("{filter}")
        };
        LabelCondition::from(e)
    }

    #[test]
    fn filters_become_data_with_parentheses_as_shape() {
        let c = condition(r#"(level="error" or status >= 500) and latency > 2s"#);
        let LabelCondition::And(left, right) = c else {
            panic!("{c:?}")
        };
        assert!(matches!(*left, LabelCondition::Or(..)), "{left:?}");
        assert_eq!(
            *right,
            LabelCondition::Duration {
                name: "latency".into(),
                op: Comparison::Gt,
                value: 2_000_000_000,
            }
        );
        assert_eq!(
            condition("size <= 1KB"),
            LabelCondition::Bytes {
                name: "size".into(),
                op: Comparison::Lte,
                value: 1000,
            }
        );
        assert_eq!(
            condition(r#"addr != ip("10.0.0.0/8")"#),
            LabelCondition::Ip {
                name: "addr".into(),
                negated: true,
                pattern: "10.0.0.0/8".into(),
            }
        );
        assert_eq!(
            condition("x == 1.5").labels(),
            ["x"],
            "{:?}",
            condition("x == 1.5")
        );
    }
}
