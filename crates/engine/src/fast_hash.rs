//! An in-process hasher for the engine's maps (FxHash's mixing): fast, not
//! keyed, never persisted.

use std::hash::{BuildHasherDefault, Hasher};

/// A fast non-cryptographic hasher (FxHash's mixing) for in-process maps.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(buf));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// Hash of a label sequence, as [`LabelSet::hash64`](crate::LabelSet::hash64) computes it.
pub fn hash_pairs<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> u64 {
    let mut h = FastHasher::default();
    for (k, v) in pairs {
        h.write(k.as_bytes());
        h.write_u64(0xff);
        h.write(v.as_bytes());
        h.write_u64(0xfe);
    }
    h.finish()
}
