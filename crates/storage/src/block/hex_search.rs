//! Substring tests on packed-hex columns without printing a value.
//!
//! A Hex column stores every value in one layout ([`HexLayout`]: length,
//! dash positions, letter case) as its digits packed two to a byte. A
//! stretch of a search needle occurs in a value's text at offset `o` exactly
//! when its dashes fall on the layout's dashes, its other bytes are digits
//! of the layout's case, and the value's nibbles from the one under the
//! stretch's first digit equal the stretch's digits. So the offsets where the
//! stretch can lie at all are worked out once per column from the layout,
//! each as the nibble its digits start at, and the packed bytes are searched
//! for the stretch's digits at both nibble parities with one substring
//! search each, over the whole column at once. A uuid's first group or a
//! trace id's prefix (not a whole value, so not an equality test) is decided
//! without unpacking a value: unpacking every value of the blocks the bloom
//! could not rule out was most of such a search (`HexLayout::unpack` and
//! `memmem` per value, 40 % of a profile).

use super::text::HexLayout;
use memchr::memmem::Finder;

/// Where in a value a stretch must lie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// Anywhere (`contains`).
    Anywhere,
    /// At the start (`starts with`).
    Start,
    /// At the end (`ends with`).
    End,
}

/// A stretch prepared for one layout: the nibble positions its digits may
/// start at, and the digits.
struct Placed {
    /// The stretch's digits as nibbles.
    digits: Vec<u8>,
    /// Per nibble position of a value: the digits may start there.
    starts: Vec<bool>,
}

/// The places `stretch` may take in a value of `layout` (anchored as
/// `anchor` says); `None` when it can lie in no value.
fn place(layout: &HexLayout, stretch: &[u8], anchor: Anchor) -> Option<Placed> {
    let len = layout.len;
    if stretch.len() > len {
        return None;
    }
    let mut digits = Vec::with_capacity(stretch.len());
    for &b in stretch {
        if b == b'-' {
            continue;
        }
        let v = layout.nibble_of(b)?;
        digits.push(v);
    }
    // At most eight dashes (`HexLayout::of`): looked up in place, not
    // tabled per text position (this runs per block and column).
    let is_dash = |p: usize| layout.dashes.contains(&p);
    // Nibble index of a text position: the digits before it.
    let nibble_at = |p: usize| p - layout.dashes.iter().filter(|&&d| d < p).count();
    let n = nibble_at(len);
    let first_digit = stretch.iter().position(|&b| b != b'-');
    let last = len - stretch.len();
    let offsets = match anchor {
        Anchor::Anywhere => 0..=last,
        Anchor::Start => 0..=0,
        Anchor::End => last..=last,
    };
    let mut starts = vec![false; n + 1];
    let mut any = false;
    for o in offsets {
        let fits = stretch
            .iter()
            .enumerate()
            .all(|(i, &b)| (b == b'-') == is_dash(o + i));
        if fits {
            any = true;
            starts[first_digit.map_or(0, |f| nibble_at(o + f))] = true;
        }
    }
    any.then_some(Placed { digits, starts })
}

/// Nibble `i` of a packed value (high nibble first).
#[inline]
fn nibble(v: &[u8], i: usize) -> u8 {
    let b = v[i / 2];
    if i.is_multiple_of(2) {
        b >> 4
    } else {
        b & 15
    }
}

/// Whether packed value `v` holds `digits` from nibble `start`.
#[inline]
fn holds_at(v: &[u8], digits: &[u8], start: usize) -> bool {
    start + digits.len() <= v.len() * 2
        && digits
            .iter()
            .enumerate()
            .all(|(i, &d)| nibble(v, start + i) == d)
}

impl HexLayout {
    /// The nibble a text byte stands for in this layout's case; `None` for
    /// bytes no value of the layout prints as a digit.
    pub fn nibble_of(&self, b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' if !self.upper => Some(b - b'a' + 10),
            b'A'..=b'F' if self.upper => Some(b - b'A' + 10),
            _ => None,
        }
    }

    /// Appends, per value packed in `packed` (each [`Self::packed_len`]
    /// bytes), whether its text holds `stretch` where `anchor` says —
    /// the same answers as printing each value and searching it.
    pub fn values_holding(
        &self,
        packed: &[u8],
        stretch: &[u8],
        anchor: Anchor,
        out: &mut Vec<bool>,
    ) {
        let pl = self.packed_len();
        if pl == 0 {
            return;
        }
        let n = packed.len() / pl;
        let base = out.len();
        out.resize(base + n, false);
        let Some(placed) = place(self, stretch, anchor) else {
            return;
        };
        let hits = &mut out[base..];
        let k = placed.digits.len();
        if k == 0 {
            // Dashes only, and they fit: every value holds them.
            hits.fill(true);
            return;
        }
        let packed = &packed[..n * pl];
        for parity in 0..2 {
            let starts: Vec<usize> = (0..placed.starts.len())
                .filter(|&s| placed.starts[s] && s % 2 == parity)
                .collect();
            if starts.is_empty() {
                continue;
            }
            // The stretch's whole bytes at this parity: digits from the
            // first nibble that opens a byte.
            let head = parity; // nibbles before the first whole byte
            let whole = (k - head) / 2;
            if whole == 0 {
                for (vi, v) in packed.chunks_exact(pl).enumerate() {
                    if !hits[vi] && starts.iter().any(|&s| holds_at(v, &placed.digits, s)) {
                        hits[vi] = true;
                    }
                }
                continue;
            }
            let pat: Vec<u8> = placed.digits[head..head + 2 * whole]
                .chunks_exact(2)
                .map(|p| p[0] << 4 | p[1])
                .collect();
            let finder = Finder::new(&pat);
            let mut from = 0usize;
            while let Some(at) = finder.find(&packed[from..]) {
                let b = from + at;
                from = b + 1;
                let (vi, bo) = (b / pl, b % pl);
                if hits[vi] || bo + pat.len() > pl || bo * 2 < head {
                    continue;
                }
                let start = bo * 2 - head;
                let v = &packed[vi * pl..(vi + 1) * pl];
                if placed.starts[start] && holds_at(v, &placed.digits, start) {
                    hits[vi] = true;
                    // The value is decided: go on from the next one.
                    from = from.max((vi + 1) * pl);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn packed_of(layout: &HexLayout, values: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for v in values {
            assert!(layout.pack(v, &mut out));
        }
        out
    }

    fn by_text(values: &[&[u8]], stretch: &[u8], anchor: Anchor) -> Vec<bool> {
        values
            .iter()
            .map(|v| match anchor {
                Anchor::Anywhere => memchr::memmem::find(v, stretch).is_some(),
                Anchor::Start => v.starts_with(stretch),
                Anchor::End => v.ends_with(stretch),
            })
            .collect()
    }

    #[test]
    fn uuid_groups_and_trace_prefixes_are_found_packed() {
        let values: [&[u8]; 3] = [
            b"1759758d-637c-4b7b-9f2d-d1cd28b73fa9",
            b"0f2a9c1e-4b5d-4e6f-8a7b-1c2d3e4f5a6b",
            b"aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
        ];
        let layout = HexLayout::of(values[0]).unwrap();
        let packed = packed_of(&layout, &values);
        for (stretch, anchor) in [
            (&b"1759758d"[..], Anchor::Anywhere),
            (b"759758d-6", Anchor::Anywhere),
            (b"d1cd28b73fa9", Anchor::End),
            (b"d-637c-4", Anchor::Anywhere),
            (b"1759758d-", Anchor::Start),
            (b"aaaa", Anchor::Anywhere),
            (b"-", Anchor::Anywhere),
            (b"8a", Anchor::Anywhere),
            (b"a", Anchor::Anywhere),
            (b"1759758D", Anchor::Anywhere),
            (b"1759-758d", Anchor::Anywhere),
            (b"f2a9c1e4", Anchor::Anywhere),
        ] {
            let mut out = vec![true];
            layout.values_holding(&packed, stretch, anchor, &mut out);
            let mut want = vec![true];
            want.extend(by_text(&values, stretch, anchor));
            assert_eq!(out, want, "{} {anchor:?}", String::from_utf8_lossy(stretch));
        }
    }

    proptest! {
        /// Every stretch of every value, and random hex strings, give what
        /// searching the printed values gives, anchored or not, for layouts
        /// with and without dashes, in either case.
        #[test]
        fn packed_answers_equal_text_answers(
            seed in proptest::collection::vec(0u8..16, 64..256),
            dashes in proptest::bool::ANY,
            upper in proptest::bool::ANY,
            probe in "[0-9a-fA-F-]{1,12}",
            cut in (0usize..40, 1usize..14),
        ) {
            let digits = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
            let width = if dashes { 36 } else { 16 };
            let texts: Vec<Vec<u8>> = seed
                .chunks(8)
                .map(|c| {
                    (0..width)
                        .map(|i| {
                            if dashes && [8, 13, 18, 23].contains(&i) {
                                b'-'
                            } else {
                                // Few distinct digits, so stretches repeat.
                                digits[usize::from(c[i % c.len()] % 4)]
                            }
                        })
                        .collect()
                })
                .collect();
            let values: Vec<&[u8]> = texts.iter().map(|t| t.as_slice()).collect();
            let layout = HexLayout::of(values[0]).unwrap();
            let packed = packed_of(&layout, &values);
            let (at, len) = cut;
            let at = at % width;
            let taken = values[0][at..(at + len).min(width)].to_vec();
            for stretch in [taken, probe.into_bytes()] {
                for anchor in [Anchor::Anywhere, Anchor::Start, Anchor::End] {
                    let mut out = Vec::new();
                    layout.values_holding(&packed, &stretch, anchor, &mut out);
                    prop_assert_eq!(out, by_text(&values, &stretch, anchor));
                }
            }
        }
    }
}
