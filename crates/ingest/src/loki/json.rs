//! Loki push in JSON:
//! `{"streams":[{"stream":{"app":"x"},"values":[["<ns>","line",{"k":"v"}]]}]}`.
//!
//! As in Loki: the timestamp is a string of decimal nanoseconds (a JSON number
//! is refused), label and structured-metadata values must be strings, the
//! third element of a value is optional. Unknown fields are ignored.

use crate::level::StreamLevel;
use crate::validate::{check_entry, check_label_pairs, is_valid_label_name};
use crate::{PushError, PushLimits};
use runakefli_model::{Entry, PushRequest, PushStream};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;

#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    streams: Vec<Stream>,
}

#[derive(Deserialize)]
struct Stream {
    #[serde(default)]
    stream: StringMap,
    #[serde(default)]
    values: Vec<Value>,
}

/// A JSON object whose values are all strings, kept in document order.
#[derive(Default)]
struct StringMap(Vec<(String, String)>);

impl<'de> Deserialize<'de> for StringMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StringMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of string values")
            }
            fn visit_unit<E: de::Error>(self) -> Result<StringMap, E> {
                Ok(StringMap::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<StringMap, A::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(4));
                while let Some((k, v)) = m.next_entry::<String, String>()? {
                    out.push((k, v));
                }
                Ok(StringMap(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// One `[ts, line, {metadata}?]` value.
struct Value(Entry);

struct Nanos(i64);

impl<'de> Deserialize<'de> for Nanos {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Nanos;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a timestamp string of nanoseconds")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Nanos, E> {
                parse_nanos(s).map(Nanos).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// Parses decimal nanoseconds as Go's `strconv.ParseInt(s, 10, 64)` does, with its wording.
fn parse_nanos(s: &str) -> Result<i64, String> {
    s.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        format!("strconv.ParseInt: parsing {s:?}: {why}")
    })
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Value;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array [timestamp, line] or [timestamp, line, metadata]")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Value, A::Error> {
                let ts: Nanos = s
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let line: String = s
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                let metadata = s
                    .next_element::<StringMap>()?
                    .map(|m| m.0)
                    .unwrap_or_default();
                if s.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(4, &self));
                }
                Ok(Value(Entry {
                    ts: ts.0,
                    line,
                    metadata,
                }))
            }
        }
        d.deserialize_seq(V)
    }
}

/// Decodes an uncompressed JSON push body.
pub(crate) fn decode(body: &[u8], limits: &PushLimits) -> Result<PushRequest, PushError> {
    let parsed: Body = serde_json::from_slice(body).map_err(|e| {
        let msg = e.to_string();
        if msg.starts_with("strconv.ParseInt") {
            PushError::InvalidTimestamp(msg)
        } else {
            PushError::Json(msg)
        }
    })?;
    let mut out = PushRequest {
        streams: Vec::with_capacity(parsed.streams.len()),
    };
    for s in parsed.streams {
        if let Some((bad, _)) = s.stream.0.iter().find(|(k, _)| !is_valid_label_name(k)) {
            return Err(PushError::InvalidLabels(format!(
                "invalid label name {bad:?}"
            )));
        }
        let mut pairs = s.stream.0;
        if limits.discover_service_name && pairs.iter().any(|(_, v)| !v.is_empty()) {
            crate::discover::discover_service_name(&mut pairs);
        }
        let labels = check_label_pairs(pairs, limits)?;
        if s.values.is_empty() {
            continue;
        }
        let mut entries = Vec::with_capacity(s.values.len());
        let level = limits.discover_log_levels.then(|| StreamLevel::of(&labels));
        for Value(mut e) in s.values {
            if let Some(level) = &level {
                level.apply(&mut e.metadata, &e.line);
            }
            check_entry(&labels, e.line.len(), &e.metadata, limits)?;
            entries.push(e);
        }
        out.streams.push(PushStream { labels, entries });
    }
    Ok(out)
}
