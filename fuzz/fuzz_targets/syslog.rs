//! Fuzz target: a syslog TCP byte stream (octet-counted or newline framing)
//! cut into frames, each parsed (RFC 5424 / 3164) and turned into an entry.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| runakefli_fuzz::targets::syslog(data));
