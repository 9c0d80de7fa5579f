//! Tests of the Loki push decoders.

use super::proto;
use super::*;
use prost::Message;
use runakefli_model::{Entry, Labels};
use std::io::Write;

fn entry(ts_ns: i64, line: &str, md: &[(&str, &str)]) -> proto::EntryAdapter {
    proto::EntryAdapter {
        timestamp: Some(proto::Timestamp {
            seconds: ts_ns.div_euclid(1_000_000_000),
            nanos: ts_ns.rem_euclid(1_000_000_000) as i32,
        }),
        line: line.to_string(),
        structured_metadata: md
            .iter()
            .map(|(k, v)| proto::LabelPairAdapter {
                name: k.to_string(),
                value: v.to_string(),
            })
            .collect(),
    }
}

fn snappy_proto(req: &proto::PushRequest) -> Vec<u8> {
    snap::raw::Encoder::new()
        .compress_vec(&req.encode_to_vec())
        .unwrap()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

fn sample() -> proto::PushRequest {
    proto::PushRequest {
        streams: vec![
            proto::StreamAdapter {
                labels: r#"{job="api", app="x"}"#.into(),
                entries: vec![
                    entry(1_700_000_000_123_456_789, "hello", &[]),
                    entry(-5, "before epoch", &[("trace_id", "abc")]),
                ],
                hash: 42,
            },
            proto::StreamAdapter {
                labels: r#"{app="y"}"#.into(),
                entries: vec![],
                hash: 0,
            },
            proto::StreamAdapter {
                labels: r#"{app="x", job="api"}"#.into(),
                entries: vec![entry(7, "again", &[])],
                hash: 0,
            },
        ],
    }
}

fn lim() -> PushLimits {
    PushLimits::default()
}

#[test]
fn protobuf_snappy_round_trip() {
    let got = decode_push(
        &snappy_proto(&sample()),
        Some("application/x-protobuf"),
        None,
        &lim(),
    )
    .unwrap();
    let l = Labels::parse(r#"{app="x", job="api"}"#).unwrap();
    assert_eq!(
        got.streams.len(),
        2,
        "the stream without entries is dropped"
    );
    assert_eq!(got.streams[0].labels, l);
    assert_eq!(got.streams[1].labels, l);
    assert_eq!(
        got.streams[0].entries,
        vec![
            Entry {
                ts: 1_700_000_000_123_456_789,
                line: "hello".into(),
                metadata: vec![]
            },
            Entry {
                ts: -5,
                line: "before epoch".into(),
                metadata: vec![("trace_id".into(), "abc".into())]
            },
        ]
    );
    assert_eq!(got.streams[1].entries[0].line, "again");
}

#[test]
fn protobuf_under_gzip_and_snappy_header() {
    let body = gzip(&snappy_proto(&sample()));
    let got = decode_push(&body, Some("application/x-protobuf"), Some("gzip"), &lim()).unwrap();
    assert_eq!(got.entry_count(), 3);
    let got = decode_push(
        &snappy_proto(&sample()),
        Some("application/x-protobuf"),
        Some("snappy"),
        &lim(),
    )
    .unwrap();
    assert_eq!(got.entry_count(), 3);
    // Any non-JSON media type means protobuf, as in Loki.
    let got = decode_push(
        &snappy_proto(&sample()),
        Some("application/octet-stream"),
        None,
        &lim(),
    )
    .unwrap();
    assert_eq!(got.entry_count(), 3);
}

#[test]
fn header_errors() {
    let body = snappy_proto(&sample());
    let e = decode_push(&body, None, None, &lim()).unwrap_err();
    assert_eq!(
        (e.status(), e.to_string()),
        (400, "mime: no media type".to_string())
    );
    let e = decode_push(&body, Some("application/x-protobuf"), Some("br"), &lim()).unwrap_err();
    assert_eq!(
        (e.status(), e.to_string()),
        (400, r#"Content-Encoding "br" not supported"#.to_string())
    );
    // Raw protobuf without snappy is refused.
    let e = decode_push(
        &sample().encode_to_vec(),
        Some("application/x-protobuf"),
        None,
        &lim(),
    )
    .unwrap_err();
    assert_eq!(e.status(), 400);
}

#[test]
fn invalid_utf8_lines_are_repaired() {
    // Build a message whose line bytes are not UTF-8, via the decode-side twin.
    let wire = super::wire::WirePush {
        streams: vec![super::wire::WireStream {
            labels: r#"{a="b"}"#.into(),
            entries: vec![super::wire::WireEntry {
                timestamp: Some(proto::Timestamp {
                    seconds: 1,
                    nanos: 2,
                }),
                line: b"ok \xff end".to_vec(),
                structured_metadata: vec![super::wire::WirePair {
                    name: b"k".to_vec(),
                    value: b"\xc3".to_vec(),
                }],
            }],
        }],
    };
    let body = snap::raw::Encoder::new()
        .compress_vec(&wire.encode_to_vec())
        .unwrap();
    let got = decode_push(&body, Some("application/x-protobuf"), None, &lim()).unwrap();
    let e = &got.streams[0].entries[0];
    assert_eq!(e.ts, 1_000_000_002);
    assert_eq!(e.line, "ok \u{fffd} end");
    assert_eq!(e.metadata, vec![("k".to_string(), "\u{fffd}".to_string())]);
}

#[test]
fn one_bad_entry_rejects_the_whole_request() {
    let mut req = sample();
    req.streams[2].entries.push(entry(8, &"x".repeat(13), &[]));
    let mut limits = lim();
    limits.max_line_bytes = 12;
    let e = decode_push(
        &snappy_proto(&req),
        Some("application/x-protobuf"),
        None,
        &limits,
    )
    .unwrap_err();
    assert_eq!(e.status(), 400);
    assert_eq!(
        e.to_string(),
        r#"Max entry size '12' bytes exceeded for stream '{app="x", job="api"}' while adding an entry with length '13' bytes"#
    );
}

#[test]
fn label_errors_in_protobuf() {
    for (labels, reason) in [
        ("{}", "missing_labels"),
        ("app=\"x\"", "invalid_labels"),
        (r#"{a.b="x"}"#, "invalid_labels"),
        (r#"{a="x", a="y"}"#, "duplicate_label_names"),
    ] {
        let req = proto::PushRequest {
            streams: vec![proto::StreamAdapter {
                labels: labels.into(),
                entries: vec![entry(1, "l", &[])],
                hash: 0,
            }],
        };
        let e = decode_push(
            &snappy_proto(&req),
            Some("application/x-protobuf"),
            None,
            &lim(),
        )
        .unwrap_err();
        assert_eq!(e.reason(), reason, "{labels}: {e}");
        assert_eq!(e.status(), 400);
    }
}

#[test]
fn timestamp_overflow_is_an_error() {
    let mut req = sample();
    req.streams[0].entries[0].timestamp = Some(proto::Timestamp {
        seconds: i64::MAX / 10,
        nanos: 0,
    });
    let e = decode_push(
        &snappy_proto(&req),
        Some("application/x-protobuf"),
        None,
        &lim(),
    )
    .unwrap_err();
    assert_eq!(e.reason(), "invalid_timestamp");
}

#[test]
fn body_limit_applies_after_decompression() {
    let mut limits = lim();
    let body = snappy_proto(&sample());
    let raw_len = sample().encode_to_vec().len();
    limits.max_body_bytes = raw_len - 1;
    let e = decode_push(&body, Some("application/x-protobuf"), None, &limits).unwrap_err();
    assert_eq!(e.status(), 413);
    let json = br#"{"streams":[{"stream":{"a":"b"},"values":[["1","x"]]}]}"#;
    limits.max_body_bytes = json.len() - 1;
    let e = decode_push(&gzip(json), Some("application/json"), Some("gzip"), &limits).unwrap_err();
    assert_eq!(e.status(), 413);
}

#[test]
fn json_push() {
    let body = br#"{"streams":[
        {"stream":{"app":"x","env":""},"values":[["1700000000000000001","line one"],["-3","two",{"trace_id":"abc","user":"eve"}]]},
        {"stream":{"app":"y"},"values":[]}
    ],"extra":true}"#;
    let got = decode_push(body, Some("application/json; charset=utf-8"), None, &lim()).unwrap();
    assert_eq!(got.streams.len(), 1);
    assert_eq!(got.streams[0].labels.to_string(), r#"{app="x"}"#);
    assert_eq!(
        got.streams[0].entries,
        vec![
            Entry {
                ts: 1_700_000_000_000_000_001,
                line: "line one".into(),
                metadata: vec![]
            },
            Entry {
                ts: -3,
                line: "two".into(),
                metadata: vec![
                    ("trace_id".into(), "abc".into()),
                    ("user".into(), "eve".into())
                ]
            },
        ]
    );
    let gz = decode_push(&gzip(body), Some("application/json"), Some("gzip"), &lim()).unwrap();
    assert_eq!(gz, got);
}

#[test]
fn json_errors() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{"streams":[{"stream":{"a":"b"},"values":[[1,"x"]]}]}"#,
            "invalid_json",
        ),
        (
            r#"{"streams":[{"stream":{"a":"b"},"values":[["1x","x"]]}]}"#,
            "invalid_timestamp",
        ),
        (
            r#"{"streams":[{"stream":{"a":"b"},"values":[["99999999999999999999","x"]]}]}"#,
            "invalid_timestamp",
        ),
        (
            r#"{"streams":[{"stream":{"a":"b"},"values":[["1","x",{"k":1}]]}]}"#,
            "invalid_json",
        ),
        (
            r#"{"streams":[{"stream":{"a":"b"},"values":[["1","x",{},"extra"]]}]}"#,
            "invalid_json",
        ),
        (
            r#"{"streams":[{"stream":{"a":"b"},"values":[["1"]]}]}"#,
            "invalid_json",
        ),
        (
            r#"{"streams":[{"stream":{"a":1},"values":[["1","x"]]}]}"#,
            "invalid_json",
        ),
        (
            r#"{"streams":[{"stream":{"a-b":"c"},"values":[["1","x"]]}]}"#,
            "invalid_labels",
        ),
        (
            r#"{"streams":[{"stream":{},"values":[["1","x"]]}]}"#,
            "missing_labels",
        ),
        (r#"{"streams":[{"values":[["1","x"]]}]}"#, "missing_labels"),
        (
            r#"{"streams":[{"stream":{"a":"b"},"values":[["1","x"]]}"#,
            "invalid_json",
        ),
        ("", "invalid_json"),
    ];
    for (body, reason) in cases {
        let e = decode_push(body.as_bytes(), Some("application/json"), None, &lim()).unwrap_err();
        assert_eq!(e.reason(), *reason, "{body}: {e}");
        assert_eq!(e.status(), 400);
    }
    let e = decode_push(
        br#"{"streams":[{"stream":{"a":"b"},"values":[["1x","x"]]}]}"#,
        Some("application/json"),
        None,
        &lim(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with(r#"strconv.ParseInt: parsing "1x": invalid syntax"#),
        "{e}"
    );
}

#[test]
fn empty_push_is_fine() {
    assert_eq!(
        decode_push(b"{}", Some("application/json"), None, &lim())
            .unwrap()
            .streams
            .len(),
        0
    );
    let empty = snap::raw::Encoder::new().compress_vec(&[]).unwrap();
    assert_eq!(
        decode_push(&empty, Some("application/x-protobuf"), None, &lim())
            .unwrap()
            .streams
            .len(),
        0
    );
}

/// The JSON pushes of the LogQL conformance corpus (recorded against Loki),
/// when the corpus is present: 20,281 entries, each matching a plain
/// serde_json reading of the same file.
#[test]
fn conformance_corpus_pushes() {
    let dir = std::path::Path::new("/work/shared/conformance/data");
    if !dir.exists() {
        eprintln!("skipped: {} not present", dir.display());
        return;
    }
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut total = 0;
    for f in files {
        let body = std::fs::read(&f).unwrap();
        let got = decode_push(&body, Some("application/json"), None, &lim()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let streams = v["streams"].as_array().unwrap();
        assert_eq!(got.streams.len(), streams.len());
        for (g, s) in got.streams.iter().zip(streams) {
            for (k, val) in s["stream"].as_object().unwrap() {
                assert_eq!(g.labels.get(k), Some(val.as_str().unwrap()));
            }
            let values = s["values"].as_array().unwrap();
            assert_eq!(g.entries.len(), values.len());
            for (e, val) in g.entries.iter().zip(values) {
                assert_eq!(e.ts.to_string(), val[0].as_str().unwrap());
                assert_eq!(e.line, val[1].as_str().unwrap());
                let md = val
                    .get(2)
                    .and_then(|m| m.as_object())
                    .map(|m| m.len())
                    .unwrap_or(0);
                assert_eq!(e.metadata.len(), md);
            }
        }
        total += got.entry_count();
    }
    assert_eq!(total, 20_281);
}

proptest::proptest! {
    #[test]
    fn hostile_bytes_never_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
        let _ = decode_push(&body, Some("application/x-protobuf"), None, &lim());
        let _ = decode_push(&body, Some("application/json"), None, &lim());
        let _ = decode_push(&body, Some("application/json"), Some("gzip"), &lim());
        let _ = decode_push(&body, Some("application/x-protobuf"), Some("deflate"), &lim());
        let snappy = snap::raw::Encoder::new().compress_vec(&body).unwrap();
        let _ = decode_push(&snappy, Some("application/x-protobuf"), None, &lim());
    }

    #[test]
    fn protobuf_round_trips(
        streams in proptest::collection::vec(
            (
                proptest::collection::btree_map("[a-z_][a-z0-9_]{0,6}", "\\PC{1,8}", 1..4),
                proptest::collection::vec((proptest::num::i64::ANY, "\\PC{0,30}"), 1..5),
            ),
            0..4,
        )
    ) {
        let req = proto::PushRequest {
            streams: streams
                .iter()
                .map(|(labels, entries)| proto::StreamAdapter {
                    labels: Labels::new(labels.clone().into_iter().collect()).to_string(),
                    entries: entries.iter().map(|(ts, line)| entry(*ts, line, &[])).collect(),
                    hash: 0,
                })
                .collect(),
        };
        let got = decode_push(&snappy_proto(&req), Some("application/x-protobuf"), None, &PushLimits::unlimited()).unwrap();
        proptest::prop_assert_eq!(got.streams.len(), streams.len());
        for (g, (labels, entries)) in got.streams.iter().zip(&streams) {
            proptest::prop_assert_eq!(&g.labels, &Labels::new(labels.clone().into_iter().collect()));
            let want: Vec<(i64, &str)> = entries.iter().map(|(t, l)| (*t, l.as_str())).collect();
            let have: Vec<(i64, &str)> = g.entries.iter().map(|e| (e.ts, e.line.as_str())).collect();
            proptest::prop_assert_eq!(have, want);
        }
    }
}

/// Decoding cost of Loki protobuf+snappy pushes of ~750-byte lines, in the
/// workload's shape (5 labels, batches of 5,000 lines over 50 streams).
/// Run: `cargo test --release -p runakefli-ingest -- --ignored --nocapture bench_protobuf`.
#[test]
#[ignore]
fn bench_protobuf_decode() {
    let lines_per_batch = 5_000;
    let batches = 40;
    let mut bodies = Vec::new();
    let mut raw_bytes = 0usize;
    for b in 0..batches {
        let mut streams = Vec::new();
        for s in 0..50 {
            let labels = format!(
                r#"{{app="app{}", container="c{s}", namespace="ns{}", node="node-{}", pod="pod-{b}-{s}-7d9f8c6b5-x2k4p"}}"#,
                s % 10,
                s % 5,
                s % 7
            );
            let entries = (0..lines_per_batch / 50)
                .map(|i| {
                    let mut line = format!(
                        r#"{{"ts":"2026-11-29T00:00:{i:02}Z","level":"info","msg":"request served {b} {s} {i}","method":"GET","path":"/api/v1/items/{i}","status":200,"duration_ms":12.5,"#
                    );
                    while line.len() < 740 {
                        line.push_str(r#""pad":"abcdefghijklmnopqrstuvwxyz0123456789","#);
                    }
                    line.push_str(r#""end":1}"#);
                    raw_bytes += line.len();
                    entry(1_700_000_000_000_000_000 + i as i64, &line, &[])
                })
                .collect();
            streams.push(proto::StreamAdapter {
                labels,
                entries,
                hash: 0,
            });
        }
        bodies.push(snappy_proto(&proto::PushRequest { streams }));
    }
    let lines = lines_per_batch * batches;
    let limits = lim();
    // Warm up once, then time.
    for b in &bodies {
        decode_push(b, Some("application/x-protobuf"), None, &limits).unwrap();
    }
    let start = std::time::Instant::now();
    let mut n = 0;
    for b in &bodies {
        n += decode_push(b, Some("application/x-protobuf"), None, &limits)
            .unwrap()
            .entry_count();
    }
    let el = start.elapsed();
    assert_eq!(n, lines);
    let avg = raw_bytes / lines;
    eprintln!(
        "protobuf+snappy decode: {lines} lines of ~{avg} B in {el:?}: {:.0} ns/line, {:.2} CPU-s per million lines",
        el.as_nanos() as f64 / lines as f64,
        el.as_secs_f64() * 1e6 / lines as f64
    );
}
