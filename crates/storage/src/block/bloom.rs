//! The block's token bloom filter.
//!
//! **Version 2** (written): one split-block filter per block over *scoped*
//! keys. A key is a token (or, with grams, a [`GRAM`]-byte window of a long
//! token) together with where it occurs: the templates (JSON keys and
//! punctuation), one column, or the structured metadata. So one lookup
//! answers "may column 7 hold token T", which lets a reader skip whole
//! blocks and, inside a block, the columns a needle cannot be in. The filter
//! is an array of 32-byte blocks; a key sets 8 bits, one in each 32-bit word
//! of the block its hash picks, so a lookup touches one cache line.
//!
//! **Version 1** (read only): one classic filter over unscoped tokens of the
//! templates, string-like columns and metadata, 5 probes per key.

use super::tokens::for_each_token;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Hash seed of version-1 keys (part of the format).
const SEED_V1: u64 = 0x5275_6e61_6b65_666c;
/// Version 1: bloom bits per distinct token.
#[cfg(test)]
const BITS_PER_KEY_V1: usize = 8;
/// Version 1: probes per key.
const PROBES_V1: u64 = 5;

/// Hash seed of version-2 token keys (part of the format).
const SEED_TOKEN: u64 = 0x7a6b_5f74_6f6b_656e;
/// Hash seed of version-2 gram keys (part of the format).
const SEED_GRAM: u64 = 0x7a6b_5f67_7261_6d73;
/// Hash seed of version-2 short gram keys (part of the format).
const SEED_SHORT_GRAM: u64 = 0x7a6b_5f73_686f_7274;
/// Seed of stride-gram keys ([`STRIDE_GRAM`]).
const SEED_STRIDE_GRAM: u64 = 0x7a6b_5f73_7472_6964;
/// Odd multipliers picking one bit per 32-bit word (part of the format).
const SALT: [u32; 8] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];
/// Version 2: filter bits per distinct key (about 3 % false positives).
/// Scoped keys are probed once per candidate column, so a needle that could
/// sit in several columns pays several chances of a false positive.
const BITS_PER_KEY: usize = 8;

/// Version 2: Hex columns index only their tokens at least this long (the
/// distinctive parts of ids; a uuid's 4-digit groups are not worth a key).
pub const MIN_HEX_TOKEN: usize = 8;
/// Bytes of one filter block.
pub(crate) const BLOCK_BYTES: usize = 32;

/// Length of the token windows kept as gram keys (part of the format).
pub const GRAM: usize = 8;

/// Length of the token windows kept as short gram keys (part of the
/// format): the templates' tokens longer than this add every such window,
/// so a needle of [`SHORT_GRAM`] to [`GRAM`] − 1 bytes that is no whole
/// token of the needle (an id typed alone, `k3x9q2m`) can be ruled out of
/// the templates without a gram of its own length.
pub const SHORT_GRAM: usize = 4;

/// Length of the *stride grams* (part of the format): the windows of this
/// many bytes that start at every [`STRIDE`]-th byte of a token (0, 4, 8, …)
/// of a column whose values are long numbers or hex ids (Decimal, Hex).
/// Such columns keep no grams (one per byte of a 32-digit trace id would
/// outweigh the column), so a rare id that may lie *inside* one of their
/// tokens (a 10-digit session id inside a trace id, an order number inside a
/// longer one) used to keep every block. A run of at least
/// [`STRIDE_MIN_RUN`] bytes inside a token covers, for the one alignment that
/// is its offset in the token modulo [`STRIDE`], at least one whole stride
/// gram, so the block may hold it only if for some alignment all of its
/// windows at that alignment are keys; a quarter of the grams per token, at
/// the price of four alignments asked.
pub const STRIDE_GRAM: usize = 5;

/// Distance between the starts of a token's stride grams.
pub const STRIDE: usize = 4;

/// Shortest run judged by stride grams, and shortest token that adds them:
/// `STRIDE_GRAM + STRIDE − 1`, so that every alignment has a window.
pub const STRIDE_MIN_RUN: usize = STRIDE_GRAM + STRIDE - 1;

/// Where a version-2 key occurs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Template text: JSON keys and punctuation.
    Template,
    /// The values of one column (its position in the header).
    Column(u32),
    /// Structured metadata names and values.
    Metadata,
}

impl Scope {
    #[inline]
    fn salt(self) -> u64 {
        let n: u64 = match self {
            Scope::Template => 0,
            Scope::Metadata => 1,
            Scope::Column(c) => 2 + u64::from(c),
        };
        n.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
}

#[inline]
fn token_key(scope: Scope, token: &[u8]) -> u64 {
    xxh3_64_with_seed(token, SEED_TOKEN ^ scope.salt())
}

#[inline]
fn gram_key(scope: Scope, gram: &[u8]) -> u64 {
    xxh3_64_with_seed(gram, SEED_GRAM ^ scope.salt())
}

#[inline]
fn short_gram_key(scope: Scope, gram: &[u8]) -> u64 {
    xxh3_64_with_seed(gram, SEED_SHORT_GRAM ^ scope.salt())
}

#[inline]
fn stride_gram_key(scope: Scope, gram: &[u8]) -> u64 {
    xxh3_64_with_seed(gram, SEED_STRIDE_GRAM ^ scope.salt())
}

/// Appends the stride-gram keys of `text` (windows of [`STRIDE_GRAM`] bytes
/// at offsets 0, [`STRIDE`], 2 × [`STRIDE`], … of each token of at least
/// [`STRIDE_MIN_RUN`] bytes) to `out`.
pub fn stride_gram_keys(scope: Scope, text: &[u8], out: &mut Vec<u64>) {
    for_each_token(text, |t| token_stride_gram_keys(scope, t, out));
}

/// Appends the stride-gram keys of one token (none when it is shorter than
/// [`STRIDE_MIN_RUN`] bytes) to `out`: [`stride_gram_keys`] of one token.
#[inline]
pub fn token_stride_gram_keys(scope: Scope, token: &[u8], out: &mut Vec<u64>) {
    if token.len() >= STRIDE_MIN_RUN {
        out.extend(
            (0..=token.len() - STRIDE_GRAM)
                .step_by(STRIDE)
                .map(|p| stride_gram_key(scope, &token[p..p + STRIDE_GRAM])),
        );
    }
}

/// The filter keys of one needle run in one scope: as a whole token, and as
/// its grams (empty when it is shorter than [`GRAM`]).
#[derive(Clone, Debug, Default)]
pub struct RunKeys {
    /// The key of the run as a whole token ([`Bloom::may_contain`]).
    pub token: u64,
    /// The keys of its grams ([`Bloom::may_contain_grams`]).
    pub grams: Vec<u64>,
    /// The keys of its short grams, when it is [`SHORT_GRAM`] to [`GRAM`]
    /// − 1 bytes long (empty otherwise).
    pub short: Vec<u64>,
    /// The stride-gram keys of every [`STRIDE_GRAM`]-byte window of the
    /// run, in order, when it is at least [`STRIDE_MIN_RUN`] bytes long
    /// (empty otherwise): [`Bloom::may_contain_stride`] picks an alignment's.
    pub stride: Vec<u64>,
}

impl RunKeys {
    /// The keys of `run` in `scope`.
    pub fn new(scope: Scope, run: &[u8]) -> Self {
        RunKeys {
            token: token_key(scope, run),
            grams: if run.len() >= GRAM {
                run.windows(GRAM).map(|g| gram_key(scope, g)).collect()
            } else {
                Vec::new()
            },
            short: if (SHORT_GRAM..GRAM).contains(&run.len()) {
                run.windows(SHORT_GRAM)
                    .map(|g| short_gram_key(scope, g))
                    .collect()
            } else {
                Vec::new()
            },
            stride: if run.len() >= STRIDE_MIN_RUN {
                run.windows(STRIDE_GRAM)
                    .map(|g| stride_gram_key(scope, g))
                    .collect()
            } else {
                Vec::new()
            },
        }
    }
}

/// Collects version-2 keys, then builds the filter.
#[derive(Default)]
pub struct BloomBuilder {
    tokens: Vec<u64>,
    grams: Vec<u64>,
}

impl BloomBuilder {
    /// Adds every token of `text`, in `scope`.
    pub fn add_tokens(&mut self, scope: Scope, text: &[u8]) {
        for_each_token(text, |t| self.add_token(scope, t));
    }

    /// Adds one token (a whole token of a value, as [`for_each_token`]
    /// finds them) in `scope`.
    #[inline]
    pub fn add_token(&mut self, scope: Scope, token: &[u8]) {
        self.tokens.push(token_key(scope, token));
    }

    /// Adds the tokens of `text` at least `min` bytes long, in `scope`.
    pub fn add_long_tokens(&mut self, scope: Scope, text: &[u8], min: usize) {
        for_each_token(text, |t| {
            if t.len() >= min {
                self.tokens.push(token_key(scope, t))
            }
        });
    }

    /// Adds every [`GRAM`]-byte window of the tokens of `text` that are at
    /// least that long, in `scope`.
    pub fn add_grams(&mut self, scope: Scope, text: &[u8]) {
        for_each_token(text, |t| {
            if t.len() >= GRAM {
                self.grams
                    .extend(t.windows(GRAM).map(|g| gram_key(scope, g)));
            }
        });
    }

    /// Adds every [`SHORT_GRAM`]-byte window of the tokens of `text` longer
    /// than that, in `scope`.
    pub fn add_short_grams(&mut self, scope: Scope, text: &[u8]) {
        for_each_token(text, |t| {
            if t.len() > SHORT_GRAM {
                self.grams
                    .extend(t.windows(SHORT_GRAM).map(|g| short_gram_key(scope, g)));
            }
        });
    }

    /// Adds gram keys computed by [`gram_keys`].
    pub fn add_gram_keys(&mut self, keys: &[u64]) {
        self.grams.extend_from_slice(keys);
    }

    /// Builds the filter bytes (empty when there were no keys) and resets.
    pub fn build(&mut self) -> Vec<u8> {
        self.tokens.append(&mut self.grams);
        self.tokens.sort_unstable();
        self.tokens.dedup();
        let n = self.tokens.len();
        if n == 0 {
            return Vec::new();
        }
        let blocks = filter_blocks(n);
        let mut out = vec![0u8; blocks * BLOCK_BYTES];
        for &h in &self.tokens {
            let b = block_of(h, blocks) * BLOCK_BYTES;
            for (i, salt) in SALT.iter().enumerate() {
                let bit = (h as u32).wrapping_mul(*salt) >> 27;
                let w = b + i * 4 + (bit as usize / 8);
                out[w] |= 1 << (bit % 8);
            }
        }
        self.tokens.clear();
        out
    }
}

/// Appends the gram keys of `text` (as [`BloomBuilder::add_grams`] would
/// add them) to `out`.
pub fn gram_keys(scope: Scope, text: &[u8], out: &mut Vec<u64>) {
    for_each_token(text, |t| token_gram_keys(scope, t, out));
}

/// Appends the [`GRAM`]-byte windows of one token (none when it is shorter)
/// to `out`: [`gram_keys`] of one token.
#[inline]
pub fn token_gram_keys(scope: Scope, token: &[u8], out: &mut Vec<u64>) {
    if token.len() >= GRAM {
        out.extend(token.windows(GRAM).map(|g| gram_key(scope, g)));
    }
}

/// Filter blocks for `n` distinct keys: [`BITS_PER_KEY`] bits a key, and
/// past 16 blocks rounded to the nearest *size class* (1, 1.25, 1.5 or 1.75
/// times a power of two), so that blocks holding about as many keys have
/// filters of one size, which a part lays side by side in groups
/// (`part/bloom_groups.rs`). Readers take the size from the section's
/// length: the rounding is the writer's alone.
pub fn filter_blocks(n: usize) -> usize {
    let exact = (n * BITS_PER_KEY).div_ceil(BLOCK_BYTES * 8);
    if exact <= 16 {
        return exact;
    }
    let step = 1usize << (exact.ilog2() - 2);
    (exact + step / 2) / step * step
}

/// The filter block a key picks among `blocks`.
#[inline]
pub(crate) fn block_of(h: u64, blocks: usize) -> usize {
    (((h >> 32) * blocks as u64) >> 32) as usize
}

/// The bits a key sets in its filter block, as the block's four
/// little-endian 64-bit words.
#[inline]
pub(crate) fn key_pattern(h: u64) -> [u64; 4] {
    let mut p = [0u64; 4];
    for (i, salt) in SALT.iter().enumerate() {
        let bit = (h as u32).wrapping_mul(*salt) >> 27;
        p[i / 2] |= 1u64 << (bit + 32 * (i as u32 % 2));
    }
    p
}

/// A filter's copy among the filters of a group of blocks laid side by
/// side (`block/bloom_group.rs`): its filter block `k` is `slots[k × stride
/// + member]`, as four little-endian words.
#[derive(Clone, Copy, Debug)]
pub struct SlotView<'a> {
    /// The group's filter blocks.
    pub slots: &'a [[u64; 4]],
    /// Members the group has room for.
    pub stride: usize,
    /// Filter blocks of each member.
    pub blocks: usize,
    /// The member.
    pub member: usize,
}

impl SlotView<'_> {
    /// Whether the member's filter may hold key `h`.
    #[inline]
    pub fn has_key(&self, h: u64) -> bool {
        if self.blocks == 0 {
            return false;
        }
        let p = key_pattern(h);
        self.slots
            .get(block_of(h, self.blocks) * self.stride + self.member)
            .is_some_and(|s| (0..4).all(|w| s[w] & p[w] == p[w]))
    }
}

/// A version-2 filter read from a block, or from its copy in a group of
/// filters laid side by side (the same bits).
#[derive(Clone, Copy, Debug)]
pub struct Bloom<'a> {
    bytes: &'a [u8],
    /// The copy to read instead of `bytes`.
    copy: Option<SlotView<'a>>,
}

impl<'a> Bloom<'a> {
    /// Wraps the filter bytes (a whole number of 32-byte blocks).
    pub fn new(bytes: &'a [u8]) -> Self {
        let n = bytes.len() / BLOCK_BYTES * BLOCK_BYTES;
        Bloom {
            bytes: &bytes[..n],
            copy: None,
        }
    }

    /// A filter read from its copy among a group's.
    pub fn of_copy(copy: SlotView<'a>) -> Self {
        Bloom {
            bytes: &[],
            copy: Some(copy),
        }
    }

    #[inline]
    fn has_key(&self, h: u64) -> bool {
        if let Some(copy) = self.copy {
            return copy.has_key(h);
        }
        let blocks = self.bytes.len() / BLOCK_BYTES;
        if blocks == 0 {
            return false;
        }
        let b = block_of(h, blocks) * BLOCK_BYTES;
        SALT.iter().enumerate().all(|(i, salt)| {
            let bit = (h as u32).wrapping_mul(*salt) >> 27;
            self.bytes[b + i * 4 + (bit as usize / 8)] & (1 << (bit % 8)) != 0
        })
    }

    /// Hints the CPU to fetch the slots of `keys` ([`crate::prefetch`]).
    #[inline]
    pub fn hint_keys(&self, keys: &[u64]) {
        if self.copy.is_some() {
            return;
        }
        let blocks = self.bytes.len() / BLOCK_BYTES;
        if blocks == 0 {
            return;
        }
        for &h in keys {
            let b = block_of(h, blocks) * BLOCK_BYTES;
            crate::prefetch::bytes(&self.bytes[b..b + BLOCK_BYTES], BLOCK_BYTES);
        }
    }

    /// [`Self::may_contain`] or [`Self::may_contain_grams`] with the keys
    /// worked out beforehand ([`RunKeys`]): a query probes thousands of
    /// blocks with the same few keys.
    #[inline]
    pub fn may_contain_keys(&self, keys: &[u64]) -> bool {
        keys.iter().all(|&k| self.has_key(k))
    }

    /// False only if `token` was certainly never added in `scope`.
    #[inline]
    pub fn may_contain(&self, scope: Scope, token: &[u8]) -> bool {
        self.has_key(token_key(scope, token))
    }

    /// False only if no token added with its short grams in `scope` holds
    /// `run` ([`SHORT_GRAM`] bytes or more, and shorter than the tokens
    /// that added theirs) as a substring.
    pub fn may_contain_short_grams(&self, scope: Scope, run: &[u8]) -> bool {
        debug_assert!(run.len() >= SHORT_GRAM);
        run.windows(SHORT_GRAM)
            .all(|g| self.has_key(short_gram_key(scope, g)))
    }

    /// False only if no token whose stride grams were added in `scope`
    /// holds `run` (at least [`STRIDE_MIN_RUN`] bytes) as a substring;
    /// `at_token_start` when the run is known to start a token (only the
    /// first alignment is possible).
    pub fn may_contain_stride(&self, scope: Scope, run: &[u8], at_token_start: bool) -> bool {
        let keys: Vec<u64> = run
            .windows(STRIDE_GRAM)
            .map(|g| stride_gram_key(scope, g))
            .collect();
        self.may_contain_stride_keys(&keys, at_token_start)
    }

    /// [`Self::may_contain_stride`] with the run's window keys
    /// ([`RunKeys::stride`]) worked out.
    pub fn may_contain_stride_keys(&self, keys: &[u64], at_token_start: bool) -> bool {
        debug_assert!(keys.len() + STRIDE_GRAM > STRIDE_MIN_RUN);
        let alignments = if at_token_start { 1 } else { STRIDE };
        (0..alignments).any(|o| {
            keys.iter()
                .skip(o)
                .step_by(STRIDE)
                .all(|&k| self.has_key(k))
        })
    }

    /// False only if no token added with its grams in `scope` holds `run`
    /// (at least [`GRAM`] bytes) as a substring.
    pub fn may_contain_grams(&self, scope: Scope, run: &[u8]) -> bool {
        debug_assert!(run.len() >= GRAM);
        run.windows(GRAM).all(|g| self.has_key(gram_key(scope, g)))
    }
}

/// A version-1 filter read from a block header (little-endian u64 words).
#[derive(Clone, Copy)]
pub struct BloomV1<'a> {
    words: &'a [u8],
}

impl<'a> BloomV1<'a> {
    /// Wraps `words.len() / 8` little-endian words.
    pub fn new(words: &'a [u8]) -> Self {
        BloomV1 { words }
    }

    /// False only if `token` was certainly never added.
    pub fn may_contain(&self, token: &[u8]) -> bool {
        let n = self.words.len() / 8;
        if n == 0 {
            return false;
        }
        let m = (n * 64) as u64;
        let h = xxh3_64_with_seed(token, SEED_V1);
        let h1 = h & 0xffff_ffff;
        let h2 = (h >> 32) | 1;
        (0..PROBES_V1).all(|i| {
            let p = h1.wrapping_add(i.wrapping_mul(h2)) % m;
            let w = (p / 64) as usize * 8;
            self.words[w + (p % 64) as usize / 8] & (1 << (p % 8)) != 0
        })
    }
}

/// Builds a version-1 filter over the tokens of `texts` (tests only: old
/// blocks must stay readable).
#[cfg(test)]
pub fn build_v1<'t>(texts: impl IntoIterator<Item = &'t [u8]>) -> Vec<u8> {
    let mut hashes = Vec::new();
    for t in texts {
        for_each_token(t, |tok| hashes.push(xxh3_64_with_seed(tok, SEED_V1)));
    }
    hashes.sort_unstable();
    hashes.dedup();
    if hashes.is_empty() {
        return Vec::new();
    }
    let words = (hashes.len() * BITS_PER_KEY_V1).div_ceil(64);
    let mut bits = vec![0u64; words];
    let m = (words * 64) as u64;
    for h in hashes {
        let h1 = h & 0xffff_ffff;
        let h2 = (h >> 32) | 1;
        for i in 0..PROBES_V1 {
            let p = h1.wrapping_add(i.wrapping_mul(h2)) % m;
            bits[(p / 64) as usize] |= 1 << (p % 64);
        }
    }
    bits.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoped_keys_have_no_false_negatives_and_few_positives() {
        let mut b = BloomBuilder::default();
        for i in 0..2000u32 {
            b.add_tokens(Scope::Column(i % 7), format!("tok{i}").as_bytes());
        }
        b.add_tokens(Scope::Template, b"level msg");
        let bytes = b.build();
        let bloom = Bloom::new(&bytes);
        for i in 0..2000u32 {
            assert!(bloom.may_contain(Scope::Column(i % 7), format!("tok{i}").as_bytes()));
        }
        assert!(bloom.may_contain(Scope::Template, b"msg"));
        let fp = (0..4000u32)
            .filter(|i| bloom.may_contain(Scope::Column(i % 7), format!("other{i}").as_bytes()))
            .count();
        assert!(fp < 200, "false positives {fp}");
        // Same token, other scope: mostly absent.
        let wrong = (0..2000u32)
            .filter(|i| bloom.may_contain(Scope::Column(i % 7 + 1), format!("tok{i}").as_bytes()))
            .count();
        assert!(wrong < 100, "scope leaks {wrong}");
        assert!(!Bloom::new(&[]).may_contain(Scope::Template, b"x"));
    }

    #[test]
    fn grams_find_substrings_of_long_tokens() {
        let mut b = BloomBuilder::default();
        let text = b"x 47427f18eca769601347c34f1e0dc5fd short";
        b.add_tokens(Scope::Column(0), text);
        b.add_grams(Scope::Column(0), text);
        let bytes = b.build();
        let bloom = Bloom::new(&bytes);
        assert!(bloom.may_contain(Scope::Column(0), b"short"));
        assert!(bloom.may_contain_grams(Scope::Column(0), b"f18eca769601347c"));
        assert!(bloom.may_contain_grams(Scope::Column(0), b"47427f18eca769601347c34f1e0dc5fd"));
        assert!(!bloom.may_contain_grams(Scope::Column(0), b"0123456789abcdef"));
    }

    #[test]
    fn short_grams_find_short_substrings_of_longer_tokens() {
        let mut b = BloomBuilder::default();
        let text = b"{\"k8s_node\":\"\0\",\"ts\":\"\0\"}";
        b.add_tokens(Scope::Template, text);
        b.add_short_grams(Scope::Template, text);
        let bytes = b.build();
        let bloom = Bloom::new(&bytes);
        for inside in [&b"k8s_"[..], b"8s_no", b"s_node", b"k8s_nod"] {
            assert!(bloom.may_contain_short_grams(Scope::Template, inside));
            assert_eq!(
                RunKeys::new(Scope::Template, inside).short.len(),
                inside.len() - SHORT_GRAM + 1
            );
        }
        assert!(!bloom.may_contain_short_grams(Scope::Template, b"k3x9q2m"));
        // Short grams are a key family of their own.
        assert!(!bloom.may_contain_short_grams(Scope::Column(0), b"k8s_"));
        assert!(RunKeys::new(Scope::Template, b"k8s").short.is_empty());
        assert!(RunKeys::new(Scope::Template, b"k8s_node").short.is_empty());
    }

    #[test]
    fn version_one_filters_still_answer() {
        let words = build_v1([&b"alpha beta"[..], b"gamma"]);
        let bloom = BloomV1::new(&words);
        assert!(bloom.may_contain(b"beta") && bloom.may_contain(b"gamma"));
        let fp = (0..500)
            .filter(|i| bloom.may_contain(format!("z{i}").as_bytes()))
            .count();
        assert!(fp < 100);
    }
}
