//! Convenience methods on the AST for the engine and the server: operator
//! spellings and properties, and walks that collect selectors and ranges.

use crate::ast::{
    BinOp, CmpOp, Expr, LineFilterOp, LogExpr, LogRange, RangeOp, SampleExpr, VectorOp,
};
use runakefli_model::Matcher;

impl RangeOp {
    /// The function name, e.g. `count_over_time`.
    pub fn as_str(self) -> &'static str {
        match self {
            RangeOp::CountOverTime => "count_over_time",
            RangeOp::Rate => "rate",
            RangeOp::RateCounter => "rate_counter",
            RangeOp::BytesOverTime => "bytes_over_time",
            RangeOp::BytesRate => "bytes_rate",
            RangeOp::AbsentOverTime => "absent_over_time",
            RangeOp::SumOverTime => "sum_over_time",
            RangeOp::AvgOverTime => "avg_over_time",
            RangeOp::MinOverTime => "min_over_time",
            RangeOp::MaxOverTime => "max_over_time",
            RangeOp::StddevOverTime => "stddev_over_time",
            RangeOp::StdvarOverTime => "stdvar_over_time",
            RangeOp::QuantileOverTime => "quantile_over_time",
            RangeOp::FirstOverTime => "first_over_time",
            RangeOp::LastOverTime => "last_over_time",
        }
    }

    /// Whether `by`/`without` may follow the call (Loki: avg, stddev, stdvar,
    /// quantile, max, min, first, last).
    pub fn allows_grouping(self) -> bool {
        use RangeOp::*;
        matches!(
            self,
            AvgOverTime
                | StddevOverTime
                | StdvarOverTime
                | QuantileOverTime
                | MaxOverTime
                | MinOverTime
                | FirstOverTime
                | LastOverTime
        )
    }

    /// Whether the range may carry `| unwrap`.
    pub fn allows_unwrap(self) -> bool {
        use RangeOp::*;
        !matches!(self, CountOverTime | BytesOverTime | BytesRate)
    }

    /// Whether the function works on plain log lines (no unwrap).
    pub fn works_without_unwrap(self) -> bool {
        use RangeOp::*;
        matches!(
            self,
            BytesOverTime | BytesRate | CountOverTime | Rate | AbsentOverTime
        )
    }
}

impl VectorOp {
    /// The operator name, e.g. `topk`.
    pub fn as_str(self) -> &'static str {
        match self {
            VectorOp::Sum => "sum",
            VectorOp::Avg => "avg",
            VectorOp::Min => "min",
            VectorOp::Max => "max",
            VectorOp::Count => "count",
            VectorOp::Stddev => "stddev",
            VectorOp::Stdvar => "stdvar",
            VectorOp::Topk => "topk",
            VectorOp::Bottomk => "bottomk",
            VectorOp::Sort => "sort",
            VectorOp::SortDesc => "sort_desc",
        }
    }
}

impl BinOp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Pow => "^",
            BinOp::Eq => "==",
            BinOp::Neq => "!=",
            BinOp::Gt => ">",
            BinOp::Gte => ">=",
            BinOp::Lt => "<",
            BinOp::Lte => "<=",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Unless => "unless",
        }
    }

    /// `==`, `!=`, `>`, `>=`, `<`, `<=`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Neq | BinOp::Gt | BinOp::Gte | BinOp::Lt | BinOp::Lte
        )
    }

    /// `and`, `or`, `unless`.
    pub fn is_set_op(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or | BinOp::Unless)
    }
}

impl CmpOp {
    /// The comparison as Loki prints it in label filters (`==` for equality).
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Neq => "!=",
            CmpOp::Gt => ">",
            CmpOp::Gte => ">=",
            CmpOp::Lt => "<",
            CmpOp::Lte => "<=",
        }
    }
}

impl LineFilterOp {
    /// The filter operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            LineFilterOp::Contains => "|=",
            LineFilterOp::NotContains => "!=",
            LineFilterOp::Match => "|~",
            LineFilterOp::NotMatch => "!~",
            LineFilterOp::Pattern => "|>",
            LineFilterOp::NotPattern => "!>",
        }
    }

    /// True for the negated filters (`!=`, `!~`, `!>`).
    pub fn is_negated(self) -> bool {
        matches!(
            self,
            LineFilterOp::NotContains | LineFilterOp::NotMatch | LineFilterOp::NotPattern
        )
    }
}

impl Expr {
    /// Every log expression of the query, left to right (one for a log
    /// query, one per range aggregation for a metric query).
    pub fn log_exprs(&self) -> Vec<&LogExpr> {
        match self {
            Expr::Log(l) => vec![l],
            Expr::Sample(s) => s.log_ranges().into_iter().map(|r| &r.log).collect(),
        }
    }

    /// The stream selectors of the query, left to right.
    pub fn selector_matchers(&self) -> Vec<&[Matcher]> {
        self.log_exprs()
            .into_iter()
            .map(|l| l.selector.as_slice())
            .collect()
    }

    /// True for a log (stream) query.
    pub fn is_log(&self) -> bool {
        matches!(self, Expr::Log(_))
    }
}

impl SampleExpr {
    /// Every log range aggregated by this expression, left to right.
    pub fn log_ranges(&self) -> Vec<&LogRange> {
        let mut out = Vec::new();
        self.collect_ranges(&mut out);
        out
    }

    fn collect_ranges<'a>(&'a self, out: &mut Vec<&'a LogRange>) {
        match self {
            SampleExpr::RangeAggregation { range, .. } => out.push(range),
            SampleExpr::VectorAggregation { expr, .. }
            | SampleExpr::LabelReplace { expr, .. }
            | SampleExpr::Paren(expr) => expr.collect_ranges(out),
            SampleExpr::Binary { lhs, rhs, .. } => {
                lhs.collect_ranges(out);
                rhs.collect_ranges(out);
            }
            SampleExpr::Literal(_) | SampleExpr::Vector(_) => {}
        }
    }

    /// The expression without enclosing parentheses.
    pub fn unparen(&self) -> &SampleExpr {
        match self {
            SampleExpr::Paren(e) => e.unparen(),
            e => e,
        }
    }

    /// Whether the expression uses no log data (literals, `vector()` and
    /// operations on them only).
    pub fn is_constant(&self) -> bool {
        self.log_ranges().is_empty()
    }
}

impl LogExpr {
    /// Whether any stage can drop lines (line or label filters).
    pub fn has_filter(&self) -> bool {
        self.pipeline.iter().any(|s| {
            matches!(
                s,
                crate::ast::Stage::LineFilter(_) | crate::ast::Stage::LabelFilter(_)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::parse_expr;

    #[test]
    fn collects_selectors() {
        let e = parse_expr(r#"sum(rate({a="b"}[1m])) / sum(rate({c="d"} |= "x"[1m]))"#).unwrap();
        let m = e.selector_matchers();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0][0].name, "a");
        assert_eq!(m[1][0].name, "c");
        assert!(!e.is_log());
        assert!(parse_expr(r#"{a="b"} |= "x""#).unwrap().log_exprs()[0].has_filter());
    }
}
