//! Fuzz target: WAL replay of a segment whose bytes after the header are
//! arbitrary (the first byte of the input, when odd, also damages the
//! header). Replay must never panic; whatever it cannot read goes to the
//! quarantine.
#![no_main]

use libfuzzer_sys::fuzz_target;
use runakefli_storage::quarantine::Quarantine;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let dir = runakefli_fuzz::scratch_dir("wal_replay");
    let wal = dir.join("wal");
    std::fs::create_dir_all(&wal).unwrap();
    let mut seg = b"RKFWAL\0\0\x01\0\0\0\0\0\0\0".to_vec();
    if sel & 1 == 1 {
        seg[(sel as usize >> 1) % 16] ^= sel;
    }
    seg.extend_from_slice(body);
    std::fs::write(wal.join("00000000000000000001.wal"), &seg).unwrap();
    let q = Quarantine::new(&dir);
    let mut records = 0usize;
    let _ = runakefli_storage::wal::replay(&dir, &q, |_, _, req| {
        records += req.entry_count();
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&dir);
});
