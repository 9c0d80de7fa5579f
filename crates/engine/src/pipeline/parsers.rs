//! Label-extracting parsers: `| json`, `| logfmt`, `| regexp`, `| pattern`,
//! `| unpack`, with Loki's key sanitizing, `_extracted` suffixes, first-wins
//! duplicates and `__error__` reporting.

use super::jsonscan::{self, Kind, PathPart};
use super::labels::LabelsBuilder;
use super::logfmt::Decoder;
use super::pattern::Pattern;
use regex::Regex;

/// Error name set when a JSON line cannot be parsed.
pub const ERR_JSON: &str = "JSONParserErr";
/// Error name set when a logfmt line cannot be parsed.
pub const ERR_LOGFMT: &str = "LogfmtParserErr";

/// Loki's label-name sanitizing: invalid characters become `_`; a leading
/// digit gets a `_` prefix when `is_prefix`.
pub fn sanitize_label_key(key: &str, is_prefix: bool) -> String {
    sanitize_cow(key, is_prefix).into_owned()
}

/// [`sanitize_label_key`] without allocating when the key is already valid.
pub fn sanitize_cow(key: &str, is_prefix: bool) -> std::borrow::Cow<'_, str> {
    let t = key.trim();
    let valid = !t.is_empty()
        && t.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && !(is_prefix && t.as_bytes()[0].is_ascii_digit());
    if valid {
        return std::borrow::Cow::Borrowed(t);
    }
    std::borrow::Cow::Owned(sanitize_slow(t, is_prefix))
}

fn sanitize_slow(key: &str, is_prefix: bool) -> String {
    let mut out = String::with_capacity(key.len() + 1);
    if is_prefix && key.as_bytes().first().is_some_and(|c| c.is_ascii_digit()) {
        out.push('_');
    }
    for c in key.chars() {
        out.push(if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '_'
        });
    }
    out
}

/// Sets a parsed label unless this parser already set it for this line
/// (first occurrence wins), adding `_extracted` on a clash with stream labels.
fn set_parsed(lbs: &mut LabelsBuilder, seen: &mut Vec<String>, name: &str, value: &str) {
    let extracted;
    let name = if lbs.base_has(name) {
        extracted = format!("{name}_extracted");
        extracted.as_str()
    } else {
        name
    };
    if seen.iter().any(|s| s == name) {
        return;
    }
    lbs.set(name, value);
    seen.push(name.to_string());
}

/// A JSON string value: borrowed when it has no escapes.
fn json_string(v: &[u8]) -> std::borrow::Cow<'_, str> {
    if !v.contains(&b'\\') {
        if let Ok(s) = std::str::from_utf8(v) {
            if s.contains('\u{FFFD}') {
                return std::borrow::Cow::Borrowed("");
            }
            return std::borrow::Cow::Borrowed(s);
        }
    }
    std::borrow::Cow::Owned(jsonscan::unescape_string(v))
}

/// `| json` without parameters: flattens every scalar member.
#[derive(Debug, Default)]
pub struct JsonParser {
    seen: Vec<String>,
    /// When set, only members whose label is one of these are set (see
    /// [`JsonParser::only`]); the whole line is still walked, so a line
    /// that is not valid JSON gets the same error.
    only: Option<Vec<String>>,
    prefix: String,
}

impl JsonParser {
    /// A parser that sets only the labels named in `labels` (a member named
    /// `x` is set when `x` or `x_extracted` is asked for, so its renaming
    /// beside a stream label `x` is unchanged). Every other label of the
    /// line is left out: for queries that read no other label after this
    /// stage (Loki's parser hints do the same).
    pub fn only(labels: Vec<String>) -> JsonParser {
        JsonParser {
            only: Some(labels),
            ..JsonParser::default()
        }
    }

    /// Extracts labels from `line`.
    pub fn process(&mut self, line: &str, lbs: &mut LabelsBuilder) {
        self.seen.clear();
        self.prefix.clear();
        let mut out = Out {
            lbs,
            seen: &mut self.seen,
            only: self.only.as_deref(),
        };
        if let Err(e) = walk(line.as_bytes(), &mut self.prefix, &mut out, 0) {
            lbs.set_err(ERR_JSON);
            lbs.set_err_details(&e);
        }
    }
}

/// Where `walk` puts what it finds.
struct Out<'a> {
    lbs: &'a mut LabelsBuilder,
    seen: &'a mut Vec<String>,
    only: Option<&'a [String]>,
}

impl Out<'_> {
    /// True when the member that becomes label `name` is wanted.
    fn wants(&self, name: &str) -> bool {
        match self.only {
            None => true,
            Some(only) => only.iter().any(|w| {
                w == name
                    || w.strip_suffix("_extracted")
                        .is_some_and(|stem| stem == name)
            }),
        }
    }
}

/// Nesting beyond this depth is not flattened (bounds recursion on hostile lines).
const MAX_DEPTH: usize = 128;

fn walk(obj: &[u8], prefix: &mut String, out: &mut Out, depth: usize) -> Result<(), String> {
    jsonscan::object_each(obj, &mut |key, value, kind| {
        let key = String::from_utf8_lossy(key);
        match kind {
            Kind::String | Kind::Number | Kind::Boolean => {
                let value = |kind| match kind {
                    Kind::String => json_string(value),
                    _ => String::from_utf8_lossy(value),
                };
                if prefix.is_empty() {
                    let name = sanitize_cow(&key, true);
                    if out.wants(&name) {
                        set_parsed(out.lbs, out.seen, &name, &value(kind));
                    }
                } else {
                    let len = prefix.len();
                    prefix.push('_');
                    prefix.push_str(&sanitize_cow(&key, false));
                    if out.wants(prefix) {
                        set_parsed(out.lbs, out.seen, prefix, &value(kind));
                    }
                    prefix.truncate(len);
                }
                Ok(())
            }
            Kind::Object if depth >= MAX_DEPTH => Ok(()),
            Kind::Object => {
                let len = prefix.len();
                if !prefix.is_empty() {
                    prefix.push('_');
                }
                prefix.push_str(&sanitize_label_key(&key, len == 0));
                let r = walk(value, prefix, out, depth + 1);
                prefix.truncate(len);
                r
            }
            Kind::Array | Kind::Null => Ok(()),
        }
    })
}

/// `| json a="x.y", b`: extracts the given paths.
#[derive(Debug)]
pub struct JsonExprParser {
    ids: Vec<(String, Vec<PathPart>)>,
}

impl JsonExprParser {
    /// Compiles the extraction paths.
    pub fn new(params: &[runakefli_logql::LabelExtraction]) -> Result<Self, String> {
        let mut ids = Vec::new();
        for p in params {
            let expr = p.expression.clone().unwrap_or_else(|| p.label.clone());
            ids.push((p.label.clone(), jsonscan::parse_path(&expr)?));
        }
        Ok(JsonExprParser { ids })
    }

    /// Extracts labels from `line`.
    pub fn process(&mut self, line: &str, lbs: &mut LabelsBuilder) {
        let d = line.as_bytes();
        if d.is_empty() {
            return;
        }
        if !matches!(d[0], b'"' | b'{' | b'[') {
            lbs.set_err(ERR_JSON);
            return;
        }
        for (id, path) in &self.ids {
            let name = if lbs.base_has(id) {
                format!("{id}_extracted")
            } else {
                id.clone()
            };
            let v = match jsonscan::get_path(d, path) {
                Some((v, Kind::String)) => jsonscan::unescape_string(v),
                Some((_, Kind::Null)) | None => String::new(),
                Some((v, _)) => String::from_utf8_lossy(v).into_owned(),
            };
            lbs.set(&name, &v);
        }
    }
}

/// `| logfmt [--strict] [--keep-empty] [params]`.
#[derive(Debug)]
pub struct LogfmtParser {
    strict: bool,
    keep_empty: bool,
    params: Vec<(String, String)>,
    seen: Vec<String>,
}

impl LogfmtParser {
    /// Builds the parser; `params` are (label, key) pairs.
    pub fn new(
        strict: bool,
        keep_empty: bool,
        params: &[runakefli_logql::LabelExtraction],
    ) -> Self {
        // Keys are compared with the expression as Loki prints its parsed
        // path; one it cannot parse was refused when the query was checked.
        let params = params
            .iter()
            .map(|p| {
                let e = runakefli_logql::logfmt_expr::expression_of(p);
                let key = runakefli_logql::logfmt_expr::logfmt_expression_key(e)
                    .unwrap_or_else(|_| e.to_string());
                (p.label.clone(), key)
            })
            .collect();
        LogfmtParser {
            strict,
            keep_empty,
            params,
            seen: Vec::new(),
        }
    }

    /// Extracts labels from `line`.
    pub fn process(&mut self, line: &str, lbs: &mut LabelsBuilder) {
        self.seen.clear();
        if !self.params.is_empty() {
            self.process_params(line, lbs);
            return;
        }
        let mut dec = Decoder::new(line.as_bytes());
        while !dec.eol() {
            if !dec.scan_keyval() {
                if self.strict {
                    break;
                }
                continue;
            }
            let key = String::from_utf8_lossy(dec.key());
            let value = dec.value();
            if value.is_none() && !self.keep_empty {
                continue;
            }
            // Loki replaces U+FFFD in a value with a space.
            let value = value
                .map(|v| String::from_utf8_lossy(v).replace('\u{FFFD}', " "))
                .unwrap_or_default();
            let name = sanitize_cow(&key, true);
            if name.is_empty() {
                continue;
            }
            set_parsed(lbs, &mut self.seen, &name, &value);
        }
        if self.strict {
            if let Some(e) = dec.err() {
                lbs.set_err(ERR_LOGFMT);
                lbs.set_err_details(e);
            }
        }
    }
}

impl LogfmtParser {
    /// `| logfmt label="key", …` as Loki's expression parser runs: every
    /// label starts empty (unless it clashes), a line's sanitized keys are
    /// compared with the expressions, a repeated key overwrites (last wins),
    /// a clashing label is set once as `<label>_extracted` and a repeat of it
    /// ends the line, `--keep-empty` changes nothing.
    fn process_params(&mut self, line: &str, lbs: &mut LabelsBuilder) {
        for (id, _) in &self.params {
            if !lbs.base_has(id) {
                lbs.set(id, "");
                self.seen.push(id.clone());
            }
        }
        let mut dec = Decoder::new(line.as_bytes());
        while !dec.eol() {
            if !dec.scan_keyval() {
                if self.strict {
                    break;
                }
                continue;
            }
            let raw = String::from_utf8_lossy(dec.key());
            let key = sanitize_cow(&raw, true);
            if key.is_empty() {
                continue;
            }
            let always = self.params.iter().any(|(id, _)| *id == key);
            if !always && self.seen.iter().any(|s| *s == key) {
                continue;
            }
            let value = dec
                .value()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default();
            let value = if value.contains('\u{FFFD}') {
                String::new()
            } else {
                value
            };
            let id = match self.params.iter().find(|(_, k)| *k == key) {
                Some((id, _)) => id.clone(),
                None => key.into_owned(),
            };
            if !self.params.iter().any(|(i, _)| *i == id) {
                continue;
            }
            let name = if lbs.base_has(&id) {
                let name = format!("{id}_extracted");
                if self.seen.contains(&name) {
                    break;
                }
                name
            } else {
                id
            };
            lbs.set(&name, &value);
            if !self.seen.contains(&name) {
                self.seen.push(name);
            }
        }
        if self.strict {
            if let Some(e) = dec.err() {
                lbs.set_err(ERR_LOGFMT);
                lbs.set_err_details(e);
            }
        }
    }
}

/// `| regexp "(?P<name>…)"`.
#[derive(Debug)]
pub struct RegexpParser {
    re: Regex,
    names: Vec<(usize, String)>,
}

impl RegexpParser {
    /// Compiles the expression; errors use Loki's wording.
    pub fn new(src: &str) -> Result<Self, String> {
        let mut seen_names: Vec<&str> = Vec::new();
        for cap in src.split("(?P<").skip(1).chain(src.split("(?<").skip(1)) {
            if let Some(end) = cap.find('>') {
                let n = &cap[..end];
                if !n.is_empty() && seen_names.contains(&n) {
                    return Err(format!(
                        "invalid regexp parser: duplicate extracted label name '{n}'"
                    ));
                }
                seen_names.push(n);
            }
        }
        let re = Regex::new(src).map_err(|e| {
            format!(
                "invalid regexp parser: {}",
                super::line_filter::regex_error(&e)
            )
        })?;
        let mut names: Vec<(usize, String)> = Vec::new();
        for (i, n) in re.capture_names().enumerate() {
            if let Some(n) = n {
                if names.iter().any(|(_, x)| x == n) {
                    return Err(format!(
                        "invalid regexp parser: duplicate extracted label name '{n}'"
                    ));
                }
                names.push((i, n.to_string()));
            }
        }
        if names.is_empty() {
            return Err(
                "invalid regexp parser: at least one named capture must be supplied".into(),
            );
        }
        Ok(RegexpParser { re, names })
    }

    /// Extracts labels from `line`.
    pub fn process(&mut self, line: &str, lbs: &mut LabelsBuilder) {
        if let Some(c) = self.re.captures(line) {
            for (i, n) in &self.names {
                let v = c.get(*i).map(|m| m.as_str()).unwrap_or("");
                let name = sanitize_label_key(n, true);
                let name = if lbs.base_has(&name) {
                    name + "_extracted"
                } else {
                    name
                };
                lbs.set(&name, v);
            }
        }
    }
}

/// `| pattern "…"`.
#[derive(Debug)]
pub struct PatternParser {
    pattern: Pattern,
}

impl PatternParser {
    /// Compiles the pattern; errors use Loki's wording.
    pub fn new(src: &str) -> Result<Self, String> {
        let pattern = Pattern::new(src).map_err(|e| format!("invalid pattern parser: {e}"))?;
        if !pattern.has_capture() {
            return Err("invalid pattern parser: at least one capture is required".into());
        }
        Ok(PatternParser { pattern })
    }

    /// Extracts labels from `line`.
    pub fn process(&mut self, line: &str, lbs: &mut LabelsBuilder) {
        let m = self.pattern.matches(line);
        for (name, v) in self.pattern.names().iter().zip(m) {
            let name = if lbs.base_has(name) {
                format!("{name}_extracted")
            } else {
                name.clone()
            };
            lbs.set(&name, v);
        }
    }
}

/// `| unpack`: string members become labels; `_entry` replaces the line.
#[derive(Debug, Default)]
pub struct UnpackParser {
    buf: Vec<(String, String)>,
}

impl UnpackParser {
    /// Unpacks `line`, possibly replacing it.
    pub fn process(&mut self, line: &mut String, lbs: &mut LabelsBuilder) {
        if line.is_empty() {
            return;
        }
        self.buf.clear();
        if !line.starts_with('{') {
            lbs.set_err(ERR_JSON);
            lbs.set_err_details("expecting json object(6), but it is not");
            return;
        }
        let mut entry: Option<String> = None;
        let buf = &mut self.buf;
        let r = jsonscan::object_each(line.as_bytes(), &mut |key, value, kind| {
            if kind != Kind::String {
                return Ok(());
            }
            let key = String::from_utf8_lossy(key).into_owned();
            if key == "_entry" {
                let mut out = Vec::new();
                jsonscan::unescape_into(value, &mut out)
                    .map_err(|_| jsonscan::errors::BAD_ESCAPE.to_string())?;
                entry = Some(String::from_utf8_lossy(&out).into_owned());
                return Ok(());
            }
            buf.push((key, jsonscan::unescape_string(value)));
            Ok(())
        });
        if let Err(e) = r {
            lbs.set_err(ERR_JSON);
            lbs.set_err_details(&e);
            return;
        }
        if let Some(e) = entry {
            for (k, v) in self.buf.drain(..) {
                let k = if lbs.base_has(&k) {
                    k + "_extracted"
                } else {
                    k
                };
                lbs.set(&k, &v);
            }
            *line = e;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labelset::LabelSet;

    fn run(f: impl FnOnce(&mut LabelsBuilder)) -> String {
        let base = LabelSet::new(vec![("app".into(), "x".into())]);
        let mut b = LabelsBuilder::default();
        b.reset(&base, &[]);
        f(&mut b);
        b.labels().to_string()
    }

    #[test]
    fn json_flattens_and_first_wins() {
        let s = run(|b| {
            JsonParser::default().process(
                r#"{"a":{"b-c":1},"app":"y","l":"i","l":"e","n":null,"arr":[1]}"#,
                b,
            )
        });
        assert_eq!(s, r#"{a_b_c="1", app="x", app_extracted="y", l="i"}"#);
        let e = run(|b| JsonParser::default().process("not json", b));
        let deep = "{\"a\":".repeat(20_000) + &"}".repeat(20_000);
        let _ = run(|b| JsonParser::default().process(&deep, b));
        assert!(e.contains("JSONParserErr"));
    }

    #[test]
    fn logfmt_modes() {
        let s = run(|b| LogfmtParser::new(false, false, &[]).process("a=1 b c= a=2 d=\"x y\"", b));
        assert_eq!(s, r#"{a="1", app="x", d="x y"}"#);
        let s = run(|b| LogfmtParser::new(false, true, &[]).process("a=1 b", b));
        assert_eq!(s, r#"{a="1", app="x", b=""}"#);
        let s = run(|b| LogfmtParser::new(true, false, &[]).process("a=1 =x", b));
        assert!(s.contains("LogfmtParserErr"), "{s}");
    }

    fn extraction(label: &str, expression: Option<&str>) -> runakefli_logql::LabelExtraction {
        runakefli_logql::LabelExtraction {
            label: label.into(),
            expression: expression.map(str::to_string),
        }
    }

    /// Loki's `LogfmtExpressionParser`, checked line by line against it over
    /// the whole corpus: a repeated key overwrites, keys are compared
    /// sanitized, a clashing label is set once and its repeat ends the line,
    /// a plain parser's U+FFFD becomes a space.
    #[test]
    fn logfmt_with_parameters_as_loki() {
        let lvl = [extraction("l", Some("level"))];
        let s = run(|b| LogfmtParser::new(false, false, &lvl).process("level=info level=warn", b));
        assert_eq!(s, r#"{app="x", l="warn"}"#);
        let s = run(|b| LogfmtParser::new(false, false, &lvl).process("msg=x", b));
        assert_eq!(s, r#"{app="x", l=""}"#);
        let app = [extraction("app", None), extraction("m", Some("msg"))];
        let s =
            run(|b| LogfmtParser::new(false, false, &app).process("app=a msg=1 app=b msg=2", b));
        assert_eq!(s, r#"{app="x", app_extracted="a", m="1"}"#);
        // a key is sanitized before it is compared (`user-id` is `user_id`)
        let uid = [extraction("u", Some("user_id"))];
        let s = run(|b| LogfmtParser::new(false, false, &uid).process("user-id=7", b));
        assert_eq!(s, r#"{app="x", u="7"}"#);
        let s = run(|b| LogfmtParser::new(false, false, &[]).process("a=x\u{FFFD}y", b));
        assert_eq!(s, r#"{a="x y", app="x"}"#);
    }

    #[test]
    fn regexp_pattern_unpack() {
        let s = run(|b| {
            RegexpParser::new("(?P<n>\\d+)")
                .unwrap()
                .process("ab 12", b)
        });
        assert_eq!(s, r#"{app="x", n="12"}"#);
        assert!(RegexpParser::new("(?P<a>x)(?P<a>y)").is_err());
        let s = run(|b| PatternParser::new("<_> <w>").unwrap().process("a b", b));
        assert_eq!(s, r#"{app="x", w="b"}"#);
        let mut line = r#"{"job":"j","_entry":"hello"}"#.to_string();
        let s = run(|b| UnpackParser::default().process(&mut line, b));
        assert_eq!(line, "hello");
        assert_eq!(s, r#"{app="x", job="j"}"#);
    }
}
