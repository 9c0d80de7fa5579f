//! JSON documents as log entries, shared by the Elasticsearch `_bulk` and
//! JSON-lines decoders, with VictoriaLogs' ingestion parameters:
//! `_stream_fields`, `_time_field`, `_msg_field` (query parameters, or the
//! headers `VL-Stream-Fields`, `VL-Time-Field`, `VL-Msg-Field`).
//!
//! Mapping (a decision of this project, documented here):
//! - Stream labels: the `_stream_fields` present with a non-empty value.
//!   A field name may be a dotted path into nested objects (`kubernetes.pod`)
//!   or a literal top-level key. Label names are sanitised
//!   ([`crate::validate::sanitize_label_name`]: `kubernetes.pod` ->
//!   `kubernetes_pod`); numbers and bools become text. A document without
//!   any stream field lands in `{service_name="unknown_service"}`, as Loki
//!   files OTLP logs without a service.
//! - Time: the first `_time_field` present (default `_time`, `@timestamp`,
//!   `timestamp`), parsed by [`time::parse_time`]; missing or `0` means the
//!   time of receipt.
//! - Line ([`LineMode::Document`], the default): the document exactly as
//!   received (its JSON text, surrounding whitespace trimmed), stream and
//!   time fields included, so nothing is lost and `| json` sees every field.
//!   [`LineMode::Message`] stores the first non-empty `_msg_field` (default
//!   `_msg`, `message`) as the line and every other field except stream,
//!   time and message fields as structured metadata (nested objects
//!   flattened with `.`, names sanitised) — VictoriaLogs' model.
//! - Loki's ingestion-time extras follow [`PushLimits`]:
//!   `discover_service_name` adds `service_name` from the stream fields
//!   ([`crate::discover`]), `discover_log_levels` adds `detected_level`
//!   metadata ([`crate::level`]), as for Loki pushes.

mod select;
pub mod time;

use crate::validate::{check_entry, check_label_pairs, sanitize_label_name};
use crate::{PushError, PushLimits};
use runakefli_model::{Entry, Labels};
use serde_json::{Map, Value};
use time::{parse_time, DocTime};

/// What becomes the stored line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LineMode {
    /// The whole document as received.
    #[default]
    Document,
    /// The message field; other fields become structured metadata.
    Message,
}

/// How documents map to entries (VictoriaLogs' ingestion parameters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocOptions {
    /// Fields whose values form the stream labels.
    pub stream_fields: Vec<String>,
    /// Candidate time fields; the first present is used.
    pub time_fields: Vec<String>,
    /// Candidate message fields; the first non-empty is used.
    pub msg_fields: Vec<String>,
    /// What becomes the line.
    pub line_mode: LineMode,
}

impl Default for DocOptions {
    fn default() -> Self {
        DocOptions {
            stream_fields: Vec::new(),
            time_fields: vec!["_time".into(), "@timestamp".into(), "timestamp".into()],
            msg_fields: vec!["_msg".into(), "message".into()],
            line_mode: LineMode::Document,
        }
    }
}

impl DocOptions {
    /// Options from request parameters: `lookup(name)` returns the query
    /// parameter `name` (`_stream_fields`, `_time_field`, `_msg_field`,
    /// `_line`), and the server may fall back to the matching header
    /// (`VL-Stream-Fields`, `VL-Time-Field`, `VL-Msg-Field`, `VL-Line`) —
    /// see [`DocOptions::HEADERS`]. Values are comma-separated lists.
    /// `_line=message` selects [`LineMode::Message`].
    pub fn from_lookup<'a>(
        lookup: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<DocOptions, PushError> {
        let mut o = DocOptions::default();
        let list = |s: &str| -> Vec<String> {
            s.split(',')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .map(str::to_string)
                .collect()
        };
        if let Some(v) = lookup("_stream_fields") {
            o.stream_fields = list(v);
        }
        if let Some(v) = lookup("_time_field").filter(|v| !v.trim().is_empty()) {
            o.time_fields = list(v);
        }
        if let Some(v) = lookup("_msg_field").filter(|v| !v.trim().is_empty()) {
            o.msg_fields = list(v);
        }
        if let Some(v) = lookup("_line") {
            o.line_mode = match v.trim() {
                "" | "document" => LineMode::Document,
                "message" => LineMode::Message,
                other => {
                    return Err(PushError::Json(format!(
                        "invalid _line {other:?}: expected \"document\" or \"message\""
                    )))
                }
            };
        }
        Ok(o)
    }

    /// Parameter names and the headers that may carry them instead.
    pub const HEADERS: &'static [(&'static str, &'static str)] = &[
        ("_stream_fields", "VL-Stream-Fields"),
        ("_time_field", "VL-Time-Field"),
        ("_msg_field", "VL-Msg-Field"),
        ("_line", "VL-Line"),
    ];
}

/// Why one document could not become an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DocError {
    /// Not a JSON object.
    Parse(String),
    /// The time field could not be parsed.
    Time(String),
    /// A limit was exceeded or a label is invalid.
    Invalid(PushError),
}

impl std::fmt::Display for DocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DocError::Parse(m) | DocError::Time(m) => f.write_str(m),
            DocError::Invalid(e) => write!(f, "{e}"),
        }
    }
}

/// Converts one JSON document (its text) into its stream labels and entry.
/// `now_ns` stamps documents without a usable time.
pub fn doc_to_entry(
    text: &str,
    opts: &DocOptions,
    limits: &PushLimits,
    now_ns: i64,
) -> Result<(Labels, Entry), DocError> {
    let text = text.trim();
    // In document mode only the stream and time fields are looked at: keep
    // just those (a field path's first segment names the top-level key).
    let doc: Map<String, Value> = match opts.line_mode {
        LineMode::Document => {
            let wanted = |key: &str| {
                opts.stream_fields.iter().chain(&opts.time_fields).any(|f| {
                    f.strip_prefix(key)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
                })
            };
            select::parse_selected(text, &wanted).map_err(DocError::Parse)?
        }
        LineMode::Message => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(DocError::Parse("expected a JSON object".into())),
            Err(e) => return Err(DocError::Parse(e.to_string())),
        },
    };
    let mut pairs = Vec::with_capacity(opts.stream_fields.len());
    for f in &opts.stream_fields {
        if let Some(v) = lookup(&doc, f).map(value_text).filter(|v| !v.is_empty()) {
            pairs.push((sanitize_label_name(f), v));
        }
    }
    if pairs.is_empty() {
        pairs.push(("service_name".to_string(), "unknown_service".to_string()));
    } else if limits.discover_service_name {
        crate::discover::discover_service_name(&mut pairs);
    }
    let labels = check_label_pairs(pairs, limits).map_err(DocError::Invalid)?;
    let time_field = opts
        .time_fields
        .iter()
        .find_map(|f| lookup(&doc, f).map(|v| (f.as_str(), v)));
    let ts = match time_field {
        None => now_ns,
        Some((f, v)) => {
            match parse_time(v).map_err(|e| DocError::Time(format!("field {f:?}: {e}")))? {
                DocTime::Nanos(n) => n,
                DocTime::Now => now_ns,
            }
        }
    };
    let (line, metadata) = match opts.line_mode {
        LineMode::Document => (text.to_string(), Vec::new()),
        LineMode::Message => {
            let msg = opts
                .msg_fields
                .iter()
                .find_map(|f| lookup(&doc, f).map(value_text).filter(|v| !v.is_empty()));
            let mut md = Vec::new();
            let skip = |name: &str| {
                opts.stream_fields.iter().any(|f| f == name)
                    || opts.msg_fields.iter().any(|f| f == name)
                    || time_field.is_some_and(|(f, _)| f == name)
            };
            flatten(&doc, "", &mut |name, v| {
                if !skip(name) {
                    md.push((sanitize_label_name(name), value_text(v)));
                }
            });
            (msg.unwrap_or_default(), md)
        }
    };
    let mut metadata = metadata;
    if limits.discover_log_levels {
        crate::level::apply_detected_level(&labels, &mut metadata, &line);
    }
    check_entry(&labels, line.len(), &metadata, limits).map_err(DocError::Invalid)?;
    Ok((labels, Entry { ts, line, metadata }))
}

/// The value at `path`: a literal top-level key, else a dotted path into nested objects.
fn lookup<'a>(doc: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    if let Some(v) = doc.get(path) {
        return (!v.is_null()).then_some(v);
    }
    // Try every split point so that keys containing dots still resolve.
    for (i, _) in path.match_indices('.') {
        if let Some(Value::Object(inner)) = doc.get(&path[..i]) {
            if let Some(v) = lookup(inner, &path[i + 1..]) {
                return Some(v);
            }
        }
    }
    None
}

/// Text of a scalar as VictoriaLogs stores it: strings as is, numbers and
/// bools as JSON text, arrays and objects as compact JSON, null as empty.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Calls `f` with every leaf of `obj` under its dotted name.
fn flatten(obj: &Map<String, Value>, prefix: &str, f: &mut dyn FnMut(&str, &Value)) {
    for (k, v) in obj {
        let name = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Object(inner) if !inner.is_empty() => flatten(inner, &name, f),
            Value::Null => {}
            _ => f(&name, v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(stream: &[&str]) -> DocOptions {
        DocOptions {
            stream_fields: stream.iter().map(|s| s.to_string()).collect(),
            ..DocOptions::default()
        }
    }

    #[test]
    fn document_mode_keeps_the_document() {
        let doc = r#" {"kubernetes":{"pod":"p-1","ns":"x"},"app":"api","@timestamp":"2023-06-20T15:32:10Z","message":"hi","n":5} "#;
        let (labels, e) = doc_to_entry(
            doc,
            &opts(&["kubernetes.pod", "app", "missing"]),
            &PushLimits::default(),
            7,
        )
        .unwrap();
        assert_eq!(labels.to_string(), r#"{app="api", kubernetes_pod="p-1"}"#);
        assert_eq!(e.ts, 1_687_275_130_000_000_000);
        assert_eq!(e.line, doc.trim());
        assert!(e.metadata.is_empty());
    }

    #[test]
    fn message_mode_splits_fields() {
        let o = DocOptions {
            line_mode: LineMode::Message,
            ..opts(&["app"])
        };
        let doc = r#"{"app":"api","_time":0,"_msg":"","message":"hello","http":{"status":200,"path":"/x"},"tags":["a"],"nil":null}"#;
        let (labels, e) = doc_to_entry(doc, &o, &PushLimits::default(), 42).unwrap();
        assert_eq!(labels.to_string(), r#"{app="api"}"#);
        assert_eq!((e.ts, e.line.as_str()), (42, "hello"));
        assert_eq!(
            e.metadata,
            vec![
                ("http_status".to_string(), "200".to_string()),
                ("http_path".to_string(), "/x".to_string()),
                ("tags".to_string(), r#"["a"]"#.to_string()),
            ]
        );
    }

    #[test]
    fn defaults_and_errors() {
        let (labels, e) =
            doc_to_entry(r#"{"a":1}"#, &opts(&[]), &PushLimits::default(), 9).unwrap();
        assert_eq!(labels.to_string(), r#"{service_name="unknown_service"}"#);
        assert_eq!(e.ts, 9);
        assert!(matches!(
            doc_to_entry("[1]", &opts(&[]), &PushLimits::default(), 0),
            Err(DocError::Parse(_))
        ));
        assert!(matches!(
            doc_to_entry("{", &opts(&[]), &PushLimits::default(), 0),
            Err(DocError::Parse(_))
        ));
        assert!(matches!(
            doc_to_entry(r#"{"_time":"soon"}"#, &opts(&[]), &PushLimits::default(), 0),
            Err(DocError::Time(_))
        ));
        let limits = PushLimits {
            max_line_bytes: 5,
            ..PushLimits::default()
        };
        assert!(matches!(
            doc_to_entry(r#"{"a":"long"}"#, &opts(&[]), &limits, 0),
            Err(DocError::Invalid(_))
        ));
    }

    #[test]
    fn options_from_parameters() {
        let o = DocOptions::from_lookup(|k| match k {
            "_stream_fields" => Some("app, pod,"),
            "_time_field" => Some("ts"),
            "_line" => Some("message"),
            _ => None,
        })
        .unwrap();
        assert_eq!(o.stream_fields, vec!["app", "pod"]);
        assert_eq!(o.time_fields, vec!["ts"]);
        assert_eq!(o.msg_fields, DocOptions::default().msg_fields);
        assert_eq!(o.line_mode, LineMode::Message);
        assert!(DocOptions::from_lookup(|k| (k == "_line").then_some("x")).is_err());
    }

    #[test]
    fn dotted_keys_resolve_both_ways() {
        let doc: Map<String, Value> =
            serde_json::from_str(r#"{"a.b":{"c":1},"x":{"y.z":2},"p":{"q":{"r":3}}}"#).unwrap();
        assert_eq!(lookup(&doc, "a.b.c"), Some(&Value::from(1)));
        assert_eq!(lookup(&doc, "x.y.z"), Some(&Value::from(2)));
        assert_eq!(lookup(&doc, "p.q.r"), Some(&Value::from(3)));
        assert_eq!(lookup(&doc, "p.q.s"), None);
    }
}

/// Collects entries into one stream per distinct label set, in first-seen order.
#[derive(Default)]
pub struct Grouper {
    index: std::collections::HashMap<Labels, usize>,
    request: runakefli_model::PushRequest,
}

impl Grouper {
    /// Adds `entry` to the stream of `labels`.
    pub fn push(&mut self, labels: Labels, entry: Entry) {
        let streams = &mut self.request.streams;
        let i = *self.index.entry(labels).or_insert_with_key(|l| {
            streams.push(runakefli_model::PushStream {
                labels: l.clone(),
                entries: Vec::new(),
            });
            streams.len() - 1
        });
        streams[i].entries.push(entry);
    }

    /// The collected request.
    pub fn finish(self) -> runakefli_model::PushRequest {
        self.request
    }
}

/// Nanoseconds since the epoch now (documents without a time get it).
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
