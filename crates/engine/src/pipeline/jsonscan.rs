//! A byte-level JSON scanner that walks objects the way Loki's JSON parser
//! (buger/jsonparser) does, so that labels and error texts come out the same,
//! including its leniency (values are delimited, not validated).

/// The kind of a scanned value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A string; the slice excludes the quotes and is still escaped.
    String,
    /// A number, as written.
    Number,
    /// An object, braces included.
    Object,
    /// An array, brackets included.
    Array,
    /// `true` / `false`.
    Boolean,
    /// `null`.
    Null,
}

/// buger/jsonparser's error texts.
pub mod errors {
    /// MalformedJsonError.
    pub const MALFORMED_JSON: &str = "Malformed JSON error";
    /// MalformedStringError.
    pub const MALFORMED_STRING: &str = "Value is string, but can't find closing '\"' symbol";
    /// MalformedArrayError.
    pub const MALFORMED_ARRAY: &str = "Value is array, but can't find closing ']' symbol";
    /// MalformedObjectError.
    pub const MALFORMED_OBJECT: &str = "Value looks like object, but can't find closing '}' symbol";
    /// MalformedValueError.
    pub const MALFORMED_VALUE: &str =
        "Value looks like Number/Boolean/None, but can't find its end: ',' or '}' symbol";
    /// UnknownValueTypeError.
    pub const UNKNOWN_TYPE: &str = "Unknown value type";
    /// MalformedStringEscapeError.
    pub const BAD_ESCAPE: &str = "Encountered an invalid escape sequence in a string";
}

fn next_token(d: &[u8]) -> Option<usize> {
    d.iter()
        .position(|c| !matches!(c, b' ' | b'\n' | b'\r' | b'\t'))
}

/// Index just past the closing quote of a string whose opening quote was
/// already consumed; and whether it contained escapes.
fn string_end(d: &[u8]) -> Option<(usize, bool)> {
    let mut escaped = false;
    for (i, &c) in d.iter().enumerate() {
        if c == b'"' {
            if !escaped {
                return Some((i + 1, false));
            }
            let mut j = i as isize - 1;
            loop {
                if j < 0 || d[j as usize] != b'\\' {
                    return Some((i + 1, true));
                }
                j -= 1;
                if j < 0 || d[j as usize] != b'\\' {
                    break;
                }
                j -= 1;
            }
        } else if c == b'\\' {
            escaped = true;
        }
    }
    None
}

fn block_end(d: &[u8], open: u8, close: u8) -> Option<usize> {
    let mut level = 0i32;
    let mut i = 0;
    while i < d.len() {
        match d[i] {
            b'"' => {
                let (se, _) = string_end(&d[i + 1..])?;
                i += se;
            }
            c if c == open => level += 1,
            c if c == close => {
                level -= 1;
                if level == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn token_end(d: &[u8]) -> usize {
    d.iter()
        .position(|c| matches!(c, b' ' | b'\n' | b'\r' | b'\t' | b',' | b'}' | b']'))
        .unwrap_or(d.len())
}

/// Reads the value starting at `d[off]` (a non-space byte). Returns the value
/// slice (string without quotes), its kind and the offset just after it.
pub fn value_at(d: &[u8], off: usize) -> Result<(&[u8], Kind, usize), &'static str> {
    match d[off] {
        b'"' => match string_end(&d[off + 1..]) {
            Some((e, _)) => Ok((&d[off + 1..off + e], Kind::String, off + e + 1)),
            None => Err(errors::MALFORMED_STRING),
        },
        b'[' => match block_end(&d[off..], b'[', b']') {
            Some(e) => Ok((&d[off..off + e], Kind::Array, off + e)),
            None => Err(errors::MALFORMED_ARRAY),
        },
        b'{' => match block_end(&d[off..], b'{', b'}') {
            Some(e) => Ok((&d[off..off + e], Kind::Object, off + e)),
            None => Err(errors::MALFORMED_OBJECT),
        },
        c => {
            let end = off + token_end(&d[off..]);
            let v = &d[off..end];
            let kind = match c {
                b't' | b'f' if v == b"true" || v == b"false" => Kind::Boolean,
                b'n' | b'u' if v == b"null" => Kind::Null,
                b'0'..=b'9' | b'-' => Kind::Number,
                _ => return Err(errors::UNKNOWN_TYPE),
            };
            Ok((v, kind, end))
        }
    }
}

/// The callback of [`object_each`]: `(key, value, kind)`.
pub type MemberFn<'f, 'a> = dyn FnMut(&[u8], &'a [u8], Kind) -> Result<(), String> + 'f;

/// An invalid escape sequence in a JSON string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadEscape;

/// Calls `f(key, value, kind)` for each member of the object `d`, as
/// jsonparser's `ObjectEach`. `f` may stop the walk by returning an error.
pub fn object_each<'a>(d: &'a [u8], f: &mut MemberFn<'_, 'a>) -> Result<(), String> {
    let mut off = match next_token(d) {
        Some(o) if d[o] == b'{' => o + 1,
        _ => return Err(errors::MALFORMED_OBJECT.into()),
    };
    match next_token(&d[off..]) {
        None => return Err(errors::MALFORMED_JSON.into()),
        Some(o) => {
            off += o;
            if d[off] == b'}' {
                return Ok(());
            }
        }
    }
    let mut keybuf = Vec::new();
    while off < d.len() {
        match d[off] {
            b'"' => off += 1,
            b'}' => return Ok(()),
            _ => return Err(errors::MALFORMED_OBJECT.into()),
        }
        let (e, esc) = string_end(&d[off..]).ok_or(errors::MALFORMED_JSON)?;
        let raw_key = &d[off..off + e - 1];
        off += e;
        let key: &[u8] = if esc {
            keybuf.clear();
            unescape_into(raw_key, &mut keybuf).map_err(|_| errors::BAD_ESCAPE)?;
            &keybuf
        } else {
            raw_key
        };
        match next_token(&d[off..]) {
            Some(o) if d[off + o] == b':' => off += o + 1,
            _ => return Err(errors::MALFORMED_JSON.into()),
        }
        let o = next_token(&d[off..]).ok_or(errors::MALFORMED_JSON)?;
        let (v, kind, end) = value_at(d, off + o)?;
        f(key, v, kind)?;
        off = end;
        match next_token(&d[off..]) {
            None => return Err(errors::MALFORMED_ARRAY.into()),
            Some(o) => {
                off += o;
                match d[off] {
                    b'}' => return Ok(()),
                    b',' => off += 1,
                    _ => return Err(errors::MALFORMED_OBJECT.into()),
                }
            }
        }
        match next_token(&d[off..]) {
            None => return Err(errors::MALFORMED_ARRAY.into()),
            Some(o) => off += o,
        }
    }
    Err(errors::MALFORMED_OBJECT.into())
}

/// Unescapes a JSON string body (without quotes) into `out`.
pub fn unescape_into(s: &[u8], out: &mut Vec<u8>) -> Result<(), BadEscape> {
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let e = *s.get(i + 1).ok_or(BadEscape)?;
        i += 2;
        let ch = match e {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hex = |s: &[u8], i: usize| -> Result<u32, BadEscape> {
                    let h = s.get(i..i + 4).ok_or(BadEscape)?;
                    u32::from_str_radix(std::str::from_utf8(h).map_err(|_| BadEscape)?, 16)
                        .map_err(|_| BadEscape)
                };
                let mut cp = hex(s, i)?;
                i += 4;
                if (0xD800..0xDC00).contains(&cp) {
                    if s.get(i) == Some(&b'\\') && s.get(i + 1) == Some(&b'u') {
                        let lo = hex(s, i + 2)?;
                        if (0xDC00..0xE000).contains(&lo) {
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                            i += 6;
                        } else {
                            cp = 0xFFFD;
                        }
                    } else {
                        cp = 0xFFFD;
                    }
                } else if (0xDC00..0xE000).contains(&cp) {
                    cp = 0xFFFD;
                }
                char::from_u32(cp).unwrap_or('\u{FFFD}')
            }
            _ => return Err(BadEscape),
        };
        let mut buf = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
    }
    Ok(())
}

/// Unescapes a string value as Loki's `unescapeJSONString`: invalid escapes or
/// replacement characters give the empty string.
pub fn unescape_string(s: &[u8]) -> String {
    let mut out = Vec::with_capacity(s.len());
    if unescape_into(s, &mut out).is_err() {
        return String::new();
    }
    match String::from_utf8(out) {
        Ok(s) if !s.contains('\u{FFFD}') => s,
        _ => String::new(),
    }
}

/// Looks a path of object keys / array indexes up, as jsonparser's `Get`.
/// Returns `None` when the path does not exist or the JSON is malformed.
pub fn get_path<'a>(d: &'a [u8], path: &[PathPart]) -> Option<(&'a [u8], Kind)> {
    let o = next_token(d)?;
    let (mut v, mut kind, _) = value_at(d, o).ok()?;
    for p in path {
        match (p, kind) {
            (PathPart::Key(k), Kind::Object) => {
                let mut found = None;
                let _ = object_each(v, &mut |key, val, kd| {
                    if found.is_none() && key == k.as_bytes() {
                        found = Some((val, kd));
                    }
                    Ok(())
                });
                (v, kind) = found?;
            }
            (PathPart::Index(n), Kind::Array) => {
                (v, kind) = array_index(v, *n)?;
            }
            _ => return None,
        }
    }
    Some((v, kind))
}

fn array_index(d: &[u8], n: usize) -> Option<(&[u8], Kind)> {
    let mut off = 1;
    let mut i = 0;
    loop {
        off += next_token(&d[off..])?;
        if d[off] == b']' {
            return None;
        }
        let (v, kind, end) = value_at(d, off).ok()?;
        if i == n {
            return Some((v, kind));
        }
        i += 1;
        off = end;
        off += next_token(&d[off..])?;
        match d[off] {
            b',' => off += 1,
            _ => return None,
        }
    }
}

/// One step of a JSON path.
#[derive(Clone, Debug, PartialEq)]
pub enum PathPart {
    /// `.key` or `["key"]`.
    Key(String),
    /// `[3]`.
    Index(usize),
}

/// Parses Loki's JSON expression syntax: `a.b[0]["c d"]`.
pub fn parse_path(expr: &str) -> Result<Vec<PathPart>, String> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let bad = || format!("cannot parse expression [{expr}]");
    let mut expect_key = true;
    while i < b.len() {
        match b[i] {
            b'.' => {
                i += 1;
                expect_key = true;
            }
            b'[' => {
                let end = expr[i..].find(']').ok_or_else(bad)? + i;
                let inner = expr[i + 1..end].trim();
                if let Some(q) = inner.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
                    out.push(PathPart::Key(q.to_string()));
                } else {
                    out.push(PathPart::Index(inner.parse().map_err(|_| bad())?));
                }
                i = end + 1;
                expect_key = false;
            }
            _ => {
                if !expect_key && !out.is_empty() {
                    return Err(bad());
                }
                let start = i;
                while i < b.len() && b[i] != b'.' && b[i] != b'[' {
                    i += 1;
                }
                out.push(PathPart::Key(expr[start..i].to_string()));
                expect_key = false;
            }
        }
    }
    if out.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(s: &str) -> Result<Vec<(String, String, Kind)>, String> {
        let mut v = Vec::new();
        object_each(s.as_bytes(), &mut |k, val, kind| {
            v.push((
                String::from_utf8_lossy(k).into(),
                String::from_utf8_lossy(val).into(),
                kind,
            ));
            Ok(())
        })?;
        Ok(v)
    }

    #[test]
    fn walks_and_reports_errors() {
        let v = collect(r#"{"a": 1, "b": "x\"y", "c": {"d": [1]}, "e": null}"#).unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v[1].1, r#"x\"y"#);
        assert_eq!(collect("plain text").unwrap_err(), errors::MALFORMED_OBJECT);
        assert_eq!(
            collect(r#"{"level":"error","msg":"trunc"#).unwrap_err(),
            errors::MALFORMED_STRING
        );
        assert_eq!(
            collect(r#"{"a":[1,2"#).unwrap_err(),
            errors::MALFORMED_ARRAY
        );
    }

    #[test]
    fn paths() {
        let d = br#"{"tags":["us","v2"],"geo":{"c":{"lat":1.5}},"l":[{"sku":"S"}]}"#;
        let p = parse_path("tags[1]").unwrap();
        assert_eq!(get_path(d, &p).unwrap().0, b"v2");
        assert_eq!(
            get_path(d, &parse_path("geo.c.lat").unwrap()).unwrap().0,
            b"1.5"
        );
        assert_eq!(
            get_path(d, &parse_path("l[0].sku").unwrap()).unwrap().0,
            b"S"
        );
        assert!(get_path(d, &parse_path("nope.nope").unwrap()).is_none());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = collect(&s);
            let _ = get_path(s.as_bytes(), &[PathPart::Key("a".into()), PathPart::Index(1)]);
        }
    }
}
