//! Fuzz target: Elasticsearch `_bulk` bodies (action and document lines).
#![no_main]

use libfuzzer_sys::fuzz_target;
use runakefli_fuzz::limits;
use runakefli_ingest::jsondoc::DocOptions;

fuzz_target!(|data: &[u8]| {
    let l = limits();
    if let Ok(out) = runakefli_ingest::es_bulk::decode_bulk(data, None, Some("idx"), &DocOptions::default(), &l) {
        let _ = out.response_json(1);
    }
});
