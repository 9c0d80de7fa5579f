//! The LogQL lexer: turns a query into tokens with 1-based line/column
//! positions counted in characters, following the tokenization rules of
//! Loki's lexer (Go `text/scanner` underneath): keywords are
//! case-insensitive, function names are only keywords when a `(` (or
//! `by`/`without (`) follows, numbers glued to a unit become durations or byte
//! sizes, `[..]` is one range token, `#` starts a comment.
//!
//! A lexical error becomes a [`Tok::Error`] token so the parser reports it
//! only if it reads that far, as Loki does.

use crate::ast::{RangeOp, VectorOp};
use crate::duration::{parse_bytes, parse_duration, parse_prom_duration};
use crate::errors::ParseError;

/// A token kind with its value.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// End of input.
    Eof,
    /// A lexical error, reported when the parser reaches it.
    Error(ParseError),
    /// A name.
    Ident(String),
    /// A quoted string, unquoted.
    Str(String),
    /// A number as written.
    Number(String),
    /// A number with a duration unit (`5m`), nanoseconds.
    Duration(i64),
    /// A `[5m]` range, nanoseconds.
    Range(i64),
    /// A number with a byte unit (`10MB`).
    Bytes(u64),
    /// `--strict` / `--keep-empty`.
    Flag(String),
    /// A range aggregation function name followed by `(`.
    RangeFn(RangeOp),
    /// A vector aggregation operator followed by `(` or a grouping.
    VectorFn(VectorOp),
    /// `approx_topk` followed by `(`.
    ApproxTopk,
    /// `vector(`
    Vector,
    /// `bytes(` in unwrap.
    BytesConv,
    /// `duration(` in unwrap.
    DurationConv,
    /// `duration_seconds(` in unwrap.
    DurationSecondsConv,
    /// A punctuation or keyword token, by its Loki spelling.
    Sym(Sym),
}

/// Punctuation and keywords; the `&str` is how Loki names them in errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Sym {
    Comma,
    Dot,
    LBrace,
    RBrace,
    Eq,
    Neq,
    Re,
    Nre,
    Npa,
    PipeExact,
    PipeMatch,
    PipePattern,
    Pipe,
    Unwrap,
    LParen,
    RParen,
    RBracket,
    By,
    Without,
    Bool,
    LabelReplace,
    Offset,
    On,
    Ignoring,
    GroupLeft,
    GroupRight,
    Or,
    And,
    Unless,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    CmpEq,
    Gt,
    Gte,
    Lt,
    Lte,
    Json,
    Regexp,
    Logfmt,
    Unpack,
    Pattern,
    LabelFmt,
    LineFmt,
    Ip,
    Decolorize,
    Drop,
    Keep,
    Variants,
    Of,
}

const SYMS: &[(&str, Sym)] = &[
    (",", Sym::Comma),
    (".", Sym::Dot),
    ("{", Sym::LBrace),
    ("}", Sym::RBrace),
    ("=", Sym::Eq),
    ("!=", Sym::Neq),
    ("=~", Sym::Re),
    ("!~", Sym::Nre),
    ("!>", Sym::Npa),
    ("|=", Sym::PipeExact),
    ("|~", Sym::PipeMatch),
    ("|>", Sym::PipePattern),
    ("|", Sym::Pipe),
    ("unwrap", Sym::Unwrap),
    ("(", Sym::LParen),
    (")", Sym::RParen),
    ("]", Sym::RBracket),
    ("by", Sym::By),
    ("without", Sym::Without),
    ("bool", Sym::Bool),
    ("label_replace", Sym::LabelReplace),
    ("offset", Sym::Offset),
    ("on", Sym::On),
    ("ignoring", Sym::Ignoring),
    ("group_left", Sym::GroupLeft),
    ("group_right", Sym::GroupRight),
    ("or", Sym::Or),
    ("and", Sym::And),
    ("unless", Sym::Unless),
    ("+", Sym::Add),
    ("-", Sym::Sub),
    ("*", Sym::Mul),
    ("/", Sym::Div),
    ("%", Sym::Mod),
    ("^", Sym::Pow),
    ("==", Sym::CmpEq),
    (">", Sym::Gt),
    (">=", Sym::Gte),
    ("<", Sym::Lt),
    ("<=", Sym::Lte),
    ("json", Sym::Json),
    ("regexp", Sym::Regexp),
    ("logfmt", Sym::Logfmt),
    ("unpack", Sym::Unpack),
    ("pattern", Sym::Pattern),
    ("label_format", Sym::LabelFmt),
    ("line_format", Sym::LineFmt),
    ("ip", Sym::Ip),
    ("decolorize", Sym::Decolorize),
    ("drop", Sym::Drop),
    ("keep", Sym::Keep),
    ("variants", Sym::Variants),
    ("of", Sym::Of),
];

impl Sym {
    /// The spelling Loki uses for this token in error messages.
    pub fn name(self) -> &'static str {
        SYMS.iter()
            .find(|(_, s)| *s == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }
}

fn sym(text: &str) -> Option<Sym> {
    SYMS.iter().find(|(n, _)| *n == text).map(|(_, s)| *s)
}

/// Names that are function tokens only when followed by `(` (or `by (`).
fn function_token(lower: &str) -> Option<Tok> {
    use RangeOp as R;
    use VectorOp as V;
    Some(match lower {
        "rate" => Tok::RangeFn(R::Rate),
        "rate_counter" => Tok::RangeFn(R::RateCounter),
        "count_over_time" => Tok::RangeFn(R::CountOverTime),
        "bytes_rate" => Tok::RangeFn(R::BytesRate),
        "bytes_over_time" => Tok::RangeFn(R::BytesOverTime),
        "avg_over_time" => Tok::RangeFn(R::AvgOverTime),
        "sum_over_time" => Tok::RangeFn(R::SumOverTime),
        "min_over_time" => Tok::RangeFn(R::MinOverTime),
        "max_over_time" => Tok::RangeFn(R::MaxOverTime),
        "stdvar_over_time" => Tok::RangeFn(R::StdvarOverTime),
        "stddev_over_time" => Tok::RangeFn(R::StddevOverTime),
        "quantile_over_time" => Tok::RangeFn(R::QuantileOverTime),
        "first_over_time" => Tok::RangeFn(R::FirstOverTime),
        "last_over_time" => Tok::RangeFn(R::LastOverTime),
        "absent_over_time" => Tok::RangeFn(R::AbsentOverTime),
        "vector" => Tok::Vector,
        "sum" => Tok::VectorFn(V::Sum),
        "avg" => Tok::VectorFn(V::Avg),
        "max" => Tok::VectorFn(V::Max),
        "min" => Tok::VectorFn(V::Min),
        "count" => Tok::VectorFn(V::Count),
        "stddev" => Tok::VectorFn(V::Stddev),
        "stdvar" => Tok::VectorFn(V::Stdvar),
        "bottomk" => Tok::VectorFn(V::Bottomk),
        "topk" => Tok::VectorFn(V::Topk),
        "sort" => Tok::VectorFn(V::Sort),
        "sort_desc" => Tok::VectorFn(V::SortDesc),
        "label_replace" => Tok::Sym(Sym::LabelReplace),
        "approx_topk" => Tok::ApproxTopk,
        "bytes" => Tok::BytesConv,
        "duration" => Tok::DurationConv,
        "duration_seconds" => Tok::DurationSecondsConv,
        "ip" => Tok::Sym(Sym::Ip),
        _ => return None,
    })
}

impl Tok {
    /// The token's name as Loki's (goyacc) error messages spell it.
    pub fn name(&self) -> String {
        use RangeOp as R;
        use VectorOp as V;
        match self {
            Tok::Eof | Tok::Error(_) => "$end".into(),
            Tok::Ident(_) => "IDENTIFIER".into(),
            Tok::Str(_) => "STRING".into(),
            Tok::Number(_) => "NUMBER".into(),
            Tok::Duration(_) => "DURATION".into(),
            Tok::Range(_) => "RANGE".into(),
            Tok::Bytes(_) => "BYTES".into(),
            Tok::Flag(_) => "FUNCTION_FLAG".into(),
            Tok::ApproxTopk => "APPROX_TOPK".into(),
            Tok::Vector => "VECTOR".into(),
            Tok::BytesConv => "BYTES_CONV".into(),
            Tok::DurationConv => "DURATION_CONV".into(),
            Tok::DurationSecondsConv => "DURATION_SECONDS_CONV".into(),
            Tok::Sym(s) => s.name().into(),
            Tok::RangeFn(op) => match op {
                R::CountOverTime => "COUNT_OVER_TIME",
                R::Rate => "RATE",
                R::RateCounter => "RATE_COUNTER",
                R::BytesOverTime => "BYTES_OVER_TIME",
                R::BytesRate => "BYTES_RATE",
                R::AbsentOverTime => "ABSENT_OVER_TIME",
                R::SumOverTime => "SUM_OVER_TIME",
                R::AvgOverTime => "AVG_OVER_TIME",
                R::MinOverTime => "MIN_OVER_TIME",
                R::MaxOverTime => "MAX_OVER_TIME",
                R::StddevOverTime => "STDDEV_OVER_TIME",
                R::StdvarOverTime => "STDVAR_OVER_TIME",
                R::QuantileOverTime => "QUANTILE_OVER_TIME",
                R::FirstOverTime => "FIRST_OVER_TIME",
                R::LastOverTime => "LAST_OVER_TIME",
            }
            .into(),
            Tok::VectorFn(op) => match op {
                V::Sum => "SUM",
                V::Avg => "AVG",
                V::Min => "MIN",
                V::Max => "MAX",
                V::Count => "COUNT",
                V::Stddev => "STDDEV",
                V::Stdvar => "STDVAR",
                V::Topk => "TOPK",
                V::Bottomk => "BOTTOMK",
                V::Sort => "SORT",
                V::SortDesc => "SORT_DESC",
            }
            .into(),
        }
    }
}

/// A token and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// Kind and value.
    pub tok: Tok,
    /// 1-based line (0 only for end of an empty input).
    pub line: usize,
    /// 1-based column in characters.
    pub col: usize,
}

/// Splits a query into tokens; the last one is always `Eof` or `Error`.
pub fn tokenize(input: &str) -> Vec<Token> {
    let mut lx = Lexer::new(input);
    let mut out = Vec::new();
    loop {
        let t = lx.lex();
        let end = matches!(t.tok, Tok::Eof | Tok::Error(_));
        out.push(t);
        if end {
            return out;
        }
    }
}

struct Lexer {
    chars: Vec<char>,
    pos: Vec<(usize, usize)>,
    eof: (usize, usize),
    i: usize,
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

fn is_duration_rune(c: char) -> bool {
    matches!(c, 'n' | 'u' | 'µ' | 'm' | 's' | 'h' | 'd' | 'w' | 'y')
}

fn is_bytes_rune(c: char) -> bool {
    matches!(c, 'B' | 'i' | 'k' | 'K' | 'M' | 'G' | 'T' | 'P')
}

impl Lexer {
    fn new(input: &str) -> Self {
        let chars: Vec<char> = input.chars().collect();
        let mut pos = Vec::with_capacity(chars.len());
        let (mut line, mut col) = (1, 0);
        for &c in &chars {
            col += 1;
            pos.push((line, col));
            if c == '\n' {
                line += 1;
                col = 0;
            }
        }
        let eof = if chars.is_empty() {
            (0, 0)
        } else {
            (line, col + 1)
        };
        Lexer {
            chars,
            pos,
            eof,
            i: 0,
        }
    }

    fn peek(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).copied()
    }

    fn at(&self, i: usize) -> (usize, usize) {
        self.pos.get(i).copied().unwrap_or(self.eof)
    }

    fn token(&self, start: usize, tok: Tok) -> Token {
        let (line, col) = self.at(start);
        Token { tok, line, col }
    }

    fn error(&self, start: usize, msg: impl Into<String>) -> Token {
        let (line, col) = self.at(start);
        self.token(start, Tok::Error(ParseError::at(line, col, msg)))
    }

    fn text(&self, a: usize, b: usize) -> String {
        self.chars[a..b].iter().collect()
    }

    /// Skips white space and `//`, `/* */` and `#` comments.
    fn skip(&mut self) -> Option<Token> {
        loop {
            match self.peek(0) {
                Some(c) if is_space(c) => self.i += 1,
                Some('#') => {
                    while let Some(c) = self.peek(0) {
                        if c == '\n' {
                            break;
                        }
                        self.i += 1;
                    }
                }
                Some('/') if self.peek(1) == Some('/') => {
                    while let Some(c) = self.peek(0) {
                        if c == '\n' {
                            break;
                        }
                        self.i += 1;
                    }
                }
                Some('/') if self.peek(1) == Some('*') => {
                    let start = self.i;
                    self.i += 2;
                    loop {
                        match self.peek(0) {
                            None => return Some(self.error(start, "comment not terminated")),
                            Some('*') if self.peek(1) == Some('/') => {
                                self.i += 2;
                                break;
                            }
                            _ => self.i += 1,
                        }
                    }
                }
                _ => return None,
            }
        }
    }

    fn lex(&mut self) -> Token {
        if let Some(err) = self.skip() {
            return err;
        }
        let start = self.i;
        let Some(c) = self.peek(0) else {
            return Token {
                tok: Tok::Eof,
                line: self.eof.0,
                col: self.eof.1,
            };
        };
        if c == '_' || c.is_alphabetic() {
            self.i += 1;
            while let Some(c) = self.peek(0) {
                if c == '_' || c.is_alphanumeric() {
                    self.i += 1;
                } else {
                    break;
                }
            }
            return self.ident(start);
        }
        if c.is_ascii_digit() || (c == '.' && self.peek(1).is_some_and(|d| d.is_ascii_digit())) {
            return self.number(start);
        }
        match c {
            '"' => return self.string(start),
            '`' => return self.raw_string(start),
            '\'' => return self.char_lit(start),
            '[' => return self.range(start),
            _ => {}
        }
        self.i += 1;
        if c == '-' {
            if self.peek(0) == Some('-') {
                if let Some(t) = self.flag(start) {
                    return t;
                }
            }
            if let Some(d) = self.try_suffix("-", is_duration_rune, |s| parse_duration(s).ok()) {
                return self.token(start, Tok::Duration(d));
            }
        }
        if let Some(n) = self.peek(0) {
            let two: String = [c, n].iter().collect();
            if let Some(s) = sym(&two) {
                self.i += 1;
                return self.token(start, Tok::Sym(s));
            }
        }
        match sym(&c.to_string()) {
            Some(s) => self.token(start, Tok::Sym(s)),
            None => self.token(start, Tok::Ident(c.to_string())),
        }
    }

    fn ident(&mut self, start: usize) -> Token {
        let text = self.text(start, self.i);
        let lower = text.to_lowercase();
        if let Some(tok) = function_token(&lower) {
            if self.is_function() {
                return self.token(start, tok);
            }
            return self.token(start, Tok::Ident(text));
        }
        match sym(&lower) {
            Some(s) => self.token(start, Tok::Sym(s)),
            None => self.token(start, Tok::Ident(text)),
        }
    }

    /// Whether `(` or `by (` / `without (` follows.
    fn is_function(&self) -> bool {
        let rest: String = self.chars[self.i..].iter().collect();
        let rest = rest.trim_start_matches(char::is_whitespace).to_lowercase();
        if rest.starts_with('(') {
            return true;
        }
        for kw in ["by", "without"] {
            if let Some(r) = rest.strip_prefix(kw) {
                return r.trim_start_matches(char::is_whitespace).starts_with('(');
            }
        }
        false
    }

    fn flag(&mut self, start: usize) -> Option<Token> {
        let mut j = self.i;
        while j < self.chars.len() && (self.chars[j].is_alphabetic() || self.chars[j] == '-') {
            j += 1;
        }
        let flag = self.text(start, j);
        if flag == "--strict" || flag == "--keep-empty" {
            self.i = j;
            return Some(self.token(start, Tok::Flag(flag)));
        }
        None
    }

    /// Loki's `tryScan*`: glue the following unit characters to `prefix` and
    /// accept them only if the whole parses.
    fn try_suffix<T>(
        &mut self,
        prefix: &str,
        unit: fn(char) -> bool,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Option<T> {
        let mut j = self.i;
        while j < self.chars.len() {
            let c = self.chars[j];
            if is_space(c) || c.is_whitespace() || !(c.is_numeric() || unit(c) || c == '.') {
                break;
            }
            j += 1;
        }
        if j == self.i {
            return None;
        }
        let s = format!("{prefix}{}", self.text(self.i, j));
        let v = parse(&s)?;
        self.i = j;
        Some(v)
    }

    fn digits(&mut self, base: u32, invalid: &mut Option<char>) -> (bool, bool) {
        let (mut any, mut sep) = (false, false);
        while let Some(c) = self.peek(0) {
            if c == '_' {
                sep = true;
            } else if base <= 10 && c.is_ascii_digit() {
                any = true;
                if c.to_digit(10).unwrap_or(0) >= base && invalid.is_none() {
                    *invalid = Some(c);
                }
            } else if base == 16 && c.is_ascii_hexdigit() {
                any = true;
            } else {
                break;
            }
            self.i += 1;
        }
        (any, sep)
    }

    fn number(&mut self, start: usize) -> Token {
        let mut err: Option<String> = None;
        let mut base = 10;
        let mut prefix = ' ';
        let mut has_digits = false;
        let mut invalid = None;
        let mut is_float = false;
        if self.peek(0) == Some('0') {
            self.i += 1;
            match self.peek(0).map(|c| c.to_ascii_lowercase()) {
                Some('x') => {
                    self.i += 1;
                    base = 16;
                    prefix = 'x';
                }
                Some('o') => {
                    self.i += 1;
                    base = 8;
                    prefix = 'o';
                }
                Some('b') if self.peek(1).is_some_and(|c| !c.is_whitespace()) => {
                    self.i += 1;
                    base = 2;
                    prefix = 'b';
                }
                _ => {
                    base = 8;
                    prefix = '0';
                    has_digits = true;
                }
            }
        }
        if self.peek(0) != Some('.') || prefix != ' ' || self.i > start {
            has_digits |= self.digits(base, &mut invalid).0;
        }
        if self.peek(0) == Some('.') {
            self.i += 1;
            is_float = true;
            if prefix == 'o' || prefix == 'b' {
                err.get_or_insert_with(|| format!("invalid radix point in {}", litname(prefix)));
            }
            has_digits |= self.digits(base, &mut invalid).0;
        }
        if !has_digits {
            err.get_or_insert_with(|| format!("{} has no digits", litname(prefix)));
        }
        if let Some(e) = self
            .peek(0)
            .map(|c| c.to_ascii_lowercase())
            .filter(|c| *c == 'e' || *c == 'p')
        {
            if e == 'e' && prefix != ' ' && prefix != '0' {
                err.get_or_insert_with(|| {
                    format!(
                        "{:?} exponent requires decimal mantissa",
                        self.peek(0).unwrap_or('e')
                    )
                });
            } else if e == 'p' && prefix != 'x' {
                err.get_or_insert_with(|| {
                    format!(
                        "{:?} exponent requires hexadecimal mantissa",
                        self.peek(0).unwrap_or('p')
                    )
                });
            }
            self.i += 1;
            is_float = true;
            if matches!(self.peek(0), Some('+') | Some('-')) {
                self.i += 1;
            }
            let mut none = None;
            if !self.digits(10, &mut none).0 {
                err.get_or_insert_with(|| "exponent has no digits".to_string());
            }
        } else if prefix == 'x' && is_float {
            err.get_or_insert_with(|| "hexadecimal mantissa requires a 'p' exponent".to_string());
        }
        if !is_float {
            if let Some(c) = invalid {
                err.get_or_insert_with(|| format!("invalid digit {c:?} in {}", litname(prefix)));
            }
        }
        if let Some(e) = err {
            return self.error(start, e);
        }
        let text = self.text(start, self.i);
        if let Some(d) = self.try_suffix(&text, is_duration_rune, |s| parse_duration(s).ok()) {
            return self.token(start, Tok::Duration(d));
        }
        if let Some(b) = self.try_suffix(&text, is_bytes_rune, |s| parse_bytes(s).ok()) {
            return self.token(start, Tok::Bytes(b));
        }
        self.token(start, Tok::Number(text))
    }

    fn range(&mut self, start: usize) -> Token {
        self.i += 1;
        let from = self.i;
        while let Some(c) = self.peek(0) {
            if c == ']' {
                let inner = self.text(from, self.i);
                self.i += 1;
                return match parse_prom_duration(&inner) {
                    Ok(d) => self.token(start, Tok::Range(d)),
                    Err(e) => self.error(start, e.to_string()),
                };
            }
            self.i += 1;
        }
        self.error(start, "missing closing ']' in duration")
    }

    fn raw_string(&mut self, start: usize) -> Token {
        self.i += 1;
        let from = self.i;
        while let Some(c) = self.peek(0) {
            if c == '`' {
                let s = self.text(from, self.i);
                self.i += 1;
                return self.token(start, Tok::Str(s));
            }
            self.i += 1;
        }
        self.error(start, "literal not terminated")
    }

    fn char_lit(&mut self, start: usize) -> Token {
        self.i += 1;
        let mut n = 0;
        loop {
            match self.peek(0) {
                None | Some('\n') => return self.error(start, "literal not terminated"),
                Some('\'') => {
                    self.i += 1;
                    break;
                }
                Some('\\') => {
                    self.i += 1;
                    if let Err(e) = self.escape('\'', &mut Vec::new()) {
                        return self.error(start, e);
                    }
                }
                Some(_) => self.i += 1,
            }
            n += 1;
        }
        if n != 1 {
            return self.error(start, "invalid char literal");
        }
        let text = self.text(start, self.i);
        self.token(start, Tok::Ident(text))
    }

    fn string(&mut self, start: usize) -> Token {
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.peek(0) {
                None | Some('\n') => return self.error(start, "literal not terminated"),
                Some('"') => {
                    self.i += 1;
                    break;
                }
                Some('\\') => {
                    self.i += 1;
                    if let Err(e) = self.escape('"', &mut out) {
                        return self.error(start, e);
                    }
                }
                Some(c) => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    self.i += 1;
                }
            }
        }
        match String::from_utf8(out) {
            Ok(s) => self.token(start, Tok::Str(s)),
            Err(e) => self.token(
                start,
                Tok::Str(String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
        }
    }

    /// Decodes one escape (after the backslash) into `out`.
    fn escape(&mut self, quote: char, out: &mut Vec<u8>) -> Result<(), &'static str> {
        let c = self.peek(0).ok_or("literal not terminated")?;
        self.i += 1;
        let simple = match c {
            'a' => Some(7u8),
            'b' => Some(8),
            'f' => Some(12),
            'n' => Some(b'\n'),
            'r' => Some(b'\r'),
            't' => Some(b'\t'),
            'v' => Some(11),
            '\\' => Some(b'\\'),
            _ if c == quote => Some(c as u8),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            return Ok(());
        }
        let (n, radix, first) = match c {
            '0'..='7' => (3, 8, Some(c)),
            'x' => (2, 16, None),
            'u' => (4, 16, None),
            'U' => (8, 16, None),
            _ => return Err("invalid char escape"),
        };
        let mut digits = String::new();
        if let Some(f) = first {
            digits.push(f);
        }
        while digits.len() < n {
            match self.peek(0) {
                Some(d) if d.is_digit(radix) => {
                    digits.push(d);
                    self.i += 1;
                }
                _ => return Err("invalid char escape"),
            }
        }
        let v = u32::from_str_radix(&digits, radix).map_err(|_| "invalid char escape")?;
        match c {
            'x' => out.push(v as u8),
            '0'..='7' => {
                if v > 255 {
                    return Err("invalid syntax");
                }
                out.push(v as u8)
            }
            _ => {
                let ch = char::from_u32(v).ok_or("invalid syntax")?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
        }
        Ok(())
    }
}

fn litname(prefix: char) -> &'static str {
    match prefix {
        'x' => "hexadecimal literal",
        'o' | '0' => "octal literal",
        'b' => "binary literal",
        _ => "decimal literal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<Tok> {
        tokenize(s).into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn selector_and_filters() {
        let t = kinds(r#"{app="a\"b", x=~`c`} |= "x" != "y" |~ "z""#);
        assert_eq!(t[0], Tok::Sym(Sym::LBrace));
        assert_eq!(t[1], Tok::Ident("app".into()));
        assert_eq!(t[3], Tok::Str("a\"b".into()));
        assert_eq!(t[6], Tok::Sym(Sym::Re));
        assert_eq!(t[7], Tok::Str("c".into()));
        assert_eq!(t[9], Tok::Sym(Sym::PipeExact));
        assert_eq!(t[11], Tok::Sym(Sym::Neq));
        assert_eq!(t[13], Tok::Sym(Sym::PipeMatch));
    }

    #[test]
    fn functions_need_parens() {
        assert_eq!(kinds("rate(")[0], Tok::RangeFn(RangeOp::Rate));
        assert_eq!(kinds("rate > 1")[0], Tok::Ident("rate".into()));
        assert_eq!(kinds("SUM by (a)")[0], Tok::VectorFn(VectorOp::Sum));
        assert_eq!(kinds("bytes(x)")[0], Tok::BytesConv);
        assert_eq!(kinds("bytes")[0], Tok::Ident("bytes".into()));
    }

    #[test]
    fn numbers_units_ranges() {
        assert_eq!(kinds("5m")[0], Tok::Duration(300_000_000_000));
        assert_eq!(kinds("1.5h")[0], Tok::Duration(5_400_000_000_000));
        assert_eq!(kinds("10MB")[0], Tok::Bytes(10_000_000));
        assert_eq!(kinds("1KiB")[0], Tok::Bytes(1024));
        assert_eq!(kinds("1e3")[0], Tok::Number("1e3".into()));
        assert_eq!(kinds("-5m")[0], Tok::Duration(-300_000_000_000));
        assert_eq!(kinds("-1")[0], Tok::Sym(Sym::Sub));
        assert_eq!(kinds("[5m]")[0], Tok::Range(300_000_000_000));
        assert_eq!(kinds("--strict")[0], Tok::Flag("--strict".into()));
        assert_eq!(kinds("# c\n1")[0], Tok::Number("1".into()));
    }

    #[test]
    fn positions() {
        let t = tokenize("1 +");
        assert_eq!((t[1].line, t[1].col), (1, 3));
        assert_eq!((t[2].line, t[2].col), (1, 4));
        let t = tokenize("");
        assert_eq!((t[0].line, t[0].col), (0, 0));
        let t = tokenize("a\n b");
        assert_eq!((t[1].line, t[1].col), (2, 2));
    }

    #[test]
    fn errors() {
        let t = tokenize("x [1.5h]");
        assert_eq!(
            t[1].tok,
            Tok::Error(ParseError::at(
                1,
                3,
                "unknown unit \".\" in duration \"1.5h\""
            ))
        );
        assert!(matches!(
            tokenize("\"abc").last().unwrap().tok,
            Tok::Error(_)
        ));
        assert!(matches!(tokenize("[5m").last().unwrap().tok, Tok::Error(_)));
    }
}
