//! JSON lines (`POST /insert/jsonline`, VictoriaLogs' format): one JSON
//! object per line, mapped by [`crate::jsondoc`] with `_stream_fields`,
//! `_time_field`, `_msg_field` from the query string or `VL-*` headers.
//!
//! Blank lines are skipped. Any line that is not a JSON object, has an
//! unparsable time or breaks a limit rejects the whole request with a 400
//! naming the line (VictoriaLogs skips such lines and keeps the others;
//! here a rejected request stores nothing).

use crate::body::{decompress, Encoding};
use crate::jsondoc::{doc_to_entry, now_ns, DocError, DocOptions, Grouper};
use crate::{PushError, PushLimits};
use runakefli_model::PushRequest;

/// Decodes a JSON-lines body (optionally gzip/deflate-encoded).
pub fn decode_jsonline(
    body: &[u8],
    content_encoding: Option<&str>,
    opts: &DocOptions,
    limits: &PushLimits,
) -> Result<PushRequest, PushError> {
    let raw = decompress(
        body,
        Encoding::parse(content_encoding)?,
        limits.max_body_bytes,
    )?;
    let now = now_ns();
    let mut out = Grouper::default();
    for (n, line) in raw.split(|b| *b == b'\n').enumerate() {
        let n = n + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = std::str::from_utf8(line).map_err(|e| {
            PushError::Json(format!("cannot parse JSON line {n}: invalid UTF-8: {e}"))
        })?;
        match doc_to_entry(text, opts, limits, now) {
            Ok((labels, entry)) => out.push(labels, entry),
            Err(DocError::Parse(e)) => {
                return Err(PushError::Json(format!("cannot parse JSON line {n}: {e}")))
            }
            Err(DocError::Time(e)) => {
                return Err(PushError::InvalidTimestamp(format!("line {n}: {e}")))
            }
            Err(DocError::Invalid(e)) => return Err(e),
        }
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn opts() -> DocOptions {
        DocOptions {
            stream_fields: vec!["app".into(), "pod".into()],
            ..DocOptions::default()
        }
    }

    #[test]
    fn groups_by_stream_fields() {
        let body = b"{\"app\":\"a\",\"pod\":\"p1\",\"_time\":\"2023-06-20T15:32:10Z\",\"_msg\":\"one\"}\r\n\n  \n{\"app\":\"b\",\"_time\":1686026893}\n{\"pod\":\"p1\",\"app\":\"a\",\"_time\":\"1686026893000\"}";
        let got = decode_jsonline(body, None, &opts(), &PushLimits::default()).unwrap();
        assert_eq!(got.streams.len(), 2);
        assert_eq!(got.streams[0].labels.to_string(), r#"{app="a", pod="p1"}"#);
        assert_eq!(got.streams[0].entries.len(), 2);
        assert_eq!(
            got.streams[0].entries[0].line,
            r#"{"app":"a","pod":"p1","_time":"2023-06-20T15:32:10Z","_msg":"one"}"#
        );
        assert_eq!(got.streams[0].entries[1].ts, 1_686_026_893_000_000_000);
        assert_eq!(got.streams[1].labels.to_string(), r#"{app="b"}"#);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(body).unwrap();
        assert_eq!(
            decode_jsonline(
                &gz.finish().unwrap(),
                Some("gzip"),
                &opts(),
                &PushLimits::default()
            )
            .unwrap(),
            got
        );
    }

    #[test]
    fn a_bad_line_rejects_the_request() {
        let e = decode_jsonline(
            b"{\"app\":\"a\"}\nnot json\n",
            None,
            &opts(),
            &PushLimits::default(),
        )
        .unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(
            e.to_string().starts_with("cannot parse JSON line 2: "),
            "{e}"
        );
        let e = decode_jsonline(
            b"{\"_time\":\"later\"}",
            None,
            &opts(),
            &PushLimits::default(),
        )
        .unwrap_err();
        assert_eq!(e.reason(), "invalid_timestamp");
        assert!(decode_jsonline(b"\xff\n", None, &opts(), &PushLimits::default()).is_err());
    }

    /// Cost of JSON lines in the workload's shape (~930-byte objects with
    /// ~35 fields, 5 stream fields), document line mode.
    /// Run: `cargo test --release -p runakefli-ingest -- --ignored --nocapture bench_jsonline`.
    #[test]
    #[ignore]
    fn bench_jsonline_decode() {
        let mut body = Vec::new();
        let lines = 100_000;
        for i in 0..lines {
            let mut doc = format!(
                r#"{{"namespace":"ns{}","pod":"pod-{}-7d9f8c6b5-x2k4p","container":"c{}","node":"node-{}","app":"app{}","_time":"2026-11-29T00:{:02}:{:02}.{:03}Z","level":"info","message":"request served","method":"GET","path":"/api/v1/items/{}","status":200,"duration_ms":{}.5,"#,
                i % 5,
                i % 5000,
                i % 3,
                i % 125,
                i % 50,
                i / 6000 % 60,
                i / 100 % 60,
                i % 1000,
                i % 300,
                i % 900
            );
            let mut f = 0;
            while doc.len() < 920 {
                doc.push_str(&format!(
                    r#""field{f}":"value {} {:x}","#,
                    f * 7 + i,
                    i * 31 + f
                ));
                f += 1;
            }
            doc.push_str(r#""end":true}"#);
            body.extend_from_slice(doc.as_bytes());
            body.push(b'\n');
        }
        let o = DocOptions {
            stream_fields: ["namespace", "pod", "container", "node", "app"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            ..DocOptions::default()
        };
        let limits = PushLimits::default();
        let start = crate::loki::tests::thread_cpu();
        let got = decode_jsonline(&body, None, &o, &limits).unwrap();
        let el = crate::loki::tests::thread_cpu() - start;
        assert_eq!(got.entry_count(), lines);
        eprintln!(
            "jsonline decode: {lines} lines of ~{} B in {el:?} thread CPU: {:.0} ns/line",
            body.len() / lines,
            el.as_nanos() as f64 / lines as f64
        );
    }
}
