//! Label sets: the identity of a stream ([`Labels`]), and the sorting and
//! printing every sorted label set shares ([`sort_unique`],
//! [`write_pairs`]).
//!
//! A stream's labels drop empty values (Loki and Prometheus treat `x=""` as
//! no label) and hash to the stream's stored id. The engine's answer labels
//! (`runakefli_engine::LabelSet`) are another concept: what a pipeline makes
//! of a row, which may hold empty values (`| label_format note=""`), shared
//! between the rows and series that carry it. Both keep their pairs sorted
//! and print alike through the functions here.

use std::fmt;
use thiserror::Error;

/// A stream's identity inside one tenant: a 64-bit hash of its canonical label set.
pub type StreamId = u64;

/// A label set, sorted by name with unique names (the canonical form).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Labels(Vec<(String, String)>);

/// Why a label string such as `{app="api"}` could not be parsed.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum LabelsParseError {
    /// The text does not follow `{name="value", ...}`.
    #[error("invalid labels {text:?}: {reason}")]
    Syntax {
        /// The offending text.
        text: String,
        /// What was expected.
        reason: String,
    },
}

impl Labels {
    /// [`Labels::new`] from borrowed `(name, value)` pairs.
    pub fn from_strs(pairs: &[(&str, &str)]) -> Self {
        Labels::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    /// Builds a canonical label set: sorted by name; for a repeated name the last value wins.
    /// Empty values are dropped, as Loki and Prometheus treat them as absent.
    pub fn new(mut pairs: Vec<(String, String)>) -> Self {
        pairs.retain(|(_, v)| !v.is_empty());
        Labels(sort_unique(pairs))
    }

    /// The empty label set.
    pub fn empty() -> Self {
        Labels(Vec::new())
    }

    /// The pairs, sorted by name.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }

    /// Consumes the set, returning its sorted pairs.
    pub fn into_pairs(self) -> Vec<(String, String)> {
        self.0
    }

    /// The value of `name`, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(name))
            .ok()
            .map(|i| self.0[i].1.as_str())
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are no labels.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The stable hash that identifies this label set's stream within a tenant.
    pub fn stream_id(&self) -> StreamId {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for (k, v) in &self.0 {
            h.update(k.as_bytes());
            h.update(&[0xff]);
            h.update(v.as_bytes());
            h.update(&[0xfe]);
        }
        h.digest()
    }

    /// Parses Loki's label string form, e.g. `{app="api", env="prod"}`.
    /// Values are Go-quoted strings (double quotes with escapes, or backticks).
    pub fn parse(text: &str) -> Result<Labels, LabelsParseError> {
        let err = |reason: &str| LabelsParseError::Syntax {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let s = text.trim();
        let inner = s
            .strip_prefix('{')
            .and_then(|r| r.strip_suffix('}'))
            .ok_or_else(|| err("expected labels enclosed in braces"))?;
        let b = inner.as_bytes();
        let mut i = 0;
        let mut pairs = Vec::new();
        let skip_ws = |i: &mut usize| {
            while *i < b.len() && (b[*i] as char).is_ascii_whitespace() {
                *i += 1;
            }
        };
        loop {
            skip_ws(&mut i);
            if i >= b.len() {
                break;
            }
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            if start == i {
                return Err(err("expected a label name"));
            }
            let name = &inner[start..i];
            if name.as_bytes()[0].is_ascii_digit() {
                return Err(err("label names must not start with a digit"));
            }
            skip_ws(&mut i);
            if i >= b.len() || b[i] != b'=' {
                return Err(err("expected '=' after a label name"));
            }
            i += 1;
            skip_ws(&mut i);
            let (value, used) =
                unquote_go(&inner[i..]).ok_or_else(|| err("expected a quoted label value"))?;
            i += used;
            pairs.push((name.to_string(), value));
            skip_ws(&mut i);
            if i < b.len() {
                if b[i] == b',' {
                    i += 1;
                } else {
                    return Err(err("expected ',' between labels"));
                }
            }
        }
        Ok(Labels::new(pairs))
    }
}

impl fmt::Display for Labels {
    /// Loki's form: `{a="b", c="d"}` with Go-quoted values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_pairs(f, &self.0)
    }
}

/// Pairs sorted by name with unique names: for a repeated name the last
/// value wins (a stable sort keeps the given order among equal names).
pub fn sort_unique(mut pairs: Vec<(String, String)>) -> Vec<(String, String)> {
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(String, String)> = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        match out.last_mut() {
            Some(last) if last.0 == k => last.1 = v,
            _ => out.push((k, v)),
        }
    }
    out
}

/// Writes sorted pairs in Loki's form: `{a="b", c="d"}` with Go-quoted values.
pub fn write_pairs(f: &mut impl fmt::Write, pairs: &[(String, String)]) -> fmt::Result {
    f.write_str("{")?;
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        f.write_str(k)?;
        f.write_str("=")?;
        f.write_str(&quote_go(v))?;
    }
    f.write_str("}")
}

/// What to print between a label name and the operator after it when a
/// query is printed back: nothing for a plain identifier, a space for a name
/// the lexer took from a lone symbol (`!`), which would otherwise join the
/// operator into another token (`!` `=~` printed `!=~` reads as `!=` `~`).
pub fn name_op_gap(name: &str) -> &'static str {
    let mut chars = name.chars();
    let plain = chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric());
    if plain {
        ""
    } else {
        " "
    }
}

/// Quotes a string as Go's `strconv.Quote` does (printable Unicode kept as is).
pub fn quote_go(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => {
                let n = c as u32;
                if n <= 0xffff {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Reads one Go string literal (`"…"` with escapes, or `` `…` ``) at the start of `s`.
/// Returns the value and the number of bytes consumed.
pub fn unquote_go(s: &str) -> Option<(String, usize)> {
    let mut chars = s.char_indices();
    let (_, q) = chars.next()?;
    if q == '`' {
        let end = s[1..].find('`')?;
        return Some((s[1..1 + end].to_string(), end + 2));
    }
    if q != '"' {
        return None;
    }
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, i + 1)),
            '\\' => {
                let (_, e) = chars.next()?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'a' => out.push('\u{7}'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'v' => out.push('\u{b}'),
                    '\\' => out.push('\\'),
                    '"' => out.push('"'),
                    '\'' => out.push('\''),
                    'x' | 'u' | 'U' => {
                        let n = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let mut v = 0u32;
                        for _ in 0..n {
                            let (_, h) = chars.next()?;
                            v = v * 16 + h.to_digit(16)?;
                        }
                        out.push(char::from_u32(v)?);
                    }
                    '0'..='7' => {
                        let mut v = e.to_digit(8)?;
                        for _ in 0..2 {
                            let (_, h) = chars.next()?;
                            v = v * 8 + h.to_digit(8)?;
                        }
                        out.push(char::from_u32(v)?);
                    }
                    _ => return None,
                }
            }
            '\n' => return None,
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_order_and_display() {
        let l = Labels::new(vec![
            ("b".into(), "2".into()),
            ("a".into(), "x\"y".into()),
            ("c".into(), String::new()),
        ]);
        assert_eq!(l.to_string(), r#"{a="x\"y", b="2"}"#);
        assert_eq!(l.get("b"), Some("2"));
        assert_eq!(l.get("c"), None);
    }

    #[test]
    fn parse_round_trips() {
        let l = Labels::parse(r#"{job="a\nb", app=`raw`, env="é"}"#).unwrap();
        assert_eq!(l.get("job"), Some("a\nb"));
        assert_eq!(l.get("app"), Some("raw"));
        assert_eq!(Labels::parse(&l.to_string()).unwrap(), l);
        assert_eq!(Labels::parse("{}").unwrap(), Labels::empty());
    }

    #[test]
    fn parse_rejects_garbage() {
        for bad in [
            "app=\"x\"",
            "{app}",
            "{app=x}",
            "{1a=\"x\"}",
            "{a=\"x\" b=\"y\"}",
        ] {
            assert!(Labels::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn stream_id_depends_on_labels_only() {
        let a = Labels::new(vec![("a".into(), "1".into()), ("b".into(), "2".into())]);
        let b = Labels::new(vec![("b".into(), "2".into()), ("a".into(), "1".into())]);
        let c = Labels::new(vec![("a".into(), "12".into())]);
        assert_eq!(a.stream_id(), b.stream_id());
        assert_ne!(a.stream_id(), c.stream_id());
    }

    proptest::proptest! {
        #[test]
        fn display_parse_round_trip(pairs in proptest::collection::vec(("[a-z_][a-z0-9_]{0,8}", "\\PC{0,12}"), 0..6)) {
            let l = Labels::new(pairs);
            proptest::prop_assert_eq!(Labels::parse(&l.to_string()).unwrap(), l);
        }
    }
}
