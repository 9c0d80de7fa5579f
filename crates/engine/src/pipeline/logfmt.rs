//! A logfmt decoder with the error positions and messages of Loki's
//! (adapted go-logfmt) decoder.

/// Scans `key=value` pairs from one line.
#[derive(Debug)]
pub struct Decoder<'a> {
    line: &'a [u8],
    pos: usize,
    key: &'a [u8],
    value: Option<Vec<u8>>,
    err: Option<String>,
}

impl<'a> Decoder<'a> {
    /// A decoder at the start of `line`.
    pub fn new(line: &'a [u8]) -> Self {
        Decoder {
            line,
            pos: 0,
            key: &[],
            value: None,
            err: None,
        }
    }

    /// True at the end of the line.
    pub fn eol(&self) -> bool {
        self.pos >= self.line.len()
    }

    /// The last key read.
    pub fn key(&self) -> &[u8] {
        self.key
    }

    /// The last value read (`None` when empty or absent).
    pub fn value(&self) -> Option<&[u8]> {
        self.value.as_deref()
    }

    /// The last syntax error, in Loki's wording.
    pub fn err(&self) -> Option<&str> {
        self.err.as_deref()
    }

    fn syntax_error(&mut self, msg: &str) {
        self.err = Some(format!(
            "logfmt syntax error at pos {} : {msg}",
            self.pos + 1
        ));
    }

    fn unexpected(&mut self, c: u8) {
        let q = match c {
            b'"' => "'\"'".to_string(),
            b'\'' => "'\\''".to_string(),
            c => format!("'{}'", c as char),
        };
        self.err = Some(format!(
            "logfmt syntax error at pos {} : unexpected {q}",
            self.pos + 1
        ));
    }

    fn skip_value(&mut self) -> bool {
        let line = self.line;
        match line[self.pos..].iter().position(|&c| c <= b' ') {
            Some(p) => self.pos += p,
            None => self.pos = line.len(),
        }
        false
    }

    /// Reads the next pair; false at the end or on a malformed pair.
    pub fn scan_keyval(&mut self) -> bool {
        self.key = &[];
        self.value = None;
        let line = self.line;
        match line[self.pos..].iter().position(|&c| c > b' ') {
            Some(p) => self.pos += p,
            None => {
                self.pos = line.len();
                return false;
            }
        }
        // key
        let start = self.pos;
        let mut i = self.pos;
        loop {
            if i >= line.len() {
                self.pos = line.len();
                self.key = &line[start..];
                return self.check_key();
            }
            let c = line[i];
            if c == b'=' {
                self.pos = i;
                if self.pos > start {
                    self.key = &line[start..self.pos];
                    if !self.check_key() {
                        return self.skip_value();
                    }
                } else {
                    self.unexpected(c);
                    return self.skip_value();
                }
                break;
            } else if c == b'"' {
                self.pos = i;
                self.unexpected(c);
                return self.skip_value();
            } else if c <= b' ' {
                self.pos = i;
                self.key = &line[start..i];
                return self.check_key();
            }
            i += 1;
        }
        // equal
        self.pos += 1;
        if self.pos >= line.len() {
            return true;
        }
        let c = line[self.pos];
        if c <= b' ' {
            return true;
        }
        if c == b'"' {
            return self.qvalue();
        }
        let start = self.pos;
        let mut i = self.pos;
        while i < line.len() {
            let c = line[i];
            if c == b'=' || c == b'"' {
                self.pos = i;
                self.unexpected(c);
                return self.skip_value();
            }
            if c <= b' ' {
                break;
            }
            i += 1;
        }
        self.pos = i;
        if i > start {
            self.value = Some(line[start..i].to_vec());
        }
        true
    }

    fn check_key(&mut self) -> bool {
        if std::str::from_utf8(self.key).is_err() {
            self.syntax_error("invalid key");
            return false;
        }
        true
    }

    fn qvalue(&mut self) -> bool {
        let line = self.line;
        let start = self.pos;
        let mut has_esc = false;
        let mut esc = false;
        let mut i = self.pos + 1;
        while i < line.len() {
            let c = line[i];
            if esc {
                esc = false;
            } else if c == b'\\' {
                has_esc = true;
                esc = true;
            } else if c == b'"' {
                self.pos = i + 1;
                if has_esc {
                    match unquote(&line[start..self.pos]) {
                        Some(v) => self.value = Some(v),
                        None => {
                            self.syntax_error("invalid quoted value");
                            return false;
                        }
                    }
                } else if self.pos - 1 > start + 1 {
                    self.value = Some(line[start + 1..self.pos - 1].to_vec());
                }
                return true;
            }
            i += 1;
        }
        self.pos = line.len();
        self.syntax_error("unterminated quoted value");
        false
    }
}

fn unquote(q: &[u8]) -> Option<Vec<u8>> {
    let s = std::str::from_utf8(q).ok()?;
    let (v, used) = runakefli_model::labels::unquote_go(s)?;
    (used == s.len()).then(|| v.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(s: &str) -> (Vec<(String, Option<String>)>, Option<String>) {
        let mut d = Decoder::new(s.as_bytes());
        let mut out = Vec::new();
        while !d.eol() {
            if d.scan_keyval() {
                out.push((
                    String::from_utf8_lossy(d.key()).into_owned(),
                    d.value().map(|v| String::from_utf8_lossy(v).into_owned()),
                ));
            }
        }
        (out, d.err().map(str::to_string))
    }

    #[test]
    fn pairs_and_errors() {
        let (p, e) = pairs("a=1 b=\"x \\\"y\\\"\" flag c=");
        assert_eq!(p.len(), 4);
        assert_eq!(p[1].1.as_deref(), Some("x \"y\""));
        assert_eq!(p[2], ("flag".into(), None));
        assert!(e.is_none());
        let (_, e) = pairs("=novalue");
        assert_eq!(
            e.as_deref(),
            Some("logfmt syntax error at pos 1 : unexpected '='")
        );
        let (p, e) = pairs("level=info msg=\"unterminated quote");
        assert_eq!(p.len(), 1);
        assert_eq!(
            e.as_deref(),
            Some("logfmt syntax error at pos 35 : unterminated quoted value")
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = pairs(&s);
        }
    }
}
