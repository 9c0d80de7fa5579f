//! The block header: the uncompressed prefix of a block that describes its
//! frames, templates and columns, followed (version 2) by the token bloom
//! filter with its own checksum. See `FORMAT.md`.
//!
//! Version 2 is written; version 1 (templates and column places inside the
//! directory frame, one checksum over the whole body) is still read.

use super::encoding::{Encoding, Stats};
use super::tokens::FEATURES;
use super::varint::{put_bytes, put_ivarint, put_uvarint, Cursor};
use crate::StorageError;
use std::borrow::Cow;

/// Block format version written by this build.
pub const VERSION: u8 = 2;

/// Oldest block format version this build reads.
pub const MIN_VERSION: u8 = 1;

/// `max_token_len` of a column whose longest token is unknown (version 1)
/// or at least this long.
pub const TOKEN_LEN_UNKNOWN: u8 = u8::MAX;

/// Column payloads at least this big get their own compressed frame, so a
/// reader decompresses just the columns a query reads; smaller ones share
/// [`FRAME_SMALL`].
pub const OWN_FRAME_MIN: usize = 256;

/// Largest decompressed frame accepted by the reader (a bound on allocation
/// when reading hostile input).
pub const MAX_FRAME_RAW: usize = 512 << 20;

/// The form byte of a metadata frame in the sets form: after a name
/// count of 0, each distinct list of pairs is stored once and every row
/// names its list (FORMAT.md, "Metadata"). Blocks written before it hold
/// the per-row form.
pub const METADATA_FORM_SETS: u8 = 1;

/// Most rows a version-2 block may declare (writers cut blocks far
/// earlier); bounds what a reader allocates for hostile input.
pub const MAX_ROWS: usize = 1 << 20;

/// Version 2 frame: row templates and row timestamps.
pub const FRAME_DIRECTORY: usize = 0;
/// Version 2 frame: the template texts.
pub const FRAME_TEMPLATES: usize = 1;
/// Version 2 frame: structured metadata (empty when no row has any).
pub const FRAME_METADATA: usize = 2;
/// Version 2 frame: payloads of columns smaller than [`OWN_FRAME_MIN`].
pub const FRAME_SMALL: usize = 3;
/// Version 2: number of frames every block has before its own column frames.
pub const FIXED_FRAMES: usize = 4;

/// Frame codec: stored as is.
pub const CODEC_NONE: u8 = 0;
/// Frame codec: one zstd frame.
pub const CODEC_ZSTD: u8 = 1;

/// Bytes that can touch a slot in a template (see [`boundary_bit`]), in bit
/// order; bit 15 of the mask stands for any other byte. JSON templates touch
/// slots only with the first eight; the next six are the bytes a text
/// template ([`text_shape`](super::text_shape)) may put next to a slot.
pub const BOUNDARY_BYTES: [u8; 14] = [
    b'"', b':', b',', b'}', b' ', b'\t', b'\n', b'\r', b'=', b'[', b']', b'(', b')', b'\'',
];

/// Bit of [`BlockHeader::boundaries`] for a byte touching a slot.
pub fn boundary_bit(b: u8) -> u16 {
    match BOUNDARY_BYTES.iter().position(|&x| x == b) {
        Some(i) => 1 << i,
        None => 1 << 15,
    }
}

/// What a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    /// Values of one JSON field (named by the templates).
    Field = 0,
    /// Whole lines that were not decomposed.
    Line = 1,
    /// Values of one slot name of plain-text line templates
    /// ([`text_shape`](super::text_shape)): a `key=value` word's key, or
    /// `#n` for the n-th other variable word.
    Text = 2,
}

/// Where a version-2 column's payload lies, and its summary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColumnPlace {
    /// Number of values.
    pub values: usize,
    /// Frame holding the payload.
    pub frame: usize,
    /// Offset of the payload within the decompressed frame.
    pub offset: usize,
    /// Payload length.
    pub len: usize,
    /// Min/max for Decimal and Timestamp columns.
    pub stats: Option<Stats>,
}

/// Where a [`Encoding::Shared`] column's own strings lie, and which of the
/// part's shared dictionaries its shared entries refer to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedPlace {
    /// Dictionary id in the part.
    pub dict: u32,
    /// Frame holding the strings.
    pub frame: usize,
    /// Offset of the strings within the decompressed frame.
    pub offset: usize,
    /// Length of the strings part.
    pub len: usize,
}

/// A column as the header describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnHead<'a> {
    /// What the column holds.
    pub kind: ColumnKind,
    /// How its values are stored.
    pub encoding: Encoding,
    /// Version 2: the field's dotted path (raw key text); empty for line
    /// columns and in version 1.
    pub name: Cow<'a, [u8]>,
    /// PrefixedDecimal: the common prefix (lets token pruning judge the
    /// column without a bloom entry per value); empty otherwise.
    pub prefix: Cow<'a, [u8]>,
    /// Length of the longest token in any value of the column, saturating at
    /// [`TOKEN_LEN_UNKNOWN`] (which version 1 blocks always report).
    pub max_token_len: u8,
    /// The [`token_classes`](super::tokens::token_classes) of every token in
    /// the column's values (all bits set in version 1).
    pub classes: u8,
    /// Per token feature ([`token_features`](super::tokens::token_features)):
    /// the length of the longest token of any value with it, 0 when none
    /// has it, saturating at [`TOKEN_LEN_UNKNOWN`] (which blocks written
    /// before they were recorded report for all): a needle's run lies only
    /// in tokens with every feature it has, so a run longer than one of
    /// these is in no value, and one as long only as a whole token. Then
    /// the longest run of hex digits and of digits in any value
    /// ([`HEX_RUN`](super::tokens::HEX_RUN),
    /// [`DIGIT_RUN`](super::tokens::DIGIT_RUN)): a needle's run of only
    /// such bytes lies inside one.
    pub feature_token_lens: [u8; FEATURES],
    /// Version 2: the [`alphabet`](super::tokens::alphabet) of every value
    /// (all bits set in version 1): a value holds only bytes whose bit is set.
    pub alphabet: u64,
    /// Version 2: the bloom holds the grams of the column's long tokens.
    pub has_grams: bool,
    /// Version 2: the bloom holds the column's stride grams
    /// ([`STRIDE_GRAM`](super::bloom::STRIDE_GRAM)).
    pub has_stride_grams: bool,
    /// Version 2: facts about every value ([`VALUES_JSON_SCALARS`],
    /// [`VALUES_UNESCAPED`], [`VALUES_NOT_NULL_OR_ARRAY`]); 0 in version 1.
    pub facts: u8,
    /// Version 2: payload place; `None` in version 1 (the directory has it).
    /// For [`Encoding::Shared`] columns, the index part.
    pub place: Option<ColumnPlace>,
    /// [`Encoding::Shared`] columns: where their own strings are.
    pub shared: Option<SharedPlace>,
}

/// A version-2 template as the header describes it (its text is in
/// [`FRAME_TEMPLATES`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateHead {
    /// xxh3-128 of the template text: lets readers reuse what they derived
    /// from an identical template of another block without decompressing.
    pub id: u128,
    /// Column of each slot, in line order.
    pub slots: Vec<u32>,
}

/// A compressed frame of the block body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// [`CODEC_NONE`] or [`CODEC_ZSTD`].
    pub codec: u8,
    /// Bytes in the block.
    pub stored_len: usize,
    /// Bytes after decompression.
    pub raw_len: usize,
    /// Version 2: CRC-32 of the stored bytes (checked when the frame is read).
    pub crc: Option<u32>,
}

/// The facts about a column that a line filter's pruning reads first,
/// packed apart from [`ColumnHead`] so that judging every column of a block
/// touches a few cache lines rather than a few per column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnBrief {
    /// [`ColumnHead::alphabet`].
    pub alphabet: u64,
    /// [`ColumnHead::kind`].
    pub kind: ColumnKind,
    /// [`ColumnHead::encoding`].
    pub encoding: Encoding,
    /// [`ColumnHead::facts`].
    pub facts: u8,
}

impl ColumnBrief {
    /// The briefs of `columns`, in order.
    pub fn of_all(columns: &[ColumnHead<'_>]) -> Vec<ColumnBrief> {
        columns
            .iter()
            .map(|c| ColumnBrief {
                alphabet: c.alphabet,
                kind: c.kind,
                encoding: c.encoding,
                facts: c.facts,
            })
            .collect()
    }
}

/// The decoded header (borrowing names, prefixes and the bloom from the block).
#[derive(Clone, Debug, PartialEq)]
pub struct BlockHeader<'a> {
    /// Format version ([`MIN_VERSION`]..=[`VERSION`]).
    pub version: u8,
    /// Number of rows.
    pub rows: usize,
    /// Smallest row timestamp.
    pub min_ts: i64,
    /// Largest row timestamp.
    pub max_ts: i64,
    /// Sum of line lengths.
    pub line_bytes: u64,
    /// Version 2: the bloom holds the grams of the templates' long tokens.
    pub has_grams: bool,
    /// Version 2: the bloom holds the short grams of the templates' tokens
    /// ([`SHORT_GRAM`](super::bloom::SHORT_GRAM)).
    pub has_short_grams: bool,
    /// Version 2: [`boundary_bit`]s of every byte that touches a slot in
    /// some template (all bits in version 1, where it is not recorded).
    pub boundaries: u16,
    /// Frames of the body, in order.
    pub frames: Vec<FrameInfo>,
    /// Version 2: the templates (version 1 keeps them in the directory).
    pub templates: Vec<TemplateHead>,
    /// Each column.
    pub columns: Vec<ColumnHead<'a>>,
    /// Each column's [`ColumnBrief`] (derived from `columns`).
    pub briefs: Vec<ColumnBrief>,
    /// Where the bloom filter bytes lie in the block.
    pub bloom: std::ops::Range<usize>,
    /// Version 2: the bloom section's checksum, not yet verified (see
    /// [`BlockHeader::check_bloom`]); version 1 covers it with the header's.
    pub bloom_crc: Option<u32>,
    /// Offset of the first frame in the block.
    pub body_start: usize,
}

/// Header flag bit: the bloom holds the templates' grams.
const FLAG_GRAMS: u8 = 1;
/// Header flag bit: the bloom holds the templates' short grams.
const FLAG_SHORT_GRAMS: u8 = 2;
/// Column flag bit: the bloom holds the column's grams.
const COLUMN_GRAMS: u8 = 1;
/// Column flag bit: the bloom holds the column's stride grams
/// ([`STRIDE_GRAM`](super::bloom::STRIDE_GRAM)).
const COLUMN_STRIDE_GRAMS: u8 = 32;
/// Column flag bit: [`FEATURES`] bytes after the flags give the lengths of
/// the column's longest token with each feature
/// ([`ColumnHead::feature_token_lens`]).
const COLUMN_FEATURE_LENS: u8 = 16;
/// Column value fact: every value, written unquoted, is a JSON number,
/// `true`, `false`, `null` or an array without strings.
pub const VALUES_JSON_SCALARS: u8 = 2;
/// Column value fact: no value contains a backslash or U+FFFD.
pub const VALUES_UNESCAPED: u8 = 4;
/// Column value fact: no value is `null` or starts with `[`.
pub const VALUES_NOT_NULL_OR_ARRAY: u8 = 8;
/// The value fact bits.
const VALUE_FACTS: u8 = VALUES_JSON_SCALARS | VALUES_UNESCAPED | VALUES_NOT_NULL_OR_ARRAY;

fn put_stats(dst: &mut Vec<u8>, stats: Option<Stats>) {
    match stats {
        None => {}
        Some(Stats::Number { min, max }) => {
            dst.extend_from_slice(&min.to_le_bytes());
            dst.extend_from_slice(&max.to_le_bytes());
        }
        Some(Stats::Time { min, max }) => {
            put_ivarint(dst, min);
            put_ivarint(dst, max);
        }
    }
}

fn get_stats(c: &mut Cursor<'_>, encoding: Encoding) -> Result<Option<Stats>, StorageError> {
    Ok(match encoding {
        Encoding::Decimal => {
            let min = f64::from_bits(c.u64_le()?);
            let max = f64::from_bits(c.u64_le()?);
            Some(Stats::Number { min, max })
        }
        Encoding::Timestamp => Some(Stats::Time {
            min: c.ivarint()?,
            max: c.ivarint()?,
        }),
        _ => None,
    })
}

impl BlockHeader<'_> {
    /// The header with its names and prefixes copied (to keep it apart from
    /// the block's bytes).
    pub fn into_owned(self) -> BlockHeader<'static> {
        BlockHeader {
            briefs: self.briefs,
            columns: self
                .columns
                .into_iter()
                .map(|c| ColumnHead {
                    name: Cow::Owned(c.name.into_owned()),
                    prefix: Cow::Owned(c.prefix.into_owned()),
                    kind: c.kind,
                    encoding: c.encoding,
                    max_token_len: c.max_token_len,
                    classes: c.classes,
                    feature_token_lens: c.feature_token_lens,
                    alphabet: c.alphabet,
                    has_grams: c.has_grams,
                    has_stride_grams: c.has_stride_grams,
                    facts: c.facts,
                    place: c.place,
                    shared: c.shared,
                })
                .collect(),
            version: self.version,
            rows: self.rows,
            min_ts: self.min_ts,
            max_ts: self.max_ts,
            line_bytes: self.line_bytes,
            has_grams: self.has_grams,
            has_short_grams: self.has_short_grams,
            boundaries: self.boundaries,
            frames: self.frames,
            templates: self.templates,
            bloom: self.bloom,
            bloom_crc: self.bloom_crc,
            body_start: self.body_start,
        }
    }

    /// The bloom filter bytes, from the block the header was decoded from.
    pub fn bloom_bytes<'s>(&self, src: &'s [u8]) -> &'s [u8] {
        src.get(self.bloom.clone()).unwrap_or(&[])
    }

    /// Appends a version-2 header, its checksum and the bloom section
    /// (`bloom`, the filter bytes) to `dst`. Every column must have its place.
    pub fn encode(&self, bloom: &[u8], dst: &mut Vec<u8>) {
        debug_assert_eq!(self.version, VERSION);
        let mut h = Vec::with_capacity(256 + self.columns.len() * 24);
        put_uvarint(&mut h, self.rows as u64);
        put_ivarint(&mut h, self.min_ts);
        put_uvarint(&mut h, self.max_ts.wrapping_sub(self.min_ts) as u64);
        put_uvarint(&mut h, self.line_bytes);
        h.push(
            if self.has_grams { FLAG_GRAMS } else { 0 }
                | if self.has_short_grams {
                    FLAG_SHORT_GRAMS
                } else {
                    0
                },
        );
        h.extend_from_slice(&self.boundaries.to_le_bytes());
        put_uvarint(&mut h, self.frames.len() as u64);
        for f in &self.frames {
            h.push(f.codec);
            put_uvarint(&mut h, f.stored_len as u64);
            put_uvarint(&mut h, f.raw_len as u64);
            h.extend_from_slice(&f.crc.unwrap_or(0).to_le_bytes());
        }
        put_uvarint(&mut h, self.templates.len() as u64);
        for t in &self.templates {
            h.extend_from_slice(&t.id.to_le_bytes());
            put_uvarint(&mut h, t.slots.len() as u64);
            for &s in &t.slots {
                put_uvarint(&mut h, u64::from(s));
            }
        }
        put_uvarint(&mut h, self.columns.len() as u64);
        for c in &self.columns {
            h.push(((c.kind as u8) << 4) | c.encoding as u8);
            put_bytes(&mut h, &c.name);
            if c.encoding == Encoding::PrefixedDecimal {
                put_bytes(&mut h, &c.prefix);
            }
            h.push(c.max_token_len);
            h.push(c.classes);
            h.extend_from_slice(&c.alphabet.to_le_bytes());
            let featured = c.feature_token_lens != [TOKEN_LEN_UNKNOWN; FEATURES];
            h.push(
                if c.has_grams { COLUMN_GRAMS } else { 0 }
                    | if c.has_stride_grams {
                        COLUMN_STRIDE_GRAMS
                    } else {
                        0
                    }
                    | if featured { COLUMN_FEATURE_LENS } else { 0 }
                    | (c.facts & VALUE_FACTS),
            );
            if featured {
                h.extend_from_slice(&c.feature_token_lens);
            }
            let p = c.place.expect("version 2 columns have a place");
            put_uvarint(&mut h, p.values as u64);
            put_uvarint(&mut h, p.frame as u64);
            put_uvarint(&mut h, p.offset as u64);
            put_uvarint(&mut h, p.len as u64);
            put_stats(&mut h, p.stats);
            if c.encoding.is_shared() {
                let s = c.shared.expect("shared columns have a strings place");
                put_uvarint(&mut h, u64::from(s.dict));
                put_uvarint(&mut h, s.frame as u64);
                put_uvarint(&mut h, s.offset as u64);
                put_uvarint(&mut h, s.len as u64);
            }
        }
        let start = dst.len();
        dst.push(self.version);
        put_uvarint(dst, h.len() as u64);
        dst.extend_from_slice(&h);
        let crc = crc32fast::hash(&dst[start..]);
        dst.extend_from_slice(&crc.to_le_bytes());
        let bloom_start = dst.len();
        put_uvarint(dst, (bloom.len() / 8) as u64);
        dst.extend_from_slice(bloom);
        let crc = crc32fast::hash(&dst[bloom_start..]);
        dst.extend_from_slice(&crc.to_le_bytes());
    }
}

impl<'a> BlockHeader<'a> {
    /// Where frame `i` starts in the block (its first `i` frames after the
    /// body's start; past the last frame: where the body ends). Saturating:
    /// a reader checks the sum against the block's length.
    pub fn frame_start(&self, i: usize) -> usize {
        self.frames
            .iter()
            .take(i)
            .fold(self.body_start, |at, f| at.saturating_add(f.stored_len))
    }

    /// Decodes the header at the start of `src` (checking its checksum, not
    /// the bloom's in version 2).
    pub fn decode(src: &'a [u8]) -> Result<BlockHeader<'a>, StorageError> {
        let mut c = Cursor::new(src, "header");
        let version = c.u8()?;
        if !(MIN_VERSION..=VERSION).contains(&version) {
            return Err(StorageError::corrupt(
                "block header",
                format!("unsupported version {version}"),
            ));
        }
        let hlen = c.len(c.remaining())?;
        let body_start = c.pos() + hlen;
        if body_start + 4 > src.len() {
            return Err(c.err("header longer than block"));
        }
        let crc = u32::from_le_bytes(src[body_start..body_start + 4].try_into().expect("4"));
        if crc32fast::hash(&src[..body_start]) != crc {
            return Err(StorageError::corrupt("block header", "checksum mismatch"));
        }
        let mut c = Cursor::new(&src[c.pos()..body_start], "header");
        let h = if version == 1 {
            decode_v1(&mut c, body_start + 4)?
        } else {
            decode_v2(&mut c, src, body_start + 4)?
        };
        if !c.is_empty() {
            return Err(c.err("trailing bytes"));
        }
        Ok(h)
    }

    /// Checks the version-2 bloom section's checksum (version 1: nothing to do).
    pub fn check_bloom(&self, src: &[u8]) -> Result<(), StorageError> {
        let Some(crc) = self.bloom_crc else {
            return Ok(());
        };
        let end = self.body_start - 4;
        // The section starts with its word-count varint, before the words.
        let words = (self.bloom.len() / 8) as u64;
        let vlen = super::varint::uvarint_len(words);
        let section = src
            .get(self.bloom.start - vlen..end)
            .ok_or_else(|| StorageError::corrupt("block bloom", "out of range"))?;
        if crc32fast::hash(section) != crc {
            return Err(StorageError::corrupt("block bloom", "checksum mismatch"));
        }
        Ok(())
    }

    /// The header of the template with local id `t` (version 2).
    pub fn template(&self, t: usize) -> Option<&TemplateHead> {
        self.templates.get(t)
    }
}

/// A column's head as decoded: kind, encoding, name bytes and payload bytes.
type RawColumnHead<'a> = (ColumnKind, Encoding, &'a [u8], &'a [u8]);

fn decode_column_head<'a>(c: &mut Cursor<'a>, v2: bool) -> Result<RawColumnHead<'a>, StorageError> {
    let tag = c.u8()?;
    let kind = match tag >> 4 {
        0 => ColumnKind::Field,
        1 => ColumnKind::Line,
        2 => ColumnKind::Text,
        _ => return Err(c.err("unknown column kind")),
    };
    let encoding = Encoding::from_u8(tag & 0x0f).ok_or_else(|| c.err("unknown encoding"))?;
    let name = if v2 { c.bytes()? } else { &[][..] };
    let prefix = match encoding {
        Encoding::PrefixedDecimal => c.bytes()?,
        _ => &[][..],
    };
    Ok((kind, encoding, name, prefix))
}

fn decode_frames(c: &mut Cursor<'_>, v2: bool) -> Result<Vec<FrameInfo>, StorageError> {
    let nf = c.len(c.remaining())?;
    let mut frames = Vec::with_capacity(nf);
    for _ in 0..nf {
        let codec = c.u8()?;
        if codec > CODEC_ZSTD {
            return Err(c.err("unknown frame codec"));
        }
        let stored_len = c.len(MAX_FRAME_RAW)?;
        let raw_len = c.len(MAX_FRAME_RAW)?;
        let crc = if v2 {
            Some(u32::from_le_bytes(c.take(4)?.try_into().expect("4")))
        } else {
            None
        };
        frames.push(FrameInfo {
            codec,
            stored_len,
            raw_len,
            crc,
        });
    }
    Ok(frames)
}

fn decode_v1<'a>(c: &mut Cursor<'a>, body_start: usize) -> Result<BlockHeader<'a>, StorageError> {
    let rows = c.len(u32::MAX as usize)?;
    let min_ts = c.ivarint()?;
    let max_ts = min_ts.wrapping_add(c.uvarint()? as i64);
    let line_bytes = c.uvarint()?;
    let frames = decode_frames(c, false)?;
    let nc = c.len(c.remaining())?;
    let mut columns = Vec::with_capacity(nc);
    for _ in 0..nc {
        let (kind, encoding, name, prefix) = decode_column_head(c, false)?;
        columns.push(ColumnHead {
            kind,
            encoding,
            name: Cow::Borrowed(name),
            prefix: Cow::Borrowed(prefix),
            max_token_len: TOKEN_LEN_UNKNOWN,
            classes: u8::MAX,
            feature_token_lens: [TOKEN_LEN_UNKNOWN; FEATURES],
            alphabet: u64::MAX,
            has_grams: false,
            has_stride_grams: false,
            facts: 0,
            place: None,
            shared: None,
        });
    }
    let words = c.len(c.remaining() / 8)?;
    let at = c.pos();
    c.take(words * 8)?;
    // The header cursor starts after the version byte and length varint.
    let base = body_start - 4 - c.buf_len();
    let bloom = base + at..base + at + words * 8;
    Ok(BlockHeader {
        version: 1,
        rows,
        min_ts,
        max_ts,
        line_bytes,
        has_grams: false,
        has_short_grams: false,
        boundaries: u16::MAX,
        frames,
        templates: Vec::new(),
        briefs: ColumnBrief::of_all(&columns),
        columns,
        bloom,
        bloom_crc: None,
        body_start,
    })
}

fn decode_v2<'a>(
    c: &mut Cursor<'a>,
    src: &'a [u8],
    after_header: usize,
) -> Result<BlockHeader<'a>, StorageError> {
    let rows = c.len(u32::MAX as usize)?;
    let min_ts = c.ivarint()?;
    let max_ts = min_ts.wrapping_add(c.uvarint()? as i64);
    let line_bytes = c.uvarint()?;
    let flags = c.u8()?;
    if flags & !(FLAG_GRAMS | FLAG_SHORT_GRAMS) != 0 {
        return Err(c.err("unknown header flags"));
    }
    let boundaries = u16::from_le_bytes(c.take(2)?.try_into().expect("2"));
    let frames = decode_frames(c, true)?;
    if rows > 0 && frames.len() < FIXED_FRAMES {
        return Err(c.err("missing frames"));
    }
    let nc_limit = c.remaining();
    let nt = c.len(c.remaining())?;
    let mut templates = Vec::with_capacity(nt.min(nc_limit));
    for _ in 0..nt {
        let id = u128::from_le_bytes(c.take(16)?.try_into().expect("16"));
        let ns = c.len(c.remaining())?;
        let mut slots = Vec::with_capacity(ns);
        for _ in 0..ns {
            slots.push(c.len(u32::MAX as usize)? as u32);
        }
        templates.push(TemplateHead { id, slots });
    }
    let nc = c.len(c.remaining())?;
    let mut columns = Vec::with_capacity(nc);
    for _ in 0..nc {
        let (kind, encoding, name, prefix) = decode_column_head(c, true)?;
        let max_token_len = c.u8()?;
        let classes = c.u8()?;
        let alphabet = c.u64_le()?;
        let cflags = c.u8()?;
        if cflags & !(COLUMN_GRAMS | COLUMN_STRIDE_GRAMS | COLUMN_FEATURE_LENS | VALUE_FACTS) != 0 {
            return Err(c.err("unknown column flags"));
        }
        let mut feature_token_lens = [TOKEN_LEN_UNKNOWN; FEATURES];
        if cflags & COLUMN_FEATURE_LENS != 0 {
            for l in &mut feature_token_lens {
                *l = c.u8()?;
                if *l > max_token_len {
                    return Err(c.err("featured token longer than the longest token"));
                }
            }
        }
        let values = c.len(rows)?;
        let frame = c.len(frames.len().saturating_sub(1))?;
        let offset = c.len(MAX_FRAME_RAW)?;
        let len = c.len(MAX_FRAME_RAW)?;
        if offset
            .checked_add(len)
            .is_none_or(|e| frames.get(frame).is_none_or(|f| e > f.raw_len))
        {
            return Err(c.err("column payload out of range"));
        }
        let stats = get_stats(c, encoding)?;
        let shared = if encoding.is_shared() {
            let dict = c.len(u32::MAX as usize)? as u32;
            let frame = c.len(frames.len().saturating_sub(1))?;
            let offset = c.len(MAX_FRAME_RAW)?;
            let len = c.len(MAX_FRAME_RAW)?;
            if offset
                .checked_add(len)
                .is_none_or(|e| frames.get(frame).is_none_or(|f| e > f.raw_len))
            {
                return Err(c.err("column strings out of range"));
            }
            Some(SharedPlace {
                dict,
                frame,
                offset,
                len,
            })
        } else {
            None
        };
        columns.push(ColumnHead {
            kind,
            encoding,
            name: Cow::Borrowed(name),
            prefix: Cow::Borrowed(prefix),
            max_token_len,
            classes,
            feature_token_lens,
            alphabet,
            has_grams: cflags & COLUMN_GRAMS != 0,
            has_stride_grams: cflags & COLUMN_STRIDE_GRAMS != 0,
            facts: cflags & VALUE_FACTS,
            place: Some(ColumnPlace {
                values,
                frame,
                offset,
                len,
                stats,
            }),
            shared,
        });
    }
    let mut seen = vec![usize::MAX; columns.len()];
    for (ti, t) in templates.iter().enumerate() {
        for &s in &t.slots {
            let s = s as usize;
            if s >= columns.len() {
                return Err(c.err("template slot out of range"));
            }
            if seen[s] == ti {
                return Err(c.err("template names a column twice"));
            }
            seen[s] = ti;
        }
    }
    // The bloom section follows the header checksum.
    let mut b = Cursor::new(&src[after_header..], "bloom");
    let words = b.len(b.remaining() / 8)?;
    let at = after_header + b.pos();
    b.take(words * 8)?;
    let bloom = at..at + words * 8;
    let crc = u32::from_le_bytes(b.take(4)?.try_into().expect("4"));
    let body_start = after_header + b.pos();
    Ok(BlockHeader {
        version: 2,
        rows,
        min_ts,
        max_ts,
        line_bytes,
        has_grams: flags & FLAG_GRAMS != 0,
        has_short_grams: flags & FLAG_SHORT_GRAMS != 0,
        boundaries,
        frames,
        templates,
        briefs: ColumnBrief::of_all(&columns),
        columns,
        bloom,
        bloom_crc: Some(crc),
        body_start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_checksums() {
        let bloom = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let h = BlockHeader {
            version: VERSION,
            rows: 3,
            min_ts: -5,
            max_ts: i64::MAX,
            line_bytes: 99,
            has_grams: true,
            has_short_grams: true,
            boundaries: boundary_bit(b'"') | boundary_bit(b','),
            frames: vec![
                FrameInfo {
                    codec: CODEC_ZSTD,
                    stored_len: 10,
                    raw_len: 40,
                    crc: Some(7),
                },
                FrameInfo {
                    codec: CODEC_NONE,
                    stored_len: 0,
                    raw_len: 0,
                    crc: Some(0),
                },
                FrameInfo {
                    codec: CODEC_NONE,
                    stored_len: 0,
                    raw_len: 0,
                    crc: Some(0),
                },
                FrameInfo {
                    codec: CODEC_NONE,
                    stored_len: 30,
                    raw_len: 30,
                    crc: Some(9),
                },
            ],
            templates: vec![TemplateHead {
                id: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
                slots: vec![1, 0],
            }],
            columns: vec![
                ColumnHead {
                    kind: ColumnKind::Field,
                    encoding: Encoding::Hex,
                    name: Cow::Borrowed(b"trace.id"),
                    prefix: Cow::Borrowed(b""),
                    max_token_len: 32,
                    classes: 3,
                    feature_token_lens: [7, 0, 32, 0, 32, 9],
                    alphabet: 0xff,
                    has_grams: false,
                    has_stride_grams: false,
                    facts: VALUES_UNESCAPED,
                    place: Some(ColumnPlace {
                        values: 3,
                        frame: 3,
                        offset: 0,
                        len: 20,
                        stats: None,
                    }),
                    shared: None,
                },
                ColumnHead {
                    kind: ColumnKind::Field,
                    encoding: Encoding::Decimal,
                    name: Cow::Borrowed(b"n"),
                    prefix: Cow::Borrowed(b""),
                    max_token_len: 3,
                    classes: 1,
                    feature_token_lens: [TOKEN_LEN_UNKNOWN; FEATURES],
                    alphabet: 1 << 52,
                    has_grams: true,
                    has_stride_grams: false,
                    facts: 0,
                    place: Some(ColumnPlace {
                        values: 2,
                        frame: 3,
                        offset: 20,
                        len: 10,
                        stats: Some(Stats::Number { min: 1.5, max: 2.0 }),
                    }),
                    shared: None,
                },
                ColumnHead {
                    kind: ColumnKind::Field,
                    encoding: Encoding::Shared,
                    name: Cow::Borrowed(b"msg"),
                    prefix: Cow::Borrowed(b""),
                    max_token_len: 5,
                    classes: 1,
                    feature_token_lens: [0, 5, 1, 5, 2, 0],
                    alphabet: 1 << 40,
                    has_grams: false,
                    has_stride_grams: false,
                    facts: 0,
                    place: Some(ColumnPlace {
                        values: 1,
                        frame: 3,
                        offset: 25,
                        len: 5,
                        stats: None,
                    }),
                    shared: Some(SharedPlace {
                        dict: 7,
                        frame: 0,
                        offset: 30,
                        len: 10,
                    }),
                },
            ],
            briefs: Vec::new(),
            bloom: 0..0,
            bloom_crc: None,
            body_start: 0,
        };
        let h = BlockHeader {
            briefs: ColumnBrief::of_all(&h.columns),
            ..h
        };
        let mut buf = Vec::new();
        h.encode(&bloom, &mut buf);
        buf.extend_from_slice(&[0xaa; 10]);
        let got = BlockHeader::decode(&buf).unwrap();
        assert_eq!(got.body_start, buf.len() - 10);
        assert!(got.check_bloom(&buf).is_ok());
        let mut want = h.clone();
        want.bloom_crc = got.bloom_crc;
        want.body_start = got.body_start;
        want.bloom = got.bloom.clone();
        assert_eq!(got, want);
        assert_eq!(got.bloom_bytes(&buf), &bloom);
        // A flipped header byte fails the header; a flipped bloom byte only
        // the bloom check.
        let mut bad = buf.clone();
        bad[3] ^= 1;
        assert!(BlockHeader::decode(&bad).is_err());
        let mut bad = buf.clone();
        let at = got.body_start - 6;
        bad[at] ^= 1;
        let g = BlockHeader::decode(&bad).unwrap();
        assert!(g.check_bloom(&bad).is_err());
    }
}
