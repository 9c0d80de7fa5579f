//! Label filter expressions: `a="b"`, `n > 5`, `d >= 1m`, `s < 10MB`,
//! `ip = ip("10.0.0.0/8")`, combined with `and`, `or`, `,`, juxtaposition and
//! parentheses.
//!
//! Precedence follows Loki's grammar: `and` binds tighter than `or`, both
//! left-associative; `,` and juxtaposition have no precedence there, so they
//! always extend to the right (`a, b or c` is `a and (b or c)`).

use super::Parser;
use crate::ast::{CmpOp, LabelFilterExpr};
use crate::errors::ParseError;
use crate::lexer::{Sym, Tok};
use crate::parser::log::new_matcher;
use runakefli_model::MatchOp;

impl Parser {
    /// A whole label filter expression. `first` lists what the error names
    /// when the first token cannot start a filter.
    pub(crate) fn label_filter(&mut self, first: &[&str]) -> Result<LabelFilterExpr, ParseError> {
        self.lf_expr(0, first)
    }

    /// Each call is one nesting level, and so is each `and`/`or` node
    /// wrapped around `lhs`.
    fn lf_expr(&mut self, min: u8, first: &[&str]) -> Result<LabelFilterExpr, ParseError> {
        self.enter()?;
        let mut levels = 1;
        let mut lhs = self.lf_primary(first)?;
        let out = loop {
            let prec = match self.tok() {
                Tok::Sym(Sym::And) => 2,
                Tok::Sym(Sym::Or) => 1,
                Tok::Sym(Sym::Comma) => {
                    self.bump();
                    let rhs = self.lf_expr(0, &["IDENTIFIER", "("])?;
                    break LabelFilterExpr::And(Box::new(lhs), Box::new(rhs));
                }
                Tok::Ident(_) | Tok::Sym(Sym::LParen) => {
                    let rhs = self.lf_expr(0, &[])?;
                    break LabelFilterExpr::And(Box::new(lhs), Box::new(rhs));
                }
                _ => break lhs,
            };
            if prec < min {
                break lhs;
            }
            self.enter()?;
            levels += 1;
            self.bump();
            let rhs = self.lf_expr(prec + 1, &["IDENTIFIER", "("])?;
            lhs = if prec == 2 {
                LabelFilterExpr::And(Box::new(lhs), Box::new(rhs))
            } else {
                LabelFilterExpr::Or(Box::new(lhs), Box::new(rhs))
            };
        };
        self.leave(levels);
        Ok(out)
    }

    fn lf_primary(&mut self, first: &[&str]) -> Result<LabelFilterExpr, ParseError> {
        if self.is(Sym::LParen) {
            self.bump();
            let inner = self.lf_expr(0, &["IDENTIFIER", "("])?;
            self.expect(Sym::RParen, &[])?;
            return Ok(LabelFilterExpr::Paren(Box::new(inner)));
        }
        let name = self.expect_ident(first)?;
        let op_tok = self.tok().clone();
        let Tok::Sym(op) = op_tok else {
            return Err(self.unexpected(&[]));
        };
        let cmp = match op {
            Sym::Eq => CmpOp::Eq,
            Sym::Neq => CmpOp::Neq,
            Sym::Re | Sym::Nre => {
                self.bump();
                let value = self.expect_string(&["STRING"])?;
                let mop = if op == Sym::Re {
                    MatchOp::Re
                } else {
                    MatchOp::Nre
                };
                return Ok(LabelFilterExpr::String(new_matcher(name, mop, value)?));
            }
            Sym::CmpEq => CmpOp::Eq,
            Sym::Gt => CmpOp::Gt,
            Sym::Gte => CmpOp::Gte,
            Sym::Lt => CmpOp::Lt,
            Sym::Lte => CmpOp::Lte,
            _ => return Err(self.unexpected(&[])),
        };
        self.bump();
        let eq_or_neq = matches!(op, Sym::Eq | Sym::Neq);
        match self.tok().clone() {
            Tok::Str(value) if eq_or_neq => {
                self.bump();
                let mop = if op == Sym::Eq {
                    MatchOp::Eq
                } else {
                    MatchOp::Neq
                };
                Ok(LabelFilterExpr::String(new_matcher(name, mop, value)?))
            }
            Tok::Sym(Sym::Ip) if eq_or_neq => {
                let pattern = self.ip_call()?;
                Ok(LabelFilterExpr::Ip {
                    name,
                    negated: op == Sym::Neq,
                    pattern,
                })
            }
            Tok::Duration(value) => {
                self.bump();
                Ok(LabelFilterExpr::Duration {
                    name,
                    op: cmp,
                    value,
                })
            }
            Tok::Bytes(value) => {
                self.bump();
                Ok(LabelFilterExpr::Bytes {
                    name,
                    op: cmp,
                    value,
                })
            }
            Tok::Number(_) | Tok::Sym(Sym::Add) | Tok::Sym(Sym::Sub) => {
                let value = self.signed_number()?;
                Ok(LabelFilterExpr::Number {
                    name,
                    op: cmp,
                    value,
                })
            }
            _ => Err(self.unexpected(&[])),
        }
    }
}
