//! `| logfmt` (no flags, no parameters) as SQL columns over a row `r`.
//!
//! Loki's decoder (the engine's `logfmt::Decoder`) reads `key=value` pairs
//! separated by whitespace, unquotes `"…"` values, skips pairs without a
//! value (`k`, `k=`, `k=""`), reports malformed pairs and moves on; the
//! parser names each label by its key sanitized as `| json` does, gives the
//! first value of each final name, adds `_extracted` when the base labels
//! hold the name and turns U+FFFD in a value into a space. The SQL decides
//! only *simple* lines (kind 1): pairs with keys of `[A-Za-z_][A-Za-z0-9_]*`
//! (which sanitizing leaves as they are), values unquoted without `"` or
//! `=` or quoted without `\` or `"` inside, separated by spaces, no U+FFFD.
//! There every pair stands where the regexp `PAIR` finds it, a label `n`
//! comes only from pairs keyed `n`, and its text is the value as written
//! (unquoted). Every other line is residual (kind 3): the engine reads it.

use super::quote;

/// One pair of a simple line: a key, optionally `=` and a value.
const PAIR: &str = r#"[A-Za-z_][A-Za-z0-9_]*(?:=(?:"[^"\\]*"|[^\x00-\x20"=]+)?)?"#;

/// The kind of a line (see `json::Fields::line_kind`): 1 simple, 3 left to
/// the engine.
pub(super) fn line_kind(line: &str) -> String {
    format!(
        "if(match({line}, {}) AND position({line}, '\u{FFFD}') = 0, 1, 3)",
        quote(&format!("^ *(?:{PAIR}(?: +|$))*$"))
    )
}

/// The pairs of the line (`lkv`, meaningful on simple lines) and per read
/// label `i` (named `n`): the first pair keyed `n` with a value (`lp{i}`),
/// the value as written, unquoted (`lval{i}`, `NULL` when there is none)
/// and whether the base labels hold `n` (`lh{i}`: then the pair's label is
/// `n_extracted` and `n` keeps the base value).
pub(super) fn columns(read: &[String]) -> Vec<String> {
    let mut out = vec![format!("extractAll(r.line, {}) AS lkv", quote(PAIR))];
    for (i, n) in read.iter().enumerate() {
        if super::json::ERROR_LABELS.contains(&n.as_str()) {
            continue;
        }
        let q = quote(n);
        let (eq, empty) = (quote(&format!("{n}=")), quote(&format!("{n}=\"\"")));
        let at = n.len() + 2;
        out.push(format!(
            "arrayFirst(p -> startsWith(p, {eq}) AND p != {eq} AND p != {empty}, lkv) AS lp{i}"
        ));
        out.push(format!(
            "multiIf(lp{i} = '', NULL, substring(lp{i}, {at}, 1) = '\"', \
             substring(lp{i}, {}, length(lp{i}) - {}), substring(lp{i}, {at})) AS lval{i}",
            at + 1,
            at + 1,
        ));
        out.push(format!(
            "(mapContains(s.stream_labels, {q}) OR has(mapKeys(r.metadata), {q})) AS lh{i}"
        ));
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
        let cols = columns(&["level".to_string()]).join("\n");
        assert!(
            cols.contains("arrayFirst(p -> startsWith(p, 'level=') AND p != 'level=' AND p != 'level=\"\"', lkv) AS lp0"),
            "{cols}"
        );
        assert!(
            cols.contains("substring(lp0, 7, 1) = '\"', substring(lp0, 8, length(lp0) - 8), substring(lp0, 7)"),
            "{cols}"
        );
    }
}
