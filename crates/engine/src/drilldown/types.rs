//! The value types Loki's `detected_fields` reports, recognised as Loki
//! does (Go's `strconv` and `time.ParseDuration`, humanize's `ParseBytes`),
//! tried in this order: int, float, boolean, duration, bytes, else string.

/// A detected field's type, named as in Loki's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FieldType {
    /// A 64-bit integer.
    Int,
    /// A float (Go's `ParseFloat`).
    Float,
    /// `true`, `false` and Go's other boolean spellings.
    Boolean,
    /// A Go duration such as `18ms` or `1h2m`.
    Duration,
    /// A byte size such as `1.2KB` or `730B`.
    Bytes,
    /// Anything else.
    String,
}

impl FieldType {
    /// The name in Loki's JSON.
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Int => "int",
            FieldType::Float => "float",
            FieldType::Boolean => "boolean",
            FieldType::Duration => "duration",
            FieldType::Bytes => "bytes",
            FieldType::String => "string",
        }
    }

    /// The type of one value.
    pub fn of(v: &str) -> FieldType {
        if is_int(v) {
            FieldType::Int
        } else if is_float(v) {
            FieldType::Float
        } else if is_bool(v) {
            FieldType::Boolean
        } else if is_duration(v) {
            FieldType::Duration
        } else if is_bytes(v) {
            FieldType::Bytes
        } else {
            FieldType::String
        }
    }

    /// The type that holds values of both: ints widen to floats, any other
    /// mix is a string.
    pub fn join(self, other: FieldType) -> FieldType {
        use FieldType::*;
        match (self, other) {
            (a, b) if a == b => a,
            (Int, Float) | (Float, Int) => Float,
            _ => String,
        }
    }
}

fn is_int(v: &str) -> bool {
    let d = v.strip_prefix(['+', '-']).unwrap_or(v);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) && v.parse::<i64>().is_ok()
}

fn is_float(v: &str) -> bool {
    let l = v.to_ascii_lowercase();
    let body = l.strip_prefix(['+', '-']).unwrap_or(&l);
    if matches!(body, "inf" | "infinity" | "nan") {
        return true;
    }
    // Rust accepts what Go accepts for decimal floats except Go's `_`
    // separators and hex floats, which logs do not carry.
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'+' | b'-'))
        && v.parse::<f64>().is_ok()
}

fn is_bool(v: &str) -> bool {
    matches!(
        v,
        "1" | "t" | "T" | "TRUE" | "true" | "True" | "0" | "f" | "F" | "FALSE" | "false" | "False"
    )
}

/// Go's `time.ParseDuration`: `[-+]` then one or more `<decimal><unit>`,
/// or a bare `0`.
fn is_duration(v: &str) -> bool {
    let s = v.strip_prefix(['+', '-']).unwrap_or(v);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let mut digits = 0;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            digits += b[i].is_ascii_digit() as usize;
            i += 1;
        }
        if digits == 0 || s[start..i].matches('.').count() > 1 {
            return false;
        }
        let unit_start = i;
        while i < b.len() && !(b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        if !matches!(
            &s[unit_start..i],
            "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h"
        ) {
            return false;
        }
    }
    true
}

/// humanize's `ParseBytes` (the parser byte-size label filters use).
fn is_bytes(v: &str) -> bool {
    crate::pipeline::convert::parse_bytes(v).is_ok()
}

#[cfg(test)]
mod tests {
    use super::FieldType::{self, *};

    #[test]
    fn loki_order() {
        for (v, t) in [
            ("200", Int),
            ("-3", Int),
            ("344.014", Float),
            ("1e3", Float),
            ("true", Boolean),
            ("False", Boolean),
            ("18ms", Duration),
            ("1h2m3.5s", Duration),
            ("1.2KB", Bytes),
            ("730B", Bytes),
            ("2.5MB", Bytes),
            ("14kB", Bytes),
            ("/api/cart", String),
            ("req-00d82a8b2b54", String),
            ("2026-11-29T03:00:00Z", String),
            ("5x", String),
        ] {
            assert_eq!(FieldType::of(v), t, "{v}");
        }
        assert_eq!(Int.join(Float), Float);
        assert_eq!(Int.join(Duration), String);
    }
}
