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
    if labels.get(DETECTED_LEVEL).is_some() {
        return;
    }
    if let Some((_, v)) = metadata.iter_mut().find(|(k, _)| k == DETECTED_LEVEL) {
        *v = normalize(v).to_string();
        return;
    }
    let level = detect_level(labels, metadata, line);
    metadata.push((DETECTED_LEVEL.to_string(), level));
}

/// The level of an entry, following the order in the module header.
pub fn detect_level(labels: &Labels, metadata: &[(String, String)], line: &str) -> String {
    for f in LEVEL_FIELDS {
        if let Some(v) = labels.get(f) {
            return normalize(v).to_string();
        }
    }
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
        serde_json::from_str::<serde_json::Value>(t)
            .ok()
            .and_then(|v| json_level(&v))
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

/// The first string value under a level key, depth first in document order.
fn json_level(v: &serde_json::Value) -> Option<String> {
    let obj = v.as_object()?;
    for (k, v) in obj {
        match v {
            serde_json::Value::String(s) if LINE_FIELDS.contains(&k.as_str()) => {
                return Some(s.clone())
            }
            serde_json::Value::Object(_) => {
                if let Some(found) = json_level(v) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
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

    proptest::proptest! {
        #[test]
        fn never_panics(line in "\\PC{0,60}", sev in "\\PC{0,6}") {
            let mut md = vec![("severity_number".to_string(), sev)];
            apply_detected_level(&Labels::empty(), &mut md, &line);
            let _ = level_from_line(&line);
            let _ = logfmt_pairs(&line);
        }
    }
}
