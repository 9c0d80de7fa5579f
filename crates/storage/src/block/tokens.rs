//! Tokens and the block's token bloom filter.
//!
//! A token is a maximal run of `[A-Za-z0-9_]` and bytes `>= 0x80`. A block keeps
//! one bloom filter over the distinct tokens of its string-like columns, its
//! templates (JSON keys) and its metadata. One filter for the whole block
//! (rather than one per column) pays for each distinct token once and
//! answers the `|=` question, "may any line hold token T", with one lookup.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Hash seed of bloom keys (part of the format).
const SEED: u64 = 0x5275_6e61_6b65_666c;

/// Bloom bits per distinct (salt, token) pair.
const BITS_PER_KEY: usize = 8;
/// Probes per key; with 8 bits per key this gives about 2.5 % false positives.
const PROBES: u64 = 5;

/// True for bytes that belong to tokens.
#[inline]
pub fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Calls `f` for each token of `s`.
#[inline]
pub fn for_each_token(s: &[u8], mut f: impl FnMut(&[u8])) {
    let mut i = 0;
    while i < s.len() {
        if !is_token_byte(s[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < s.len() && is_token_byte(s[i]) {
            i += 1;
        }
        f(&s[start..i]);
    }
}

/// The tokens of a search needle that any containing line must hold whole:
/// those bounded by a non-token byte on both sides inside the needle.
pub fn complete_tokens(needle: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < needle.len() {
        if !is_token_byte(needle[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < needle.len() && is_token_byte(needle[i]) {
            i += 1;
        }
        if start > 0 && i < needle.len() {
            out.push(&needle[start..i]);
        }
    }
    out
}

#[inline]
fn key_hash(token: &[u8]) -> u64 {
    xxh3_64_with_seed(token, SEED)
}

/// Collects token hashes, then builds the filter.
#[derive(Default)]
pub struct BloomBuilder {
    hashes: Vec<u64>,
}

impl BloomBuilder {
    /// Adds every token of `text`.
    pub fn add_text(&mut self, text: &[u8]) {
        for_each_token(text, |t| self.hashes.push(key_hash(t)));
    }

    /// Builds the filter words (empty when there were no tokens) and resets.
    pub fn build(&mut self) -> Vec<u64> {
        self.hashes.sort_unstable();
        self.hashes.dedup();
        let n = self.hashes.len();
        if n == 0 {
            return Vec::new();
        }
        let words = (n * BITS_PER_KEY).div_ceil(64);
        let mut bits = vec![0u64; words];
        let m = (words * 64) as u64;
        for &h in &self.hashes {
            for p in probes(h, m) {
                bits[(p / 64) as usize] |= 1 << (p % 64);
            }
        }
        self.hashes.clear();
        bits
    }
}

#[inline]
fn probes(h: u64, m: u64) -> impl Iterator<Item = u64> {
    let h1 = h & 0xffff_ffff;
    let h2 = (h >> 32) | 1;
    (0..PROBES).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % m)
}

/// A bloom filter read from a block header (little-endian u64 words).
#[derive(Clone, Copy)]
pub struct Bloom<'a> {
    words: &'a [u8],
}

impl<'a> Bloom<'a> {
    /// Wraps `words.len() / 8` little-endian words.
    pub fn new(words: &'a [u8]) -> Self {
        Bloom { words }
    }

    /// False only if `token` was certainly never added.
    pub fn may_contain(&self, token: &[u8]) -> bool {
        let n = self.words.len() / 8;
        if n == 0 {
            return false;
        }
        let m = (n * 64) as u64;
        probes(key_hash(token), m).all(|p| {
            let w = (p / 64) as usize * 8;
            self.words[w + (p % 64) as usize / 8] & (1 << (p % 8)) != 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizes() {
        let mut v = Vec::new();
        for_each_token("a_b-c  é9.x".as_bytes(), |t| {
            v.push(String::from_utf8(t.to_vec()).unwrap())
        });
        assert_eq!(v, vec!["a_b", "c", "é9", "x"]);
    }

    #[test]
    fn complete_tokens_need_both_bounds() {
        let c = |s: &str| {
            complete_tokens(s.as_bytes())
                .into_iter()
                .map(|t| t.to_vec())
                .collect::<Vec<_>>()
        };
        assert!(c("timeout").is_empty());
        assert!(c("connection timeout").is_empty());
        assert_eq!(
            c(" connection timeout "),
            vec![b"connection".to_vec(), b"timeout".to_vec()]
        );
        assert_eq!(
            c("\"level\":\"error\""),
            vec![b"level".to_vec(), b"error".to_vec()]
        );
    }

    #[test]
    fn bloom_has_no_false_negatives() {
        let mut b = BloomBuilder::default();
        for i in 0..500 {
            b.add_text(format!("tok{i}").as_bytes());
        }
        let words: Vec<u8> = b.build().iter().flat_map(|w| w.to_le_bytes()).collect();
        let bloom = Bloom::new(&words);
        for i in 0..500 {
            assert!(bloom.may_contain(format!("tok{i}").as_bytes()));
        }
        let fp = (0..1000)
            .filter(|i| bloom.may_contain(format!("other{i}").as_bytes()))
            .count();
        assert!(fp < 80, "false positives {fp}");
    }
}
