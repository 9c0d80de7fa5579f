//! A fast hasher for the codec's in-memory maps keyed by byte strings
//! (templates, column paths, column values): one-shot xxh3 per key instead of
//! a streaming state.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Hasher that folds each written chunk into the state with one-shot xxh3.
#[derive(Default)]
pub struct BytesHasher(u64);

impl Hasher for BytesHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxh3_64_with_seed(bytes, self.0);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        // Length prefixes of slices: mix cheaply.
        self.0 = (self.0 ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` using [`BytesHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<BytesHasher>>;
