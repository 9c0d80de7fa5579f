//! Column value encodings: how one column's values (raw text, in row order)
//! are written, chosen per block and column, and read back.
//!
//! Every encoding is exact on bytes: a typed encoding is only chosen when each
//! value reprints to the very same text (see `text.rs`).

use super::hash::FastMap;
use super::ints::{get_ints, put_ints, put_ints_addressable};
use super::text::{self, HexLayout};
use super::tokens::{for_each_token, is_token_byte};
use super::varint::{put_bytes, put_uvarint, unzigzag, uvarint_len, Cursor};
use crate::StorageError;

/// How a column's values are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Encoding {
    /// Every value is the same string.
    Const = 0,
    /// A dictionary of distinct strings plus one index per value.
    Dict = 1,
    /// Canonical decimals as mantissa + scale (integers have scale 0).
    Decimal = 2,
    /// RFC 3339 UTC timestamps with a fixed fraction width, delta-coded.
    Timestamp = 3,
    /// Hex ids (uuid, trace ids) packed two digits per byte.
    Hex = 4,
    /// Length-prefixed strings.
    Plain = 5,
    /// Canonical dotted IPv4 addresses as 4 bytes.
    Ipv4 = 6,
    /// A common text prefix plus a canonical decimal (`user_48213`).
    PrefixedDecimal = 7,
    /// A dictionary whose entries are ids into the part's shared
    /// dictionary (see `shared.rs`) or strings of the block's own, plus one
    /// entry per value. Only in parts that carry shared dictionaries.
    Shared = 8,
    /// Like [`Encoding::Shared`], with entries that are skeletons (values
    /// with their digit runs cut out, see `digits.rs`) and each value's
    /// digit runs packed after the entries.
    Skeleton = 9,
}

impl Encoding {
    /// Parses the stored tag.
    pub fn from_u8(v: u8) -> Option<Encoding> {
        Some(match v {
            0 => Encoding::Const,
            1 => Encoding::Dict,
            2 => Encoding::Decimal,
            3 => Encoding::Timestamp,
            4 => Encoding::Hex,
            5 => Encoding::Plain,
            6 => Encoding::Ipv4,
            7 => Encoding::PrefixedDecimal,
            8 => Encoding::Shared,
            9 => Encoding::Skeleton,
            _ => return None,
        })
    }

    /// True for string-like encodings (any text can be such a value).
    /// Version-1 blooms hold the tokens of exactly these columns.
    pub fn is_string(self) -> bool {
        matches!(
            self,
            Encoding::Const
                | Encoding::Dict
                | Encoding::Plain
                | Encoding::Shared
                | Encoding::Skeleton
        )
    }

    /// True when a version-2 block puts this column's value tokens in the
    /// bloom: string-like columns, and the identifier-like typed columns
    /// (hex, prefixed decimal) whose whole values are what needles name.
    /// Numbers, timestamps and addresses are judged by shape and length.
    pub fn tokens_in_bloom(self) -> bool {
        self.is_string() || matches!(self, Encoding::Hex | Encoding::PrefixedDecimal)
    }

    /// True when a version-2 block may hold the grams of this column's long
    /// tokens (string-like columns, as the block's gram budget allows).
    pub fn grams_in_bloom(self) -> bool {
        self.is_string()
    }

    /// Whether a value printed by this encoding could contain every byte of
    /// `bytes`, in that order ([`Self::shape_fits`]; string-like encodings:
    /// always). `prefix` is the column's prefix (PrefixedDecimal only).
    pub fn may_print(self, bytes: &[u8], prefix: &[u8]) -> bool {
        let all = |ok: &dyn Fn(u8) -> bool| bytes.iter().all(|&b| ok(b));
        (match self {
            Encoding::Const
            | Encoding::Dict
            | Encoding::Plain
            | Encoding::Shared
            | Encoding::Skeleton => true,
            Encoding::Decimal => all(&|b| b.is_ascii_digit() || b == b'.' || b == b'-'),
            Encoding::PrefixedDecimal => {
                all(&|b| b.is_ascii_digit() || b == b'.' || b == b'-' || prefix.contains(&b))
            }
            Encoding::Timestamp => {
                all(&|b| b.is_ascii_digit() || matches!(b, b'-' | b':' | b'.' | b'T' | b'Z'))
            }
            Encoding::Hex => all(&|b| b.is_ascii_hexdigit() || b == b'-'),
            Encoding::Ipv4 => all(&|b| b.is_ascii_digit() || b == b'.'),
        }) && self.shape_fits(bytes)
    }

    /// Whether some value printed by this encoding could hold `frag` as a
    /// substring, judging by how many separators such a value has and
    /// where, and how long its digit runs are: a decimal has at most one
    /// `.` and a `-` only in front, a timestamp (`2026-12-04T16:10:51.999Z`)
    /// at most two `-` and `:`, one `.`, `T` and `Z`, and digit runs of at
    /// most nine, an IPv4 address three `.` and runs of at most three
    /// digits. So an address (`10.244.66.99`) or a version is never looked
    /// for in numbers and times, whose values would have to be printed to
    /// be searched. Other encodings: always.
    pub fn shape_fits(self, frag: &[u8]) -> bool {
        let count = |c: u8| frag.iter().filter(|&&b| b == c).count();
        let longest_digits = || {
            frag.split(|b| !b.is_ascii_digit())
                .map(<[u8]>::len)
                .max()
                .unwrap_or(0)
        };
        match self {
            Encoding::Decimal => {
                count(b'.') <= 1
                    && match frag.iter().position(|&b| b == b'-') {
                        None => true,
                        Some(0) => count(b'-') == 1 && frag.get(1).is_none_or(u8::is_ascii_digit),
                        Some(_) => false,
                    }
            }
            Encoding::Timestamp => {
                count(b'-') <= 2
                    && count(b':') <= 2
                    && count(b'.') <= 1
                    && count(b'T') <= 1
                    && count(b'Z') <= 1
                    && longest_digits() <= 9
            }
            Encoding::Ipv4 => count(b'.') <= 3 && longest_digits() <= 3,
            _ => true,
        }
    }

    /// True when the column directory carries min/max for this encoding.
    pub fn has_stats(self) -> bool {
        matches!(self, Encoding::Decimal | Encoding::Timestamp)
    }

    /// Whether a value of a typed column could contain `token` as a whole
    /// token, judging by the characters a printed value can hold. `prefix` is
    /// the column's prefix (PrefixedDecimal only).
    pub fn token_fits(self, token: &[u8], prefix: &[u8]) -> bool {
        self.run_fits(token, prefix, true)
    }

    /// Whether a value of a typed column could contain `run` inside one of
    /// its tokens (as the whole token when `whole`), judging by characters.
    pub fn run_fits(self, run: &[u8], prefix: &[u8], whole: bool) -> bool {
        if !whole {
            return match self {
                // Any part of prefix + digits holds only prefix bytes and digits.
                Encoding::PrefixedDecimal => {
                    run.iter().all(|b| b.is_ascii_digit() || prefix.contains(b))
                }
                _ => self.run_fits(run, prefix, true),
            };
        }
        let token = run;
        match self {
            Encoding::PrefixedDecimal => {
                let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
                // The prefix's last token run joins the number's first digits.
                let cut = prefix
                    .iter()
                    .rposition(|&b| !is_token_byte(b))
                    .map_or(0, |p| p + 1);
                let (head, last) = prefix.split_at(cut);
                let mut inside = false;
                for_each_token(head, |t| inside |= t == token);
                inside
                    || digits(token)
                    || (!last.is_empty() && token.starts_with(last) && digits(&token[last.len()..]))
            }
            Encoding::Decimal => token.iter().all(u8::is_ascii_digit),
            Encoding::Ipv4 => token.len() <= 3 && token.iter().all(u8::is_ascii_digit),
            Encoding::Timestamp => token
                .iter()
                .all(|b| b.is_ascii_digit() || *b == b'T' || *b == b'Z'),
            Encoding::Hex => {
                token
                    .iter()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'a'..=b'f'))
                    || token
                        .iter()
                        .all(|b| b.is_ascii_digit() || matches!(b, b'A'..=b'F'))
            }
            Encoding::Const
            | Encoding::Dict
            | Encoding::Plain
            | Encoding::Shared
            | Encoding::Skeleton => true,
        }
    }

    /// True for the encodings whose entries refer to a part's shared
    /// dictionary.
    pub fn is_shared(self) -> bool {
        matches!(self, Encoding::Shared | Encoding::Skeleton)
    }
}

/// Min/max of a numeric column, as stored in the column directory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stats {
    /// Decimal column: smallest and largest value.
    Number {
        /// Smallest value.
        min: f64,
        /// Largest value.
        max: f64,
    },
    /// Timestamp column: earliest and latest, nanoseconds since the epoch.
    Time {
        /// Earliest.
        min: i64,
        /// Latest.
        max: i64,
    },
}

/// The outcome of encoding one column.
pub struct Encoded<'v> {
    /// Chosen encoding.
    pub encoding: Encoding,
    /// Min/max for numeric encodings.
    pub stats: Option<Stats>,
    /// The distinct values (for the block's token index).
    pub distinct: Vec<&'v [u8]>,
    /// The common prefix of a PrefixedDecimal column (empty otherwise).
    pub prefix: &'v [u8],
    /// Per value: its position in `distinct`.
    pub ids: Vec<u32>,
}

/// Encodes `values` into `dst`, choosing the smallest exact encoding.
/// `row_ts[i]` is the timestamp of the row holding value `i` (timestamp
/// columns may be stored relative to it).
pub fn encode_column<'v>(values: &[&'v [u8]], row_ts: &[i64], dst: &mut Vec<u8>) -> Encoded<'v> {
    let mut index: FastMap<&[u8], u32> = FastMap::default();
    let mut distinct: Vec<&[u8]> = Vec::new();
    let mut ids = Vec::with_capacity(values.len());
    for &v in values {
        let id = *index.entry(v).or_insert_with(|| {
            distinct.push(v);
            distinct.len() as u32 - 1
        });
        ids.push(id);
    }
    if distinct.len() <= 1 {
        put_bytes(dst, distinct.first().copied().unwrap_or(b""));
        return Encoded {
            encoding: Encoding::Const,
            stats: None,
            distinct,
            prefix: b"",
            ids,
        };
    }
    let total: usize = values.iter().map(|v| v.len()).sum();
    let plain_size = total + values.len();
    let idx_bits = (usize::BITS - (distinct.len() - 1).leading_zeros()) as usize;
    let dict_size = distinct.iter().map(|v| v.len() + 1).sum::<usize>()
        + 2
        + (values.len() * idx_bits).div_ceil(8);
    let mut best = (
        plain_size.min(dict_size),
        None::<(Encoding, Vec<u8>, Option<Stats>)>,
    );
    let mut scratch = Vec::new();
    for enc in [
        Encoding::Decimal,
        Encoding::Timestamp,
        Encoding::Hex,
        Encoding::Ipv4,
        Encoding::PrefixedDecimal,
    ] {
        scratch.clear();
        if let Some(stats) = encode_typed(enc, values, row_ts, &distinct, &mut scratch) {
            if scratch.len() < best.0 {
                best = (
                    scratch.len(),
                    Some((enc, std::mem::take(&mut scratch), stats)),
                );
            }
        }
    }
    if let Some((encoding, payload, stats)) = best.1 {
        dst.extend_from_slice(&payload);
        let prefix = match encoding {
            Encoding::PrefixedDecimal => decimal_prefix(&distinct).unwrap_or_default(),
            _ => b"",
        };
        return Encoded {
            encoding,
            stats,
            distinct,
            prefix,
            ids,
        };
    }
    if dict_size < plain_size && distinct.len() <= 65_536 {
        put_uvarint(dst, distinct.len() as u64);
        for v in &distinct {
            put_uvarint(dst, v.len() as u64);
        }
        for v in &distinct {
            dst.extend_from_slice(v);
        }
        let wide: Vec<u64> = ids.iter().map(|&i| u64::from(i)).collect();
        put_ints(dst, &wide);
        return Encoded {
            encoding: Encoding::Dict,
            stats: None,
            distinct,
            prefix: b"",
            ids,
        };
    }
    for v in values {
        put_uvarint(dst, v.len() as u64);
    }
    for v in values {
        dst.extend_from_slice(v);
    }
    Encoded {
        encoding: Encoding::Plain,
        stats: None,
        distinct,
        prefix: b"",
        ids,
    }
}

/// Writes a [`Encoding::Shared`] column: `distinct` and `ids` as from
/// [`encode_column`], `global[e]` the shared id of distinct value `e` (if
/// any). The index part (entries' shared ids, the count of own strings,
/// one entry per value) goes to `index`, the block's own strings to
/// `strings`. Entries are numbered shared ones first, in `distinct` order.
pub fn encode_shared(
    distinct: &[&[u8]],
    ids: &[u32],
    global: &[Option<u32>],
    index: &mut Vec<u8>,
    strings: &mut Vec<u8>,
) {
    let g: Vec<u64> = global.iter().flatten().map(|&id| u64::from(id)).collect();
    let mut renum = vec![0u64; distinct.len()];
    let (mut next_g, mut next_l) = (0u64, g.len() as u64);
    let mut locals: Vec<&[u8]> = Vec::new();
    for (e, gid) in global.iter().enumerate() {
        if gid.is_some() {
            renum[e] = next_g;
            next_g += 1;
        } else {
            renum[e] = next_l;
            next_l += 1;
            locals.push(distinct[e]);
        }
    }
    put_uvarint(index, g.len() as u64);
    put_ints_addressable(index, &g);
    put_uvarint(index, locals.len() as u64);
    let per_value: Vec<u64> = ids.iter().map(|&i| renum[i as usize]).collect();
    put_ints_addressable(index, &per_value);
    for v in &locals {
        put_uvarint(strings, v.len() as u64);
    }
    for v in &locals {
        strings.extend_from_slice(v);
    }
}

/// Where the parts of a shared column's index lie.
#[derive(Clone, Debug)]
pub struct SharedLayout {
    /// Shared ids of entries `0..global_count` (read in place: a query
    /// usually needs the ids of a few entries only).
    pub globals: super::ints::IntsLayout,
    /// How many entries are shared.
    pub global_count: usize,
    /// Number of the block's own strings (entries after the shared ones).
    pub locals: usize,
    /// The entry of each value.
    pub idx: super::ints::IntsLayout,
    /// [`Encoding::Skeleton`]: where the packed digit runs lie in the payload.
    pub digits: Option<std::ops::Range<usize>>,
}

/// Reads the index part of a [`Encoding::Shared`] or
/// [`Encoding::Skeleton`] (`skeleton`) column with `n` values without
/// decoding its entries' shared ids or its per-value entries (readers
/// check each id against the dictionary's length).
pub fn shared_index_layout(
    payload: &[u8],
    n: usize,
    dict_len: usize,
    skeleton: bool,
) -> Result<SharedLayout, StorageError> {
    let mut c = Cursor::new(payload, "shared column");
    let g = c.len(n.min(dict_len))?;
    let globals = super::ints::IntsLayout::read(&mut c, g)?;
    let locals = c.len(n)?;
    let idx = super::ints::IntsLayout::read(&mut c, n)?;
    let digits = if skeleton {
        let len = c.len(c.remaining())?;
        let at = c.pos();
        c.take(len)?;
        Some(at..at + len)
    } else {
        None
    };
    if !c.is_empty() {
        return Err(c.err("trailing bytes in column"));
    }
    Ok(SharedLayout {
        globals,
        global_count: g,
        locals,
        idx,
        digits,
    })
}

/// Decodes the `l` own strings of a [`Encoding::Shared`] column.
pub fn decode_shared_strings(
    payload: &[u8],
    l: usize,
) -> Result<(Vec<u8>, Vec<u32>), StorageError> {
    let mut c = Cursor::new(payload, "shared column strings");
    let out = read_strings(&mut c, l)?;
    if !c.is_empty() {
        return Err(c.err("trailing bytes in column"));
    }
    Ok(out)
}

/// Tries a typed encoding; `None` when some value is not eligible.
fn encode_typed(
    enc: Encoding,
    values: &[&[u8]],
    row_ts: &[i64],
    distinct: &[&[u8]],
    dst: &mut Vec<u8>,
) -> Option<Option<Stats>> {
    match enc {
        Encoding::Decimal => {
            // Check the distinct values first: failing is the common outcome.
            for d in distinct {
                text::parse_decimal(d)?;
            }
            let parsed: Vec<(i64, u8)> = values
                .iter()
                .map(|v| text::parse_decimal(v))
                .collect::<Option<_>>()?;
            dst.push(0);
            Some(Some(put_decimals(dst, &parsed)))
        }
        Encoding::PrefixedDecimal => {
            let prefix = decimal_prefix(distinct)?;
            for d in distinct {
                text::parse_decimal(&d[prefix.len()..])?;
            }
            let parsed: Vec<(i64, u8)> = values
                .iter()
                .map(|v| text::parse_decimal(&v[prefix.len()..]))
                .collect::<Option<_>>()?;
            put_bytes(dst, prefix);
            put_decimals(dst, &parsed);
            Some(None)
        }
        Encoding::Timestamp => {
            let mut w0 = None;
            let mut out = Vec::new();
            let mut units = Vec::with_capacity(values.len());
            for v in values {
                let (u, w) = text::parse_rfc3339(v)?;
                if *w0.get_or_insert(w) != w {
                    return None;
                }
                out.clear();
                if !text::format_rfc3339(&mut out, u, w) || out != *v {
                    return None;
                }
                units.push(u);
            }
            let w = w0?;
            let unit = 10i64.pow(9 - u32::from(w));
            let mut prev = 0i64;
            let deltas: Vec<u64> = units
                .iter()
                .map(|&u| {
                    let d = u.wrapping_sub(prev);
                    prev = u;
                    zz(d)
                })
                .collect();
            let relative: Option<Vec<u64>> = (row_ts.len() == units.len()).then(|| {
                units
                    .iter()
                    .zip(row_ts)
                    .map(|(&u, &t)| zz(u.wrapping_sub(t.div_euclid(unit))))
                    .collect()
            });
            let size = |v: &[u64]| v.iter().map(|&x| uvarint_len(x)).sum::<usize>();
            match relative {
                Some(rel) if size(&rel) <= size(&deltas) => {
                    dst.extend_from_slice(&[w, TS_RELATIVE]);
                    put_ints(dst, &rel);
                }
                _ => {
                    dst.extend_from_slice(&[w, TS_DELTA]);
                    put_ints(dst, &deltas);
                }
            }
            let min = units.iter().min()?.saturating_mul(unit);
            let max = units.iter().max()?.saturating_mul(unit);
            Some(Some(Stats::Time { min, max }))
        }
        Encoding::Hex => {
            let layout = HexLayout::of(values[0])?;
            if layout.len < 8 {
                return None;
            }
            dst.push(u8::from(layout.upper));
            put_uvarint(dst, layout.len as u64);
            put_uvarint(dst, layout.dashes.len() as u64);
            for &d in &layout.dashes {
                put_uvarint(dst, d as u64);
            }
            for v in values {
                if !layout.pack(v, dst) {
                    return None;
                }
            }
            Some(None)
        }
        Encoding::Ipv4 => {
            // Byte planes: first octets of all values, then second octets, …
            let quads: Vec<[u8; 4]> = values
                .iter()
                .map(|v| text::parse_ipv4(v))
                .collect::<Option<_>>()?;
            for b in 0..4 {
                dst.extend(quads.iter().map(|q| q[b]));
            }
            Some(None)
        }
        _ => None,
    }
}

/// The longest prefix shared by all `distinct` values that ends before any
/// trailing digits, signs or dots (so the rest can be a decimal); `None` if empty.
fn decimal_prefix<'v>(distinct: &[&'v [u8]]) -> Option<&'v [u8]> {
    let first = distinct.first()?;
    let mut n = first.len();
    for d in &distinct[1..] {
        n = n.min(
            first
                .iter()
                .zip(d.iter())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    while n > 0 && matches!(first[n - 1], b'0'..=b'9' | b'-' | b'.') {
        n -= 1;
    }
    (n > 0).then(|| &first[..n])
}

/// Writes mantissas and scales (after the caller's prefix section); returns min/max.
fn put_decimals(dst: &mut Vec<u8>, parsed: &[(i64, u8)]) -> Stats {
    let scale0 = parsed[0].1;
    let same_scale = parsed.iter().all(|p| p.1 == scale0);
    let deltas: usize = parsed
        .windows(2)
        .map(|w| uvarint_len(zz(w[1].0.wrapping_sub(w[0].0))))
        .sum();
    let plain: usize = parsed[1..].iter().map(|p| uvarint_len(zz(p.0))).sum();
    let delta = same_scale && deltas < plain;
    dst.push(u8::from(!same_scale) | (u8::from(delta) << 1));
    if same_scale {
        dst.push(scale0);
    } else {
        dst.extend(parsed.iter().map(|p| p.1));
    }
    let mut prev = 0i64;
    let ints: Vec<u64> = parsed
        .iter()
        .map(|&(m, _)| {
            let v = if delta { m.wrapping_sub(prev) } else { m };
            prev = m;
            zz(v)
        })
        .collect();
    put_ints(dst, &ints);
    let f = |(m, s): (i64, u8)| m as f64 / 10f64.powi(i32::from(s));
    let min = parsed.iter().map(|&p| f(p)).fold(f64::INFINITY, f64::min);
    let max = parsed
        .iter()
        .map(|&p| f(p))
        .fold(f64::NEG_INFINITY, f64::max);
    Stats::Number { min, max }
}

/// Timestamp column mode: each value is a delta from the previous value.
const TS_DELTA: u8 = 0;
/// Timestamp column mode: each value is the difference from its row's timestamp.
const TS_RELATIVE: u8 = 1;

#[inline]
fn zz(v: i64) -> u64 {
    super::varint::zigzag(v)
}

/// A decoded column: its values in order, owned.
#[derive(Clone, Debug)]
pub enum Values {
    /// `n` copies of one value.
    Const {
        /// The value.
        value: Vec<u8>,
        /// Number of values.
        n: usize,
    },
    /// Dictionary entries (concatenated, with end offsets) and one index per value.
    Dict {
        /// Entry bytes.
        data: Vec<u8>,
        /// End offset of each entry.
        ends: Vec<u32>,
        /// Entry index per value.
        idx: Vec<u32>,
    },
    /// Every value spelled out (concatenated, with end offsets).
    Flat {
        /// Value bytes.
        data: Vec<u8>,
        /// End offset of each value.
        ends: Vec<u32>,
    },
}

impl Values {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Values::Const { n, .. } => *n,
            Values::Dict { idx, .. } => idx.len(),
            Values::Flat { ends, .. } => ends.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i` (must be `< len()`).
    #[inline]
    pub fn get(&self, i: usize) -> &[u8] {
        match self {
            Values::Const { value, .. } => value,
            Values::Dict { data, ends, idx } => slice(data, ends, idx[i] as usize),
            Values::Flat { data, ends } => slice(data, ends, i),
        }
    }

    /// Dictionary entry `e` of a [`Values::Dict`] (must be `< ends.len()`);
    /// for other variants the same as [`Values::get`].
    #[inline]
    pub fn entry(&self, e: usize) -> &[u8] {
        match self {
            Values::Dict { data, ends, .. } => slice(data, ends, e),
            _ => self.get(e),
        }
    }

    /// Checks that each value is valid UTF-8.
    pub fn check_utf8(&self) -> Result<(), StorageError> {
        let bad = || StorageError::corrupt("block column", "value is not utf-8");
        match self {
            Values::Const { value, .. } => {
                std::str::from_utf8(value).map(|_| ()).map_err(|_| bad())
            }
            Values::Dict { data, ends, .. } | Values::Flat { data, ends } => (0..ends.len())
                .try_for_each(|i| {
                    std::str::from_utf8(slice(data, ends, i))
                        .map(|_| ())
                        .map_err(|_| bad())
                }),
        }
    }
}

#[inline]
fn slice<'a>(data: &'a [u8], ends: &[u32], i: usize) -> &'a [u8] {
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    &data[start..ends[i] as usize]
}

/// Reads `n` lengths and the concatenated bytes after them.
fn read_strings(c: &mut Cursor<'_>, n: usize) -> Result<(Vec<u8>, Vec<u32>), StorageError> {
    let mut ends = Vec::with_capacity(n.min(c.remaining()));
    let mut total = 0usize;
    for _ in 0..n {
        total += c.len(c.remaining())?;
        if total > c.remaining() || total > u32::MAX as usize {
            return Err(c.err("string data out of range"));
        }
        ends.push(total as u32);
    }
    Ok((c.take(total)?.to_vec(), ends))
}

/// For a Hex column's payload: whether its values use upper-case digits,
/// and the longest run of digits between dashes. `None` when the payload
/// does not start with a valid layout.
pub fn hex_digit_runs(payload: &[u8]) -> Option<(bool, usize)> {
    let mut c = Cursor::new(payload, "column");
    let upper = c.u8().ok()? != 0;
    let len = c.len(4096).ok()?;
    let nd = c.len(8).ok()?;
    let (mut longest, mut from) = (0usize, 0usize);
    for _ in 0..nd {
        let d = c.len(len.saturating_sub(1)).ok()?;
        longest = longest.max(d.checked_sub(from)?);
        from = d + 1;
    }
    Some((upper, longest.max(len.checked_sub(from)?)))
}

/// A Hex column's payload of `n` values split into its layout and the
/// packed values (`packed_len()` bytes each, in value order).
pub fn hex_packed(payload: &[u8], n: usize) -> Result<(HexLayout, &[u8]), StorageError> {
    let mut c = Cursor::new(payload, "column");
    let split = read_hex_packed(&mut c, n)?;
    if !c.is_empty() {
        return Err(c.err("trailing bytes in column"));
    }
    Ok(split)
}

/// [`hex_packed`] from a cursor at the payload's start.
fn read_hex_packed<'p>(
    c: &mut Cursor<'p>,
    n: usize,
) -> Result<(HexLayout, &'p [u8]), StorageError> {
    let layout = read_hex_layout(c)?;
    let size = n
        .checked_mul(layout.packed_len())
        .ok_or_else(|| c.err("count overflow"))?;
    let packed = c.take(size)?;
    Ok((layout, packed))
}

/// The head of a Decimal or PrefixedDecimal column's payload.
struct DecimalHead<'p> {
    /// Bytes before every value's number (empty for Decimal).
    prefix: &'p [u8],
    /// One scale for every value, or one per value.
    scales: Vec<u8>,
    /// Mantissas are stored as differences from the previous one.
    delta: bool,
}

impl<'p> DecimalHead<'p> {
    fn read(c: &mut Cursor<'p>, n: usize) -> Result<Self, StorageError> {
        let prefix = c.bytes()?;
        let mode = c.u8()?;
        if mode > 3 {
            return Err(c.err("bad decimal mode"));
        }
        let scales: Vec<u8> = if mode & 1 == 0 {
            vec![c.u8()?]
        } else {
            c.take(n)?.to_vec()
        };
        if scales.iter().any(|&s| s > 18) {
            return Err(c.err("bad decimal scale"));
        }
        Ok(DecimalHead {
            prefix,
            scales,
            delta: mode & 2 != 0,
        })
    }

    /// Value `i`'s scale.
    #[inline]
    fn scale(&self, i: usize) -> u8 {
        self.scales[if self.scales.len() == 1 { 0 } else { i }]
    }

    /// The `n` mantissas that follow the head, in value order.
    fn mantissas(
        &self,
        c: &mut Cursor<'_>,
        n: usize,
    ) -> Result<impl Iterator<Item = i64>, StorageError> {
        let delta = self.delta;
        let mut prev = 0i64;
        Ok(get_ints(c, n)?.into_iter().map(move |raw| {
            let raw = unzigzag(raw);
            let m = if delta { prev.wrapping_add(raw) } else { raw };
            prev = m;
            m
        }))
    }
}

/// The `n` values of a Decimal column as the doubles their text parses to
/// (`runakefli_model::number::scaled_decimal`), without printing the text:
/// what a float unwrap of the column reads. `None` when the column is not a
/// Decimal one, or when some value is not exact in one division (more than
/// 2^53 with a fraction, or a scale over 15): its text must be parsed.
pub fn decode_decimal_numbers(
    enc: Encoding,
    payload: &[u8],
    n: usize,
) -> Result<Option<Vec<f64>>, StorageError> {
    if !matches!(enc, Encoding::Decimal | Encoding::PrefixedDecimal) {
        return Ok(None);
    }
    let mut c = Cursor::new(payload, "column");
    let d = DecimalHead::read(&mut c, n)?;
    if !d.prefix.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(n);
    for (i, m) in d.mantissas(&mut c, n)?.enumerate() {
        match runakefli_model::number::scaled_decimal(m, d.scale(i)) {
            Some(v) => out.push(v),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// Decodes `n` values of a column stored with `enc`; `row_ts` as for
/// [`encode_column`] (needed by relative timestamp columns only).
pub fn decode_column(
    enc: Encoding,
    payload: &[u8],
    n: usize,
    row_ts: &[i64],
) -> Result<Values, StorageError> {
    decode_column_where(enc, payload, n, row_ts, None, super::layout::VERSION)
}

/// Values printed one per position ([`decode_column_at`]).
struct AtPositions<'p> {
    positions: &'p [u32],
    data: Vec<u8>,
    ends: Vec<u32>,
}

impl AtPositions<'_> {
    /// Prints the value at each position with `f`.
    fn each(
        &mut self,
        mut f: impl FnMut(usize, &mut Vec<u8>) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        for &p in self.positions {
            f(p as usize, &mut self.data)?;
            self.ends.push(self.data.len() as u32);
        }
        Ok(())
    }
}

/// A Hex column's layout, at the start of its payload.
fn read_hex_layout(c: &mut Cursor<'_>) -> Result<HexLayout, StorageError> {
    let upper = c.u8()? != 0;
    let len = c.len(4096)?;
    let nd = c.len(8)?;
    let mut dashes = Vec::with_capacity(nd);
    for _ in 0..nd {
        let d = c.len(len.saturating_sub(1))?;
        if dashes.last().is_some_and(|&p| p >= d) {
            return Err(c.err("bad hex layout"));
        }
        dashes.push(d);
    }
    if nd >= len || (len - nd) % 2 != 0 {
        return Err(c.err("bad hex layout"));
    }
    Ok(HexLayout { len, dashes, upper })
}

/// Values `positions` (ascending, each below `n`) of a column of `n`
/// values, one per position, each read alone — for encodings that allow
/// it: Const, Hex, Ipv4, Dict (block version 2), Plain (its lengths summed
/// to each wanted value, only the wanted bytes copied),
/// Decimal/PrefixedDecimal stored without deltas and Timestamp stored
/// relative to the row timestamps (`row_ts`: the timestamp of the row
/// holding each position's value; may be empty for other encodings).
/// `None` for the others (delta-coded timestamps and decimals, or a
/// relative Timestamp column without `row_ts`), which are decoded whole
/// ([`decode_column_where`]). A line rebuilt for a log query's answer needs
/// one value of each of its columns; decoding a column whole for it cost
/// ~10,000 instructions a column (callgrind, q14), and a Plain or Timestamp
/// column's whole copy and its allocations were most of rebuilding q1's
/// hundred answer lines from 99 blocks after a restart.
pub fn decode_column_at(
    enc: Encoding,
    payload: &[u8],
    n: usize,
    positions: &[u32],
    row_ts: &[i64],
    version: u8,
) -> Result<Option<Values>, StorageError> {
    use super::ints::IntsLayout;
    let mut c = Cursor::new(payload, "column");
    if positions.last().is_some_and(|&p| p as usize >= n) {
        return Err(c.err("value position out of range"));
    }
    let mut out = AtPositions {
        positions,
        data: Vec::new(),
        ends: Vec::with_capacity(positions.len()),
    };
    match enc {
        Encoding::Const => {
            let value = c.bytes()?;
            out.each(|_, d| {
                d.extend_from_slice(value);
                Ok(())
            })?;
        }
        Encoding::Hex => {
            let (layout, packed) = read_hex_packed(&mut c, n)?;
            let pl = layout.packed_len();
            out.each(|p, d| {
                layout.unpack(&packed[p * pl..(p + 1) * pl], d);
                Ok(())
            })?;
        }
        Encoding::Plain => {
            // Each wanted value's place from the lengths before it.
            let mut spans = Vec::with_capacity(positions.len());
            let mut total = 0usize;
            let mut k = 0usize;
            for i in 0..n {
                let len = c.len(c.remaining())?;
                while positions.get(k).is_some_and(|&p| p as usize == i) {
                    spans.push((total, total + len));
                    k += 1;
                }
                total += len;
                if total > c.remaining() || total > u32::MAX as usize {
                    return Err(c.err("string data out of range"));
                }
            }
            let bytes = c.take(total)?;
            out.data.reserve(spans.iter().map(|(a, b)| b - a).sum());
            for (a, b) in spans {
                out.data.extend_from_slice(&bytes[a..b]);
                out.ends.push(out.data.len() as u32);
            }
        }
        Encoding::Timestamp => {
            let w = c.u8()?;
            if w > 9 {
                return Err(c.err("bad timestamp width"));
            }
            let mode = c.u8()?;
            if mode > TS_RELATIVE {
                return Err(c.err("bad timestamp mode"));
            }
            if mode != TS_RELATIVE || row_ts.len() != positions.len() {
                return Ok(None);
            }
            let unit = 10i64.pow(9 - u32::from(w));
            let layout = IntsLayout::read(&mut c, n)?;
            for (&p, &t) in positions.iter().zip(row_ts) {
                let v = t
                    .div_euclid(unit)
                    .wrapping_add(unzigzag(layout.get(payload, p as usize)));
                if !text::format_rfc3339(&mut out.data, v, w) {
                    return Err(c.err("timestamp out of range"));
                }
                out.ends.push(out.data.len() as u32);
            }
        }
        Encoding::Ipv4 => {
            let raw = c.take(n.checked_mul(4).ok_or_else(|| c.err("count overflow"))?)?;
            out.each(|p, d| {
                text::format_ipv4(d, [raw[p], raw[n + p], raw[2 * n + p], raw[3 * n + p]]);
                Ok(())
            })?;
        }
        Encoding::Decimal | Encoding::PrefixedDecimal => {
            let head = DecimalHead::read(&mut c, n)?;
            if head.delta {
                return Ok(None);
            }
            let layout = IntsLayout::read(&mut c, n)?;
            out.each(|p, d| {
                d.extend_from_slice(head.prefix);
                let m = unzigzag(layout.get(payload, p));
                text::format_decimal(d, m, head.scale(p));
                Ok(())
            })?;
        }
        Encoding::Dict if version >= 2 => {
            let entries = c.len(c.remaining())?;
            if entries > 65_536 {
                return Err(c.err("dictionary too large"));
            }
            let (strings, string_ends) = read_strings(&mut c, entries)?;
            let layout = IntsLayout::read(&mut c, n)?;
            out.each(|p, d| {
                let e = usize::try_from(layout.get(payload, p)).unwrap_or(usize::MAX);
                if e >= entries {
                    return Err(StorageError::corrupt(
                        "column",
                        "dictionary index out of range",
                    ));
                }
                let start = if e == 0 {
                    0
                } else {
                    string_ends[e - 1] as usize
                };
                d.extend_from_slice(&strings[start..string_ends[e] as usize]);
                Ok(())
            })?;
        }
        _ => return Ok(None),
    }
    if !c.is_empty() {
        return Err(c.err("trailing bytes in column"));
    }
    Ok(Some(Values::Flat {
        data: out.data,
        ends: out.ends,
    }))
}

/// Like [`decode_column`], but typed encodings (whose text is computed)
/// print only the values `wanted` selects; the others read as empty. The
/// whole payload is still checked.
/// `version` is the block's format version (Dict indices are a byte or
/// two each in version 1, an integer stream from version 2 on).
pub fn decode_column_where(
    enc: Encoding,
    payload: &[u8],
    n: usize,
    row_ts: &[i64],
    wanted: Option<&[bool]>,
    version: u8,
) -> Result<Values, StorageError> {
    let want = |i: usize| wanted.is_none_or(|w| w.get(i).copied().unwrap_or(false));
    let mut c = Cursor::new(payload, "column");
    let v = match enc {
        Encoding::Shared | Encoding::Skeleton => {
            return Err(c.err("shared column read without its part's dictionaries"))
        }
        Encoding::Const => Values::Const {
            value: c.bytes()?.to_vec(),
            n,
        },
        Encoding::Plain => {
            let (data, ends) = read_strings(&mut c, n)?;
            Values::Flat { data, ends }
        }
        Encoding::Dict => {
            let d = c.len(c.remaining())?;
            if d > 65_536 {
                return Err(c.err("dictionary too large"));
            }
            let (data, ends) = read_strings(&mut c, d)?;
            let idx: Vec<u32> = if version >= 2 {
                get_ints(&mut c, n)?
                    .into_iter()
                    .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
                    .collect()
            } else if d <= 256 {
                c.take(n)?.iter().map(|&b| u32::from(b)).collect()
            } else {
                let raw = c.take(n.checked_mul(2).ok_or_else(|| c.err("count overflow"))?)?;
                raw.chunks_exact(2)
                    .map(|p| u32::from(u16::from_le_bytes([p[0], p[1]])))
                    .collect()
            };
            if idx.iter().any(|&i| i as usize >= d) {
                return Err(c.err("dictionary index out of range"));
            }
            Values::Dict { data, ends, idx }
        }
        Encoding::Decimal | Encoding::PrefixedDecimal => {
            let d = DecimalHead::read(&mut c, n)?;
            let mut data = Vec::with_capacity(n.min(c.remaining()) * (6 + d.prefix.len()));
            let mut ends = Vec::with_capacity(n.min(c.remaining()));
            for (i, m) in d.mantissas(&mut c, n)?.enumerate() {
                if want(i) {
                    data.extend_from_slice(d.prefix);
                    text::format_decimal(&mut data, m, d.scale(i));
                }
                ends.push(data.len() as u32);
            }
            Values::Flat { data, ends }
        }
        Encoding::Timestamp => {
            let w = c.u8()?;
            if w > 9 {
                return Err(c.err("bad timestamp width"));
            }
            let mut data = Vec::with_capacity(n.min(c.remaining()) * (21 + w as usize));
            let mut ends = Vec::with_capacity(n.min(c.remaining()));
            let mode = c.u8()?;
            let unit = 10i64.pow(9 - u32::from(w));
            if mode == TS_RELATIVE && row_ts.len() != n || mode > TS_RELATIVE {
                return Err(c.err("bad timestamp mode"));
            }
            let mut prev = 0i64;
            for (i, raw) in get_ints(&mut c, n)?.into_iter().enumerate() {
                let raw = unzigzag(raw);
                prev = if mode == TS_RELATIVE {
                    row_ts[i].div_euclid(unit).wrapping_add(raw)
                } else {
                    prev.wrapping_add(raw)
                };
                if want(i) && !text::format_rfc3339(&mut data, prev, w) {
                    return Err(c.err("timestamp out of range"));
                }
                ends.push(data.len() as u32);
            }
            Values::Flat { data, ends }
        }
        Encoding::Hex => {
            let (layout, packed) = read_hex_packed(&mut c, n)?;
            let len = layout.len;
            let pl = layout.packed_len();
            let mut data = Vec::with_capacity(n * len);
            let mut ends = Vec::with_capacity(n);
            for (i, p) in packed.chunks_exact(pl).enumerate() {
                if want(i) {
                    layout.unpack(p, &mut data);
                }
                ends.push(data.len() as u32);
            }
            Values::Flat { data, ends }
        }
        Encoding::Ipv4 => {
            let raw = c.take(n.checked_mul(4).ok_or_else(|| c.err("count overflow"))?)?;
            let mut data = Vec::with_capacity(n * 15);
            let mut ends = Vec::with_capacity(n);
            for i in 0..n {
                if want(i) {
                    text::format_ipv4(
                        &mut data,
                        [raw[i], raw[n + i], raw[2 * n + i], raw[3 * n + i]],
                    );
                }
                ends.push(data.len() as u32);
            }
            Values::Flat { data, ends }
        }
    };
    if !c.is_empty() {
        return Err(c.err("trailing bytes in column"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_values_hold_only_fragments_of_their_shape() {
        use Encoding::*;
        // Addresses and versions are in no number or time.
        for frag in [&b"10.244.66.99"[..], b"1.2.3", b"5-3"] {
            assert!(!Decimal.may_print(frag, &[]), "{frag:?}");
        }
        assert!(!Timestamp.may_print(b"10.244.66.99", &[]));
        assert!(!Timestamp.may_print(b"2026-12-04-01", &[]));
        assert!(!Ipv4.may_print(b"10.244.66.99.1", &[]));
        assert!(!Ipv4.may_print(b"1234", &[]));
        // What their values print is still possible.
        for frag in [&b"-12.5"[..], b"2.5", b"-", b"-7", b"12", b"."] {
            assert!(Decimal.may_print(frag, &[]), "{frag:?}");
        }
        assert!(!Decimal.may_print(b"-.5", &[]));
        for frag in [&b"2026-12-04T16:10:51.123456789Z"[..], b"04T16:10", b"51.9"] {
            assert!(Timestamp.may_print(frag, &[]), "{frag:?}");
        }
        assert!(Ipv4.may_print(b"10.244.66.99", &[]) && Ipv4.may_print(b"4.66.9", &[]));
        assert!(Plain.may_print(b"10.244.66.99", &[]));
    }

    fn round(vals: &[&str]) -> Encoding {
        let v: Vec<&[u8]> = vals.iter().map(|s| s.as_bytes()).collect();
        let mut buf = Vec::new();
        let ts: Vec<i64> = (0..v.len() as i64)
            .map(|i| 1_795_913_989_854_000_000 + i * 1_000_000)
            .collect();
        let e = encode_column(&v, &ts, &mut buf);
        let d = decode_column(e.encoding, &buf, v.len(), &ts).unwrap();
        d.check_utf8().unwrap();
        for (i, s) in vals.iter().enumerate() {
            assert_eq!(d.get(i), s.as_bytes(), "{:?}", e.encoding);
        }
        e.encoding
    }

    #[test]
    fn values_read_alone_match_the_whole_column() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let n = 300usize;
        // (values, read alone: yes, no, or as the encoder chose).
        let mut sets: Vec<(Vec<String>, Option<bool>)> = Vec::new();
        sets.push((vec!["info".to_string(); n], Some(true)));
        let levels = ["info", "warn", "error", "debug"];
        let pick = |v: u64| levels[v as usize % 4].to_string();
        sets.push(((0..n).map(|_| pick(next())).collect(), Some(true)));
        let hex = |v: u64| format!("{:016x}{:016x}", v, v.rotate_left(17));
        sets.push(((0..n).map(|_| hex(next())).collect(), Some(true)));
        let ip = |v: u64| format!("10.{}.{}.{}", v % 256, (v >> 8) % 256, (v >> 16) % 256);
        sets.push(((0..n).map(|_| ip(next())).collect(), Some(true)));
        // Mixed scales: mantissas stored as they are, never as deltas.
        let num = |i: usize, v: u64| match i % 3 {
            0 => format!("{}", v % 5000),
            1 => format!("{}.{}", v % 5000, v % 10),
            _ => format!("{}.{:02}", v % 5000, v % 100),
        };
        sets.push(((0..n).map(|i| num(i, next())).collect(), Some(true)));
        sets.push((
            (0..n).map(|i| format!("user_{}", i * 3 + 10)).collect(),
            None,
        ));
        // Free text: lengths summed, only the wanted bytes copied.
        let text = |i: usize, v: u64| format!("free text {i} {}", v % 7);
        sets.push(((0..n).map(|i| text(i, next())).collect(), Some(true)));
        let ts: Vec<i64> = (0..n as i64)
            .map(|i| 1_795_913_989_854_000_000 + i * 7_777_777_777)
            .collect();
        // Timestamps a little after their rows' (stored relative to them):
        // read alone given the rows' timestamps.
        let stamp = |i: usize, v: u64| {
            let t = ts[i] + (v % 50) as i64 * 1_000_000;
            let mut out = Vec::new();
            assert!(text::format_rfc3339(&mut out, t / 1_000_000, 3));
            String::from_utf8(out).unwrap()
        };
        sets.push(((0..n).map(|i| stamp(i, next())).collect(), Some(true)));
        for (vals, alone) in &sets {
            let v: Vec<&[u8]> = vals.iter().map(|s| s.as_bytes()).collect();
            let mut buf = Vec::new();
            let e = encode_column(&v, &ts, &mut buf);
            let whole = decode_column(e.encoding, &buf, n, &ts).unwrap();
            for step in [1usize, 7, 61, 299] {
                let positions: Vec<u32> = (0..n as u32).step_by(step).collect();
                let row_ts: Vec<i64> = positions.iter().map(|&p| ts[p as usize]).collect();
                let at = decode_column_at(e.encoding, &buf, n, &positions, &row_ts, 2).unwrap();
                if let Some(alone) = alone {
                    assert_eq!(at.is_some(), *alone, "{:?}", e.encoding);
                }
                if e.encoding == Encoding::Timestamp {
                    // Without the rows' timestamps: decoded whole instead.
                    let at = decode_column_at(e.encoding, &buf, n, &positions, &[], 2).unwrap();
                    assert!(at.is_none());
                }
                if let Some(at) = at {
                    for (k, &p) in positions.iter().enumerate() {
                        assert_eq!(
                            at.get(k),
                            whole.get(p as usize),
                            "{:?} value {p}",
                            e.encoding
                        );
                    }
                }
            }
            assert!(decode_column_at(e.encoding, &buf, n, &[n as u32], &[0], 2).is_err());
        }
    }

    #[test]
    fn chooses_encodings() {
        assert_eq!(round(&["info"; 5]), Encoding::Const);
        assert_eq!(
            round(&["info", "warn", "info", "info", "error", "info"]),
            Encoding::Dict
        );
        assert_eq!(
            round(&["12.345", "0.050", "1023.100", "7.000", "3.141", "2.718"]),
            Encoding::Decimal
        );
        assert_eq!(
            round(&["1", "-20", "300", "4000", "50000", "600000"]),
            Encoding::Decimal
        );
        assert_eq!(
            round(&["1.5", "1.50", "2", "-3.25", "10", "11.125"]),
            Encoding::Decimal
        );
        let ts = [
            "2026-11-29T00:59:49.854Z",
            "2026-11-29T00:59:49.901Z",
            "2026-11-29T00:59:50.002Z",
            "2026-11-29T01:00:00.000Z",
        ];
        assert_eq!(round(&ts), Encoding::Timestamp);
        let ids = [
            "4bf92f3577b34da6a3ce929d0e0e4736",
            "00f067aa0ba902b700f067aa0ba902b7",
            "a3ce929d0e0e47364bf92f3577b34da6",
        ];
        assert_eq!(round(&ids), Encoding::Hex);
        let uuids = [
            "550e8400-e29b-41d4-a716-446655440000",
            "123e4567-e89b-12d3-a456-426614174000",
            "9f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
        ];
        assert_eq!(round(&uuids), Encoding::Hex);
        assert_eq!(
            round(&["10.0.0.1", "192.168.100.200", "8.8.8.8", "172.16.0.254"]),
            Encoding::Ipv4
        );
        // Not exactly reprintable: stays a string encoding.
        assert_eq!(
            round(&["1e3", "-0", "01", "1.0e5", "+4", "0x10"]),
            Encoding::Plain
        );
        assert_eq!(
            round(&[
                "550e8400-e29b-41d4-a716-446655440000",
                "550E8400-E29B-41D4-A716-446655440001",
                "x"
            ]),
            Encoding::Plain
        );
        assert_eq!(
            round(&[
                "2026-11-29T00:59:49.854Z",
                "2026-11-29T00:59:49.85Z",
                "2026-11-29T00:59:49Z"
            ]),
            Encoding::Plain
        );
        assert_eq!(round(&["a", "", "ü", "b\\u00e9", "c"]), Encoding::Plain);
        let users = [
            "user_48213",
            "user_7",
            "user_100000",
            "user_12",
            "user_99881",
            "user_31337",
        ];
        assert_eq!(round(&users), Encoding::PrefixedDecimal);
        assert_eq!(
            round(&["user_1", "user_01", "user_2", "user_3", "user_4", "user_5"]),
            Encoding::Plain
        );
        assert_eq!(
            round(&["a-1", "a-2", "a-3", "a-4", "a-5", "a-6"]),
            Encoding::PrefixedDecimal
        );
        assert_eq!(round(&[]), Encoding::Const);
    }

    #[test]
    fn corrupt_payloads_are_errors() {
        assert!(decode_column(Encoding::Dict, &[2, 1, 1, b'a', b'b', 1, 5], 1, &[]).is_err());
        assert!(decode_column(Encoding::Plain, &[9, b'a'], 1, &[]).is_err());
        assert!(decode_column(Encoding::Hex, &[0, 200, 1, 0], 1, &[]).is_err());
        assert!(decode_column(Encoding::Timestamp, &[10], 0, &[]).is_err());
        assert!(decode_column(Encoding::Timestamp, &[3, 1, 0, 0], 1, &[]).is_err());
    }
}
