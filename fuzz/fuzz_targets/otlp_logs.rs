//! Fuzz target: OTLP/HTTP logs export bodies, protobuf or OTLP/JSON (the
//! first byte picks), mapped to streams; never a panic, and the expansion
//! limits hold.
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
    let l = limits();
    if let Ok(req) = runakefli_ingest::otlp::decode_logs(body, Some(ct), None, &l) {
        assert!(req.entry_count() <= l.max_entries_per_request);
    }
});
