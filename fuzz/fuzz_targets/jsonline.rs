//! Fuzz target: JSON-lines bodies (`/insert/jsonline`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| runakefli_fuzz::targets::jsonline(data));
