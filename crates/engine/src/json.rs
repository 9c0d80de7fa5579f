//! Loki's HTTP response bodies, written straight into a `Vec<u8>`.
//!
//! Strings are escaped as Loki's encoder (jsoniter `ConfigFastest`) does:
//! `"` and `\` escaped, `\n \r \t` short forms, other control bytes as
//! `\u00XX`; `<`, `>`, `&` and non-ASCII are written as they are (Loki's v1
//! query responses do not HTML-escape). Bodies end with a newline, like Loki's.

use crate::labelset::LabelSet;
use crate::pipeline::convert::format_float_f;
use crate::result::{QueryResponse, QueryResult, QueryStats};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `s` as a JSON string.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let b = s.as_bytes();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if c >= 0x20 && c != b'"' && c != b'\\' {
            continue;
        }
        out.extend_from_slice(&b[start..i]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(c >> 4) as usize],
                HEX[(c & 15) as usize],
            ]),
        }
        start = i + 1;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

fn write_labels(out: &mut Vec<u8>, l: &LabelSet) {
    out.push(b'{');
    for (i, (k, v)) in l.pairs().iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        write_str(out, v);
    }
    out.push(b'}');
}

fn write_pairs(out: &mut Vec<u8>, pairs: &[(String, String)]) {
    out.push(b'{');
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        write_str(out, v);
    }
    out.push(b'}');
}

/// An entry's third element under categorize-labels: only non-empty categories.
fn write_categories(out: &mut Vec<u8>, c: Option<&crate::result::EntryLabels>) {
    out.push(b'{');
    if let Some(c) = c {
        let mut first = true;
        for (name, pairs) in [
            ("structuredMetadata", &c.structured_metadata),
            ("parsed", &c.parsed),
        ] {
            if pairs.is_empty() {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            write_str(out, name);
            out.push(b':');
            write_pairs(out, pairs);
        }
    }
    out.push(b'}');
}

fn write_int(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(v.to_string().as_bytes());
}

/// Prometheus' time rendering: seconds with up to millisecond decimals.
fn write_time_ms(out: &mut Vec<u8>, ms: i64) {
    let secs = ms.div_euclid(1000);
    let rem = ms.rem_euclid(1000);
    write_int(out, secs);
    if rem != 0 {
        let frac = format!("{rem:03}");
        out.push(b'.');
        out.extend_from_slice(frac.trim_end_matches('0').as_bytes());
    }
}

fn write_point(out: &mut Vec<u8>, ms: i64, v: f64) {
    out.push(b'[');
    write_time_ms(out, ms);
    out.extend_from_slice(b",\"");
    out.extend_from_slice(format_float_f(v).as_bytes());
    out.extend_from_slice(b"\"]");
}

/// Writes a query or query_range answer.
pub fn write_query_response(resp: &QueryResponse, out: &mut Vec<u8>) {
    write_query_response_with(resp, false, out)
}

/// Writes a query or query_range answer; with `categorize`, stream answers
/// use Loki's `categorize-labels` encoding: `encodingFlags` before `result`
/// (Grafana reads the flag first) and a third element per entry naming its
/// structured metadata and parsed labels. Metric answers are unchanged, as in Loki.
pub fn write_query_response_with(resp: &QueryResponse, categorize: bool, out: &mut Vec<u8>) {
    let categorize = categorize && matches!(resp.result, QueryResult::Streams(_));
    out.extend_from_slice(b"{\"status\":\"success\",\"data\":{\"resultType\":\"");
    out.extend_from_slice(resp.result.result_type().as_bytes());
    if categorize {
        out.extend_from_slice(b"\",\"encodingFlags\":[\"categorize-labels\"");
        out.extend_from_slice(b"],\"result\":");
    } else {
        out.extend_from_slice(b"\",\"result\":");
    }
    match &resp.result {
        QueryResult::Streams(streams) => {
            out.push(b'[');
            for (i, s) in streams.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"stream\":");
                write_labels(out, &s.labels);
                out.extend_from_slice(b",\"values\":[");
                for (j, (ts, line)) in s.entries.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(b"[\"");
                    write_int(out, *ts);
                    out.extend_from_slice(b"\",");
                    write_str(out, line);
                    if categorize {
                        out.push(b',');
                        write_categories(out, s.categories.get(j));
                    }
                    out.push(b']');
                }
                out.extend_from_slice(b"]}");
            }
            out.push(b']');
        }
        QueryResult::Matrix(series) => {
            out.push(b'[');
            for (i, s) in series.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"metric\":");
                write_labels(out, &s.labels);
                out.extend_from_slice(b",\"values\":[");
                for (j, (t, v)) in s.points.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    write_point(out, *t, *v);
                }
                out.extend_from_slice(b"]}");
            }
            out.push(b']');
        }
        QueryResult::Vector(samples) => {
            out.push(b'[');
            for (i, s) in samples.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"metric\":");
                write_labels(out, &s.labels);
                out.extend_from_slice(b",\"value\":");
                write_point(out, s.t_ms, s.value);
                out.push(b'}');
            }
            out.push(b']');
        }
        QueryResult::Scalar(t, v) => {
            // Loki writes a scalar's time as integer milliseconds.
            out.push(b'[');
            write_int(out, *t);
            out.extend_from_slice(b",\"");
            out.extend_from_slice(format_float_f(*v).as_bytes());
            out.extend_from_slice(b"\"]");
        }
    }
    out.extend_from_slice(b",\"stats\":");
    write_stats(&resp.stats, out);
    out.extend_from_slice(b"}}\n");
}

fn obj(out: &mut Vec<u8>, fields: &[(&str, String)]) {
    out.push(b'{');
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        out.extend_from_slice(v.as_bytes());
    }
    out.push(b'}');
}

fn zeros(names: &[&str]) -> Vec<u8> {
    let mut v = Vec::new();
    let fields: Vec<(&str, String)> = names.iter().map(|n| (*n, "0".to_string())).collect();
    obj(&mut v, &fields);
    v
}

fn store_stats(lines: u64, bytes: u64) -> String {
    let mut chunk = Vec::new();
    obj(
        &mut chunk,
        &[
            ("headChunkBytes", bytes.to_string()),
            ("headChunkLines", lines.to_string()),
            ("decompressedBytes", "0".into()),
            ("decompressedLines", "0".into()),
            ("compressedBytes", "0".into()),
            ("totalDuplicates", "0".into()),
            ("postFilterLines", "0".into()),
            ("headChunkStructuredMetadataBytes", "0".into()),
            ("decompressedStructuredMetadataBytes", "0".into()),
        ],
    );
    let mut s = Vec::new();
    obj(
        &mut s,
        &[
            ("totalChunksRef", "0".into()),
            ("totalChunksDownloaded", "0".into()),
            ("chunksDownloadTime", "0".into()),
            ("queryReferencedStructuredMetadata", "false".into()),
            ("chunk", String::from_utf8_lossy(&chunk).into_owned()),
            ("chunkRefsFetchTime", "0".into()),
            ("congestionControlLatency", "0".into()),
            ("pipelineWrapperFilteredLines", "0".into()),
        ],
    );
    String::from_utf8_lossy(&s).into_owned()
}

/// Writes Loki's `stats` object (summary filled in, other figures zero).
pub fn write_stats(st: &QueryStats, out: &mut Vec<u8>) {
    let secs = st.exec_time_secs.max(0.0);
    let per_sec = |n: u64| {
        if secs > 0.0 {
            ((n as f64) / secs) as u64
        } else {
            0
        }
    };
    let mut summary = Vec::new();
    obj(
        &mut summary,
        &[
            (
                "bytesProcessedPerSecond",
                per_sec(st.bytes_processed).to_string(),
            ),
            (
                "linesProcessedPerSecond",
                per_sec(st.lines_processed).to_string(),
            ),
            ("totalBytesProcessed", st.bytes_processed.to_string()),
            ("totalLinesProcessed", st.lines_processed.to_string()),
            ("execTime", format_float_f(secs)),
            ("queueTime", "0".into()),
            ("subqueries", "0".into()),
            ("totalEntriesReturned", st.entries_returned.to_string()),
            ("splits", "0".into()),
            ("shards", "0".into()),
            ("totalPostFilterLines", st.post_filter_lines.to_string()),
            ("totalStructuredMetadataBytesProcessed", "0".into()),
        ],
    );
    let cache_names = [
        "entriesFound",
        "entriesRequested",
        "entriesStored",
        "bytesReceived",
        "bytesSent",
        "requests",
        "downloadTime",
        "queryLengthServed",
    ];
    let cache_one = String::from_utf8_lossy(&zeros(&cache_names)).into_owned();
    let mut cache = Vec::new();
    obj(
        &mut cache,
        &[
            ("chunk", cache_one.clone()),
            ("index", cache_one.clone()),
            ("result", cache_one.clone()),
            ("statsResult", cache_one.clone()),
            ("volumeResult", cache_one.clone()),
            ("seriesResult", cache_one.clone()),
            ("labelResult", cache_one.clone()),
            ("instantMetricResult", cache_one),
        ],
    );
    let mut ingester = Vec::new();
    obj(
        &mut ingester,
        &[
            ("totalReached", "1".into()),
            ("totalChunksMatched", st.streams_matched.to_string()),
            ("totalBatches", "0".into()),
            ("totalLinesSent", st.post_filter_lines.to_string()),
            ("store", store_stats(st.lines_processed, st.bytes_processed)),
        ],
    );
    let mut querier = Vec::new();
    obj(&mut querier, &[("store", store_stats(0, 0))]);
    let mut index = Vec::new();
    obj(
        &mut index,
        &[
            ("totalChunks", "0".into()),
            ("postFilterChunks", "0".into()),
            ("shardsDuration", "0".into()),
            ("usedBloomFilters", "false".into()),
        ],
    );
    let s = |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned();
    obj(
        out,
        &[
            ("summary", s(summary)),
            ("querier", s(querier)),
            ("ingester", s(ingester)),
            ("cache", s(cache)),
            ("index", s(index)),
        ],
    );
}

/// Writes a labels / label values answer: `{"status":"success","data":[…]}`.
pub fn write_string_list(values: &[String], out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"status\":\"success\",\"data\":[");
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, v);
    }
    out.extend_from_slice(b"]}\n");
}

/// Writes an `index/stats` answer: `{"streams":…,"chunks":…,"bytes":…,"entries":…}`.
pub fn write_index_stats(st: &crate::metadata::IndexStats, out: &mut Vec<u8>) {
    obj(
        out,
        &[
            ("streams", st.streams.to_string()),
            ("chunks", st.chunks.to_string()),
            ("bytes", st.bytes.to_string()),
            ("entries", st.entries.to_string()),
        ],
    );
    out.push(b'\n');
}

/// Writes an `index/volume` answer: a vector of byte counts at `t_ms`.
pub fn write_volume(groups: &[(LabelSet, u64)], t_ms: i64, out: &mut Vec<u8>) {
    out.extend_from_slice(
        b"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[",
    );
    for (i, (l, v)) in groups.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"metric\":");
        write_labels(out, l);
        out.extend_from_slice(b",\"value\":");
        write_point(out, t_ms, *v as f64);
        out.push(b'}');
    }
    out.extend_from_slice(b"]}}\n");
}

/// Writes a series answer: `{"status":"success","data":[{labels},…]}`.
pub fn write_series(series: &[LabelSet], out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"status\":\"success\",\"data\":[");
    for (i, l) in series.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_labels(out, l);
    }
    out.extend_from_slice(b"]}\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Sample, StreamResult};

    #[test]
    fn escapes_like_loki() {
        let mut v = Vec::new();
        write_str(&mut v, "a\"b\\c\n\t\x01<&>é");
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "\"a\\\"b\\\\c\\n\\t\\u0001<&>é\""
        );
    }

    #[test]
    fn bodies_parse_and_have_loki_shape() {
        let labels = LabelSet::new(vec![("app".into(), "x".into())]);
        let resp = QueryResponse {
            result: QueryResult::Streams(vec![StreamResult {
                labels: labels.clone(),
                entries: vec![(5, "l".into())],
                categories: vec![Default::default()],
            }]),
            stats: QueryStats::default(),
        };
        let mut out = Vec::new();
        write_query_response(&resp, &mut out);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["data"]["result"][0]["values"][0][0], "5");
        assert_eq!(v["data"]["stats"]["summary"]["totalEntriesReturned"], 0);
        let resp = QueryResponse {
            result: QueryResult::Vector(vec![Sample {
                labels,
                t_ms: 1_795_912_200_500,
                value: 0.1,
            }]),
            stats: QueryStats::default(),
        };
        let mut out = Vec::new();
        write_query_response(&resp, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("[1795912200.5,\"0.1\"]"), "{text}");
    }
}
