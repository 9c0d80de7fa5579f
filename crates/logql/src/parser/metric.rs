//! Metric queries: binary operators with PromQL precedence, range and
//! vector aggregations, `label_replace`, `vector()`, number literals,
//! groupings and binary-operator modifiers.

use super::{Node, Parser};
use crate::ast::{
    BinModifier, BinOp, GroupModifier, Grouping, RangeOp, SampleExpr, VectorMatching, VectorOp,
};
use crate::errors::ParseError;
use crate::lexer::{Sym, Tok};
use crate::validate::go_regex_error;

fn bin_op(t: &Tok) -> Option<(BinOp, u8)> {
    let Tok::Sym(s) = t else { return None };
    Some(match s {
        Sym::Or => (BinOp::Or, 1),
        Sym::And => (BinOp::And, 2),
        Sym::Unless => (BinOp::Unless, 2),
        Sym::CmpEq => (BinOp::Eq, 3),
        Sym::Neq => (BinOp::Neq, 3),
        Sym::Gt => (BinOp::Gt, 3),
        Sym::Gte => (BinOp::Gte, 3),
        Sym::Lt => (BinOp::Lt, 3),
        Sym::Lte => (BinOp::Lte, 3),
        Sym::Add => (BinOp::Add, 4),
        Sym::Sub => (BinOp::Sub, 4),
        Sym::Mul => (BinOp::Mul, 5),
        Sym::Div => (BinOp::Div, 5),
        Sym::Mod => (BinOp::Mod, 5),
        Sym::Pow => (BinOp::Pow, 6),
        _ => return None,
    })
}

impl Parser {
    /// An expression whose binary operators bind at least as tight as `min`.
    /// Each call is one nesting level, and so is each binary node wrapped
    /// around `lhs` (a left-associative chain nests as deep as it is long).
    pub(crate) fn expr(&mut self, min: u8) -> Result<Node, ParseError> {
        self.enter()?;
        let mut levels = 1;
        let mut lhs = self.primary()?;
        while let Some((op, prec)) = bin_op(self.tok()) {
            if prec < min {
                break;
            }
            self.enter()?;
            levels += 1;
            self.bump();
            let modifier = self.bin_modifier()?;
            let next_min = if op == BinOp::Pow { prec } else { prec + 1 };
            let rhs = self.expr(next_min)?;
            lhs = Node::Sample(new_binary(op, modifier, lhs, rhs)?);
        }
        self.leave(levels);
        Ok(lhs)
    }

    /// A metric expression where the grammar requires one.
    fn sample(&mut self) -> Result<SampleExpr, ParseError> {
        match self.expr(0)? {
            Node::Sample(s) => Ok(s),
            Node::Log(_) => Err(self.unexpected(&[])),
        }
    }

    fn primary(&mut self) -> Result<Node, ParseError> {
        match self.tok().clone() {
            Tok::Sym(Sym::LBrace) => Ok(Node::Log(self.log_expr()?)),
            Tok::Sym(Sym::LParen) => {
                self.bump();
                let inner = self.expr(0)?;
                self.expect(Sym::RParen, &[])?;
                Ok(match inner {
                    Node::Log(l) => Node::Log(l),
                    Node::Sample(s) => Node::Sample(SampleExpr::Paren(Box::new(s))),
                })
            }
            Tok::Number(_) | Tok::Sym(Sym::Add) | Tok::Sym(Sym::Sub) => {
                Ok(Node::Sample(SampleExpr::Literal(self.signed_number()?)))
            }
            Tok::RangeFn(op) => Ok(Node::Sample(self.range_aggregation(op)?)),
            Tok::VectorFn(op) => Ok(Node::Sample(self.vector_aggregation(op, false)?)),
            // Without query sharding Loki answers approx_topk exactly as topk.
            Tok::ApproxTopk => Ok(Node::Sample(self.vector_aggregation(VectorOp::Topk, true)?)),
            Tok::Vector => {
                self.bump();
                self.expect(Sym::LParen, &["("])?;
                let Tok::Number(n) = self.tok().clone() else {
                    return Err(self.unexpected(&["NUMBER"]));
                };
                self.bump();
                self.expect(Sym::RParen, &[")"])?;
                let v = parse_float(&n).map_err(|e| {
                    ParseError::plain(format!("unable to parse vectorExpr as a float: {e}"))
                })?;
                Ok(Node::Sample(SampleExpr::Vector(v)))
            }
            Tok::Sym(Sym::LabelReplace) => Ok(Node::Sample(self.label_replace()?)),
            Tok::Sym(Sym::Variants) => Err(ParseError::plain("variants are not supported")),
            _ => Err(self.unexpected(&[])),
        }
    }

    /// `NUMBER`, `+NUMBER` or `-NUMBER`.
    pub(crate) fn signed_number(&mut self) -> Result<f64, ParseError> {
        let mut neg = false;
        if self.is(Sym::Add) || self.is(Sym::Sub) {
            neg = self.is(Sym::Sub);
            self.bump();
        }
        let Tok::Number(n) = self.tok().clone() else {
            return Err(self.unexpected(&["NUMBER"]));
        };
        self.bump();
        let v = parse_float(&n)
            .map_err(|e| ParseError::plain(format!("unable to parse literal as a float: {e}")))?;
        Ok(if neg { -v } else { v })
    }

    fn range_aggregation(&mut self, op: RangeOp) -> Result<SampleExpr, ParseError> {
        self.bump();
        self.expect(Sym::LParen, &["("])?;
        let mut param = None;
        if let Tok::Number(n) = self.tok().clone() {
            self.bump();
            self.expect(Sym::Comma, &[","])?;
            param = Some(n);
        } else if !self.is(Sym::LBrace) && !self.is(Sym::LParen) {
            return Err(self.unexpected(&["NUMBER", "{", "("]));
        }
        let range = self.log_range()?;
        self.expect(Sym::RParen, &[")"])?;
        let grouping = self.grouping_opt()?;
        let name = op.as_str();
        let param = match param {
            Some(p) if op != RangeOp::QuantileOverTime => {
                return Err(ParseError::plain(format!(
                    "parameter {p} not supported for operation {name}"
                )))
            }
            Some(p) => Some(parse_float(&p).map_err(|e| {
                ParseError::plain(format!("invalid parameter for operation {name}: {e}"))
            })?),
            None if op == RangeOp::QuantileOverTime => {
                return Err(ParseError::plain(format!(
                    "parameter required for operation {name}"
                )))
            }
            None => None,
        };
        if grouping.is_some() && !op.allows_grouping() {
            return Err(ParseError::plain(format!(
                "grouping not allowed for {name} aggregation"
            )));
        }
        if range.unwrap.is_some() && !op.allows_unwrap() {
            return Err(ParseError::plain(format!(
                "invalid aggregation {name} with unwrap"
            )));
        }
        if range.unwrap.is_none() && !op.works_without_unwrap() {
            return Err(ParseError::plain(format!(
                "invalid aggregation {name} without unwrap"
            )));
        }
        Ok(SampleExpr::RangeAggregation {
            op,
            range: Box::new(range),
            param,
            grouping,
        })
    }

    fn vector_aggregation(&mut self, op: VectorOp, approx: bool) -> Result<SampleExpr, ParseError> {
        self.bump();
        let mut grouping = None;
        if self.is(Sym::By) || self.is(Sym::Without) {
            grouping = self.grouping_opt()?;
            self.expect(Sym::LParen, &["("])?;
        } else {
            self.expect(Sym::LParen, &["(", "by", "without"])?;
        }
        let mut param = None;
        if let (Tok::Number(n), Tok::Sym(Sym::Comma)) = (self.tok().clone(), self.tok2().clone()) {
            self.bump();
            self.bump();
            param = Some(n);
        }
        let inner = self.sample()?;
        self.expect(Sym::RParen, &[])?;
        if grouping.is_none() {
            grouping = self.grouping_opt()?;
        }
        let name = if approx { "approx_topk" } else { op.as_str() };
        let param = match op {
            VectorOp::Topk | VectorOp::Bottomk => {
                let Some(p) = param else {
                    return Err(ParseError::plain(format!(
                        "parameter required for operation {name}"
                    )));
                };
                let k: i64 = parse_go_int(&p)
                    .ok_or_else(|| ParseError::plain(format!("invalid parameter {name}({p},")))?;
                if k <= 0 {
                    return Err(ParseError::plain(format!(
                        "invalid parameter (must be greater than 0) {name}({p}"
                    )));
                }
                if approx && grouping.is_some() {
                    return Err(ParseError::plain(format!(
                        "grouping not allowed for {name} aggregation"
                    )));
                }
                Some(k as f64)
            }
            _ => {
                if let Some(p) = param {
                    return Err(ParseError::plain(format!(
                        "unsupported parameter for operation {name}({p},"
                    )));
                }
                None
            }
        };
        Ok(SampleExpr::VectorAggregation {
            op,
            expr: Box::new(inner),
            grouping,
            param,
        })
    }

    fn label_replace(&mut self) -> Result<SampleExpr, ParseError> {
        self.bump();
        self.expect(Sym::LParen, &["("])?;
        let inner = self.sample()?;
        let mut args = Vec::with_capacity(4);
        for _ in 0..4 {
            self.expect(Sym::Comma, &[","])?;
            args.push(self.expect_string(&["STRING"])?);
        }
        self.expect(Sym::RParen, &[")"])?;
        let regex = args.pop().unwrap_or_default();
        let src = args.pop().unwrap_or_default();
        let replacement = args.pop().unwrap_or_default();
        let dst = args.pop().unwrap_or_default();
        if let Some(e) = go_regex_error(&format!("^(?:{regex})$")) {
            return Err(ParseError::plain(format!(
                "invalid regex in label_replace: {e}"
            )));
        }
        Ok(SampleExpr::LabelReplace {
            expr: Box::new(inner),
            dst,
            replacement,
            src,
            regex,
        })
    }

    /// `by (..)` / `without (..)` if present.
    pub(crate) fn grouping_opt(&mut self) -> Result<Option<Grouping>, ParseError> {
        let without = match self.tok() {
            Tok::Sym(Sym::By) => false,
            Tok::Sym(Sym::Without) => true,
            _ => return Ok(None),
        };
        self.bump();
        self.expect(Sym::LParen, &["("])?;
        let labels = self.label_list()?;
        Ok(Some(Grouping { without, labels }))
    }

    /// `a, b )` or `)` after an opening parenthesis.
    fn label_list(&mut self) -> Result<Vec<String>, ParseError> {
        let mut labels = Vec::new();
        if self.is(Sym::RParen) {
            self.bump();
            return Ok(labels);
        }
        labels.push(self.expect_ident(&["IDENTIFIER", ")"])?);
        loop {
            if self.is(Sym::RParen) {
                self.bump();
                return Ok(labels);
            }
            self.expect(Sym::Comma, &[",", ")"])?;
            labels.push(self.expect_ident(&["IDENTIFIER"])?);
        }
    }

    fn bin_modifier(&mut self) -> Result<BinModifier, ParseError> {
        let mut m = BinModifier::default();
        if self.is(Sym::Bool) {
            self.bump();
            m.return_bool = true;
        }
        let on = match self.tok() {
            Tok::Sym(Sym::On) => true,
            Tok::Sym(Sym::Ignoring) => false,
            _ => return Ok(m),
        };
        self.bump();
        self.expect(Sym::LParen, &["("])?;
        m.matching = Some(VectorMatching {
            on,
            labels: self.label_list()?,
        });
        let left = match self.tok() {
            Tok::Sym(Sym::GroupLeft) => true,
            Tok::Sym(Sym::GroupRight) => false,
            _ => return Ok(m),
        };
        self.bump();
        let mut include = Vec::new();
        if self.is(Sym::LParen) {
            self.bump();
            include = self.label_list()?;
        }
        m.group = Some(GroupModifier { left, include });
        Ok(m)
    }
}

/// Go's `strconv.ParseFloat` on a NUMBER token (decimal forms).
pub(crate) fn parse_float(s: &str) -> Result<f64, String> {
    let ok = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        && !s.starts_with(['e', 'E']);
    match s.parse::<f64>() {
        Ok(v) if ok && v.is_infinite() => Err(format!(
            "strconv.ParseFloat: parsing {s:?}: value out of range"
        )),
        Ok(v) if ok => Ok(v),
        _ => Err(format!("strconv.ParseFloat: parsing {s:?}: invalid syntax")),
    }
}

/// Go's `strconv.Atoi` on a NUMBER token.
fn parse_go_int(s: &str) -> Option<i64> {
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn log_type_name(l: &crate::ast::LogExpr) -> &'static str {
    if l.pipeline.is_empty() {
        "*syntax.MatchersExpr"
    } else {
        "*syntax.PipelineExpr"
    }
}

/// The constant value of a literal-only expression, as Loki folds it.
fn literal_value(e: &SampleExpr) -> Option<f64> {
    match e {
        SampleExpr::Literal(v) => Some(*v),
        SampleExpr::Paren(x) => literal_value(x),
        SampleExpr::Binary { op, lhs, rhs, .. } => {
            let (a, b) = (literal_value(lhs)?, literal_value(rhs)?);
            Some(match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => a / b,
                BinOp::Mod => a % b,
                BinOp::Pow => a.powf(b),
                BinOp::Eq => f64::from(u8::from(a == b)),
                BinOp::Neq => f64::from(u8::from(a != b)),
                BinOp::Gt => f64::from(u8::from(a > b)),
                BinOp::Gte => f64::from(u8::from(a >= b)),
                BinOp::Lt => f64::from(u8::from(a < b)),
                BinOp::Lte => f64::from(u8::from(a <= b)),
                BinOp::And | BinOp::Or | BinOp::Unless => return None,
            })
        }
        _ => None,
    }
}

/// Loki's checks when it builds a binary operation.
fn new_binary(
    op: BinOp,
    modifier: BinModifier,
    lhs: Node,
    rhs: Node,
) -> Result<SampleExpr, ParseError> {
    let sym = op.as_str();
    let lhs = match lhs {
        Node::Sample(s) => s,
        Node::Log(l) => {
            return Err(ParseError::plain(format!(
                "unexpected type for left leg of binary operation ({sym}): {}",
                log_type_name(&l)
            )))
        }
    };
    let rhs = match rhs {
        Node::Sample(s) => s,
        Node::Log(l) => {
            return Err(ParseError::plain(format!(
                "unexpected type for right leg of binary operation ({sym}): {}",
                log_type_name(&l)
            )))
        }
    };
    if op.is_set_op() {
        if let Some(v) = literal_value(&lhs) {
            return Err(ParseError::plain(format!(
                "unexpected literal for left leg of logical/set binary operation ({sym}): {v:.6}"
            )));
        }
        if let Some(v) = literal_value(&rhs) {
            return Err(ParseError::plain(format!(
                "unexpected literal for right leg of logical/set binary operation ({sym}): {v:.6}"
            )));
        }
    }
    Ok(SampleExpr::Binary {
        op,
        lhs: Box::new(lhs),
        rhs: Box::new(rhs),
        modifier,
    })
}
