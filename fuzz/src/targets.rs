//! The body of every fuzz target, one function each: `fuzz_targets/*.rs`
//! hand them libFuzzer's inputs, and the stable smoke run of the main
//! workspace (`crates/cli/tests/fuzz_smoke.rs`, which includes this file by
//! path) replays seeds and random mutations through them. Only the
//! workspace's own crates are used here, so both can build it.

use runakefli_ingest::jsondoc::DocOptions;
use runakefli_ingest::syslog::framing::Framer;
use runakefli_ingest::PushLimits;
use runakefli_storage::quarantine::Quarantine;
use std::path::PathBuf;

/// Push limits small enough that no input can make a target allocate much.
pub fn limits() -> PushLimits {
    PushLimits {
        max_body_bytes: 1 << 20,
        max_entries_per_request: 10_000,
        max_expanded_bytes_per_request: 4 << 20,
        ..PushLimits::default()
    }
}

/// An empty directory of this process for `target` (removed and recreated).
pub fn scratch_dir(target: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("runakefli-fuzz-{target}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// LogQL: no panic; a parsed query prints to one that parses to the same AST.
pub fn parse_expr(data: &[u8]) {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let _ = runakefli_logql::parse_matchers(input);
    if let Ok(expr) = runakefli_logql::parse_expr(input) {
        let printed = expr.to_string();
        let again = runakefli_logql::parse_expr(&printed).unwrap_or_else(|e| {
            panic!("printed form {printed:?} of {input:?} does not parse: {e}")
        });
        assert_eq!(
            again, expr,
            "round trip changed the AST: {input:?} printed as {printed:?}"
        );
    }
}

/// Loki push bodies: the first byte picks the content type (protobuf or
/// JSON) and encoding (none, gzip, deflate, snappy); no panic, limits hold.
pub fn loki_push(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let ct = if sel & 1 == 0 {
        "application/x-protobuf"
    } else {
        "application/json"
    };
    let ce = match (sel >> 1) % 4 {
        0 => None,
        1 => Some("gzip"),
        2 => Some("deflate"),
        _ => Some("snappy"),
    };
    let l = limits();
    let _ = runakefli_ingest::loki::decode_push(body, Some(ct), ce, &l);
    let _ = runakefli_ingest::loki::decode_protobuf(body, &l);
    if let Ok(req) = runakefli_ingest::loki::decode_json(body, &l) {
        assert!(req.entry_count() <= body.len(), "more entries than bytes");
    }
}

/// OTLP/HTTP logs, protobuf or OTLP/JSON (first byte): no panic, at most
/// `max_entries_per_request` entries after expansion.
pub fn otlp_logs(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let ct = if sel & 1 == 0 {
        "application/x-protobuf"
    } else {
        "application/json"
    };
    let l = limits();
    if let Ok(req) = runakefli_ingest::otlp::decode_logs(body, Some(ct), None, &l) {
        assert!(req.entry_count() <= l.max_entries_per_request);
    }
}

/// Elasticsearch `_bulk`: no panic, the response renders.
pub fn es_bulk(data: &[u8]) {
    let l = limits();
    if let Ok(out) =
        runakefli_ingest::es_bulk::decode_bulk(data, None, Some("idx"), &DocOptions::default(), &l)
    {
        let _ = out.response_json(1);
    }
}

/// JSON lines: no panic.
pub fn jsonline(data: &[u8]) {
    let l = limits();
    let _ = runakefli_ingest::jsonline::decode_jsonline(data, None, &DocOptions::default(), &l);
}

/// Syslog: a TCP byte stream cut into frames, and the input as one
/// datagram, each parsed and turned into an entry; no panic.
pub fn syslog(data: &[u8]) {
    let l = limits();
    let mut framer = Framer::new(64 << 10);
    framer.push(data);
    let mut frames = Vec::new();
    while let Ok(Some(f)) = framer.next_frame() {
        frames.push(f);
    }
    frames.extend(framer.finish());
    frames.push(data.to_vec());
    for f in frames {
        if let Ok(msg) = runakefli_ingest::syslog::parse(&f, 0) {
            let _ = runakefli_ingest::syslog::to_entry(msg, 0, &l);
        }
    }
}

/// Block readers: an error, never a panic; columns agree on row count.
pub fn block_decode(data: &[u8]) {
    if let Ok(b) = runakefli_storage::block::decode_block(data) {
        assert_eq!(b.ts.len(), b.lines.len());
    }
    let _ = runakefli_storage::part::raw_block::decode_raw_block(data);
}

/// A WAL segment with arbitrary bytes after a valid (or, by the first
/// byte, damaged) header, replayed from a scratch directory: no panic.
pub fn wal_replay(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let dir = scratch_dir("wal_replay");
    let wal = dir.join("wal");
    std::fs::create_dir_all(&wal).unwrap();
    let mut seg = b"RKFWAL\0\0\x01\0\0\0\0\0\0\0".to_vec();
    if sel & 1 == 1 {
        seg[(sel as usize >> 1) % 16] ^= sel;
    }
    seg.extend_from_slice(body);
    std::fs::write(wal.join("00000000000000000001.wal"), &seg).unwrap();
    let q = Quarantine::new(&dir);
    let mut records = 0usize;
    let _ = runakefli_storage::wal::replay(&dir, &q, |_, _, req| {
        records += req.entry_count();
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&dir);
}
