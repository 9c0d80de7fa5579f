//! A syntax check of the Go `text/template` sources used by `line_format`
//! and `label_format`, reporting the errors Loki reports at parse time
//! (`template: line:1: unclosed action`, `function "x" not defined`, …).
//! It does not evaluate templates.

/// Functions a LogQL template may call: Go's builtins, the Sprig subset and
/// Loki's own. The one list of them: the engine's template evaluator accepts
/// exactly these and implements every one (its test
/// `every_function_the_parser_accepts_runs` runs a template per name).
pub const TEMPLATE_FUNCTIONS: &[&str] = &[
    // Go builtins
    "and",
    "call",
    "html",
    "index",
    "slice",
    "js",
    "len",
    "not",
    "or",
    "print",
    "printf",
    "println",
    "urlquery",
    "eq",
    "ge",
    "gt",
    "le",
    "lt",
    "ne",
    // Sprig subset
    "lower",
    "upper",
    "title",
    "trunc",
    "substr",
    "contains",
    "hasPrefix",
    "hasSuffix",
    "indent",
    "nindent",
    "replace",
    "repeat",
    "trim",
    "trimAll",
    "trimSuffix",
    "trimPrefix",
    "int",
    "float64",
    "add",
    "sub",
    "mul",
    "div",
    "mod",
    "addf",
    "subf",
    "mulf",
    "divf",
    "max",
    "min",
    "maxf",
    "minf",
    "ceil",
    "floor",
    "round",
    "fromJson",
    "date",
    "toDate",
    "now",
    "unixEpoch",
    "default",
    // Loki
    "ToLower",
    "ToUpper",
    "Replace",
    "Trim",
    "TrimLeft",
    "TrimRight",
    "TrimPrefix",
    "TrimSuffix",
    "TrimSpace",
    "regexReplaceAll",
    "regexReplaceAllLiteral",
    "count",
    "urldecode",
    "urlencode",
    "b64enc",
    "b64dec",
    "bytes",
    "duration",
    "duration_seconds",
    "unixEpochMillis",
    "unixEpochNanos",
    "toDateInZone",
    "unixToTime",
    "alignLeft",
    "alignRight",
    "__line__",
    "__timestamp__",
];

const KEYWORDS: &[&str] = &[
    "if", "else", "end", "range", "with", "define", "template", "block", "nil", "true", "false",
    "break", "continue",
];

/// Checks a template named `name` (`line` or `label`); the error reads like
/// Go's: `template: line:1: unclosed action`.
pub fn check_template(name: &str, src: &str) -> Result<(), String> {
    let err = |line: usize, msg: String| Err(format!("template: {name}:{line}: {msg}"));
    let b: Vec<char> = src.chars().collect();
    let line_at = |i: usize| 1 + b[..i.min(b.len())].iter().filter(|c| **c == '\n').count();
    let mut i = 0;
    let mut stack: Vec<&str> = Vec::new();
    while i + 1 < b.len() {
        if !(b[i] == '{' && b[i + 1] == '{') {
            i += 1;
            continue;
        }
        let start = i;
        i += 2;
        if b.get(i) == Some(&'-') && b.get(i + 1).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        while b.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        if b.get(i) == Some(&'/') && b.get(i + 1) == Some(&'*') {
            let close =
                (i + 2..b.len().saturating_sub(1)).find(|&j| b[j] == '*' && b[j + 1] == '/');
            let Some(c) = close else {
                return err(line_at(start), "unclosed comment".into());
            };
            i = c + 2;
            while b.get(i).is_some_and(|c| c.is_whitespace()) || b.get(i) == Some(&'-') {
                i += 1;
            }
            if !(b.get(i) == Some(&'}') && b.get(i + 1) == Some(&'}')) {
                return err(
                    line_at(start),
                    "comment ends before closing delimiter".into(),
                );
            }
            i += 2;
            continue;
        }
        let mut words: Vec<String> = Vec::new();
        let mut first = true;
        let mut prev_dot = false;
        loop {
            let Some(&c) = b.get(i) else {
                return err(line_at(i), "unclosed action".into());
            };
            if c == '}' && b.get(i + 1) == Some(&'}') {
                i += 2;
                break;
            }
            if c == '-'
                && b.get(i + 1) == Some(&'}')
                && b.get(i + 2) == Some(&'}')
                && i > 0
                && b[i - 1].is_whitespace()
            {
                i += 3;
                break;
            }
            match c {
                '"' | '`' | '\'' => {
                    let q = c;
                    i += 1;
                    loop {
                        match b.get(i) {
                            None => {
                                let what = match q {
                                    '"' => "unterminated quoted string",
                                    '`' => "unterminated raw quoted string",
                                    _ => "unterminated character constant",
                                };
                                return err(line_at(start), what.into());
                            }
                            Some('\n') if q != '`' => {
                                let what = if q == '"' {
                                    "unterminated quoted string"
                                } else {
                                    "unterminated character constant"
                                };
                                return err(line_at(i), what.into());
                            }
                            Some('\\') if q != '`' => i += 2,
                            Some(&x) if x == q => {
                                i += 1;
                                break;
                            }
                            _ => i += 1,
                        }
                    }
                    words.push("\"".into());
                    prev_dot = false;
                }
                '.' | '$' => {
                    i += 1;
                    while b.get(i).is_some_and(|c| c.is_alphanumeric() || *c == '_') {
                        i += 1;
                    }
                    prev_dot = true;
                    words.push(".".into());
                }
                c if c.is_alphabetic() || c == '_' => {
                    let s = i;
                    while b.get(i).is_some_and(|c| c.is_alphanumeric() || *c == '_') {
                        i += 1;
                    }
                    let w: String = b[s..i].iter().collect();
                    if !prev_dot
                        && !KEYWORDS.contains(&w.as_str())
                        && !TEMPLATE_FUNCTIONS.contains(&w.as_str())
                    {
                        return err(line_at(s), format!("function {w:?} not defined"));
                    }
                    if first {
                        match w.as_str() {
                            "if" | "range" | "with" | "define" | "block" => stack.push("open"),
                            "end" if stack.pop().is_none() => {
                                return err(line_at(s), "unexpected {{end}}".into());
                            }
                            "else" if stack.is_empty() => {
                                return err(line_at(s), "unexpected {{else}}".into())
                            }
                            _ => {}
                        }
                    }
                    words.push(w);
                    prev_dot = false;
                }
                c if c.is_ascii_digit()
                    || ((c == '-' || c == '+')
                        && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) =>
                {
                    i += 1;
                    while b
                        .get(i)
                        .is_some_and(|c| c.is_alphanumeric() || matches!(*c, '.' | '_' | '+' | '-'))
                    {
                        i += 1;
                    }
                    words.push("0".into());
                    prev_dot = false;
                }
                c if c.is_whitespace() => {
                    i += 1;
                    prev_dot = false;
                }
                '|' | '(' | ')' | ',' | '=' | ':' => {
                    i += 1;
                    prev_dot = false;
                    words.push(c.to_string());
                }
                other => {
                    return err(
                        line_at(i),
                        format!(
                            "unrecognized character in action: U+{:04X} '{other}'",
                            other as u32
                        ),
                    );
                }
            }
            first = false;
        }
        if words.is_empty() {
            return err(line_at(start), "missing value for command".into());
        }
    }
    if !stack.is_empty() {
        return err(line_at(b.len()), "unexpected EOF".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_good_templates() {
        for t in [
            "{{.foo}}",
            "{{ .msg | ToUpper }} {{ __line__ }}",
            "{{ if eq .a \"x\" }}y{{ else }}z{{ end }}",
            "{{- .a -}}",
            "{{/* c */}}x",
            "plain {",
            "{{ printf \"%s}}\" .a }}",
        ] {
            assert_eq!(check_template("line", t), Ok(()), "{t}");
        }
    }

    #[test]
    fn reports_go_errors() {
        assert_eq!(
            check_template("line", "{{.foo").unwrap_err(),
            "template: line:1: unclosed action"
        );
        assert_eq!(
            check_template("line", "{{ .msg | nosuchfunc }}").unwrap_err(),
            "template: line:1: function \"nosuchfunc\" not defined"
        );
        assert_eq!(
            check_template("label", "{{ if .a }}").unwrap_err(),
            "template: label:1: unexpected EOF"
        );
    }
}
