//! Fuzz target: OTLP/HTTP logs export bodies, protobuf or OTLP/JSON (the
//! first byte picks), mapped to streams; never a panic, and the expansion
//! limits hold.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| runakefli_fuzz::targets::otlp_logs(data));
