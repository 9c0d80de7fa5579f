//! Text forms of OTLP values as Loki stores them (the OpenTelemetry
//! collector's `AsString`): strings verbatim, numbers and bools as plain
//! text, bytes as standard base64, arrays and maps as compact JSON with map
//! keys sorted and Go's escaping (`<`, `>`, `&` as `\u003c`…). Also
//! attribute-name normalisation to Prometheus label names.

use super::proto::any_value::Value;
use super::proto::AnyValue;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The text form of `v` (empty for the empty value).
pub fn as_string(v: Option<&AnyValue>) -> String {
    match v.and_then(|v| v.value.as_ref()) {
        None => String::new(),
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::DoubleValue(f)) => format_float(*f),
        Some(Value::BytesValue(b)) => base64(b),
        Some(other) => {
            let mut out = String::new();
            write_json(&mut out, Some(other));
            out
        }
    }
}

/// A float as JavaScript (and Go's JSON encoder) prints it: shortest
/// round-trip digits, exponent form below 1e-6 and from 1e21.
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust prints `1e21` / `1.5e-7`; Go prints `1e+21` / `1.5e-7`.
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    } else {
        format!("{f}")
    }
}

fn write_json(out: &mut String, v: Option<&Value>) {
    match v {
        None => out.push_str("null"),
        Some(Value::StringValue(s)) => write_json_string(out, s),
        Some(Value::BoolValue(b)) => out.push_str(if *b { "true" } else { "false" }),
        Some(Value::IntValue(i)) => {
            let _ = write!(out, "{i}");
        }
        Some(Value::DoubleValue(f)) if f.is_finite() => out.push_str(&format_float(*f)),
        Some(Value::DoubleValue(_)) => out.push_str("null"),
        Some(Value::BytesValue(b)) => write_json_string(out, &base64(b)),
        Some(Value::ArrayValue(a)) => {
            out.push('[');
            for (i, e) in a.values.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, e.value.as_ref());
            }
            out.push(']');
        }
        Some(Value::KvlistValue(kv)) => {
            let sorted: BTreeMap<&str, Option<&Value>> = kv
                .values
                .iter()
                .map(|p| {
                    (
                        p.key.as_str(),
                        p.value.as_ref().and_then(|v| v.value.as_ref()),
                    )
                })
                .collect();
            out.push('{');
            for (i, (k, v)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                write_json(out, v);
            }
            out.push('}');
        }
    }
}

/// A JSON string with Go's `encoding/json` escaping.
pub fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding optional), as OTLP/JSON carries bytes.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = acc << 6 | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Lowercase hex.
pub fn hex(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len() * 2);
    for b in data {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Decodes hex (either case).
pub fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if s.len() & 1 == 1 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// An attribute name as a Prometheus label name, as Loki's OTLP ingestion
/// rewrites it (see [`crate::validate::sanitize_label_name`]).
pub fn normalize_label(name: &str) -> String {
    crate::validate::sanitize_label_name(name)
}

/// Appends the metadata pairs of attribute `key` = `v`: one pair, or one per
/// leaf for a map (names joined with `_`).
pub fn flatten_attribute(
    out: &mut Vec<(String, String)>,
    key: &str,
    v: Option<&AnyValue>,
    prefix: Option<&str>,
) {
    let name = match prefix {
        Some(p) => normalize_label(&format!("{p}_{key}")),
        None => normalize_label(key),
    };
    match v.and_then(|v| v.value.as_ref()) {
        Some(Value::KvlistValue(kv)) => {
            for p in &kv.values {
                flatten_attribute(out, &p.key, p.value.as_ref(), Some(&name));
            }
        }
        _ => out.push((name, as_string(v))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::proto::{ArrayValue, KeyValue, KeyValueList};
    use super::*;

    fn v(x: Value) -> AnyValue {
        AnyValue { value: Some(x) }
    }

    #[test]
    fn scalars() {
        assert_eq!(as_string(None), "");
        assert_eq!(as_string(Some(&v(Value::IntValue(-3)))), "-3");
        assert_eq!(as_string(Some(&v(Value::DoubleValue(42.5)))), "42.5");
        assert_eq!(as_string(Some(&v(Value::DoubleValue(3.0)))), "3");
        assert_eq!(as_string(Some(&v(Value::BoolValue(true)))), "true");
        assert_eq!(
            as_string(Some(&v(Value::BytesValue(vec![1, 2, 0xfe, 0xff])))),
            "AQL+/w=="
        );
        assert_eq!(format_float(1e21), "1e+21");
        assert_eq!(format_float(1.5e-7), "1.5e-7");
        assert_eq!(format_float(0.25), "0.25");
        assert_eq!(format_float(123456789.0), "123456789");
    }

    #[test]
    fn maps_are_sorted_compact_json() {
        let kv = |k: &str, x: Value| KeyValue {
            key: k.into(),
            value: Some(v(x)),
        };
        let body = v(Value::KvlistValue(KeyValueList {
            values: vec![
                kv("z", Value::StringValue("<a&b>".into())),
                kv(
                    "a",
                    Value::ArrayValue(ArrayValue {
                        values: vec![v(Value::IntValue(1)), AnyValue { value: None }],
                    }),
                ),
                kv("m", Value::DoubleValue(0.5)),
            ],
        }));
        assert_eq!(
            as_string(Some(&body)),
            r#"{"a":[1,null],"m":0.5,"z":"\u003ca\u0026b\u003e"}"#
        );
    }

    #[test]
    fn base64_and_hex_round_trip() {
        for data in [
            &b""[..],
            b"a",
            b"ab",
            b"abc",
            b"hello\0world",
            &[0xff, 0xfe, 0x00],
        ] {
            assert_eq!(base64_decode(&base64(data)).unwrap(), data);
            assert_eq!(hex_decode(&hex(data)).unwrap(), data);
        }
        assert_eq!(base64(b"hello\0world"), "aGVsbG8Ad29ybGQ=");
        assert!(hex_decode("abc").is_none());
        assert!(hex_decode("zz").is_none());
    }

    #[test]
    fn label_names() {
        assert_eq!(normalize_label("k8s.pod.name"), "k8s_pod_name");
        assert_eq!(normalize_label("3ds.version"), "key_3ds_version");
        assert_eq!(normalize_label("user-agent"), "user_agent");
        assert_eq!(normalize_label("_x"), "key_x");
        assert_eq!(normalize_label("__x"), "__x");
        assert_eq!(normalize_label("café"), "caf_");
    }

    #[test]
    fn maps_flatten() {
        let inner = v(Value::KvlistValue(KeyValueList {
            values: vec![KeyValue {
                key: "name".into(),
                value: Some(v(Value::StringValue("acme".into()))),
            }],
        }));
        let mut out = Vec::new();
        flatten_attribute(&mut out, "provider.info", Some(&inner), None);
        assert_eq!(
            out,
            vec![("provider_info_name".to_string(), "acme".to_string())]
        );
    }
}
