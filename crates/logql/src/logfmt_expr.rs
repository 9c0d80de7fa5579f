//! The key expressions of `| logfmt label="expression"`, read as Loki's
//! logfmt expression grammar reads them: a key (`[A-Za-z_][A-Za-z0-9_]*`) or
//! a quoted string, followed by quoted strings only. Loki matches a line's
//! sanitized keys against the expression as Go's `fmt.Sprintf("%v", path...)`
//! prints the parsed path, so only a single element can ever match.

use crate::ast::LabelExtraction;

enum Tok {
    Key(String),
    Str(String),
}

/// The path string Loki compares keys with, or its parse error
/// (`unexpected char .`, `syntax error: …`).
pub fn logfmt_expression_key(expr: &str) -> Result<String, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    let mut toks: Vec<Tok> = Vec::new();
    let mut lex_err: Option<String> = None;
    while i < chars.len() {
        let c = chars[i];
        if c == ' ' || c == '\t' || c == '\n' {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            toks.push(Tok::Key(chars[start..i].iter().collect()));
        } else if c == '"' {
            i += 1;
            let start = i;
            while i < chars.len() && chars[i] != '"' && chars[i] != ']' {
                i += 1;
            }
            toks.push(Tok::Str(chars[start..i].iter().collect()));
            i += 1;
        } else {
            lex_err = Some(format!("unexpected char {c}"));
            break;
        }
    }
    let mut path: Vec<String> = Vec::new();
    for (n, t) in toks.into_iter().enumerate() {
        match t {
            Tok::Key(_) if n > 0 => return Err("syntax error: unexpected KEY".into()),
            Tok::Key(s) | Tok::Str(s) => path.push(s),
        }
    }
    if path.is_empty() {
        return Err("syntax error: unexpected $end, expecting STRING or KEY".into());
    }
    if let Some(e) = lex_err {
        return Err(e);
    }
    if path.len() == 1 {
        return Ok(path.remove(0));
    }
    let extra: Vec<String> = path[1..].iter().map(|s| format!("string={s}")).collect();
    Ok(format!("{}%!(EXTRA {})", path[0], extra.join(", ")))
}

/// The expression text of one extraction (the label name when none is given).
pub fn expression_of(p: &LabelExtraction) -> &str {
    p.expression.as_deref().unwrap_or(&p.label)
}

/// Loki's text of a `| logfmt` stage with parameters in stage errors:
/// flags, then `label="expression"` pairs joined by commas.
pub fn logfmt_stage_text(strict: bool, keep_empty: bool, params: &[LabelExtraction]) -> String {
    let mut s = String::from("| logfmt ");
    if strict {
        s.push_str("--strict ");
    }
    if keep_empty {
        s.push_str("--keep-empty ");
    }
    let pairs: Vec<String> = params
        .iter()
        .map(|p| format!("{}={}", p.label, crate::printer::quote(expression_of(p))))
        .collect();
    s.push_str(&pairs.join(","));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outcomes recorded from Loki's own logfmt expression parser.
    #[test]
    fn expressions_as_loki_parses_them() {
        assert_eq!(logfmt_expression_key("level").unwrap(), "level");
        assert_eq!(logfmt_expression_key(" x ").unwrap(), "x");
        assert_eq!(logfmt_expression_key("\"level\"").unwrap(), "level");
        assert_eq!(logfmt_expression_key("\"a").unwrap(), "a");
        assert_eq!(
            logfmt_expression_key("a \"b\"").unwrap(),
            "a%!(EXTRA string=b)"
        );
        assert_eq!(
            logfmt_expression_key("http.method").unwrap_err(),
            "unexpected char ."
        );
        assert_eq!(
            logfmt_expression_key("a-b").unwrap_err(),
            "unexpected char -"
        );
        assert_eq!(
            logfmt_expression_key("1abc").unwrap_err(),
            "syntax error: unexpected $end, expecting STRING or KEY"
        );
        assert_eq!(
            logfmt_expression_key("").unwrap_err(),
            "syntax error: unexpected $end, expecting STRING or KEY"
        );
        assert_eq!(
            logfmt_expression_key("a b").unwrap_err(),
            "syntax error: unexpected KEY"
        );
    }
}
