//! Regexps LogQL hands over, checked and rewritten for ClickHouse's `match`.
//!
//! The engine compiles LogQL regexps with the Rust `regex` crate; ClickHouse
//! uses the C++ re2 library. The two read the same syntax alike except for
//! a few constructs, so a pattern is pushed down only when its syntax tree
//! (parsed with `regex-syntax`, the `regex` crate's parser) uses none of:
//! - Perl classes `\d \w \s`, Unicode classes `\pL`, word boundaries `\b \B`
//!   `\<` `\>`: Unicode-aware in Rust, ASCII in re2;
//! - the flag `i` in a pattern with a class or a literal outside ASCII
//!   (case folding tables may differ there; ASCII letters fold alike — `k`
//!   also to the Kelvin sign, `s` to `ſ` — checked on ClickHouse 26.9), the
//!   flags `u`, `R`, `x` (re2 has no `x`);
//! - `\u…` escapes, nested or set-operation classes (`[a[b]]`, `[a&&b]`,
//!   `[a--b]`), names in `(?<name>…)`: Rust syntax re2 reads otherwise;
//! - counted repetitions past 1000 (re2's limit).
//!
//! ClickHouse compiles with `.` matching `\n`, unlike RE2's and Rust's
//! default, so the pattern is wrapped in `(?-s:…)` (line filters; Loki leaves
//! `.` off newlines) or `(?s:…)` (stream matchers, which the engine compiles
//! with `s`).

use crate::Error;
use regex_syntax::ast::{self, Ast, ClassSetItem, Visitor};

/// The `match()` pattern for a line filter regexp (unanchored, `.` not
/// matching `\n` unless the pattern says `(?s)`).
pub fn line_regex(pattern: &str) -> Result<String, Error> {
    check(pattern)?;
    Ok(format!("(?-s:{pattern})"))
}

/// The `match()` pattern for a `=~`/`!~` stream matcher: anchored at both
/// ends, `.` matching `\n`, as the engine's `Matcher` compiles it.
pub fn selector_regex(pattern: &str) -> Result<String, Error> {
    check(pattern)?;
    Ok(format!("^(?s:{pattern})$"))
}

fn check(pattern: &str) -> Result<(), Error> {
    let ast = ast::parse::Parser::new()
        .parse(pattern)
        .map_err(|e| Error::Unsupported(format!("regexp {pattern:?}: {e}")))?;
    ast::visit(&ast, Check::default())
        .map_err(|why| Error::Unsupported(format!("regexp {pattern:?}: {why}")))
}

/// The syntax check; it also notes what case folding would have to agree
/// on (decided when the walk ends).
#[derive(Default)]
struct Check {
    /// The flag `i` is set somewhere.
    folds: bool,
    /// A class, or a literal outside ASCII, is somewhere.
    beyond_ascii: bool,
}

impl Check {
    fn flags_ok(&mut self, flags: &ast::Flags) -> Result<(), String> {
        let mut negated = false;
        for item in &flags.items {
            match &item.kind {
                ast::FlagsItemKind::Negation => negated = true,
                ast::FlagsItemKind::Flag(f) => match f {
                    ast::Flag::MultiLine | ast::Flag::DotMatchesNewLine | ast::Flag::SwapGreed => {}
                    ast::Flag::CaseInsensitive => self.folds |= !negated,
                    other => return Err(format!("flag {other:?} reads differently in re2")),
                },
            }
        }
        Ok(())
    }

    fn literal_ok(&mut self, lit: &ast::Literal) -> Result<(), String> {
        self.beyond_ascii |= !lit.c.is_ascii();
        literal_ok(lit)
    }
}

fn literal_ok(lit: &ast::Literal) -> Result<(), String> {
    match &lit.kind {
        ast::LiteralKind::Verbatim | ast::LiteralKind::Special(_) => Ok(()),
        ast::LiteralKind::Meta | ast::LiteralKind::Superfluous if lit.c.is_ascii_punctuation() => {
            Ok(())
        }
        ast::LiteralKind::HexBrace(ast::HexLiteralKind::X)
        | ast::LiteralKind::HexFixed(ast::HexLiteralKind::X) => Ok(()),
        other => Err(format!("escape {other:?} reads differently in re2")),
    }
}

impl Visitor for Check {
    type Output = ();
    type Err = String;

    fn finish(self) -> Result<(), String> {
        if self.folds && self.beyond_ascii {
            return Err("case folding of classes or beyond ASCII may differ in re2".into());
        }
        Ok(())
    }

    fn visit_pre(&mut self, ast: &Ast) -> Result<(), String> {
        match ast {
            Ast::Empty(_) | Ast::Dot(_) | Ast::Alternation(_) | Ast::Concat(_) => Ok(()),
            Ast::Flags(f) => self.flags_ok(&f.flags),
            Ast::Literal(l) => self.literal_ok(l),
            Ast::Assertion(a) => match &a.kind {
                ast::AssertionKind::StartLine
                | ast::AssertionKind::EndLine
                | ast::AssertionKind::StartText
                | ast::AssertionKind::EndText => Ok(()),
                other => Err(format!("assertion {other:?} is ASCII-only in re2")),
            },
            Ast::ClassUnicode(_) => Err("Unicode classes differ in re2".into()),
            Ast::ClassPerl(_) => Err("Perl classes are ASCII-only in re2".into()),
            Ast::ClassBracketed(_) => {
                self.beyond_ascii = true;
                Ok(())
            }
            Ast::Repetition(r) => match r.op.kind {
                ast::RepetitionKind::Range(
                    ast::RepetitionRange::Exactly(n)
                    | ast::RepetitionRange::AtLeast(n)
                    | ast::RepetitionRange::Bounded(_, n),
                ) if n > 1000 => Err("repetition count above re2's 1000".into()),
                _ => Ok(()),
            },
            Ast::Group(g) => match &g.kind {
                ast::GroupKind::CaptureIndex(_) => Ok(()),
                ast::GroupKind::CaptureName { starts_with_p, .. } if *starts_with_p => Ok(()),
                ast::GroupKind::CaptureName { .. } => Err("(?<name>…) needs (?P<name>…)".into()),
                ast::GroupKind::NonCapturing(flags) => self.flags_ok(flags),
            },
        }
    }

    fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), String> {
        match item {
            ClassSetItem::Empty(_) | ClassSetItem::Range(_) | ClassSetItem::Ascii(_) => Ok(()),
            ClassSetItem::Union(_) => Ok(()),
            ClassSetItem::Literal(l) => self.literal_ok(l),
            ClassSetItem::Unicode(_) => Err("Unicode classes differ in re2".into()),
            ClassSetItem::Perl(_) => Err("Perl classes are ASCII-only in re2".into()),
            ClassSetItem::Bracketed(_) => Err("nested classes are not re2 syntax".into()),
        }
    }

    fn visit_class_set_binary_op_pre(&mut self, _op: &ast::ClassSetBinaryOp) -> Result<(), String> {
        Err("class set operations are not re2 syntax".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_regexps_turn_dot_newline_off() {
        assert_eq!(line_regex("a.b").unwrap(), "(?-s:a.b)");
        assert_eq!(line_regex("(?s)a.b|c").unwrap(), "(?-s:(?s)a.b|c)");
        assert_eq!(selector_regex("api|web").unwrap(), "^(?s:api|web)$");
    }

    #[test]
    fn constructs_re2_reads_otherwise_are_declined() {
        for p in [
            r"\d+",
            r"\w",
            r"\s",
            r"\bx\b",
            r"\pL",
            r"[\d]",
            r"(?i)[a-z]",
            r"(?i)é",
            r"é(?i:x)",
            r"(?i)\x{212A}",
            r"(?x) a",
            r"[a[b]]",
            r"[a&&b]",
            r"[a--b]",
            r"(?<n>x)",
            r"\u{41}",
            r"a{1001}",
            r"\<x",
            "(",
        ] {
            assert!(line_regex(p).is_err(), "{p} should be declined");
        }
        for p in [
            r"err(or)?",
            r"^a.*b$",
            r"(?m)^x",
            r"(?s)a.b",
            r"(?U)a+",
            r"[^a-z0-9]",
            r"[[:alpha:]]+",
            r"\x41\x{42}",
            r"\.\*\[",
            r"a{2,1000}",
            r"(?P<n>x)",
            r"\A\z",
            r#""msg":"[^"]*request"#,
            r"\t\n",
            r"(?i)err",
            r"(?i)warning|debug|info",
            r"a(?i:b.c)d",
            r"é(?-i:x)",
            r"(?i-s)k",
        ] {
            assert!(line_regex(p).is_ok(), "{p} should be accepted");
        }
    }
}
