//! Splitting a TCP byte stream into syslog messages (RFC 6587): a frame that
//! starts with a digit is octet-counted (`LEN SP MSG`); any other is
//! newline-delimited (LF, or NUL; a CR before the LF is dropped). Senders
//! may mix both on one connection.

use thiserror::Error;

/// Why a stream cannot be framed any further (the connection should close).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum FramingError {
    /// An octet count is malformed.
    #[error("invalid octet count: {0}")]
    BadCount(String),
    /// A frame is longer than allowed.
    #[error("syslog frame of {len} bytes exceeds the limit of {limit} bytes")]
    TooLong {
        /// Bytes in the frame (at least).
        len: usize,
        /// The limit.
        limit: usize,
    },
}

/// An incremental framer: feed bytes with [`Framer::push`], take messages
/// with [`Framer::next_frame`], and the unterminated rest with
/// [`Framer::finish`] at end of stream.
#[derive(Debug)]
pub struct Framer {
    buf: Vec<u8>,
    start: usize,
    max_frame: usize,
}

impl Framer {
    /// A framer refusing frames longer than `max_frame` bytes.
    pub fn new(max_frame: usize) -> Framer {
        Framer {
            buf: Vec::new(),
            start: 0,
            max_frame,
        }
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 64 << 10 && self.start * 2 > self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete frame, if one is buffered.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FramingError> {
        loop {
            let rest = &self.buf[self.start..];
            let Some(&first) = rest.first() else {
                return Ok(None);
            };
            if first == b'\n' || first == b'\r' || first == b'\0' || first == b' ' {
                self.start += 1;
                continue;
            }
            if first.is_ascii_digit() {
                return self.counted();
            }
            return self.delimited();
        }
    }

    fn counted(&mut self) -> Result<Option<Vec<u8>>, FramingError> {
        let rest = &self.buf[self.start..];
        let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == rest.len() {
            return if digits > 10 {
                Err(FramingError::BadCount(
                    String::from_utf8_lossy(rest).into_owned(),
                ))
            } else {
                Ok(None)
            };
        }
        if rest[digits] != b' ' || digits > 10 || rest[0] == b'0' {
            let shown = &rest[..(digits + 1).min(rest.len()).min(16)];
            return Err(FramingError::BadCount(
                String::from_utf8_lossy(shown).into_owned(),
            ));
        }
        let len: usize = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                FramingError::BadCount(String::from_utf8_lossy(&rest[..digits]).into_owned())
            })?;
        if len > self.max_frame {
            return Err(FramingError::TooLong {
                len,
                limit: self.max_frame,
            });
        }
        let body = digits + 1;
        if rest.len() < body + len {
            return Ok(None);
        }
        let frame = rest[body..body + len].to_vec();
        self.start += body + len;
        Ok(Some(frame))
    }

    fn delimited(&mut self) -> Result<Option<Vec<u8>>, FramingError> {
        let rest = &self.buf[self.start..];
        match rest.iter().position(|c| *c == b'\n' || *c == b'\0') {
            Some(end) => {
                if end > self.max_frame {
                    return Err(FramingError::TooLong {
                        len: end,
                        limit: self.max_frame,
                    });
                }
                let mut frame = &rest[..end];
                if let [head @ .., b'\r'] = frame {
                    frame = head;
                }
                let frame = frame.to_vec();
                self.start += end + 1;
                Ok(Some(frame))
            }
            None if rest.len() > self.max_frame => Err(FramingError::TooLong {
                len: rest.len(),
                limit: self.max_frame,
            }),
            None => Ok(None),
        }
    }

    /// At end of stream: the unterminated last message, if any.
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        let rest = &self.buf[self.start..];
        let rest = match rest
            .iter()
            .position(|c| !c.is_ascii_whitespace() && *c != 0)
        {
            Some(i) => &rest[i..],
            None => &[][..],
        };
        let out = (!rest.is_empty() && rest.len() <= self.max_frame).then(|| rest.to_vec());
        self.buf.clear();
        self.start = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frames(chunks: &[&[u8]]) -> Result<Vec<Vec<u8>>, FramingError> {
        let mut f = Framer::new(1024);
        let mut out = Vec::new();
        for c in chunks {
            f.push(c);
            while let Some(m) = f.next_frame()? {
                out.push(m);
            }
        }
        out.extend(f.finish());
        Ok(out)
    }

    #[test]
    fn both_framings_mixed_and_split() {
        let got = frames(&[b"5 <1>ab7 <1>x\ny", b"z\r\n<2>line", b"\n<3>tail"]).unwrap();
        let want: Vec<Vec<u8>> = vec![
            b"<1>ab".to_vec(),
            b"<1>x\nyz".to_vec(),
            b"<2>line".to_vec(),
            b"<3>tail".to_vec(),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn bad_counts_and_long_frames() {
        assert!(matches!(
            frames(&[b"12x <1>"]),
            Err(FramingError::BadCount(_))
        ));
        assert!(matches!(
            frames(&[b"05 <1>ab"]),
            Err(FramingError::BadCount(_))
        ));
        assert!(matches!(
            frames(&[b"99999 <1>"]),
            Err(FramingError::TooLong { .. })
        ));
        let long = vec![b'a'; 2000];
        assert!(matches!(
            frames(&[&long]),
            Err(FramingError::TooLong { .. })
        ));
    }

    proptest! {
        #[test]
        fn counted_frames_survive_any_split(msgs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..50), 1..8), cut in 0usize..400) {
            let mut wire = Vec::new();
            for m in &msgs {
                wire.extend_from_slice(format!("{} ", m.len()).as_bytes());
                wire.extend_from_slice(m);
            }
            let cut = cut.min(wire.len());
            let got = frames(&[&wire[..cut], &wire[cut..]]).unwrap();
            prop_assert_eq!(got, msgs);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = frames(&[&bytes]);
            if let Ok(fs) = frames(&[&bytes]) {
                for f in fs {
                    let _ = super::super::parse(&f, 0);
                }
            }
        }
    }
}
