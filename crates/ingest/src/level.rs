//! Log-level discovery: the `detected_level` structured metadata Loki adds at
//! ingestion (`discover_log_levels`). Shared so every protocol can apply it.
//!
//! Order, as Loki: a `detected_level` already present is only normalised;
//! otherwise the first level-like stream label, then the first level-like
//! metadata pair (`level` before `severity_text`), then the OTLP
//! `severity_number` range, then the line (a level key in JSON or logfmt, or
//! a level word anywhere), else `unknown`. Known spellings are normalised
//! (`ERROR` -> `error`, `Warning` -> `warn`); unknown words are kept.

use runakefli_model::Labels;

/// The metadata name Loki stores the level under.
pub const DETECTED_LEVEL: &str = "detected_level";

/// Keys that carry a level inside a JSON or logfmt line, in priority order.
const LINE_FIELDS: &[&str] = &[
    "level",
    "LEVEL",
    "Level",
    "log.level",
    "severity",
    "SEVERITY",
    "Severity",
    "SeverityText",
    "lvl",
    "LVL",
    "Lvl",
];

/// Label and metadata names that carry a level, in priority order.
const LEVEL_FIELDS: &[&str] = &[
    "level",
    "LEVEL",
    "Level",
    "log_level",
    "severity",
    "SEVERITY",
    "Severity",
    "SeverityText",
    "lvl",
    "LVL",
    "Lvl",
    "severity_text",
];

/// Adds (or normalises) `detected_level` in `metadata` for an entry of stream `labels`.
pub fn apply_detected_level(labels: &Labels, metadata: &mut Vec<(String, String)>, line: &str) {
    StreamLevel::of(labels).apply(metadata, line);
}

/// What a stream's labels say about the `detected_level` of its entries,
/// worked out once per stream of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamLevel {
    /// The labels hold `detected_level`: entries get none.
    Labelled,
    /// A level label names the level of every entry.
    FromLabel(String),
    /// The labels say nothing: each entry's metadata and line decide.
    PerEntry,
}

impl StreamLevel {
    /// The level information of stream `labels`.
    pub fn of(labels: &Labels) -> Self {
        if labels.get(DETECTED_LEVEL).is_some() {
            return StreamLevel::Labelled;
        }
        LEVEL_FIELDS
            .iter()
            .find_map(|f| labels.get(f))
            .map_or(StreamLevel::PerEntry, |v| {
                StreamLevel::FromLabel(normalize(v).to_string())
            })
    }

    /// Adds (or normalises) `detected_level` in the `metadata` of an entry
    /// of this stream ([`apply_detected_level`]).
    pub fn apply(&self, metadata: &mut Vec<(String, String)>, line: &str) {
        if *self == StreamLevel::Labelled {
            return;
        }
        if let Some((_, v)) = metadata.iter_mut().find(|(k, _)| k == DETECTED_LEVEL) {
            *v = normalize(v).to_string();
            return;
        }
        let level = match self {
            StreamLevel::FromLabel(l) => l.clone(),
            _ => entry_level(metadata, line),
        };
        metadata.push((DETECTED_LEVEL.to_string(), level));
    }
}

/// The level of an entry, following the order in the module header.
pub fn detect_level(labels: &Labels, metadata: &[(String, String)], line: &str) -> String {
    match StreamLevel::of(labels) {
        StreamLevel::FromLabel(l) => l,
        _ => entry_level(metadata, line),
    }
}

/// The level of an entry whose stream labels name none: its metadata, then
/// its line.
fn entry_level(metadata: &[(String, String)], line: &str) -> String {
    for f in LEVEL_FIELDS {
        if let Some((_, v)) = metadata.iter().find(|(k, _)| k == f) {
            return normalize(v).to_string();
        }
    }
    if let Some((_, n)) = metadata.iter().find(|(k, _)| k == "severity_number") {
        return match n.parse::<i64>() {
            Err(_) => "info",
            Ok(0) => "unknown",
            Ok(1..=4) => "trace",
            Ok(5..=8) => "debug",
            Ok(9..=12) => "info",
            Ok(13..=16) => "warn",
            Ok(17..=20) => "error",
            Ok(21..=24) => "fatal",
            Ok(_) => "unknown",
        }
        .to_string();
    }
    level_from_line(line).to_string()
}

/// Maps known level spellings (any case) to Loki's names; others unchanged.
pub fn normalize(v: &str) -> &str {
    known(v).unwrap_or(v)
}

fn known(v: &str) -> Option<&'static str> {
    let l = v.to_ascii_lowercase();
    Some(match l.as_str() {
        "trace" | "trc" => "trace",
        "debug" | "dbg" => "debug",
        "info" | "inf" => "info",
        "warn" | "wrn" | "warning" => "warn",
        "error" | "err" => "error",
        "critical" => "critical",
        "fatal" => "fatal",
        _ => return None,
    })
}

fn level_from_line(line: &str) -> &'static str {
    let t = line.trim();
    let value = if t.starts_with('{') && t.ends_with('}') {
        json_level(t)
    } else if line.contains('=') {
        logfmt_level(line)
    } else {
        None
    };
    value
        .as_deref()
        .and_then(known)
        .unwrap_or_else(|| level_word(line))
}

/// The first string value under a level key of the JSON document `text`,
/// depth first in document order (a key written twice counts once, at its
/// first place, with its last value, as in a parsed JSON object); `None`
/// when there is none or `text` is not one valid JSON document. The
/// document is walked without building it: only level-key strings and the
/// keys of objects are kept.
fn json_level(text: &str) -> Option<String> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_str(text);
    let found = json_walk::ValueSeed { level_key: false }
        .deserialize(&mut de)
        .ok()?;
    de.end().ok()?;
    match found {
        json_walk::Found::Object(level) => level,
        _ => None,
    }
}

/// The serde visitors behind [`json_level`].
mod json_walk {
    use super::LINE_FIELDS;
    use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
    use std::borrow::Cow;
    use std::fmt;

    /// What one JSON value tells about the level.
    pub(super) enum Found {
        /// A string under a level key.
        Level(String),
        /// An object, with the level found in it, if any.
        Object(Option<String>),
        /// Anything else.
        Nothing,
    }

    impl Found {
        fn tells(&self) -> bool {
            matches!(self, Found::Level(_) | Found::Object(Some(_)))
        }
    }

    /// Reads one value; `level_key` says whether its key is a level key.
    pub(super) struct ValueSeed {
        pub(super) level_key: bool,
    }

    impl<'de> DeserializeSeed<'de> for ValueSeed {
        type Value = Found;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Found, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for ValueSeed {
        type Value = Found;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Found, E> {
            Ok(Found::Nothing)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Found, E> {
            Ok(Found::Nothing)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Found, E> {
            Ok(Found::Nothing)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Found, E> {
            Ok(Found::Nothing)
        }
        fn visit_unit<E>(self) -> Result<Found, E> {
            Ok(Found::Nothing)
        }
        fn visit_str<E>(self, v: &str) -> Result<Found, E> {
            Ok(if self.level_key {
                Found::Level(v.to_string())
            } else {
                Found::Nothing
            })
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Found, A::Error> {
            // Elements are read as values (not skipped) so that a line is
            // valid exactly when it parses as a JSON document.
            while seq
                .next_element_seed(ValueSeed { level_key: false })?
                .is_some()
            {}
            Ok(Found::Nothing)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found, A::Error> {
            // Every key in order (a later copy of a key keeps the first
            // one's place), and the values that tell a level by the place
            // of their key.
            let mut keys: Vec<Cow<'de, str>> = Vec::new();
            let mut told: Vec<(usize, Found)> = Vec::new();
            while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                let level_key = LINE_FIELDS.contains(&key.as_ref());
                let value = map.next_value_seed(ValueSeed { level_key })?;
                // Only a key that tells, or one that told before, needs its
                // first place looked up.
                let first = if value.tells() || told.iter().any(|(i, _)| keys[*i] == key) {
                    keys.iter().position(|k| *k == key)
                } else {
                    None
                };
                let place = first.unwrap_or_else(|| {
                    keys.push(key);
                    keys.len() - 1
                });
                match told.iter_mut().find(|(i, _)| *i == place) {
                    Some(slot) => slot.1 = value,
                    None if value.tells() => told.push((place, value)),
                    None => {}
                }
            }
            told.sort_by_key(|(i, _)| *i);
            Ok(Found::Object(told.into_iter().find_map(|(_, f)| match f {
                Found::Level(l) | Found::Object(Some(l)) => Some(l),
                _ => None,
            })))
        }
    }

    /// An object key, borrowed from the line when it holds no escape.
    struct Key<'de>(Cow<'de, str>);

    impl<'de> serde::Deserialize<'de> for Key<'de> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_str(KeyVisitor)
        }
    }

    struct KeyVisitor;

    impl<'de> Visitor<'de> for KeyVisitor {
        type Value = Key<'de>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object key")
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
            Ok(Key(Cow::Borrowed(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
            Ok(Key(Cow::Owned(v.to_string())))
        }
        fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
            Ok(Key(Cow::Owned(v)))
        }
    }
}

/// The value of the highest-priority level key (compared ignoring case) in a logfmt line.
fn logfmt_level(line: &str) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for (k, v) in logfmt_pairs(line) {
        if let Some(pos) = LINE_FIELDS.iter().position(|f| f.eq_ignore_ascii_case(k)) {
            if best.as_ref().is_none_or(|(p, _)| pos < *p) {
                best = Some((pos, v));
            }
        }
    }
    best.map(|(_, v)| v)
}

/// Minimal logfmt scan: `key=value`, `key="quoted \" value"`, bare keys.
fn logfmt_pairs(line: &str) -> Vec<(&str, String)> {
    let b = line.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        while i < b.len() && b[i] <= b' ' {
            i += 1;
        }
        let ks = i;
        while i < b.len() && b[i] > b' ' && b[i] != b'=' && b[i] != b'"' {
            i += 1;
        }
        let key = &line[ks..i];
        if i < b.len() && b[i] == b'=' {
            i += 1;
            let mut val = String::new();
            if i < b.len() && b[i] == b'"' {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                    }
                    let ch = line[i..].chars().next().unwrap_or(' ');
                    val.push(ch);
                    i += ch.len_utf8();
                }
                i += 1;
            } else {
                let vs = i;
                while i < b.len() && b[i] > b' ' {
                    i += 1;
                }
                val.push_str(&line[vs..i]);
            }
            if !key.is_empty() {
                out.push((key, val));
            }
        } else if i == ks {
            i += 1;
        }
    }
    out
}

/// The level named by the first level word of the line: a whole word
/// (letters and digits, cut at anything else) equal, ignoring case, to a
/// level name or a common short form. Parts of words do not count
/// (`/api/errors` names no level), as in the recorded Loki.
fn level_word(line: &str) -> &'static str {
    line.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| (3..=8).contains(&w.len()))
        .find_map(|w| match w.to_ascii_lowercase().as_str() {
            "trace" => Some("trace"),
            "debug" => Some("debug"),
            "info" => Some("info"),
            "warn" | "warning" => Some("warn"),
            "error" | "err" => Some("error"),
            "critical" => Some("critical"),
            "fatal" => Some("fatal"),
            _ => None,
        })
        .unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn level(pairs: &[(&str, &str)], line: &str) -> String {
        let mut m = md(pairs);
        apply_detected_level(&Labels::empty(), &mut m, line);
        m.iter()
            .find(|(k, _)| k == DETECTED_LEVEL)
            .unwrap()
            .1
            .clone()
    }

    #[test]
    fn order_of_sources() {
        assert_eq!(
            level(&[("severity_text", "INFO"), ("level", "error")], "x"),
            "error"
        );
        assert_eq!(
            level(
                &[("severity_text", "Warning"), ("severity_number", "13")],
                "x"
            ),
            "warn"
        );
        assert_eq!(level(&[("severity_text", "notice")], "x"), "notice");
        assert_eq!(level(&[("severity_number", "21")], "info line"), "fatal");
        assert_eq!(level(&[("severity_number", "1")], "x"), "trace");
        assert_eq!(level(&[("detected_level", "WARNING")], "x"), "warn");
        assert_eq!(level(&[], "no severity at all"), "unknown");
        let labels = Labels::parse(r#"{level="ERROR"}"#).unwrap();
        assert_eq!(
            detect_level(&labels, &md(&[("level", "info")]), ""),
            "error"
        );
    }

    #[test]
    fn from_the_line() {
        assert_eq!(
            level(&[], r#"level=debug msg="rendered page" path=/cart"#),
            "debug"
        );
        assert_eq!(level(&[], r#"msg="a level=error inside" LVL=WRN"#), "warn");
        assert_eq!(
            level(&[], r#"{"customer":"c-42","items":[],"level":"warn"}"#),
            "warn"
        );
        assert_eq!(level(&[], r#"{"meta":{"severity":"dbg"}}"#), "debug");
        assert_eq!(
            level(&[], "GET /api/cart 502 upstream error while connecting"),
            "error"
        );
        assert_eq!(level(&[], "disk usage WARNING: 91%"), "warn");
        assert_eq!(level(&[], "level=verbose but info inside"), "info");
    }

    /// Recorded in testdata/conformance-grafana: whole words only, any case.
    #[test]
    fn level_words_are_whole_words() {
        assert_eq!(
            level(&[], "2026-11-29T03:00:00Z FATAL key unavailable"),
            "fatal"
        );
        assert_eq!(
            level(&[], "Error: bulk request rejected by shard 3"),
            "error"
        );
        assert_eq!(level(&[], "[info] issued token for dave"), "info");
        assert_eq!(level(&[], "warn: token refresh slow (12ms)"), "warn");
        assert_eq!(
            level(
                &[],
                r#"10.0.1.12 - - "GET /api/errors/report HTTP/1.1" 200"#
            ),
            "unknown"
        );
        assert_eq!(
            level(&[], "panic: runtime error: invalid memory address"),
            "error"
        );
    }

    /// [`json_level`] as it was first written: parse the whole line into a
    /// `serde_json::Value`, then search it.
    fn json_level_of_parsed(text: &str) -> Option<String> {
        fn search(v: &serde_json::Value) -> Option<String> {
            for (k, v) in v.as_object()? {
                match v {
                    serde_json::Value::String(s) if LINE_FIELDS.contains(&k.as_str()) => {
                        return Some(s.clone())
                    }
                    serde_json::Value::Object(_) => {
                        if let Some(found) = search(v) {
                            return Some(found);
                        }
                    }
                    _ => {}
                }
            }
            None
        }
        serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| search(&v))
    }

    #[test]
    fn json_level_walks_as_a_parsed_document_reads() {
        for line in [
            r#"{"level":"info"}"#,
            r#"{"a":1,"level":"info","level":"error"}"#,
            r#"{"a":1,"level":"info","a":{"level":"error"}}"#,
            r#"{"level":"info","level":7}"#,
            r#"{"level":7,"x":{"lvl":"warn"},"level":"debug"}"#,
            r#"{"m":{"n":{"Severity":"fatal"}},"level":"info"}"#,
            r#"{"l\u0065vel":"error","a":[{"level":"debug"}]}"#,
            r#"{"a":["\ud800"],"level":"error"}"#,
            r#"{"level":"error"} x"#,
            r#"{"level":"error",}"#,
            r#"{"level":1e999}"#,
            r#"{}"#,
        ] {
            assert_eq!(json_level(line), json_level_of_parsed(line), "{line}");
        }
    }

    proptest::proptest! {
        #[test]
        fn json_level_agrees_with_a_parsed_document(
            pairs in proptest::collection::vec(
                (proptest::sample::select(vec!["level", "lvl", "a", "SeverityText", "b"]),
                 0..5u8,
                 proptest::sample::select(vec!["info", "ERROR", "x", r"\u0041", r"\ud800"])),
                0..6),
            nest in proptest::sample::select(vec!["a", "level", "z"]),
        ) {
            let value = |kind: u8, s: &str| match kind {
                0 => format!("\"{s}\""),
                1 => "12".to_string(),
                2 => format!("{{\"{nest}\":\"{s}\"}}"),
                3 => format!("[\"{s}\",{{\"level\":\"warn\"}}]"),
                _ => "null".to_string(),
            };
            let body: Vec<String> = pairs
                .iter()
                .map(|(k, kind, s)| format!("\"{k}\":{}", value(*kind, s)))
                .collect();
            let line = format!("{{{}}}", body.join(","));
            proptest::prop_assert_eq!(json_level(&line), json_level_of_parsed(&line), "{}", line);
        }
    }

    proptest::proptest! {
            #[test]
            fn never_panics(
    line in "\\PC{0,60}", sev in "\\PC{0,6}") {
                let mut md = vec![("severity_number".to_string(), sev)];
                apply_detected_level(&Labels::empty(), &mut md, &line);
                let _ = level_from_line(&line);
                let _ = logfmt_pairs(&line);
            }
        }
}
