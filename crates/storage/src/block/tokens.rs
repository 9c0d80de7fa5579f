//! Tokens: maximal runs of `[A-Za-z0-9_]` and bytes `>= 0x80`, the unit of
//! the block bloom filters (`bloom.rs`), with the token runs of a search
//! needle and the character classes of tokens.

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

/// A maximal run of token bytes inside a search needle, with whether a
/// non-token byte of the needle bounds it on each side. A line holding the
/// needle holds the run inside one of its tokens: as the whole token when
/// both sides are bounded, as a prefix (left bounded), a suffix (right
/// bounded), or anywhere (neither).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeedleRun<'a> {
    /// The run's bytes.
    pub text: &'a [u8],
    /// A non-token byte of the needle comes right before the run.
    pub left_bounded: bool,
    /// A non-token byte of the needle comes right after the run.
    pub right_bounded: bool,
}

impl NeedleRun<'_> {
    /// True when the run must be a whole token of the line.
    pub fn is_whole_token(&self) -> bool {
        self.left_bounded && self.right_bounded
    }
}

/// The token runs of a search needle, in order.
pub fn needle_runs(needle: &[u8]) -> Vec<NeedleRun<'_>> {
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
        out.push(NeedleRun {
            text: &needle[start..i],
            left_bounded: start > 0,
            right_bounded: i < needle.len(),
        });
    }
    out
}

/// Token class bits: ASCII digits.
pub const CLASS_DIGIT: u8 = 1;
/// Token class bits: `a`–`f`.
pub const CLASS_HEX_LOWER: u8 = 2;
/// Token class bits: `g`–`z`.
pub const CLASS_LOWER: u8 = 4;
/// Token class bits: `A`–`F`.
pub const CLASS_HEX_UPPER: u8 = 8;
/// Token class bits: `G`–`Z`.
pub const CLASS_UPPER: u8 = 16;
/// Token class bits: `_`.
pub const CLASS_UNDERSCORE: u8 = 32;
/// Token class bits: bytes `>= 0x80`.
pub const CLASS_HIGH: u8 = 64;

/// The classes of the token bytes in `text` (non-token bytes add nothing).
pub fn token_classes(text: &[u8]) -> u8 {
    text.iter().fold(0, |m, &b| m | byte_class(b))
}

/// The token class bit of byte `b` (0 for non-token bytes).
const fn byte_class(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => CLASS_DIGIT,
        b'a'..=b'f' => CLASS_HEX_LOWER,
        b'g'..=b'z' => CLASS_LOWER,
        b'A'..=b'F' => CLASS_HEX_UPPER,
        b'G'..=b'Z' => CLASS_UPPER,
        b'_' => CLASS_UNDERSCORE,
        0x80.. => CLASS_HIGH,
        _ => 0,
    }
}

/// The alphabet bit of byte `b`: one bit per lowercase letter, one per
/// uppercase letter, one for all digits, and six for groups of the other
/// bytes (so a set of bytes fits in a `u64`).
#[inline]
pub fn alphabet_bit(b: u8) -> u64 {
    1 << alphabet_index(b)
}

/// The bit number of [`alphabet_bit`]`(b)`.
const fn alphabet_index(b: u8) -> u8 {
    match b {
        b'a'..=b'z' => b - b'a',
        b'A'..=b'Z' => 26 + (b - b'A'),
        b'0'..=b'9' => 52,
        b' ' | b'\t' | b'\n' | b'\r' => 53,
        b'"' | b'\'' | b'`' => 54,
        b'_' | b'-' | b'.' => 55,
        b'/' | b'\\' | b'|' => 56,
        b':' | b';' | b',' | b'=' => 57,
        b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'<' | b'>' => 58,
        b'!' | b'?' | b'@' | b'#' | b'$' | b'%' | b'^' | b'&' | b'*' | b'+' | b'~' => 59,
        0x80..=0xbf => 60,
        0xc0..=0xff => 61,
        _ => 62,
    }
}

/// The [`alphabet_bit`]s of every byte of `text`.
pub fn alphabet(text: &[u8]) -> u64 {
    text.iter().fold(0, |m, &b| m | alphabet_bit(b))
}

/// Length of the longest token of `text`.
pub fn longest_token(text: &[u8]) -> usize {
    let mut longest = 0;
    for_each_token(text, |t| longest = longest.max(t.len()));
    longest
}

/// Token features: a digit right before a letter outside `a-f`/`A-F`
/// (`8o` in `d8o4b4v`; hex strings have none).
pub const FEATURE_DIGIT_LETTER: usize = 0;
/// Token features: a letter outside `a-f`/`A-F` right before a digit
/// (`s4` in `dahls42`).
pub const FEATURE_LETTER_DIGIT: usize = 1;
/// Token features: a letter outside `a-f`/`A-F`.
pub const FEATURE_NON_HEX_LETTER: usize = 2;
/// Token features: an underscore.
pub const FEATURE_UNDERSCORE: usize = 3;
/// Not a token feature: the slot of a column's longest run of hex digits
/// (`0-9a-fA-F`) in [`longest_by_feature`]'s lengths. A run of the needle
/// made only of hex digits lies inside such a run.
pub const HEX_RUN: usize = 4;
/// Not a token feature: the slot of a column's longest run of ASCII digits.
pub const DIGIT_RUN: usize = 5;
/// Number of lengths [`longest_by_feature`] keeps: the token features,
/// then [`HEX_RUN`] and [`DIGIT_RUN`].
pub const FEATURES: usize = 6;
/// Number of token features (the first lengths).
pub const TOKEN_FEATURES: usize = 4;

/// The features (bit `FEATURE_…`) of a token or of a run of token bytes.
/// A token holding a run has every feature of the run, so a run with a
/// feature lies only in tokens at most as long as the longest token with
/// that feature: ids that interleave digits and letters (`k3x9q2m`) are
/// then judged against the other such tokens of a column, not against
/// every word or number in it.
#[inline]
pub fn token_features(t: &[u8]) -> u8 {
    let mut f = 0u8;
    let mut prev = 0u8; // 1 digit, 2 letter outside a-f/A-F
    for &b in t {
        let kind = if b.is_ascii_digit() {
            1
        } else if b.is_ascii_alphabetic() && !b.is_ascii_hexdigit() {
            f |= 1 << FEATURE_NON_HEX_LETTER;
            2
        } else {
            if b == b'_' {
                f |= 1 << FEATURE_UNDERSCORE;
            }
            0
        };
        if prev == 1 && kind == 2 {
            f |= 1 << FEATURE_DIGIT_LETTER;
        } else if prev == 2 && kind == 1 {
            f |= 1 << FEATURE_LETTER_DIGIT;
        }
        prev = kind;
    }
    f
}

/// Raises `longest[i]` to the length of the longest token of `text` with
/// feature `i` ([`token_features`]), and `longest[HEX_RUN]` and
/// `longest[DIGIT_RUN]` to the lengths of its longest runs of hex digits
/// and of digits.
pub fn longest_by_feature(text: &[u8], longest: &mut [usize; FEATURES]) {
    for_each_token(text, |t| {
        let f = token_features(t);
        for (i, l) in longest[..TOKEN_FEATURES].iter_mut().enumerate() {
            if f & 1 << i != 0 && t.len() > *l {
                *l = t.len();
            }
        }
    });
    for (slot, is) in [
        (HEX_RUN, u8::is_ascii_hexdigit as fn(&u8) -> bool),
        (DIGIT_RUN, u8::is_ascii_digit),
    ] {
        let mut run = 0usize;
        for b in text {
            run = if is(b) { run + 1 } else { 0 };
            longest[slot] = longest[slot].max(run);
        }
    }
}

/// What a column head records of its values' tokens, gathered in one pass
/// over each value: the longest token, the longest token with each feature
/// and the longest hex and digit runs ([`longest_by_feature`]), the token
/// classes ([`token_classes`]) and the alphabet ([`alphabet`]). The block
/// builder reads every distinct value of every column once through
/// [`TokenFacts::scan`], which also hands each token to the bloom.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenFacts {
    /// Length of the longest token ([`longest_token`]).
    pub longest: usize,
    /// [`longest_by_feature`]'s lengths.
    pub featured: [usize; FEATURES],
    /// [`token_classes`] of every value.
    pub classes: u8,
    /// [`alphabet`] of every value.
    pub letters: u64,
}

/// [`BYTE_INFO`] bits 0–1: the byte's kind in [`token_features`] (1 an
/// ASCII digit, 2 a letter outside `a-f`/`A-F`, 0 any other).
const INFO_KIND: u8 = 3;
/// [`BYTE_INFO`] bit: a token byte ([`is_token_byte`]).
const INFO_TOKEN: u8 = 4;
/// [`BYTE_INFO`] bit: an ASCII hex digit.
const INFO_HEX: u8 = 8;
/// [`BYTE_INFO`] bit: `_`.
const INFO_UNDERSCORE: u8 = 16;
// `TokenFacts::scan` turns the underscore bit into its feature by a shift.
const _: () = assert!(INFO_UNDERSCORE >> 1 == 1 << FEATURE_UNDERSCORE);

/// A table of `$value` for every byte `$b`, built at compile time.
macro_rules! byte_table {
    (|$b:ident| $value:expr) => {{
        let mut table = [0u8; 256];
        let mut i = 0usize;
        while i < 256 {
            let $b = i as u8;
            table[i] = $value;
            i += 1;
        }
        table
    }};
}

/// The [`BYTE_INFO`] bits of byte `c`.
const fn byte_info(c: u8) -> u8 {
    let mut i = 0;
    if c.is_ascii_digit() {
        i |= 1;
    } else if c.is_ascii_alphabetic() && !c.is_ascii_hexdigit() {
        i |= 2;
    }
    if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
        i |= INFO_TOKEN;
    }
    if c.is_ascii_hexdigit() {
        i |= INFO_HEX;
    }
    if c == b'_' {
        i |= INFO_UNDERSCORE;
    }
    i
}

/// Per byte: its [`INFO_KIND`], [`INFO_TOKEN`], [`INFO_HEX`] and
/// [`INFO_UNDERSCORE`] bits.
static BYTE_INFO: [u8; 256] = byte_table!(|b| byte_info(b));

/// Per byte: [`alphabet_index`].
static ALPHABET_INDEX: [u8; 256] = byte_table!(|b| alphabet_index(b));

/// Per byte: [`byte_class`].
static BYTE_CLASS: [u8; 256] = byte_table!(|b| byte_class(b));

/// The features a token gains from a byte of kind `kind` right after one of
/// kind `prev`, at index `prev << 2 | kind` ([`token_features`]).
static STEP_FEATURES: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut prev = 0;
    while prev < 4 {
        let mut kind = 0;
        while kind < 4 {
            let mut f = 0u8;
            if kind == 2 {
                f |= 1 << FEATURE_NON_HEX_LETTER;
            }
            if prev == 1 && kind == 2 {
                f |= 1 << FEATURE_DIGIT_LETTER;
            }
            if prev == 2 && kind == 1 {
                f |= 1 << FEATURE_LETTER_DIGIT;
            }
            t[prev << 2 | kind] = f;
            kind += 1;
        }
        prev += 1;
    }
    t
};

impl TokenFacts {
    /// Adds `text` to the facts and calls `on_token` for each of its tokens,
    /// in order (as [`for_each_token`] would).
    #[inline]
    pub fn scan(&mut self, text: &[u8], mut on_token: impl FnMut(&[u8])) {
        let mut letters = 0u64;
        let mut classes = 0u8;
        let (mut hex, mut digits) = (0usize, 0usize);
        let (mut hex_max, mut digits_max) = (0usize, 0usize);
        // The open token: its start, features and last byte's kind.
        let mut start = usize::MAX;
        let mut features = 0u8;
        let mut prev = 0u8;
        for (i, &b) in text.iter().enumerate() {
            letters |= 1u64 << ALPHABET_INDEX[usize::from(b)];
            classes |= BYTE_CLASS[usize::from(b)];
            let info = BYTE_INFO[usize::from(b)];
            hex = if info & INFO_HEX != 0 { hex + 1 } else { 0 };
            hex_max = hex_max.max(hex);
            digits = if info & INFO_KIND == 1 { digits + 1 } else { 0 };
            digits_max = digits_max.max(digits);
            if info & INFO_TOKEN != 0 {
                if start == usize::MAX {
                    start = i;
                    features = 0;
                    prev = 0;
                }
                let kind = info & INFO_KIND;
                features |=
                    STEP_FEATURES[usize::from(prev << 2 | kind)] | (info & INFO_UNDERSCORE) >> 1;
                prev = kind;
            } else if start != usize::MAX {
                self.close_token(&text[start..i], features);
                on_token(&text[start..i]);
                start = usize::MAX;
            }
        }
        if start != usize::MAX {
            self.close_token(&text[start..], features);
            on_token(&text[start..]);
        }
        self.letters |= letters;
        self.classes |= classes;
        self.featured[HEX_RUN] = self.featured[HEX_RUN].max(hex_max);
        self.featured[DIGIT_RUN] = self.featured[DIGIT_RUN].max(digits_max);
    }

    #[inline]
    fn close_token(&mut self, token: &[u8], features: u8) {
        let n = token.len();
        self.longest = self.longest.max(n);
        if features != 0 {
            for (i, l) in self.featured[..TOKEN_FEATURES].iter_mut().enumerate() {
                if features & 1 << i != 0 && n > *l {
                    *l = n;
                }
            }
        }
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
    fn needle_runs_know_their_bounds() {
        let runs = needle_runs(b"ab cd-ef");
        let got: Vec<_> = runs
            .iter()
            .map(|r| (r.text, r.left_bounded, r.right_bounded))
            .collect();
        assert_eq!(
            got,
            vec![
                (&b"ab"[..], false, true),
                (&b"cd"[..], true, true),
                (&b"ef"[..], true, false)
            ]
        );
        assert!(runs[1].is_whole_token());
        assert!(needle_runs(b" - ").is_empty());
    }

    /// [`TokenFacts::scan`] over `values`, with the tokens it handed out.
    fn scanned(values: &[&[u8]]) -> (TokenFacts, Vec<Vec<u8>>) {
        let mut facts = TokenFacts::default();
        let mut tokens = Vec::new();
        for v in values {
            facts.scan(v, |t| tokens.push(t.to_vec()));
        }
        (facts, tokens)
    }

    /// The same facts from the one-question-at-a-time functions.
    fn reference(values: &[&[u8]]) -> (TokenFacts, Vec<Vec<u8>>) {
        let mut facts = TokenFacts::default();
        let mut tokens = Vec::new();
        for v in values {
            facts.longest = facts.longest.max(longest_token(v));
            longest_by_feature(v, &mut facts.featured);
            facts.classes |= token_classes(v);
            facts.letters |= alphabet(v);
            for_each_token(v, |t| tokens.push(t.to_vec()));
        }
        (facts, tokens)
    }

    #[test]
    fn token_facts_in_one_pass_match_the_separate_questions() {
        let values: [&[u8]; 6] = [
            b"user k3x9q2m at 0a1b2c3d4e5f, dahlberg42 usr_0042 x1 successfully",
            b"",
            b"--",
            r"caf\u00e9 é9 HK-24663-HM 192.168.0.1".as_bytes(),
            b"4639533580900112 trailing_",
            b"_a1_ 9Z z9",
        ];
        assert_eq!(scanned(&values), reference(&values));
        assert_eq!(scanned(&values[..1]).0.featured, [7, 10, 12, 8, 12, 4]);
    }

    proptest::proptest! {
        #[test]
        fn token_facts_agree_on_any_bytes(
            values in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40), 0..6),
            picked in proptest::collection::vec(
                proptest::sample::select(b"aZ9f_-. \xe9Gx0".to_vec()), 0..40),
        ) {
            let mut all: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
            all.push(&picked);
            proptest::prop_assert_eq!(scanned(&all), reference(&all));
        }
    }

    #[test]
    fn classes_and_lengths() {
        assert_eq!(longest_token(b"a bcd-ef"), 3);
        let mut l = [0; FEATURES];
        longest_by_feature(
            b"user k3x9q2m at 0a1b2c3d4e5f, dahlberg42 usr_0042 x1 successfully",
            &mut l,
        );
        assert_eq!(l, [7, 10, 12, 8, 12, 4]);
        let mut l = [0; FEATURES];
        longest_by_feature(b"user k3x9q2m dahlberg42 12345", &mut l);
        assert_eq!(l[FEATURE_DIGIT_LETTER], 7);
        assert_eq!(token_features(b"k3x9"), 0b0111);
        assert_eq!(token_features(b"dead42"), 0);
        assert_eq!(token_features(b"dahl42"), 0b0110);
        assert_eq!(token_features(b"0a1b2c3d4e5f"), 0);
        assert_eq!(token_features(b"12345"), 0);
        assert_eq!(
            token_classes(b"usr_0-Z"),
            CLASS_LOWER | CLASS_UNDERSCORE | CLASS_DIGIT | CLASS_UPPER
        );
        assert_eq!(
            token_classes("aF é".as_bytes()),
            CLASS_HEX_LOWER | CLASS_HEX_UPPER | CLASS_HIGH
        );
    }
}
