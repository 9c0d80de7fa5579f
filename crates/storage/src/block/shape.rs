//! Line shapes: splitting a JSON-object line into a *template* and raw value
//! slices, losslessly.
//!
//! The template is the line with every scalar value (and every array, kept
//! whole) replaced by the [`SLOT`] byte. Keys, punctuation, whitespace and the
//! quotes around string values stay in the template, so `template + values`
//! gives the line back byte for byte. Nested objects are descended; their
//! slots are named by the dotted key path (`request.method`), keys taken raw
//! (escapes untouched).
//!
//! The same walker parses a stored template (where each value is the `SLOT`
//! byte, quoted or not) to recover slot names, so both directions agree by
//! construction.

/// The placeholder byte for a value in a template. Lines containing it are
/// never decomposed.
pub const SLOT: u8 = 0;

/// Deepest object nesting that is decomposed; deeper lines are stored raw.
const MAX_DEPTH: usize = 32;

/// One value found by the walker.
pub struct Slot<'a> {
    /// Byte range of the value text within the walked input.
    pub start: usize,
    /// End of the value (exclusive).
    pub end: usize,
    /// True for a string value (the quotes are template text).
    pub quoted: bool,
    /// Raw key spans from the outermost object inward.
    pub path: &'a [(usize, usize)],
}

/// Splits `line` into its template (appended to `tpl`, which is cleared first)
/// and value ranges (into `spans`). Returns false when the line is not a JSON
/// object this codec decomposes; `tpl` and `spans` are then meaningless.
pub fn split_line(line: &[u8], tpl: &mut Vec<u8>, spans: &mut Vec<(u32, u32)>) -> bool {
    tpl.clear();
    spans.clear();
    if memchr::memchr(SLOT, line).is_some() {
        return false;
    }
    let mut lit = 0usize;
    let ok = walk(line, &mut |s: Slot<'_>| {
        tpl.extend_from_slice(&line[lit..s.start]);
        tpl.push(SLOT);
        spans.push((s.start as u32, s.end as u32));
        lit = s.end;
    });
    if ok {
        tpl.extend_from_slice(&line[lit..]);
    }
    ok
}

/// The dotted path and quoting of each slot of a stored template, in order;
/// `None` when the template is not an object template.
pub fn template_slots(tpl: &[u8]) -> Option<Vec<(Vec<u8>, bool)>> {
    let mut out = Vec::new();
    let ok = walk(tpl, &mut |s: Slot<'_>| {
        let mut name = Vec::new();
        for (i, &(a, b)) in s.path.iter().enumerate() {
            if i > 0 {
                name.push(b'.');
            }
            name.extend_from_slice(&tpl[a..b]);
        }
        out.push((name, s.quoted));
    });
    ok.then_some(out)
}

/// Walks a whole-line JSON object, calling `on_slot` for each value.
fn walk(src: &[u8], on_slot: &mut dyn FnMut(Slot<'_>)) -> bool {
    let mut w = Walker {
        src,
        path: Vec::with_capacity(4),
        on_slot,
    };
    let i = w.ws(0);
    if src.get(i) != Some(&b'{') {
        return false;
    }
    match w.object(i, 0) {
        Some(end) => w.ws(end) == src.len(),
        None => false,
    }
}

struct Walker<'s, 'f> {
    src: &'s [u8],
    path: Vec<(usize, usize)>,
    on_slot: &'f mut dyn FnMut(Slot<'_>),
}

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Bytes of an unquoted scalar (numbers, true/false/null, and the slot byte).
#[inline]
fn is_bare(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.' | SLOT)
}

impl Walker<'_, '_> {
    #[inline]
    fn ws(&self, mut i: usize) -> usize {
        while i < self.src.len() && is_ws(self.src[i]) {
            i += 1;
        }
        i
    }

    /// `i` is at an opening quote; returns the index after the closing quote.
    #[inline]
    fn string(&self, i: usize) -> Option<usize> {
        let mut j = i + 1;
        loop {
            let k = j + memchr::memchr2(b'"', b'\\', self.src.get(j..)?)?;
            if self.src[k] == b'"' {
                return Some(k + 1);
            }
            j = k + 2;
        }
    }

    /// `i` is at `[`; returns the index after the matching `]`.
    fn array(&self, i: usize) -> Option<usize> {
        let mut depth = 0usize;
        let mut j = i;
        loop {
            let k = j + memchr::memchr3(b'"', b'[', b']', self.src.get(j..)?)?;
            match self.src[k] {
                b'"' => j = self.string(k)?,
                b'[' => {
                    depth += 1;
                    j = k + 1;
                }
                _ => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(k + 1);
                    }
                    j = k + 1;
                }
            }
        }
    }

    /// `i` is at `{`; returns the index after the matching `}`.
    fn object(&mut self, i: usize, depth: usize) -> Option<usize> {
        let mut i = self.ws(i + 1);
        if self.src.get(i) == Some(&b'}') {
            return Some(i + 1);
        }
        loop {
            if self.src.get(i) != Some(&b'"') {
                return None;
            }
            let key_end = self.string(i)?;
            self.path.push((i + 1, key_end - 1));
            i = self.ws(key_end);
            if self.src.get(i) != Some(&b':') {
                return None;
            }
            i = self.ws(i + 1);
            i = self.value(i, depth)?;
            self.path.pop();
            i = self.ws(i);
            match self.src.get(i) {
                Some(b',') => i = self.ws(i + 1),
                Some(b'}') => return Some(i + 1),
                _ => return None,
            }
        }
    }

    fn value(&mut self, i: usize, depth: usize) -> Option<usize> {
        let (start, end, quoted) = match *self.src.get(i)? {
            b'"' => {
                let end = self.string(i)?;
                (i + 1, end - 1, true)
            }
            b'{' => {
                if depth + 1 >= MAX_DEPTH {
                    return None;
                }
                return self.object(i, depth + 1);
            }
            b'[' => (i, self.array(i)?, false),
            _ => {
                let mut j = i;
                while j < self.src.len() && is_bare(self.src[j]) {
                    j += 1;
                }
                if j == i {
                    return None;
                }
                (i, j, false)
            }
        };
        (self.on_slot)(Slot {
            start,
            end,
            quoted,
            path: &self.path,
        });
        Some(if quoted { end + 1 } else { end })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> Option<(Vec<u8>, Vec<String>)> {
        let (mut t, mut s) = (Vec::new(), Vec::new());
        split_line(line.as_bytes(), &mut t, &mut s).then(|| {
            (
                t,
                s.iter()
                    .map(|&(a, b)| line[a as usize..b as usize].to_string())
                    .collect(),
            )
        })
    }

    #[test]
    fn splits_flat_object() {
        let (t, v) = split(r#"{"a":"x\"y", "b" : 1.50,"c":[1,{"d":2}],"e":null}"#).unwrap();
        assert_eq!(t, b"{\"a\":\"\0\", \"b\" : \0,\"c\":\0,\"e\":\0}".to_vec());
        assert_eq!(v, vec![r#"x\"y"#, "1.50", r#"[1,{"d":2}]"#, "null"]);
        let slots = template_slots(&t).unwrap();
        let names: Vec<_> = slots
            .iter()
            .map(|(n, q)| (String::from_utf8(n.clone()).unwrap(), *q))
            .collect();
        assert_eq!(
            names,
            vec![
                ("a".into(), true),
                ("b".into(), false),
                ("c".into(), false),
                ("e".into(), false)
            ]
        );
    }

    #[test]
    fn nested_paths() {
        let (t, v) = split(r#" {"r":{"m":"GET","u":{"p":"/"}},"x":{}} "#).unwrap();
        assert_eq!(v, vec!["GET", "/"]);
        let names: Vec<_> = template_slots(&t)
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, vec![b"r.m".to_vec(), b"r.u.p".to_vec()]);
    }

    #[test]
    fn rejects_non_objects() {
        for l in [
            "",
            "plain text",
            "[1,2]",
            "\"s\"",
            "{\"a\":1",
            "{\"a\":1}x",
            "{\"a\" 1}",
            "{\"a\":}",
            "{a:1}",
            "{\"a\":1,}",
            "{\"a\":\"\0\"}",
        ] {
            assert!(split(l).is_none(), "{l:?}");
        }
        let deep = "{\"a\":".repeat(40) + "1" + &"}".repeat(40);
        assert!(split(&deep).is_none());
    }
}
