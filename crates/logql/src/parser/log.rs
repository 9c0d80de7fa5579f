//! Log queries: stream selectors, pipeline stages (line filters, parsers,
//! formatters, drop/keep), log ranges with `unwrap` and `offset`.

use super::Parser;
use crate::ast::{
    LabelExtraction, LabelFormatOp, LabelSelectorItem, LineFilter, LineFilterOp, LineFilterValue,
    LogExpr, LogRange, Stage, Unwrap, UnwrapConversion,
};
use crate::errors::ParseError;
use crate::lexer::{Sym, Tok};
use crate::validate::{check_pattern_parser, check_regexp_parser, go_regex_error};
use runakefli_model::{MatchOp, Matcher};

const MATCH_OPS: &[&str] = &["=", "=~", "!~", "!="];

impl Parser {
    /// `{ matchers }`; the current token is `{`.
    pub(crate) fn selector(&mut self) -> Result<Vec<Matcher>, ParseError> {
        self.expect(Sym::LBrace, &["{"])?;
        let mut out = Vec::new();
        if self.is(Sym::RBrace) {
            self.bump();
            return Ok(out);
        }
        out.push(self.matcher(&["IDENTIFIER", "}"])?);
        loop {
            if self.is(Sym::RBrace) {
                self.bump();
                return Ok(out);
            }
            self.expect(Sym::Comma, &["}", ","])?;
            out.push(self.matcher(&["IDENTIFIER"])?);
        }
    }

    /// `name op "value"`.
    pub(crate) fn matcher(&mut self, first: &[&str]) -> Result<Matcher, ParseError> {
        let name = self.expect_ident(first)?;
        let op = self.match_op().ok_or_else(|| self.unexpected(MATCH_OPS))?;
        self.bump();
        let value = self.expect_string(&["STRING"])?;
        new_matcher(name, op, value)
    }

    pub(crate) fn match_op(&self) -> Option<MatchOp> {
        match self.tok() {
            Tok::Sym(Sym::Eq) => Some(MatchOp::Eq),
            Tok::Sym(Sym::Neq) => Some(MatchOp::Neq),
            Tok::Sym(Sym::Re) => Some(MatchOp::Re),
            Tok::Sym(Sym::Nre) => Some(MatchOp::Nre),
            _ => None,
        }
    }

    /// A selector and its pipeline, outside a range.
    pub(crate) fn log_expr(&mut self) -> Result<LogExpr, ParseError> {
        let selector = self.selector()?;
        let pipeline = self.pipeline(false)?;
        Ok(LogExpr { selector, pipeline })
    }

    /// Pipeline stages; inside a range it stops before `| unwrap`.
    pub(crate) fn pipeline(&mut self, in_range: bool) -> Result<Vec<Stage>, ParseError> {
        let mut stages = Vec::new();
        loop {
            if let Some(op) = self.line_filter_op() {
                self.bump();
                stages.push(Stage::LineFilter(self.line_filter(op)?));
                continue;
            }
            if !self.is(Sym::Pipe) || (in_range && matches!(self.tok2(), Tok::Sym(Sym::Unwrap))) {
                return Ok(stages);
            }
            self.bump();
            stages.push(self.stage()?);
        }
    }

    fn line_filter_op(&self) -> Option<LineFilterOp> {
        Some(match self.tok() {
            Tok::Sym(Sym::PipeExact) => LineFilterOp::Contains,
            Tok::Sym(Sym::Neq) => LineFilterOp::NotContains,
            Tok::Sym(Sym::PipeMatch) => LineFilterOp::Match,
            Tok::Sym(Sym::Nre) => LineFilterOp::NotMatch,
            Tok::Sym(Sym::PipePattern) => LineFilterOp::Pattern,
            Tok::Sym(Sym::Npa) => LineFilterOp::NotPattern,
            _ => return None,
        })
    }

    fn line_filter(&mut self, op: LineFilterOp) -> Result<LineFilter, ParseError> {
        let mut values = vec![self.line_filter_value()?];
        while self.is(Sym::Or) {
            self.bump();
            values.push(self.line_filter_value()?);
        }
        Ok(LineFilter { op, values })
    }

    fn line_filter_value(&mut self) -> Result<LineFilterValue, ParseError> {
        match self.tok() {
            Tok::Str(s) => {
                let s = s.clone();
                self.bump();
                Ok(LineFilterValue::Str(s))
            }
            Tok::Sym(Sym::Ip) => Ok(LineFilterValue::Ip(self.ip_call()?)),
            _ => Err(self.unexpected(&["STRING", "ip"])),
        }
    }

    /// `ip("...")`; the current token is `ip`.
    pub(crate) fn ip_call(&mut self) -> Result<String, ParseError> {
        self.bump();
        self.expect(Sym::LParen, &["("])?;
        let s = self.expect_string(&["STRING"])?;
        self.expect(Sym::RParen, &[")"])?;
        Ok(s)
    }

    /// One stage after `|`.
    fn stage(&mut self) -> Result<Stage, ParseError> {
        let Tok::Sym(s) = self.tok().clone() else {
            if matches!(self.tok(), Tok::Ident(_)) {
                return Ok(Stage::LabelFilter(self.label_filter(&[])?));
            }
            return Err(self.unexpected(&[]));
        };
        match s {
            Sym::LParen => return Ok(Stage::LabelFilter(self.label_filter(&[])?)),
            Sym::Json => {
                self.bump();
                return Ok(Stage::Json(self.extractions()?));
            }
            Sym::Logfmt => {
                self.bump();
                let (mut strict, mut keep_empty) = (false, false);
                while let Tok::Flag(f) = self.tok() {
                    if f == "--strict" {
                        strict = true;
                    } else {
                        keep_empty = true;
                    }
                    self.bump();
                }
                let params = self.extractions()?;
                return Ok(Stage::Logfmt {
                    strict,
                    keep_empty,
                    params,
                });
            }
            Sym::Regexp => {
                self.bump();
                let re = self.expect_string(&["STRING"])?;
                check_regexp_parser(&re)?;
                return Ok(Stage::Regexp(re));
            }
            Sym::Pattern => {
                self.bump();
                let pat = self.expect_string(&["STRING"])?;
                check_pattern_parser(&pat)?;
                return Ok(Stage::Pattern(pat));
            }
            Sym::Unpack => {
                self.bump();
                return Ok(Stage::Unpack);
            }
            Sym::Decolorize => {
                self.bump();
                return Ok(Stage::Decolorize);
            }
            Sym::LineFmt => {
                self.bump();
                return Ok(Stage::LineFormat(self.expect_string(&["STRING"])?));
            }
            Sym::LabelFmt => {
                self.bump();
                return Ok(Stage::LabelFormat(self.label_formats()?));
            }
            Sym::Drop => {
                self.bump();
                return Ok(Stage::Drop(self.named_matchers()?));
            }
            Sym::Keep => {
                self.bump();
                return Ok(Stage::Keep(self.named_matchers()?));
            }
            _ => {}
        }
        Err(self.unexpected(&[]))
    }

    /// Optional `a="x.y", b` after `json`/`logfmt`.
    fn extractions(&mut self) -> Result<Vec<LabelExtraction>, ParseError> {
        let mut out = Vec::new();
        if !matches!(self.tok(), Tok::Ident(_)) {
            return Ok(out);
        }
        loop {
            let label = self.expect_ident(&["IDENTIFIER"])?;
            let mut expression = None;
            if self.is(Sym::Eq) {
                self.bump();
                expression = Some(self.expect_string(&["STRING"])?);
            }
            out.push(LabelExtraction { label, expression });
            if !self.is(Sym::Comma) {
                return Ok(out);
            }
            self.bump();
        }
    }

    fn label_formats(&mut self) -> Result<Vec<LabelFormatOp>, ParseError> {
        let mut out = Vec::new();
        loop {
            let dst = self.expect_ident(&["IDENTIFIER"])?;
            self.expect(Sym::Eq, &["="])?;
            match self.tok().clone() {
                Tok::Ident(src) => {
                    self.bump();
                    out.push(LabelFormatOp::Rename { dst, src });
                }
                Tok::Str(template) => {
                    self.bump();
                    out.push(LabelFormatOp::Template { dst, template });
                }
                _ => return Err(self.unexpected(&["IDENTIFIER", "STRING"])),
            }
            if !self.is(Sym::Comma) {
                return Ok(out);
            }
            self.bump();
        }
    }

    fn named_matchers(&mut self) -> Result<Vec<LabelSelectorItem>, ParseError> {
        let mut out = Vec::new();
        loop {
            let name = self.expect_ident(&["IDENTIFIER"])?;
            let matcher = match self.match_op() {
                Some(op) => {
                    self.bump();
                    let value = self.expect_string(&["STRING"])?;
                    Some(new_matcher(name.clone(), op, value)?)
                }
                None => None,
            };
            out.push(LabelSelectorItem { name, matcher });
            if !self.is(Sym::Comma) {
                return Ok(out);
            }
            self.bump();
        }
    }

    /// `offset DURATION` if present.
    fn offset(&mut self) -> Result<i64, ParseError> {
        if !self.is(Sym::Offset) {
            return Ok(0);
        }
        self.bump();
        match self.tok() {
            Tok::Duration(d) => {
                let d = *d;
                self.bump();
                Ok(d)
            }
            _ => Err(self.unexpected(&["DURATION"])),
        }
    }

    /// `| unwrap ...` with its post filters, if present.
    fn unwrap(&mut self) -> Result<Option<Unwrap>, ParseError> {
        if !(self.is(Sym::Pipe) && matches!(self.tok2(), Tok::Sym(Sym::Unwrap))) {
            return Ok(None);
        }
        self.bump();
        self.bump();
        let conversion = match self.tok() {
            Tok::Ident(_) => UnwrapConversion::None,
            Tok::BytesConv => UnwrapConversion::Bytes,
            Tok::DurationConv | Tok::DurationSecondsConv => UnwrapConversion::Duration,
            _ => {
                return Err(self.unexpected(&[
                    "IDENTIFIER",
                    "BYTES_CONV",
                    "DURATION_CONV",
                    "DURATION_SECONDS_CONV",
                ]))
            }
        };
        let label = if conversion == UnwrapConversion::None {
            self.expect_ident(&["IDENTIFIER"])?
        } else {
            self.bump();
            self.expect(Sym::LParen, &["("])?;
            let l = self.expect_ident(&["IDENTIFIER"])?;
            self.expect(Sym::RParen, &[")"])?;
            l
        };
        let mut post_filters = Vec::new();
        while self.is(Sym::Pipe) {
            self.bump();
            post_filters.push(self.label_filter(&["IDENTIFIER", "("])?);
        }
        Ok(Some(Unwrap {
            label,
            conversion,
            post_filters,
        }))
    }

    fn range_token(&mut self, expected: &[&str]) -> Result<i64, ParseError> {
        match self.tok() {
            Tok::Range(d) => {
                let d = *d;
                self.bump();
                Ok(d)
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    /// A log range, the argument of a range aggregation; one nesting level
    /// per call (parenthesised ranges recurse).
    pub(crate) fn log_range(&mut self) -> Result<LogRange, ParseError> {
        self.enter()?;
        let r = self.log_range_inner()?;
        self.leave(1);
        Ok(r)
    }

    fn log_range_inner(&mut self) -> Result<LogRange, ParseError> {
        if self.is(Sym::LParen) {
            self.bump();
            if self.is(Sym::LParen) {
                let r = self.log_range()?;
                self.expect(Sym::RParen, &[")"])?;
                return Ok(r);
            }
            if !self.is(Sym::LBrace) {
                return Err(self.unexpected(&["{", "("]));
            }
            let selector = self.selector()?;
            let pipeline = self.pipeline(true)?;
            let unwrap = self.unwrap()?;
            if matches!(self.tok(), Tok::Range(_)) {
                let r = self.range_tail(selector, pipeline, unwrap)?;
                self.expect(Sym::RParen, &[")"])?;
                return Ok(r);
            }
            self.expect(Sym::RParen, &[])?;
            let range = self.range_token(&["RANGE"])?;
            let offset = self.offset()?;
            let mut unwrap = unwrap;
            if unwrap.is_none() && pipeline.is_empty() {
                unwrap = self.unwrap()?;
            }
            return Ok(LogRange {
                log: LogExpr { selector, pipeline },
                range,
                offset,
                unwrap,
            });
        }
        if !self.is(Sym::LBrace) {
            return Err(self.unexpected(&["{", "("]));
        }
        let selector = self.selector()?;
        let pipeline = self.pipeline(true)?;
        let unwrap = self.unwrap()?;
        if !matches!(self.tok(), Tok::Range(_)) {
            return Err(self.unexpected(if unwrap.is_some() {
                &["RANGE", "|"]
            } else {
                &[]
            }));
        }
        self.range_tail(selector, pipeline, unwrap)
    }

    /// From the `[range]` token on: offset, and (when nothing came before the
    /// range) a pipeline and unwrap after it.
    fn range_tail(
        &mut self,
        selector: Vec<Matcher>,
        pipeline: Vec<crate::ast::Stage>,
        unwrap: Option<Unwrap>,
    ) -> Result<LogRange, ParseError> {
        let range = self.range_token(&["RANGE"])?;
        let offset = self.offset()?;
        let mut pipeline = pipeline;
        let mut unwrap = unwrap;
        if pipeline.is_empty() && unwrap.is_none() {
            pipeline = self.pipeline(true)?;
            unwrap = self.unwrap()?;
        }
        Ok(LogRange {
            log: LogExpr { selector, pipeline },
            range,
            offset,
            unwrap,
        })
    }
}

/// Builds a matcher, with Loki's wording for a bad regular expression.
pub(crate) fn new_matcher(name: String, op: MatchOp, value: String) -> Result<Matcher, ParseError> {
    if matches!(op, MatchOp::Re | MatchOp::Nre) {
        if let Some(e) = go_regex_error(&value) {
            return Err(ParseError::plain(e));
        }
    }
    Matcher::new(name, op, value).map_err(|e| ParseError::plain(e.to_string()))
}
