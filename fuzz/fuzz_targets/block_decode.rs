//! Fuzz target: the columnar block reader on arbitrary bytes (a damaged or
//! hostile block): an error naming the problem, never a panic or a huge
//! allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = runakefli_storage::block::decode_block(data) {
        assert_eq!(b.ts.len(), b.lines.len());
    }
    let _ = runakefli_storage::part::raw_block::decode_raw_block(data);
});
