//! Fuzz target: Elasticsearch `_bulk` bodies (action and document lines).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| runakefli_fuzz::targets::es_bulk(data));
