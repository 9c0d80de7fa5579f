//! `| logfmt [--strict] [--keep-empty] [params]` as SQL columns over a row
//! `r`.
//!
//! Loki's decoder (the engine's `logfmt::Decoder`) reads `key=value` pairs
//! separated by whitespace, unquotes `"…"` values, reports malformed pairs
//! and moves on (with `--strict`: sets `__error__` and stops). The SQL
//! decides only *simple* lines (kind 1): pairs with keys of
//! `[A-Za-z_][A-Za-z0-9_]*` (which sanitizing leaves as they are), values
//! unquoted without `"` or `=` or quoted without `\` or `"` inside,
//! separated by spaces, no U+FFFD. The decoder finds no malformed pair
//! there, so `--strict` changes nothing on them; every pair stands where
//! the regexp `PAIR` finds it, and its text is the value as written
//! (unquoted). Every other line is residual (kind 3): the engine reads it.
//!
//! - Without parameters a label `n` comes only from pairs keyed `n`: the
//!   first with a value (with `--keep-empty`, the first: `""` without a
//!   value); `n_extracted` when the base labels hold `n`.
//! - With parameters only their labels are set: `""`, then the last pair
//!   whose key maps to the label (a parameter's key, the first parameter
//!   of that key deciding; or the label itself when no parameter has it as
//!   key). A row whose base labels hold a parameter's label is residual
//!   (Loki sets `_extracted` once and stops the line at a second pair).

use super::{quote, ERROR_LABELS};
use crate::Error;
use runakefli_model::plan::JsonKey;

/// One pair of a simple line: a key, optionally `=` and a value.
const PAIR: &str = r#"[A-Za-z_][A-Za-z0-9_]*(?:=(?:"[^"\\]*"|[^\x00-\x20"=]+)?)?"#;

/// [`PAIR`] with groups: the key, a quoted value's text, an unquoted value.
const PAIR_GROUPS: &str = r#"([A-Za-z_][A-Za-z0-9_]*)(?:=(?:"([^"\\]*)"|([^\x00-\x20"=]+))?)?"#;

/// The stage: its mode and the labels the plan reads.
pub(super) struct Logfmt<'a> {
    /// Labels the plan reads.
    read: Vec<String>,
    /// `--keep-empty` (meaningful without parameters).
    keep_empty: bool,
    /// The parameters; empty without.
    keys: &'a [JsonKey],
}

impl<'a> Logfmt<'a> {
    /// The stage for a plan reading `read`; declines parameters labelled
    /// `__…` (Loki's error labels) and, without parameters, labels that
    /// sanitizing could not give as they are or ending in `_extracted`.
    pub(super) fn new(
        keep_empty: bool,
        keys: &'a [JsonKey],
        read: &[String],
    ) -> Result<Self, Error> {
        if let Some(k) = keys.iter().find(|k| k.label.starts_with("__")) {
            return Err(Error::Unsupported(format!(
                "| logfmt parameter {}={:?}",
                k.label, k.key
            )));
        }
        if keys.is_empty() {
            for n in read {
                let plain =
                    !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                if !ERROR_LABELS.contains(&n.as_str()) && (!plain || n.ends_with("_extracted")) {
                    return Err(Error::Unsupported(format!(
                        "| logfmt without parameters: label {n}"
                    )));
                }
            }
        }
        Ok(Logfmt {
            read: read.to_vec(),
            keep_empty,
            keys,
        })
    }

    /// The kind of a line (see `json::Fields::line_kind`): 1 simple (and,
    /// with parameters, no parameter's label in the base labels), 3 left
    /// to the engine.
    pub(super) fn line_kind(&self, line: &str) -> String {
        let mut simple = format!(
            "match({line}, {}) AND position({line}, '\u{FFFD}') = 0",
            quote(&format!("^ *(?:{PAIR}(?: +|$))*$"))
        );
        let mut labels: Vec<&str> = self.keys.iter().map(|k| k.label.as_str()).collect();
        labels.sort_unstable();
        labels.dedup();
        for l in labels {
            simple.push_str(&format!(" AND NOT {}", in_base(l)));
        }
        format!("if({simple}, 1, 3)")
    }

    /// The pairs of the line (`lkv`, meaningful on simple lines) and per
    /// read label `i` the columns [`Logfmt::label`] reads.
    pub(super) fn columns(&self) -> Vec<String> {
        if self.keys.is_empty() {
            return columns(&self.read, self.keep_empty);
        }
        // (key, value) per pair: the value unquoted, `''` without one.
        let mut out = vec![format!(
            "arrayMap(g -> (g[1], concat(g[2], g[3])), extractAllGroupsVertical(r.line, {})) AS lkv",
            quote(PAIR_GROUPS)
        )];
        for (i, n) in self.read.iter().enumerate() {
            let keys = self.keys_of(n);
            if keys.is_empty() {
                continue;
            }
            let keys: Vec<String> = keys.iter().map(|k| quote(k)).collect();
            out.push(format!(
                "arrayLast(p -> p.1 IN ({}), lkv).2 AS lval{i}",
                keys.join(", ")
            ));
        }
        out
    }

    /// Label `name` of a row the SQL decides, `base` its value in the base
    /// labels.
    pub(super) fn label(&self, name: &str, base: &str) -> Option<String> {
        let i = self.read.iter().position(|n| n == name)?;
        if ERROR_LABELS.contains(&name) {
            return None;
        }
        if self.keys.is_empty() {
            return Some(format!("if(lh{i}, {base}, lval{i})"));
        }
        (!self.keys_of(name).is_empty()).then(|| format!("lval{i}"))
    }

    /// The line keys whose pairs set parameter label `label`: keys whose
    /// first parameter is labelled `label`, and `label` itself when it is
    /// no parameter's key. Empty when `label` is no parameter's.
    fn keys_of<'s>(&'s self, label: &'s str) -> Vec<&'s str> {
        if !self.keys.iter().any(|k| k.label == label) {
            return Vec::new();
        }
        let mut out: Vec<&str> = Vec::new();
        for (j, k) in self.keys.iter().enumerate() {
            let first = self.keys[..j].iter().all(|e| e.key != k.key);
            if first && k.label == label && !out.contains(&k.key.as_str()) {
                out.push(&k.key);
            }
        }
        if !self.keys.iter().any(|k| k.key == label) {
            out.push(label);
        }
        out
    }
}

/// Whether the row's stream labels or metadata hold `label`.
fn in_base(label: &str) -> String {
    let q = quote(label);
    format!("(mapContains(s.stream_labels, {q}) OR has(mapKeys(r.metadata), {q}))")
}

/// The columns without parameters: the pairs of the line (`lkv`) and per
/// read label `i` (named `n`): the first pair keyed `n` with a value (with
/// `keep_empty`, the first pair keyed `n`; `lp{i}`), its value as written,
/// unquoted (`lval{i}`, `NULL` when there is no such pair) and whether the
/// base labels hold `n` (`lh{i}`: then the pair's label is `n_extracted`
/// and `n` keeps the base value).
fn columns(read: &[String], keep_empty: bool) -> Vec<String> {
    let mut out = vec![format!("extractAll(r.line, {}) AS lkv", quote(PAIR))];
    for (i, n) in read.iter().enumerate() {
        if ERROR_LABELS.contains(&n.as_str()) {
            continue;
        }
        let (bare, eq, empty) = (
            quote(n),
            quote(&format!("{n}=")),
            quote(&format!("{n}=\"\"")),
        );
        if keep_empty {
            out.push(format!(
                "arrayFirst(p -> p = {bare} OR startsWith(p, {eq}), lkv) AS lp{i}"
            ));
        } else {
            out.push(format!(
                "arrayFirst(p -> startsWith(p, {eq}) AND p != {eq} AND p != {empty}, lkv) AS lp{i}"
            ));
        }
        let at = n.len() + 2;
        out.push(format!(
            "multiIf(lp{i} = '', NULL, substring(lp{i}, {at}, 1) = '\"', \
             substring(lp{i}, {}, length(lp{i}) - {}), substring(lp{i}, {at})) AS lval{i}",
            at + 1,
            at + 1,
        ));
        out.push(format!("{} AS lh{i}", in_base(n)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_lines_and_pairs_are_what_the_sql_reads() {
        let re = regex::Regex::new(&format!("^ *(?:{PAIR}(?: +|$))*$")).unwrap();
        for simple in [
            "",
            "level=error",
            r#"a=1 b="x y=z" c= d _e=f"#,
            "  k=v   k2=ü€ ",
            r#"k="" x=\n"#,
        ] {
            assert!(re.is_match(simple), "{simple:?}");
        }
        for other in [
            r#"k="a\"b""#,
            "k=v=w",
            r#"k="a"b=1"#,
            r#"k="open"#,
            "1k=v",
            "k-1=v",
            "k=v\tx=y",
            "=v",
            r#"{"json":1}"#,
        ] {
            assert!(!re.is_match(other), "{other:?}");
        }
        let cols = columns(&["level".to_string()], false).join("\n");
        assert!(
            cols.contains("arrayFirst(p -> startsWith(p, 'level=') AND p != 'level=' AND p != 'level=\"\"', lkv) AS lp0"),
            "{cols}"
        );
        let cols = columns(&["level".to_string()], true).join("\n");
        assert!(
            cols.contains("arrayFirst(p -> p = 'level' OR startsWith(p, 'level='), lkv) AS lp0"),
            "{cols}"
        );
    }

    /// The grouped pair regexp finds the pairs `PAIR` finds, with the key
    /// and the unquoted value.
    #[test]
    fn pair_groups_give_keys_and_unquoted_values() {
        let line = r#"a=1 b="x y=z" c= d e="" _f=ü€"#;
        let plain: Vec<&str> = regex::Regex::new(PAIR)
            .unwrap()
            .find_iter(line)
            .map(|m| m.as_str())
            .collect();
        let grouped = regex::Regex::new(PAIR_GROUPS).unwrap();
        let pairs: Vec<(&str, String)> = grouped
            .captures_iter(line)
            .map(|c| {
                let g = |i| c.get(i).map_or("", |m| m.as_str());
                (g(1), format!("{}{}", g(2), g(3)))
            })
            .collect();
        let whole: Vec<&str> = grouped.find_iter(line).map(|m| m.as_str()).collect();
        assert_eq!(whole, plain);
        let expect = [
            ("a", "1"),
            ("b", "x y=z"),
            ("c", ""),
            ("d", ""),
            ("e", ""),
            ("_f", "ü€"),
        ];
        assert_eq!(pairs, expect.map(|(k, v)| (k, v.to_string())).to_vec());
    }

    fn key(label: &str, key: &str) -> JsonKey {
        JsonKey {
            label: label.into(),
            key: key.into(),
        }
    }

    /// As the engine's parser maps a pair's key to a label: the first
    /// parameter of that key, else the key itself when it is a label.
    #[test]
    fn parameters_take_the_keys_the_engine_maps_to_them() {
        let keys = [
            key("l", "level"),
            key("m", "msg"),
            key("x", "level"),
            key("msg", "message"),
            key("m", "text"),
        ];
        let read: Vec<String> = ["l", "m", "x", "msg", "level", "other"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let f = Logfmt::new(false, &keys, &read).unwrap();
        assert_eq!(f.keys_of("l"), ["level", "l"]);
        // `msg` is a parameter's key, so a pair keyed `msg` is `m`'s.
        assert_eq!(f.keys_of("m"), ["msg", "text", "m"]);
        // `level` is `l`'s: the first parameter of a key decides.
        assert_eq!(f.keys_of("x"), ["x"]);
        assert_eq!(f.keys_of("msg"), ["message"]);
        assert!(f.keys_of("level").is_empty());
        assert_eq!(f.label("level", "b"), None);
        assert_eq!(f.label("other", "b"), None);
        assert_eq!(f.label("x", "b").as_deref(), Some("lval2"));
        let kind = f.line_kind("r.line");
        for l in ["'l'", "'m'", "'x'", "'msg'"] {
            assert_eq!(
                kind.matches(&format!("mapContains(s.stream_labels, {l})"))
                    .count(),
                1,
                "{kind}"
            );
        }
        assert!(Logfmt::new(false, &[key("__error__", "e")], &read).is_err());
        assert!(Logfmt::new(false, &[], &["a_extracted".to_string()]).is_err());
    }
}
