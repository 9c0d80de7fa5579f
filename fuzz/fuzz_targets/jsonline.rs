//! Fuzz target: JSON-lines bodies (`/insert/jsonline`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use runakefli_fuzz::limits;
use runakefli_ingest::jsondoc::DocOptions;

fuzz_target!(|data: &[u8]| {
    let l = limits();
    let _ = runakefli_ingest::jsonline::decode_jsonline(data, None, &DocOptions::default(), &l);
});
