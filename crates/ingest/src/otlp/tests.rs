//! Tests of OTLP decoding, including replay of requests recorded against Loki.

use super::proto::any_value::Value as V;
use super::proto::*;
use super::*;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

/// The OTLP conformance corpus (recorded against Loki), committed under
/// `testdata/` at the workspace root.
const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/conformance-otlp"
);

/// Reads `rel` from the corpus; a missing file fails the test with its path.
fn read_corpus(rel: &str) -> Vec<u8> {
    let path = format!("{CORPUS}/{rel}");
    std::fs::read(&path).unwrap_or_else(|e| panic!("OTLP corpus file {path}: {e}"))
}

/// The recorded case `id` of `categorized.jsonl` (queries answered with
/// `X-Loki-Response-Encoding-Flags: categorize-labels`).
fn categorized_case(id: &str) -> serde_json::Value {
    let text = String::from_utf8(read_corpus("categorized.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no case {id} in {CORPUS}/categorized.jsonl"))
}

fn lim() -> PushLimits {
    PushLimits::default()
}

/// (stream labels, ts, line, metadata) with maps sorted, as a comparable key.
type Row = (
    BTreeMap<String, String>,
    i64,
    String,
    BTreeMap<String, String>,
);

fn rows(req: &PushRequest) -> Vec<Row> {
    let mut out = Vec::new();
    for s in &req.streams {
        let labels: BTreeMap<String, String> = s.labels.pairs().iter().cloned().collect();
        for e in &s.entries {
            out.push((
                labels.clone(),
                e.ts,
                e.line.clone(),
                e.metadata.iter().cloned().collect(),
            ));
        }
    }
    out
}

fn decode_file(name: &str) -> PushRequest {
    let body = read_corpus(&format!("requests/{name}"));
    let ct = if name.ends_with(".pb") {
        "application/x-protobuf"
    } else {
        "application/json"
    };
    decode_logs(&body, Some(ct), None, &lim()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn recorded_files() -> Vec<String> {
    let dir = format!("{CORPUS}/requests");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("OTLP corpus requests missing at {dir}: {e}"))
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".pb") || n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

/// Every recorded request, decoded and mapped, gives exactly the entries Loki
/// stored: same stream labels, timestamps, lines and structured metadata.
#[test]
fn recorded_requests_match_loki() {
    let mut got: Vec<Row> = Vec::new();
    let names = recorded_files();
    assert_eq!(names.len(), 10);
    for name in &names {
        got.extend(rows(&decode_file(name)));
    }
    assert_eq!(got.len(), 37, "37 records were sent");
    let got: BTreeSet<Row> = got.into_iter().collect();

    let answer = categorized_case("cat-001");
    let mut want: BTreeSet<Row> = BTreeSet::new();
    for s in answer["body"]["data"]["result"].as_array().unwrap() {
        for v in s["values"].as_array().unwrap() {
            let md: BTreeMap<String, String> = v[2]["structuredMetadata"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, x)| (k.clone(), x.as_str().unwrap().to_string()))
                        .collect()
                })
                .unwrap_or_default();
            let labels: BTreeMap<String, String> = s["stream"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| !md.contains_key(*k))
                .map(|(k, x)| (k.clone(), x.as_str().unwrap().to_string()))
                .collect();
            let ts: i64 = v[0].as_str().unwrap().parse().unwrap();
            want.insert((labels, ts, v[1].as_str().unwrap().to_string(), md));
        }
    }
    assert_eq!(want.len(), 36);
    let missing: Vec<_> = want.difference(&got).collect();
    let extra: Vec<_> = got.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing (Loki has, we lack): {missing:#?}\nextra: {extra:#?}"
    );
}

/// The same records sent as protobuf and as JSON map identically.
#[test]
fn protobuf_and_json_agree() {
    let json = read_corpus("requests/002.json");
    let from_json = json::decode(&json).unwrap();
    let pb = from_json.encode_to_vec();
    assert_eq!(
        decode_logs(&pb, Some("application/x-protobuf"), None, &lim()).unwrap(),
        decode_logs(&json, Some("application/json"), None, &lim()).unwrap()
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&pb).unwrap();
    let gz = gz.finish().unwrap();
    assert_eq!(
        decode_logs(&gz, Some("application/x-protobuf"), Some("gzip"), &lim()).unwrap(),
        decode_logs(&pb, Some("application/x-protobuf"), None, &lim()).unwrap()
    );
}

fn kv(k: &str, v: V) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: Some(AnyValue { value: Some(v) }),
    }
}

fn one_record(resource: Vec<KeyValue>, rec: LogRecord) -> ExportLogsServiceRequest {
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: resource,
                dropped_attributes_count: 0,
            }),
            scope_logs: vec![ScopeLogs {
                scope: None,
                log_records: vec![rec],
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

#[test]
fn service_name_discovery_and_grouping() {
    let rec = LogRecord {
        time_unix_nano: 5,
        ..Default::default()
    };
    let req = one_record(
        vec![
            kv("k8s.job.name", V::StringValue("nightly".into())),
            kv("k8s.container.name", V::StringValue("w".into())),
        ],
        rec.clone(),
    );
    let got = map_request(req.clone(), &lim()).unwrap();
    assert_eq!(
        got.streams[0].labels.to_string(),
        r#"{k8s_container_name="w", k8s_job_name="nightly", service_name="w"}"#,
        "the order of the source list decides, not the attribute order"
    );
    let mut two = req.clone();
    two.resource_logs.push(req.resource_logs[0].clone());
    let got = map_request(two, &lim()).unwrap();
    assert_eq!(got.streams.len(), 1);
    assert_eq!(got.streams[0].entries.len(), 2);
}

#[test]
fn record_errors() {
    let bad_trace = LogRecord {
        time_unix_nano: 5,
        trace_id: vec![1, 2, 3],
        ..Default::default()
    };
    let e = map_request(one_record(vec![], bad_trace), &lim()).unwrap_err();
    assert_eq!(e.status(), 400);
    let far = LogRecord {
        time_unix_nano: u64::MAX,
        ..Default::default()
    };
    assert_eq!(
        map_request(one_record(vec![], far), &lim())
            .unwrap_err()
            .reason(),
        "invalid_timestamp"
    );
    let mut limits = lim();
    limits.max_line_bytes = 3;
    let long = LogRecord {
        time_unix_nano: 5,
        body: Some(AnyValue {
            value: Some(V::StringValue("long".into())),
        }),
        ..Default::default()
    };
    assert_eq!(
        map_request(one_record(vec![], long), &limits)
            .unwrap_err()
            .reason(),
        "line_too_long"
    );
    let zero_ids = LogRecord {
        time_unix_nano: 5,
        trace_id: vec![0; 16],
        span_id: vec![0; 8],
        ..Default::default()
    };
    let got = map_request(one_record(vec![], zero_ids), &lim()).unwrap();
    assert!(got.streams[0].entries[0]
        .metadata
        .iter()
        .all(|(k, _)| k != "trace_id" && k != "span_id"));
}

#[test]
fn header_handling() {
    let body = read_corpus("requests/004.json");
    let e = decode_logs(&body, Some("text/plain"), None, &lim()).unwrap_err();
    assert_eq!(
        (e.status(), e.to_string()),
        (400, "content type: text/plain is not supported".to_string())
    );
    assert_eq!(
        decode_logs(&body, None, None, &lim()).unwrap_err().status(),
        400
    );
    assert_eq!(
        decode_logs(&body, Some("application/json"), Some("br"), &lim())
            .unwrap_err()
            .status(),
        400
    );
    assert!(decode_logs(&body, Some("application/json; charset=utf-8"), None, &lim()).is_ok());
    assert_eq!(
        decode_logs(
            b"{\"resourceLogs\":5}",
            Some("application/json"),
            None,
            &lim()
        )
        .unwrap_err()
        .reason(),
        "invalid_json"
    );
}

#[test]
fn json_enum_names_and_ids() {
    let body = br#"{"resource_logs":[{"scope_logs":[{"log_records":[{"time_unix_nano":"7","severityNumber":"SEVERITY_NUMBER_WARN2","traceId":"0AF7651916CD43DD8448EB211C80319C","body":{"bytesValue":"aGk="}}]}]}]}"#;
    let got = decode_logs(body, Some("application/json"), None, &lim()).unwrap();
    let e = &got.streams[0].entries[0];
    assert_eq!((e.ts, e.line.as_str()), (7, "aGk="));
    let md: BTreeMap<_, _> = e.metadata.iter().cloned().collect();
    assert_eq!(md["severity_number"], "14");
    assert_eq!(md["trace_id"], "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(md["detected_level"], "warn");
}

proptest::proptest! {
    #[test]
    fn hostile_bytes_never_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
        let _ = decode_logs(&body, Some("application/x-protobuf"), None, &lim());
        let _ = decode_logs(&body, Some("application/json"), None, &lim());
    }
}

/// One resource with `attr_bytes` of attributes and `records` empty records.
fn amplifying(records: usize, attr_bytes: usize) -> ExportLogsServiceRequest {
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: vec![
                    KeyValue {
                        key: "service.name".into(),
                        value: Some(AnyValue {
                            value: Some(V::StringValue("svc".into())),
                        }),
                    },
                    KeyValue {
                        key: "big".into(),
                        value: Some(AnyValue {
                            value: Some(V::StringValue("x".repeat(attr_bytes))),
                        }),
                    },
                ],
                ..Default::default()
            }),
            scope_logs: vec![ScopeLogs {
                log_records: vec![
                    LogRecord {
                        time_unix_nano: 1_700_000_000_000_000_000,
                        ..Default::default()
                    };
                    records
                ],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

#[test]
fn expansion_is_capped_in_entries_and_bytes() {
    // 2,000 records, each copying a 1 KiB resource attribute: ~2 MiB expanded
    // from a body of about 23 KiB.
    let req = amplifying(2000, 1024);
    let body = req.encode_to_vec();
    assert!(body.len() < 32 << 10, "{}", body.len());
    let limits = PushLimits {
        max_entries_per_request: 1000,
        ..lim()
    };
    let err = map_request(req.clone(), &limits).unwrap_err();
    assert_eq!(err, PushError::TooManyEntries { limit: 1000 });
    assert_eq!(err.status(), 413);
    let limits = PushLimits {
        max_expanded_bytes_per_request: 1 << 20,
        ..lim()
    };
    let err = map_request(req.clone(), &limits).unwrap_err();
    assert_eq!(err, PushError::ExpandedTooLarge { limit: 1 << 20 });
    assert_eq!(
        err.to_string(),
        "request too large after expansion: more than 1048576 bytes of lines and structured metadata; send smaller batches"
    );
    // Within both limits, everything maps.
    let limits = PushLimits {
        max_entries_per_request: 2000,
        max_expanded_bytes_per_request: 4 << 20,
        ..lim()
    };
    assert_eq!(map_request(req, &limits).unwrap().entry_count(), 2000);
}
