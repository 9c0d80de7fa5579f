//! Text helpers for building lines without allocation-heavy libraries: RFC 3339
//! timestamps and JSON string escaping.

use runakefli_model::civil::civil_from_days;
use std::fmt::Write;

/// Appends `ts_ns` (nanoseconds since the epoch) as RFC 3339 UTC with milliseconds,
/// e.g. `2026-11-30T00:57:23.123Z`; the sub-millisecond part is truncated.
pub fn push_rfc3339_ms(out: &mut String, ts_ns: i64) {
    let ms = ts_ns.div_euclid(1_000_000);
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    );
}

/// Appends `s` as a JSON string literal (with quotes), escaping as RFC 8259 requires.
pub fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        // Escaped bytes are ASCII, so slicing at them keeps UTF-8 boundaries.
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        let mut s = String::new();
        push_rfc3339_ms(&mut s, 0);
        assert_eq!(s, "1970-01-01T00:00:00.000Z");
        s.clear();
        // 2026-11-30T00:57:23.123456789Z
        push_rfc3339_ms(&mut s, 1_796_000_243_123_456_789);
        assert_eq!(s, "2026-11-30T00:57:23.123Z");
        s.clear();
        // 2024-02-29T23:59:59.999Z (leap day)
        push_rfc3339_ms(&mut s, 1_709_251_199_999_000_000);
        assert_eq!(s, "2024-02-29T23:59:59.999Z");
    }

    #[test]
    fn escapes_json() {
        let mut s = String::new();
        push_json_str(&mut s, "a\"b\\c\n\u{1}é");
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001é\"");
        let v: String = serde_json::from_str(&s).unwrap();
        assert_eq!(v, "a\"b\\c\n\u{1}é");
    }
}
