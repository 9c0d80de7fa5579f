//! The LogQL parser: recursive descent over the tokens of [`crate::lexer`],
//! with PromQL operator precedence, producing [`crate::ast`] nodes.
//!
//! Syntax errors are worded as Loki's goyacc parser words them
//! (`syntax error: unexpected X, expecting A or B`), naming at most four
//! expected tokens and only where Loki's parser state would list them.
//! Checks Loki makes while building nodes (parameters, unwrap, grouping,
//! operand types, regular expressions) happen here too; checks Loki makes
//! after parsing are in [`crate::validate`].

mod label_filter;
mod log;
mod metric;

use crate::ast::{Expr, LogExpr};
use crate::errors::ParseError;
use crate::lexer::{tokenize, Sym, Tok, Token};
use crate::validate;
use runakefli_model::Matcher;

/// Loki refuses queries of this many bytes or more.
pub const MAX_INPUT_SIZE: usize = 5120;

/// Parses and validates a whole LogQL query, log or metric.
pub fn parse_expr(input: &str) -> Result<Expr, ParseError> {
    let expr = parse_expr_unvalidated(input)?;
    validate::validate_expr(&expr)?;
    Ok(expr)
}

/// Parses a query without the post-parse validation (empty-compatible
/// selectors, pipeline stages).
pub fn parse_expr_unvalidated(input: &str) -> Result<Expr, ParseError> {
    if input.len() >= MAX_INPUT_SIZE {
        return Err(ParseError::plain(format!(
            "input size too long ({} > {})",
            input.len(),
            MAX_INPUT_SIZE
        )));
    }
    let mut p = Parser::new(input);
    let node = p.expr(0)?;
    if !matches!(p.tok(), Tok::Eof) {
        return Err(p.unexpected(&[]));
    }
    Ok(match node {
        Node::Log(l) => Expr::Log(l),
        Node::Sample(s) => Expr::Sample(s),
    })
}

/// Parses a log query (`{app="x"} |= "y"`), validated; a metric query is an
/// error.
pub fn parse_log_selector(input: &str) -> Result<LogExpr, ParseError> {
    match parse_expr(input)? {
        Expr::Log(l) => Ok(l),
        Expr::Sample(_) => Err(ParseError::Unsupported(
            "only log selector is supported".into(),
        )),
    }
}

/// Parses a bare stream selector (`{a="b", c=~"d"}`) as the `match[]` of
/// the series API and the `query` of the labels API take it; anything more
/// is `only label matchers are supported`.
pub fn parse_matchers(input: &str) -> Result<Vec<Matcher>, ParseError> {
    match parse_expr(input)? {
        Expr::Log(l) if l.pipeline.is_empty() => Ok(l.selector),
        _ => Err(ParseError::Unsupported(
            "only label matchers are supported".into(),
        )),
    }
}

/// What an expression parsed to before its context decides.
#[derive(Debug)]
pub(crate) enum Node {
    Log(LogExpr),
    Sample(crate::ast::SampleExpr),
}

pub(crate) struct Parser {
    toks: Vec<Token>,
    i: usize,
}

impl Parser {
    fn new(input: &str) -> Self {
        Parser {
            toks: tokenize(input),
            i: 0,
        }
    }

    fn token(&self, k: usize) -> &Token {
        let j = (self.i + k).min(self.toks.len() - 1);
        &self.toks[j]
    }

    pub(crate) fn tok(&self) -> &Tok {
        &self.token(0).tok
    }

    pub(crate) fn tok2(&self) -> &Tok {
        &self.token(1).tok
    }

    pub(crate) fn is(&self, s: Sym) -> bool {
        matches!(self.tok(), Tok::Sym(x) if *x == s)
    }

    pub(crate) fn bump(&mut self) -> Tok {
        let t = self.tok().clone();
        if self.i < self.toks.len() - 1 {
            self.i += 1;
        }
        t
    }

    /// The syntax error for the current token; `expected` is listed when it
    /// has one to four entries, as goyacc does.
    pub(crate) fn unexpected(&self, expected: &[&str]) -> ParseError {
        let t = self.token(0);
        if let Tok::Error(e) = &t.tok {
            return e.clone();
        }
        let mut msg = format!("syntax error: unexpected {}", t.tok.name());
        if !expected.is_empty() && expected.len() <= 4 {
            msg.push_str(", expecting ");
            msg.push_str(&expected.join(" or "));
        }
        ParseError::at(t.line, t.col, msg)
    }

    /// Consumes `s` or fails listing `expected`.
    pub(crate) fn expect(&mut self, s: Sym, expected: &[&str]) -> Result<(), ParseError> {
        if self.is(s) {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    pub(crate) fn expect_ident(&mut self, expected: &[&str]) -> Result<String, ParseError> {
        match self.tok() {
            Tok::Ident(s) => {
                let s = s.clone();
                self.bump();
                Ok(s)
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    pub(crate) fn expect_string(&mut self, expected: &[&str]) -> Result<String, ParseError> {
        match self.tok() {
            Tok::Str(s) => {
                let s = s.clone();
                self.bump();
                Ok(s)
            }
            _ => Err(self.unexpected(expected)),
        }
    }
}

#[cfg(test)]
mod tests;
