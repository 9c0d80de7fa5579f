//! The canonical printer: `Display` for every AST node, in Loki's
//! `String()` style (`{app="api"} |= "x" | json`,
//! `sum by (app)(rate({app="api"}[5m]))`), such that parsing the output gives
//! back the same AST. Strings are quoted Go-style.

use crate::ast::{
    BinModifier, Expr, Grouping, LabelExtraction, LabelFilterExpr, LabelFormatOp,
    LabelSelectorItem, LineFilter, LineFilterValue, LogExpr, LogRange, SampleExpr, Stage, Unwrap,
    UnwrapConversion, VectorOp,
};
use crate::duration::{format_bytes, format_duration};
use runakefli_model::labels::name_op_gap;
use std::fmt::{self, Display, Formatter};

/// Quotes a string as Go's `strconv.Quote` does (shared with the label printer).
pub fn quote(s: &str) -> String {
    runakefli_model::labels::quote_go(s)
}

/// A number as Go's `strconv.FormatFloat(v, 'f', -1, 64)`.
fn num(v: f64) -> String {
    if v == 0.0 && v.is_sign_negative() {
        // `-0` would lex as a (Go) duration.
        return "-0.0".to_string();
    }
    format!("{v}")
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Log(l) => l.fmt(f),
            Expr::Sample(s) => s.fmt(f),
        }
    }
}

impl Display for LogExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, m) in self.selector.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{m}")?;
        }
        f.write_str("}")?;
        for s in &self.pipeline {
            write!(f, " {s}")?;
        }
        Ok(())
    }
}

impl Display for LineFilter {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(self.op.as_str())?;
        for (i, v) in self.values.iter().enumerate() {
            f.write_str(if i == 0 { " " } else { " or " })?;
            match v {
                LineFilterValue::Str(s) => f.write_str(&quote(s))?,
                LineFilterValue::Ip(s) => write!(f, "ip({})", quote(s))?,
            }
        }
        Ok(())
    }
}

fn extractions(f: &mut Formatter<'_>, params: &[LabelExtraction]) -> fmt::Result {
    for (i, p) in params.iter().enumerate() {
        f.write_str(if i == 0 { " " } else { "," })?;
        f.write_str(&p.label)?;
        if let Some(e) = &p.expression {
            write!(f, "{}={}", name_op_gap(&p.label), quote(e))?;
        }
    }
    Ok(())
}

fn named(f: &mut Formatter<'_>, items: &[LabelSelectorItem]) -> fmt::Result {
    for (i, it) in items.iter().enumerate() {
        f.write_str(if i == 0 { " " } else { "," })?;
        match &it.matcher {
            Some(m) => write!(f, "{m}")?,
            None => f.write_str(&it.name)?,
        }
    }
    Ok(())
}

impl Display for Stage {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Stage::LineFilter(l) => l.fmt(f),
            Stage::Json(p) => {
                f.write_str("| json")?;
                extractions(f, p)
            }
            Stage::Logfmt {
                strict,
                keep_empty,
                params,
            } => {
                f.write_str("| logfmt")?;
                if *strict {
                    f.write_str(" --strict")?;
                }
                if *keep_empty {
                    f.write_str(" --keep-empty")?;
                }
                extractions(f, params)
            }
            Stage::Regexp(r) => write!(f, "| regexp {}", quote(r)),
            Stage::Pattern(p) => write!(f, "| pattern {}", quote(p)),
            Stage::Unpack => f.write_str("| unpack"),
            Stage::LabelFilter(l) => write!(f, "| {l}"),
            Stage::LineFormat(t) => write!(f, "| line_format {}", quote(t)),
            Stage::LabelFormat(ops) => {
                f.write_str("| label_format")?;
                for (i, op) in ops.iter().enumerate() {
                    f.write_str(if i == 0 { " " } else { "," })?;
                    match op {
                        LabelFormatOp::Rename { dst, src } => {
                            write!(f, "{dst}{}={src}", name_op_gap(dst))?
                        }
                        LabelFormatOp::Template { dst, template } => {
                            write!(f, "{dst}{}={}", name_op_gap(dst), quote(template))?
                        }
                    }
                }
                Ok(())
            }
            Stage::Decolorize => f.write_str("| decolorize"),
            Stage::Drop(items) => {
                f.write_str("| drop")?;
                named(f, items)
            }
            Stage::Keep(items) => {
                f.write_str("| keep")?;
                named(f, items)
            }
            Stage::Distinct(labels) => write!(f, "| distinct {}", labels.join(",")),
        }
    }
}

/// What follows a label filter at its nesting level.
#[derive(Clone, Copy, PartialEq)]
enum Follow {
    Nothing,
    Op,
}

fn is_leaf(e: &LabelFilterExpr) -> bool {
    !matches!(e, LabelFilterExpr::And(..) | LabelFilterExpr::Or(..))
}

/// Prints `e` so that the label-filter parser, reading it at minimum
/// precedence `min` (0 at the top, 2 right of `or`, 3 right of `and`) with
/// `follow` after it, rebuilds the same tree. A comma takes everything to its
/// right and binds only the primary before it; `and`/`or` are left-assoc.
fn write_lf(f: &mut Formatter<'_>, e: &LabelFilterExpr, min: u8, follow: Follow) -> fmt::Result {
    match e {
        LabelFilterExpr::Or(l, r) => {
            write_lf(f, l, min, Follow::Op)?;
            f.write_str(" or ")?;
            write_lf(f, r, 2, follow)
        }
        LabelFilterExpr::And(l, r) => {
            let comma = if min >= 3 {
                is_leaf(l)
            } else {
                is_leaf(l) && !is_leaf(r) && follow == Follow::Nothing
            };
            if comma {
                write_lf(f, l, 3, Follow::Op)?;
                f.write_str(", ")?;
                write_lf(f, r, 0, follow)
            } else {
                write_lf(f, l, min, Follow::Op)?;
                f.write_str(" and ")?;
                write_lf(f, r, 3, follow)
            }
        }
        LabelFilterExpr::Paren(x) => {
            f.write_str("(")?;
            write_lf(f, x, 0, Follow::Nothing)?;
            f.write_str(")")
        }
        LabelFilterExpr::String(m) => write!(f, "{m}"),
        LabelFilterExpr::Number { name, op, value } => {
            write!(
                f,
                "{name}{}{}{}",
                name_op_gap(name),
                op.as_str(),
                num(*value)
            )
        }
        LabelFilterExpr::Duration { name, op, value } => {
            write!(
                f,
                "{name}{}{}{}",
                name_op_gap(name),
                op.as_str(),
                format_duration(*value)
            )
        }
        LabelFilterExpr::Bytes { name, op, value } => {
            write!(
                f,
                "{name}{}{}{}",
                name_op_gap(name),
                op.as_str(),
                format_bytes(*value)
            )
        }
        LabelFilterExpr::Ip {
            name,
            negated,
            pattern,
        } => {
            write!(
                f,
                "{name}{}{}ip({})",
                name_op_gap(name),
                if *negated { "!=" } else { "=" },
                quote(pattern)
            )
        }
    }
}

impl Display for LabelFilterExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_lf(f, self, 0, Follow::Nothing)
    }
}

impl Display for Unwrap {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.conversion {
            UnwrapConversion::None => write!(f, "| unwrap {}", self.label)?,
            UnwrapConversion::Bytes => write!(f, "| unwrap bytes({})", self.label)?,
            UnwrapConversion::Duration => write!(f, "| unwrap duration({})", self.label)?,
        }
        for p in &self.post_filters {
            write!(f, " | {p}")?;
        }
        Ok(())
    }
}

impl Display for LogRange {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.log.fmt(f)?;
        if let Some(u) = &self.unwrap {
            write!(f, " {u}")?;
        }
        write!(f, "[{}]", format_duration(self.range))?;
        if self.offset != 0 {
            write!(f, " offset {}", format_duration(self.offset))?;
        }
        Ok(())
    }
}

impl Display for Grouping {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            " {} ({})",
            if self.without { "without" } else { "by" },
            self.labels.join(",")
        )
    }
}

impl Display for BinModifier {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.return_bool {
            f.write_str(" bool")?;
        }
        if let Some(m) = &self.matching {
            write!(
                f,
                " {} ({})",
                if m.on { "on" } else { "ignoring" },
                m.labels.join(",")
            )?;
        }
        if let Some(g) = &self.group {
            f.write_str(if g.left {
                " group_left"
            } else {
                " group_right"
            })?;
            // Always parenthesised: a bare `group_left` before `(expr)` would
            // read the expression as its label list.
            write!(f, " ({})", g.include.join(","))?;
        }
        Ok(())
    }
}

impl Display for SampleExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            SampleExpr::RangeAggregation {
                op,
                range,
                param,
                grouping,
            } => {
                write!(f, "{}(", op.as_str())?;
                if let Some(p) = param {
                    write!(f, "{},", num(*p))?;
                }
                write!(f, "{range})")?;
                if let Some(g) = grouping {
                    g.fmt(f)?;
                }
                Ok(())
            }
            SampleExpr::VectorAggregation {
                op,
                expr,
                grouping,
                param,
            } => {
                f.write_str(op.as_str())?;
                if let Some(g) = grouping {
                    g.fmt(f)?;
                }
                f.write_str("(")?;
                if let Some(p) = param {
                    if matches!(op, VectorOp::Topk | VectorOp::Bottomk) && p.fract() == 0.0 {
                        write!(f, "{},", *p as i64)?;
                    } else {
                        write!(f, "{},", num(*p))?;
                    }
                }
                write!(f, "{expr})")
            }
            SampleExpr::Binary {
                op,
                lhs,
                rhs,
                modifier,
            } => {
                write!(f, "{lhs} {}{modifier} {rhs}", op.as_str())
            }
            SampleExpr::Literal(v) => f.write_str(&num(*v)),
            SampleExpr::Vector(v) => write!(f, "vector({})", num(*v)),
            SampleExpr::LabelReplace {
                expr,
                dst,
                replacement,
                src,
                regex,
            } => write!(
                f,
                "label_replace({expr},{},{},{},{})",
                quote(dst),
                quote(replacement),
                quote(src),
                quote(regex)
            ),
            SampleExpr::Paren(e) => write!(f, "({e})"),
        }
    }
}
