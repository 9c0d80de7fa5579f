//! The block writer: accumulates rows of one stream, splits JSON lines into
//! templates and columns as they arrive, and encodes the block on `finish`.

use super::encoding::{encode_column, Stats};
use super::hash::FastMap;
use super::ints::put_ints;
use super::layout::{
    BlockHeader, ColumnHead, ColumnKind, FrameInfo, CODEC_NONE, CODEC_ZSTD, OWN_FRAME_MIN,
};
use super::shape::{split_line, template_slots, SLOT};
use super::tokens::BloomBuilder;
use super::varint::{put_bytes, put_ivarint, put_uvarint, zigzag};
use super::BlockMeta;

/// Template id marking a template that cannot be used (duplicate paths).
const UNUSABLE: u32 = u32::MAX;

struct ColumnAcc {
    kind: ColumnKind,
    /// Value spans in the arena, in row order.
    spans: Vec<(u32, u32)>,
}

struct Template {
    text: Vec<u8>,
    slots: Vec<u32>,
}

/// Accumulates rows of one stream and encodes them into a block.
pub struct BlockBuilder {
    ts: Vec<i64>,
    arena: Vec<u8>,
    row_tpl: Vec<u32>,
    templates: Vec<Template>,
    tpl_index: FastMap<Box<[u8]>, u32>,
    raw_tpl: Option<u32>,
    columns: Vec<ColumnAcc>,
    col_index: FastMap<Box<[u8]>, u32>,
    meta_names: Vec<Box<str>>,
    meta_index: FastMap<Box<str>, u32>,
    /// Per row: end index into `meta_pairs`.
    meta_rows: Vec<u32>,
    meta_pairs: Vec<(u32, u32, u32)>,
    has_meta: bool,
    raw: usize,
    line_bytes: u64,
    scratch_tpl: Vec<u8>,
    scratch_spans: Vec<(u32, u32)>,
    compressor: Option<zstd::bulk::Compressor<'static>>,
}

impl Default for BlockBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        BlockBuilder {
            ts: Vec::new(),
            arena: Vec::new(),
            row_tpl: Vec::new(),
            templates: Vec::new(),
            tpl_index: FastMap::default(),
            raw_tpl: None,
            columns: Vec::new(),
            col_index: FastMap::default(),
            meta_names: Vec::new(),
            meta_index: FastMap::default(),
            meta_rows: Vec::new(),
            meta_pairs: Vec::new(),
            has_meta: false,
            raw: 0,
            line_bytes: 0,
            scratch_tpl: Vec::new(),
            scratch_spans: Vec::new(),
            compressor: None,
        }
    }

    /// Appends a row. Callers push rows already sorted by (ts, push order).
    ///
    /// A block holds at most 4 GiB of line and metadata bytes; callers cut
    /// blocks far earlier (by [`raw_bytes`](Self::raw_bytes)).
    pub fn push(&mut self, ts: i64, line: &str, metadata: &[(String, String)]) {
        let md_bytes: usize = metadata.iter().map(|(k, v)| k.len() + v.len()).sum();
        self.raw += line.len() + 8 + md_bytes;
        self.line_bytes += line.len() as u64;
        assert!(
            self.arena.len() + line.len() + md_bytes < u32::MAX as usize,
            "block larger than 4 GiB"
        );
        self.ts.push(ts);
        let base = self.arena.len() as u32;
        self.arena.extend_from_slice(line.as_bytes());
        let line = line.as_bytes();

        let mut tpl_id = UNUSABLE;
        if split_line(line, &mut self.scratch_tpl, &mut self.scratch_spans) {
            tpl_id = match self.tpl_index.get(self.scratch_tpl.as_slice()) {
                Some(&id) => id,
                None => self.add_template(),
            };
        }
        if tpl_id == UNUSABLE {
            let id = self.raw_template();
            self.row_tpl.push(id);
            let col = self.templates[id as usize].slots[0] as usize;
            self.columns[col]
                .spans
                .push((base, base + line.len() as u32));
        } else {
            self.row_tpl.push(tpl_id);
            let t = &self.templates[tpl_id as usize];
            for (&col, &(a, b)) in t.slots.iter().zip(&self.scratch_spans) {
                self.columns[col as usize].spans.push((base + a, base + b));
            }
        }

        for (k, v) in metadata {
            let name = match self.meta_index.get(k.as_str()) {
                Some(&n) => n,
                None => {
                    self.meta_names.push(k.as_str().into());
                    self.meta_index
                        .insert(k.as_str().into(), self.meta_names.len() as u32 - 1);
                    self.meta_names.len() as u32 - 1
                }
            };
            let start = self.arena.len() as u32;
            self.arena.extend_from_slice(v.as_bytes());
            self.meta_pairs.push((name, start, v.len() as u32));
            self.has_meta = true;
        }
        self.meta_rows.push(self.meta_pairs.len() as u32);
    }

    /// Registers the template in `scratch_tpl`; returns its id or UNUSABLE.
    fn add_template(&mut self) -> u32 {
        let text: Box<[u8]> = self.scratch_tpl.as_slice().into();
        let slots = template_slots(&text).unwrap_or_default();
        let mut ids = Vec::with_capacity(slots.len());
        let mut usable = slots.len() == self.scratch_spans.len();
        for (name, _) in slots {
            let next = self.columns.len() as u32;
            let id = *self
                .col_index
                .entry(name.into_boxed_slice())
                .or_insert(next);
            if id == next {
                self.columns.push(ColumnAcc {
                    kind: ColumnKind::Field,
                    spans: Vec::new(),
                });
            }
            if ids.contains(&id) {
                usable = false;
            }
            ids.push(id);
        }
        let id = if usable {
            self.templates.push(Template {
                text: text.to_vec(),
                slots: ids,
            });
            self.templates.len() as u32 - 1
        } else {
            UNUSABLE
        };
        self.tpl_index.insert(text, id);
        id
    }

    fn raw_template(&mut self) -> u32 {
        if let Some(id) = self.raw_tpl {
            return id;
        }
        self.columns.push(ColumnAcc {
            kind: ColumnKind::Line,
            spans: Vec::new(),
        });
        self.templates.push(Template {
            text: vec![SLOT],
            slots: vec![self.columns.len() as u32 - 1],
        });
        let id = self.templates.len() as u32 - 1;
        self.raw_tpl = Some(id);
        id
    }

    /// Rows pushed since the last `finish`.
    pub fn len(&self) -> usize {
        self.ts.len()
    }

    /// True when no rows are pending.
    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    /// Approximate uncompressed size of the pending rows, in bytes.
    pub fn raw_bytes(&self) -> usize {
        self.raw
    }

    /// Encodes the pending rows into `dst` (appending) with zstd `level`, and resets the builder.
    pub fn finish(&mut self, level: i32, dst: &mut Vec<u8>) -> BlockMeta {
        let rows = self.ts.len();
        let min_ts = self.ts.iter().copied().min().unwrap_or(0);
        let max_ts = self.ts.iter().copied().max().unwrap_or(0);
        let mut bloom = BloomBuilder::default();

        // Frame 0 directory: templates, row templates, timestamps, metadata.
        let mut dir = Vec::with_capacity(256 + rows * 4);
        put_uvarint(&mut dir, self.templates.len() as u64);
        for t in &self.templates {
            put_bytes(&mut dir, &t.text);
            put_uvarint(&mut dir, t.slots.len() as u64);
            for &s in &t.slots {
                put_uvarint(&mut dir, u64::from(s));
            }
            bloom.add_text(&t.text);
        }
        match self.templates.len() {
            0 | 1 => {}
            2..=256 => dir.extend(self.row_tpl.iter().map(|&t| t as u8)),
            _ => self
                .row_tpl
                .iter()
                .for_each(|&t| put_uvarint(&mut dir, u64::from(t))),
        }
        put_row_timestamps(&mut dir, &self.ts, min_ts);
        if self.has_meta {
            put_uvarint(&mut dir, self.meta_names.len() as u64);
            for n in &self.meta_names {
                put_bytes(&mut dir, n.as_bytes());
                bloom.add_text(n.as_bytes());
            }
            let mut start = 0usize;
            for &end in &self.meta_rows {
                let pairs = &self.meta_pairs[start..end as usize];
                put_uvarint(&mut dir, pairs.len() as u64);
                for &(name, s, l) in pairs {
                    let v = &self.arena[s as usize..(s + l) as usize];
                    put_uvarint(&mut dir, u64::from(name));
                    put_bytes(&mut dir, v);
                    bloom.add_text(v);
                }
                start = end as usize;
            }
        } else {
            put_uvarint(&mut dir, 0);
        }

        // Columns: encode each, small ones into the shared payload area.
        let mut shared = Vec::new();
        let mut own: Vec<Vec<u8>> = Vec::new();
        let mut kinds = Vec::with_capacity(self.columns.len());
        let mut values: Vec<&[u8]> = Vec::new();
        let mut payload = Vec::new();
        let mut col_ts: Vec<Vec<i64>> = self
            .columns
            .iter()
            .map(|c| Vec::with_capacity(c.spans.len()))
            .collect();
        for (&t, &ts) in self.row_tpl.iter().zip(&self.ts) {
            for &c in &self.templates[t as usize].slots {
                col_ts[c as usize].push(ts);
            }
        }
        for (col, row_ts) in self.columns.iter().zip(&col_ts) {
            values.clear();
            values.extend(
                col.spans
                    .iter()
                    .map(|&(a, b)| &self.arena[a as usize..b as usize]),
            );
            payload.clear();
            let enc = encode_column(&values, row_ts, &mut payload);
            if enc.encoding.has_bloom() {
                for v in &enc.distinct {
                    bloom.add_text(v);
                }
            }
            kinds.push(ColumnHead {
                kind: col.kind,
                encoding: enc.encoding,
                prefix: enc.prefix.to_vec(),
            });
            put_uvarint(&mut dir, values.len() as u64);
            let (frame, offset) = if payload.len() >= OWN_FRAME_MIN {
                own.push(payload.clone());
                (own.len(), 0)
            } else {
                shared.extend_from_slice(&payload);
                (0, shared.len() - payload.len())
            };
            put_uvarint(&mut dir, frame as u64);
            put_uvarint(&mut dir, offset as u64);
            put_uvarint(&mut dir, payload.len() as u64);
            put_stats(&mut dir, enc.stats);
        }
        dir.extend_from_slice(&shared);

        // Frames, header, body checksum.
        let compressor = self.compressor.get_or_insert_with(|| {
            zstd::bulk::Compressor::new(level).unwrap_or_else(|_| zstd::bulk::Compressor::default())
        });
        let _ = compressor.set_compression_level(level);
        let mut body = Vec::with_capacity(dir.len() / 3 + 64);
        let mut frames = Vec::with_capacity(1 + own.len());
        let mut scratch = Vec::new();
        for raw in std::iter::once(&dir).chain(own.iter()) {
            frames.push(write_frame(compressor, raw, &mut scratch, &mut body));
        }
        let header = BlockHeader {
            rows,
            min_ts,
            max_ts,
            line_bytes: self.line_bytes,
            frames,
            columns: kinds,
            bloom: bloom.build().iter().flat_map(|w| w.to_le_bytes()).collect(),
        };
        header.encode(dst);
        dst.extend_from_slice(&body);
        dst.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());

        let meta = BlockMeta {
            rows: rows as u32,
            min_ts,
            max_ts,
            line_bytes: self.line_bytes,
        };
        self.reset();
        meta
    }

    fn reset(&mut self) {
        self.ts.clear();
        self.arena.clear();
        self.row_tpl.clear();
        self.templates.clear();
        self.tpl_index.clear();
        self.raw_tpl = None;
        self.columns.clear();
        self.col_index.clear();
        self.meta_names.clear();
        self.meta_index.clear();
        self.meta_rows.clear();
        self.meta_pairs.clear();
        self.has_meta = false;
        self.raw = 0;
        self.line_bytes = 0;
    }
}

/// Row timestamps: deltas (the first from `min_ts`) divided by their greatest
/// common divisor, as an integer stream.
fn put_row_timestamps(dst: &mut Vec<u8>, ts: &[i64], min_ts: i64) {
    let mut prev = min_ts;
    let deltas: Vec<i64> = ts
        .iter()
        .map(|&t| {
            let d = t.wrapping_sub(prev);
            prev = t;
            d
        })
        .collect();
    let g = deltas
        .iter()
        .fold(0u64, |g, &d| gcd(g, d.unsigned_abs()))
        .max(1);
    put_uvarint(dst, g);
    let ints: Vec<u64> = deltas.iter().map(|&d| zigzag(d / g as i64)).collect();
    put_ints(dst, &ints);
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

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

/// Compresses `raw` into `body` (or stores it when compression does not help).
fn write_frame(
    c: &mut zstd::bulk::Compressor<'static>,
    raw: &[u8],
    scratch: &mut Vec<u8>,
    body: &mut Vec<u8>,
) -> FrameInfo {
    if raw.len() >= 32 {
        scratch.clear();
        scratch.reserve(zstd::zstd_safe::compress_bound(raw.len()));
        if let Ok(n) = c.compress_to_buffer(raw, scratch) {
            if n < raw.len() {
                body.extend_from_slice(&scratch[..n]);
                return FrameInfo {
                    codec: CODEC_ZSTD,
                    stored_len: n,
                    raw_len: raw.len(),
                };
            }
        }
    }
    body.extend_from_slice(raw);
    FrameInfo {
        codec: CODEC_NONE,
        stored_len: raw.len(),
        raw_len: raw.len(),
    }
}
