//! The LogQL parser: recursive descent over the tokens of [`crate::lexer`],
//! with PromQL operator precedence, producing [`crate::ast`] nodes.
//!
//! Syntax errors are worded as Loki's goyacc parser words them
//! (`syntax error: unexpected X, expecting A or B`), naming at most four
//! expected tokens and only where Loki's parser state would list them.
//! Checks Loki makes while building nodes (parameters, unwrap, grouping,
//! operand types, regular expressions) happen here too; checks Loki makes
//! after parsing are in [`crate::validate`].
//!
//! Every parse runs under [`ParseLimits`]: the input length Loki allows, and
//! a nesting depth. The depth counts every construct that nests in the AST
//! (parentheses, binary operators, aggregations, label filter combinators,
//! parenthesised log ranges), so a query the parser accepts can be walked
//! recursively — validated, printed, compiled, evaluated, dropped — on a
//! small thread stack; deeper queries are refused before they can overflow it.

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

/// Default deepest nesting a query may have. Real queries (Grafana's, the
/// Loki conformance corpus) stay under 20 levels; 128 leaves room for
/// generated label-filter chains (`a="1" or a="2" or …`) while every recursive
/// walk over an accepted AST stays far inside a 2 MiB stack, even unoptimised.
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// Limits one parse runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseLimits {
    /// Queries of this many bytes or more are refused, as Loki refuses them
    /// (`input size too long (N > max)`); Loki's own value is [`MAX_INPUT_SIZE`].
    pub max_bytes: usize,
    /// Deepest nesting accepted (see the module documentation for what counts).
    pub max_depth: usize,
}

impl Default for ParseLimits {
    /// Loki's input size and [`DEFAULT_MAX_DEPTH`].
    fn default() -> Self {
        ParseLimits {
            max_bytes: MAX_INPUT_SIZE,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

/// Parses and validates a whole LogQL query, log or metric, under the
/// default [`ParseLimits`].
pub fn parse_expr(input: &str) -> Result<Expr, ParseError> {
    parse_expr_with(input, &ParseLimits::default())
}

/// Parses and validates a whole LogQL query under `limits`.
pub fn parse_expr_with(input: &str, limits: &ParseLimits) -> Result<Expr, ParseError> {
    let expr = parse_unvalidated(input, limits)?;
    validate::validate_expr(&expr)?;
    Ok(expr)
}

/// Parses a query without the post-parse validation (empty-compatible
/// selectors, pipeline stages), under the default [`ParseLimits`].
pub fn parse_expr_unvalidated(input: &str) -> Result<Expr, ParseError> {
    parse_unvalidated(input, &ParseLimits::default())
}

fn parse_unvalidated(input: &str, limits: &ParseLimits) -> Result<Expr, ParseError> {
    if input.len() >= limits.max_bytes {
        return Err(ParseError::plain(format!(
            "input size too long ({} > {})",
            input.len(),
            limits.max_bytes
        )));
    }
    let mut p = Parser::new(input, limits.max_depth);
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
    parse_log_selector_with(input, &ParseLimits::default())
}

/// [`parse_log_selector`] under `limits`.
pub fn parse_log_selector_with(input: &str, limits: &ParseLimits) -> Result<LogExpr, ParseError> {
    match parse_expr_with(input, limits)? {
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
    parse_matchers_with(input, &ParseLimits::default())
}

/// [`parse_matchers`] under `limits`.
pub fn parse_matchers_with(input: &str, limits: &ParseLimits) -> Result<Vec<Matcher>, ParseError> {
    match parse_expr_with(input, limits)? {
        Expr::Log(l) if l.pipeline.is_empty() => Ok(l.selector),
        _ => Err(ParseError::Unsupported(
            "only label matchers are supported".into(),
        )),
    }
}

/// Parses a bare stream selector without validation, as Loki reads the
/// `match[]` groups of a series request (`syntax.ParseMatchers(x, false)`):
/// selectors that match the empty value (`{app=~".*"}`) and `{}` are accepted.
pub fn parse_matchers_unvalidated_with(
    input: &str,
    limits: &ParseLimits,
) -> Result<Vec<Matcher>, ParseError> {
    match parse_unvalidated(input, limits)? {
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
    /// Nesting levels entered and not yet left (see [`Parser::enter`]).
    depth: usize,
    max_depth: usize,
}

impl Parser {
    fn new(input: &str, max_depth: usize) -> Self {
        Parser {
            toks: tokenize(input),
            i: 0,
            depth: 0,
            max_depth,
        }
    }

    /// Enters one nesting level (a recursive call, or one more node wrapped
    /// around an operand); fails once the query nests deeper than allowed.
    /// Each successful `enter` is matched by a [`Parser::leave`].
    pub(crate) fn enter(&mut self) -> Result<(), ParseError> {
        if self.depth >= self.max_depth {
            let t = self.token(0);
            return Err(ParseError::at(
                t.line,
                t.col,
                format!(
                    "query is nested too deeply (more than {} levels)",
                    self.max_depth
                ),
            ));
        }
        self.depth += 1;
        Ok(())
    }

    /// Leaves `levels` nesting levels entered with [`Parser::enter`].
    pub(crate) fn leave(&mut self, levels: usize) {
        self.depth -= levels;
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
