//! Fuzz target: Loki push bodies. The first byte picks the content type
//! (protobuf or JSON) and encoding (none, gzip, deflate, snappy-framed as
//! Promtail sends); the rest is the body. Decoding must never panic and
//! must respect the size limits.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| runakefli_fuzz::targets::loki_push(data));
