//! Fuzz target: WAL replay of a segment whose bytes after the header are
//! arbitrary (the first byte of the input, when odd, also damages the
//! header). Replay must never panic; whatever it cannot read goes to the
//! quarantine.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| runakefli_fuzz::targets::wal_replay(data));
