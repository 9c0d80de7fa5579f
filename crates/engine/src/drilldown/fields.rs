//! `detected_fields` and `detected_field/<name>/values`: the fields Logs
//! Drilldown offers for a selection, found in the newest lines of a log
//! query, as Loki finds them.
//!
//! Per answer entry:
//! - its structured metadata are fields without a parser (`parsers: null`);
//! - the line is parsed as JSON, or when that fails as logfmt (the
//!   *detection parser*); the labels that parser yields, and the labels the
//!   query's own pipeline added, are fields credited to the detection
//!   parser (so a query's `| json` labels read from a JSON line cut short,
//!   where JSON detection fails, are credited to logfmt, as in Loki);
//! - `__error__`, `__error_details__`, empty values and stream labels are
//!   not fields.
//!
//! A field's type joins the types of its values ([`FieldType::join`]); its
//! cardinality is the exact number of distinct values (Loki estimates it
//! with HyperLogLog, which on small sets is exact); `jsonPath` is the key
//! path of a JSON-detected field. Byte sizes are listed as Loki prints
//! them (SI units, `1.2KB` as `1.2kB`).

use super::types::FieldType;
use crate::labelset::LabelSet;
use crate::pipeline::Pipeline;
use crate::result::StreamResult;
use runakefli_logql::Stage;
use std::collections::{BTreeMap, BTreeSet};

/// A parser a field was found by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FieldParser {
    /// JSON.
    Json,
    /// logfmt.
    Logfmt,
}

impl FieldParser {
    /// The name in Loki's JSON.
    pub fn name(self) -> &'static str {
        match self {
            FieldParser::Json => "json",
            FieldParser::Logfmt => "logfmt",
        }
    }
}

/// One detected field.
#[derive(Clone, Debug, PartialEq)]
pub struct DetectedField {
    /// The label name.
    pub label: String,
    /// The joined type of its values.
    pub field_type: FieldType,
    /// Its distinct values.
    pub values: BTreeSet<String>,
    /// The parsers it was found by; `None` for structured metadata only.
    pub parsers: Option<BTreeSet<FieldParser>>,
    /// The JSON key path, when found by JSON detection.
    pub json_path: Option<Vec<String>>,
}

impl DetectedField {
    /// The number of distinct values.
    pub fn cardinality(&self) -> usize {
        self.values.len()
    }
}

const ERROR_LABELS: &[&str] = &["__error__", "__error_details__", "__preserve_error__"];

/// Finds the fields of a log query's answer (entries in any order).
pub fn detect_fields(streams: &[StreamResult]) -> Vec<DetectedField> {
    let mut detector = Detector::new();
    let mut fields: BTreeMap<String, DetectedField> = BTreeMap::new();
    for s in streams {
        for (i, (_, line)) in s.entries.iter().enumerate() {
            let cats = s.categories.get(i).cloned().unwrap_or_default();
            let stream = stream_labels(&s.labels, &cats);
            for (k, v) in &cats.structured_metadata {
                add(&mut fields, k, v, None, None);
            }
            let (parser, found, paths) = detector.detect(line, &stream);
            let parsed = cats.parsed.iter().chain(found.iter());
            for (k, v) in parsed {
                if ERROR_LABELS.contains(&k.as_str()) {
                    continue;
                }
                let path = paths.as_ref().and_then(|p| p.get(k));
                add(&mut fields, k, v, parser, path);
            }
        }
    }
    fields.into_values().collect()
}

/// The stream labels of an entry: its labels less the metadata and parsed ones.
fn stream_labels(labels: &LabelSet, cats: &crate::result::EntryLabels) -> LabelSet {
    let other = |k: &str| {
        cats.structured_metadata.iter().any(|(n, _)| n == k)
            || cats.parsed.iter().any(|(n, _)| n == k)
    };
    LabelSet::from_sorted(
        labels
            .pairs()
            .iter()
            .filter(|(k, _)| !other(k))
            .cloned()
            .collect(),
    )
}

fn add(
    fields: &mut BTreeMap<String, DetectedField>,
    name: &str,
    value: &str,
    parser: Option<FieldParser>,
    path: Option<&Vec<String>>,
) {
    if value.is_empty() {
        return;
    }
    let t = FieldType::of(value);
    // Loki answers byte sizes as it prints them (`1.2KB` is listed as `1.2kB`).
    let printed;
    let value = match t {
        FieldType::Bytes => match crate::pipeline::convert::parse_bytes(value) {
            Ok(n) => {
                printed = crate::pipeline::convert::humanize_si_bytes(n);
                printed.as_str()
            }
            Err(_) => value,
        },
        _ => value,
    };
    let f = fields
        .entry(name.to_string())
        .or_insert_with(|| DetectedField {
            label: name.to_string(),
            field_type: t,
            values: BTreeSet::new(),
            parsers: None,
            json_path: None,
        });
    f.field_type = f.field_type.join(t);
    f.values.insert(value.to_string());
    if let Some(p) = parser {
        f.parsers.get_or_insert_with(BTreeSet::new).insert(p);
    }
    if f.json_path.is_none() {
        f.json_path = path.cloned();
    }
}

/// Detection parsers compiled once.
struct Detector {
    json: Pipeline,
    logfmt: Pipeline,
}

/// What detection found on one line: the parser that succeeded, its
/// labels, and for JSON the key path of each label.
type Detected = (
    Option<FieldParser>,
    Vec<(String, String)>,
    Option<BTreeMap<String, Vec<String>>>,
);

impl Detector {
    fn new() -> Detector {
        let json = Pipeline::new(&[Stage::Json(Vec::new())]).expect("json stage compiles");
        let logfmt = Pipeline::new(&[Stage::Logfmt {
            strict: false,
            keep_empty: false,
            params: Vec::new(),
        }])
        .expect("logfmt stage compiles");
        Detector { json, logfmt }
    }

    fn detect(&mut self, line: &str, stream: &LabelSet) -> Detected {
        if let Some(found) = run(&mut self.json, line, stream) {
            return (Some(FieldParser::Json), found, Some(json_paths(line)));
        }
        match run(&mut self.logfmt, line, stream) {
            Some(found) => (Some(FieldParser::Logfmt), found, None),
            None => (None, Vec::new(), None),
        }
    }
}

/// The labels `p` adds to `stream` for `line`, or `None` when it fails.
fn run(p: &mut Pipeline, line: &str, stream: &LabelSet) -> Option<Vec<(String, String)>> {
    let (_, labels) = p.process(0, line, stream, &[])?;
    if labels.get("__error__").is_some() {
        return None;
    }
    Some(
        labels
            .pairs()
            .iter()
            .filter(|(k, v)| stream.get(k) != Some(v.as_str()))
            .cloned()
            .collect(),
    )
}

/// Label name → JSON key path for every scalar member of a JSON object line,
/// names built as Loki's `| json` builds them (keys joined with `_`, other
/// characters than `[A-Za-z0-9_]` replaced with `_`).
fn json_paths(line: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    if let Ok(serde_json::Value::Object(m)) = serde_json::from_str::<serde_json::Value>(line) {
        walk(&m, &mut Vec::new(), &mut out);
    }
    out
}

fn walk(
    m: &serde_json::Map<String, serde_json::Value>,
    path: &mut Vec<String>,
    out: &mut BTreeMap<String, Vec<String>>,
) {
    for (k, v) in m {
        path.push(k.clone());
        match v {
            serde_json::Value::Object(inner) => walk(inner, path, out),
            serde_json::Value::Array(_) => {}
            _ => {
                let name: String = path
                    .iter()
                    .map(|p| sanitize(p))
                    .collect::<Vec<_>>()
                    .join("_");
                out.entry(name).or_insert_with(|| path.clone());
            }
        }
        path.pop();
    }
}

fn sanitize(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::EntryLabels;

    fn stream(lines: &[&str], md: &[(&str, &str)]) -> StreamResult {
        let mut pairs = vec![("app".to_string(), "a".to_string())];
        pairs.extend(md.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let cats = EntryLabels {
            structured_metadata: md
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            parsed: Vec::new(),
        };
        StreamResult {
            labels: LabelSet::new(pairs),
            entries: lines
                .iter()
                .enumerate()
                .map(|(i, l)| (i as i64, l.to_string()))
                .collect(),
            categories: lines.iter().map(|_| cats.clone()).collect(),
        }
    }

    #[test]
    fn json_logfmt_and_metadata() {
        let s = stream(
            &[
                r#"{"level":"info","user":{"id":7},"@timestamp":"x","d":"18ms"}"#,
                r#"{"level":"warn","user":{"id":8},"@timestamp":"y","d":"2s"}"#,
                "level=info size=1.2KB",
                "panic: runtime error",
            ],
            &[("trace_id", "abc")],
        );
        let f = detect_fields(&[s]);
        let by: BTreeMap<_, _> = f.iter().map(|f| (f.label.as_str(), f)).collect();
        assert_eq!(by["trace_id"].parsers, None);
        assert_eq!(by["user_id"].field_type, FieldType::Int);
        assert_eq!(
            by["user_id"].json_path.as_deref(),
            Some(&["user".to_string(), "id".to_string()][..])
        );
        assert_eq!(
            by["_timestamp"].json_path.as_ref().unwrap()[0],
            "@timestamp"
        );
        assert_eq!(by["d"].field_type, FieldType::Duration);
        assert_eq!(by["size"].field_type, FieldType::Bytes);
        assert_eq!(by["size"].json_path, None);
        let level = by["level"];
        assert_eq!(level.cardinality(), 2);
        assert_eq!(
            level
                .parsers
                .as_ref()
                .unwrap()
                .iter()
                .copied()
                .collect::<Vec<_>>(),
            vec![FieldParser::Json, FieldParser::Logfmt]
        );
        assert!(!by.contains_key("app"));
        assert!(!by.contains_key("panic:"));
    }
}
