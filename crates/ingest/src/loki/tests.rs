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

/// Raw protobuf writing, for messages prost's typed structs cannot express.
fn field(out: &mut Vec<u8>, num: u32, payload: &[u8]) {
    prost::encoding::encode_key(num, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(payload.len() as u64, out);
    out.extend_from_slice(payload);
}

#[test]
fn invalid_utf8_lines_are_repaired() {
    let mut ts = Vec::new();
    prost::encoding::int64::encode(1, &1, &mut ts);
    prost::encoding::int32::encode(2, &2, &mut ts);
    let mut pair = Vec::new();
    field(&mut pair, 1, b"k");
    field(&mut pair, 2, b"\xc3");
    let mut e = Vec::new();
    field(&mut e, 1, &ts);
    field(&mut e, 2, b"ok \xff end");
    field(&mut e, 3, &pair);
    // Entries before labels, and an unknown field: both fine in protobuf.
    let mut stream = Vec::new();
    field(&mut stream, 2, &e);
    field(&mut stream, 9, b"ignored");
    field(&mut stream, 1, br#"{a="b"}"#);
    let mut req = Vec::new();
    field(&mut req, 1, &stream);
    let body = snap::raw::Encoder::new().compress_vec(&req).unwrap();
    let got = decode_push(&body, Some("application/x-protobuf"), None, &lim()).unwrap();
    assert_eq!(got.streams[0].labels.to_string(), r#"{a="b"}"#);
    let e = &got.streams[0].entries[0];
    assert_eq!(e.ts, 1_000_000_002);
    assert_eq!(e.line, "ok \u{fffd} end");
    assert_eq!(e.metadata, vec![("k".to_string(), "\u{fffd}".to_string())]);

    let mut bad_labels = Vec::new();
    field(&mut bad_labels, 1, b"{a=\"\xff\"}");
    let mut req = Vec::new();
    field(&mut req, 1, &bad_labels);
    let body = snap::raw::Encoder::new().compress_vec(&req).unwrap();
    assert_eq!(
        decode_push(&body, Some("application/x-protobuf"), None, &lim())
            .unwrap_err()
            .reason(),
        "invalid_labels"
    );
}

#[test]
fn truncated_and_corrupt_protobuf_is_an_error() {
    let full = sample().encode_to_vec();
    for cut in 1..full.len() {
        let body = snap::raw::Encoder::new()
            .compress_vec(&full[..cut])
            .unwrap();
        if let Err(e) = decode_push(&body, Some("application/x-protobuf"), None, &lim()) {
            assert_eq!(e.status(), 400);
        }
    }
    // A group wire type (3) is not supported.
    let body = snap::raw::Encoder::new().compress_vec(&[0x0b]).unwrap();
    assert_eq!(
        decode_push(&body, Some("application/x-protobuf"), None, &lim())
            .unwrap_err()
            .reason(),
        "invalid_protobuf"
    );
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
fn optional_discovery() {
    let body = br#"{"streams":[{"stream":{"app":"api","env":"prod"},"values":[["1","level=warn msg=slow"],["2","x",{"level":"ERROR"}]]}]}"#;
    let plain = decode_push(body, Some("application/json"), None, &lim()).unwrap();
    assert_eq!(
        plain.streams[0].labels.to_string(),
        r#"{app="api", env="prod"}"#
    );
    assert!(plain.streams[0].entries[0].metadata.is_empty());
    let limits = PushLimits {
        discover_service_name: true,
        discover_log_levels: true,
        ..lim()
    };
    let got = decode_push(body, Some("application/json"), None, &limits).unwrap();
    assert_eq!(
        got.streams[0].labels.to_string(),
        r#"{app="api", env="prod", service_name="api"}"#
    );
    assert_eq!(
        got.streams[0].entries[0].metadata,
        vec![("detected_level".to_string(), "warn".to_string())]
    );
    assert_eq!(
        got.streams[0].entries[1].metadata[1],
        ("detected_level".to_string(), "error".to_string())
    );
    let pb = decode_push(
        &snappy_proto(&sample()),
        Some("application/x-protobuf"),
        None,
        &limits,
    )
    .unwrap();
    assert_eq!(pb.streams[0].labels.get("service_name"), Some("x"));
    assert_eq!(
        pb.streams[0].entries[0].metadata,
        vec![("detected_level".to_string(), "unknown".to_string())]
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

/// The JSON pushes of the LogQL conformance corpus (recorded against Loki,
/// committed under `testdata/`): 20,281 entries, each matching a plain
/// serde_json reading of the same file.
#[test]
fn conformance_corpus_pushes() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/conformance/data");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("conformance data missing at {}: {e}", dir.display()))
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
                proptest::collection::vec((proptest::num::i64::ANY, "\\PC{0,30}", proptest::collection::vec(("[a-z_]{1,5}", "\\PC{0,6}"), 0..3)), 1..5),
            ),
            0..4,
        )
    ) {
        let req = proto::PushRequest {
            streams: streams
                .iter()
                .map(|(labels, entries)| proto::StreamAdapter {
                    labels: Labels::new(labels.clone().into_iter().collect()).to_string(),
                    entries: entries
                        .iter()
                        .map(|(ts, line, md)| {
                            let md: Vec<(&str, &str)> = md.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                            entry(*ts, line, &md)
                        })
                        .collect(),
                    hash: 0,
                })
                .collect(),
        };
        let got = decode_push(&snappy_proto(&req), Some("application/x-protobuf"), None, &PushLimits::unlimited()).unwrap();
        proptest::prop_assert_eq!(got.streams.len(), streams.len());
        for (g, (labels, entries)) in got.streams.iter().zip(&streams) {
            proptest::prop_assert_eq!(&g.labels, &Labels::new(labels.clone().into_iter().collect()));
            let want: Vec<Entry> = entries.iter().map(|(t, l, md)| Entry { ts: *t, line: l.clone(), metadata: md.clone() }).collect();
            let have = g.entries.clone();
            proptest::prop_assert_eq!(have, want);
        }
    }
}

/// Lines shaped like the reference workload (~750-byte JSON with varied
/// values, so snappy has realistic work): `batches` pushes of 5,000 lines
/// over 50 streams with 5 labels each.
fn workload_streams(batches: usize) -> (Vec<Vec<proto::StreamAdapter>>, usize) {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    ];
    let mut raw_bytes = 0;
    let mut out = Vec::new();
    for b in 0..batches {
        let mut streams = Vec::new();
        for s in 0..50 {
            let labels = format!(
                r#"{{app="app{}", container="c{s}", namespace="ns{}", node="node-{}", pod="pod-{s}-7d9f8c6b5-x2k4p"}}"#,
                s % 10,
                s % 5,
                s % 7
            );
            let entries = (0..100)
                .map(|i| {
                    let mut line = format!(
                        r#"{{"ts":"2026-11-29T00:00:{:02}.{:03}Z","level":"info","msg":"request served","method":"GET","path":"/api/v1/items/{}","status":200,"duration_ms":{}.{},"trace_id":"{:016x}{:016x}","request_id":"{:016x}","#,
                        i % 60,
                        rnd() % 1000,
                        rnd() % 500,
                        rnd() % 900,
                        rnd() % 10,
                        rnd(),
                        rnd(),
                        rnd()
                    );
                    while line.len() < 740 {
                        let w = words[(rnd() % 10) as usize];
                        line.push_str(&format!(r#""f{}":"{} {:x}","#, rnd() % 40, w, rnd() % 100_000));
                    }
                    line.push_str(r#""end":1}"#);
                    raw_bytes += line.len();
                    let md: &[(&str, &str)] = if i % 2 == 0 { &[("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736")] } else { &[] };
                    entry(1_700_000_000_000_000_000 + (b * 100 + i) as i64, &line, md)
                })
                .collect();
            streams.push(proto::StreamAdapter {
                labels,
                entries,
                hash: 0,
            });
        }
        out.push(streams);
    }
    let lines = batches * 5_000;
    (out, raw_bytes / lines)
}

/// CPU time of the calling thread (the machine is shared; wall time is noise).
pub(crate) fn thread_cpu() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn time_decode(what: &str, bodies: &[Vec<u8>], ct: &str, lines: usize, avg: usize) {
    let limits = lim();
    for b in bodies {
        decode_push(b, Some(ct), None, &limits).unwrap();
    }
    let mut el = std::time::Duration::ZERO;
    let mut dropping = std::time::Duration::ZERO;
    let mut n = 0;
    for b in bodies {
        let start = thread_cpu();
        let req = decode_push(b, Some(ct), None, &limits).unwrap();
        let mid = thread_cpu();
        n += req.entry_count();
        drop(req);
        el += mid - start;
        dropping += thread_cpu() - mid;
    }
    eprintln!(
        "  (dropping the decoded requests: {:.0} ns/line, not counted)",
        dropping.as_nanos() as f64 / lines as f64
    );
    assert_eq!(n, lines);
    eprintln!(
        "{what}: {lines} lines of ~{avg} B in {el:?} thread CPU: {:.0} ns/line, {:.2} CPU-s per million lines",
        el.as_nanos() as f64 / lines as f64,
        el.as_secs_f64() * 1e6 / lines as f64
    );
}

/// Decoding cost of Loki pushes in the workload's shape (half the lines with
/// one structured-metadata pair), protobuf+snappy and JSON.
/// Run: `cargo test --release -p runakefli-ingest -- --ignored --nocapture bench_`.
#[test]
#[ignore]
fn bench_protobuf_decode() {
    let (batches, avg) = workload_streams(40);
    let lines = batches.len() * 5_000;
    let bodies: Vec<Vec<u8>> = batches
        .iter()
        .map(|s| snappy_proto(&proto::PushRequest { streams: s.clone() }))
        .collect();
    let raw: usize = batches
        .iter()
        .map(|s| proto::PushRequest { streams: s.clone() }.encoded_len())
        .sum();
    let packed: usize = bodies.iter().map(Vec::len).sum();
    eprintln!("protobuf {raw} B, snappy {packed} B");
    time_decode(
        "protobuf+snappy decode",
        &bodies,
        "application/x-protobuf",
        lines,
        avg,
    );
    // The floor: snappy decompression alone, and a plain copy of the line bytes.
    let start = thread_cpu();
    for b in &bodies {
        std::hint::black_box(snap::raw::Decoder::new().decompress_vec(b).unwrap());
    }
    eprintln!(
        "  of which snappy alone: {:.0} ns/line",
        (thread_cpu() - start).as_nanos() as f64 / lines as f64
    );
    let start = thread_cpu();
    for s in &batches {
        for st in s {
            for e in &st.entries {
                std::hint::black_box(e.line.clone());
            }
        }
    }
    eprintln!(
        "  a plain copy of every line: {:.0} ns/line",
        (thread_cpu() - start).as_nanos() as f64 / lines as f64
    );
}

/// Decoding cost of the same lines as Loki JSON pushes.
#[test]
#[ignore]
fn bench_json_decode() {
    let (batches, avg) = workload_streams(20);
    let lines = batches.len() * 5_000;
    let bodies: Vec<Vec<u8>> = batches
        .iter()
        .map(|streams| {
            let v = serde_json::json!({"streams": streams.iter().map(|s| {
                let l = Labels::parse(&s.labels).unwrap();
                let stream: serde_json::Map<String, serde_json::Value> =
                    l.pairs().iter().map(|(k, v)| (k.clone(), v.clone().into())).collect();
                let values: Vec<serde_json::Value> = s.entries.iter().map(|e| {
                    let ts = e.timestamp.unwrap();
                    serde_json::json!([(ts.seconds * 1_000_000_000 + i64::from(ts.nanos)).to_string(), e.line])
                }).collect();
                serde_json::json!({"stream": stream, "values": values})
            }).collect::<Vec<_>>()});
            serde_json::to_vec(&v).unwrap()
        })
        .collect();
    time_decode("JSON decode", &bodies, "application/json", lines, avg);
}
