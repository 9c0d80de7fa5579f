//! Fuzz target: the columnar block reader on arbitrary bytes (a damaged or
//! hostile block): an error naming the problem, never a panic or a huge
//! allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| runakefli_fuzz::targets::block_decode(data));
