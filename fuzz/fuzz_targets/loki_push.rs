//! Fuzz target: Loki push bodies. The first byte picks the content type
//! (protobuf or JSON) and encoding (none, gzip, deflate, snappy-framed as
//! Promtail sends); the rest is the body. Decoding must never panic and
//! must respect the size limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use runakefli_fuzz::limits;

fuzz_target!(|data: &[u8]| {
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
});
