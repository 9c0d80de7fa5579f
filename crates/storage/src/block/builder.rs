//! The block writer: accumulates rows of one stream, splits JSON lines into
//! templates and columns as they arrive, and encodes the block on `finish`.

use super::bloom::{token_gram_keys, token_stride_gram_keys, BloomBuilder, Scope, MIN_HEX_TOKEN};
use super::digits::{self, has_digit};
use super::encoding::{encode_column, encode_shared, Encoding};
use super::hash::FastMap;
use super::ints::put_ints;
use super::layout::{
    boundary_bit, BlockHeader, ColumnBrief, ColumnHead, ColumnKind, ColumnPlace, FrameInfo,
    SharedPlace, TemplateHead, CODEC_NONE, CODEC_ZSTD, FIXED_FRAMES, FRAME_SMALL,
    METADATA_FORM_SETS, OWN_FRAME_MIN, TOKEN_LEN_UNKNOWN, VALUES_JSON_SCALARS,
    VALUES_NOT_NULL_OR_ARRAY, VALUES_UNESCAPED, VERSION,
};
use super::shape::{split_line, template_slots, SLOT};
use super::shared::SharedDictWriter;
use super::text_shape::split_text_line;
use super::tokens::TokenFacts;
use super::varint::{put_bytes, put_uvarint, zigzag};
use super::BlockMeta;
use xxhash_rust::xxh3::xxh3_128;

/// Template id marking a template that cannot be used (duplicate paths).
const UNUSABLE: u32 = u32::MAX;

/// Gram keys per row a block's bloom takes at most: columns join in order of
/// how few grams they add (the templates' always do) until the budget is
/// spent; the header says which columns have theirs.
const GRAM_BUDGET_PER_ROW: usize = 2;

/// Text templates a block takes before its `text_rows`-th text line:
/// `TEXT_TEMPLATES_BASE + text_rows / TEXT_ROWS_PER_TEMPLATE`. A plain-text
/// line that would add one more is stored whole, so lines of free text that
/// share no sentence cost a template each only up to this bound (each
/// template is a header entry every query of the block reads).
const TEXT_TEMPLATES_BASE: usize = 32;
const TEXT_ROWS_PER_TEMPLATE: usize = 8;

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
    /// Dotted path of each column (empty for the line column).
    col_names: Vec<Box<[u8]>>,
    col_index: FastMap<Box<[u8]>, u32>,
    /// Text templates ([`split_text_line`]) by text; apart from the JSON
    /// templates' index so that neither kind is ever taken for the other.
    text_tpl_index: FastMap<Box<[u8]>, u32>,
    /// Text slot columns by slot name (`key` or `#n`).
    text_col_index: FastMap<Box<[u8]>, u32>,
    /// Text templates made so far, and lines offered to them.
    text_templates: usize,
    text_rows: usize,
    scratch_names: Vec<Vec<u8>>,
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
            col_names: Vec::new(),
            col_index: FastMap::default(),
            text_tpl_index: FastMap::default(),
            text_col_index: FastMap::default(),
            text_templates: 0,
            text_rows: 0,
            scratch_names: Vec::new(),
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
        } else if split_text_line(
            line,
            &mut self.scratch_tpl,
            &mut self.scratch_spans,
            &mut self.scratch_names,
        ) {
            self.text_rows += 1;
            tpl_id = match self.text_tpl_index.get(self.scratch_tpl.as_slice()) {
                Some(&id) => id,
                None => self.add_text_template(),
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
                .entry(name.clone().into_boxed_slice())
                .or_insert(next);
            if id == next {
                self.columns.push(ColumnAcc {
                    kind: ColumnKind::Field,
                    spans: Vec::new(),
                });
                self.col_names.push(name.into_boxed_slice());
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

    /// Registers the text template in `scratch_tpl` (slot names in
    /// `scratch_names`); returns its id, or UNUSABLE past the block's text
    /// template bound.
    fn add_text_template(&mut self) -> u32 {
        if self.text_templates >= TEXT_TEMPLATES_BASE + self.text_rows / TEXT_ROWS_PER_TEMPLATE {
            return UNUSABLE;
        }
        self.text_templates += 1;
        let mut ids = Vec::with_capacity(self.scratch_names.len());
        for name in &self.scratch_names {
            let next = self.columns.len() as u32;
            let id = *self
                .text_col_index
                .entry(name.as_slice().into())
                .or_insert(next);
            if id == next {
                self.columns.push(ColumnAcc {
                    kind: ColumnKind::Text,
                    spans: Vec::new(),
                });
                self.col_names.push(name.as_slice().into());
            }
            ids.push(id);
        }
        self.templates.push(Template {
            text: self.scratch_tpl.clone(),
            slots: ids,
        });
        let id = self.templates.len() as u32 - 1;
        self.text_tpl_index
            .insert(self.scratch_tpl.as_slice().into(), id);
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
        self.col_names.push(Box::default());
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
        self.finish_in(level, dst, None)
    }

    /// Like [`Self::finish`], for a block of a part with shared
    /// dictionaries: string columns whose values recur across the part's
    /// blocks refer to `shared`'s entries (see `shared.rs`).
    pub fn finish_in(
        &mut self,
        level: i32,
        dst: &mut Vec<u8>,
        mut shared: Option<&mut SharedDictWriter>,
    ) -> BlockMeta {
        if let Some(sw) = shared.as_deref_mut() {
            sw.next_block();
        }
        let rows = self.ts.len();
        let min_ts = self.ts.iter().copied().min().unwrap_or(0);
        let max_ts = self.ts.iter().copied().max().unwrap_or(0);
        let mut bloom = BloomBuilder::default();

        // Templates: texts (their own frame), ids and slot columns (header),
        // and the bytes that touch a slot.
        let mut texts = Vec::with_capacity(self.templates.len() * 64);
        let mut templates = Vec::with_capacity(self.templates.len());
        let mut boundaries = 0u16;
        for t in &self.templates {
            put_bytes(&mut texts, &t.text);
            bloom.add_tokens(Scope::Template, &t.text);
            bloom.add_grams(Scope::Template, &t.text);
            bloom.add_short_grams(Scope::Template, &t.text);
            boundaries |= slot_boundaries(&t.text);
            templates.push(TemplateHead {
                id: xxh3_128(&t.text),
                slots: t.slots.clone(),
            });
        }

        // Directory: row templates and row timestamps.
        let mut dir = Vec::with_capacity(16 + rows * 4);
        if self.templates.len() > 1 {
            let ids: Vec<u64> = self.row_tpl.iter().map(|&t| u64::from(t)).collect();
            put_ints(&mut dir, &ids);
        }
        put_row_timestamps(&mut dir, &self.ts, min_ts);

        // Metadata.
        let mut meta = Vec::new();
        if self.has_meta {
            // The sets form: each distinct list of pairs once, then per row
            // which one (FORMAT.md, "Metadata").
            put_uvarint(&mut meta, 0);
            meta.push(METADATA_FORM_SETS);
            put_uvarint(&mut meta, self.meta_names.len() as u64);
            for n in &self.meta_names {
                put_bytes(&mut meta, n.as_bytes());
                bloom.add_tokens(Scope::Metadata, n.as_bytes());
            }
            let mut sets: FastMap<Vec<u8>, u64> = FastMap::default();
            let mut order: Vec<Vec<u8>> = Vec::new();
            let mut row_set: Vec<u64> = Vec::with_capacity(self.meta_rows.len());
            let mut enc = Vec::new();
            let mut start = 0usize;
            for &end in &self.meta_rows {
                let pairs = &self.meta_pairs[start..end as usize];
                enc.clear();
                put_uvarint(&mut enc, pairs.len() as u64);
                for &(name, s, l) in pairs {
                    put_uvarint(&mut enc, u64::from(name));
                    put_bytes(&mut enc, &self.arena[s as usize..(s + l) as usize]);
                }
                let id = match sets.get(enc.as_slice()) {
                    Some(&id) => id,
                    None => {
                        for &(_, s, l) in pairs {
                            bloom.add_tokens(
                                Scope::Metadata,
                                &self.arena[s as usize..(s + l) as usize],
                            );
                        }
                        let id = order.len() as u64;
                        sets.insert(enc.clone(), id);
                        order.push(enc.clone());
                        id
                    }
                };
                row_set.push(id);
                start = end as usize;
            }
            put_uvarint(&mut meta, order.len() as u64);
            for set in &order {
                meta.extend_from_slice(set);
            }
            super::ints::put_ints_addressable(&mut meta, &row_set);
        }

        // Columns: encode each; small ones share a frame.
        let mut col_grams: Vec<Vec<u64>> = Vec::with_capacity(self.columns.len());
        // Per column: whether it adds stride grams; all of theirs.
        let mut col_stride: Vec<bool> = Vec::with_capacity(self.columns.len());
        let mut stride_keys: Vec<u64> = Vec::new();
        let mut small = Vec::new();
        let mut own: Vec<Vec<u8>> = Vec::new();
        let mut heads = Vec::with_capacity(self.columns.len());
        let mut values: Vec<&[u8]> = Vec::new();
        let mut payload = Vec::new();
        let mut strings = Vec::new();
        let mut index = Vec::new();
        let mut skel: Vec<Vec<u8>> = Vec::new();
        let mut skel_index: FastMap<Vec<u8>, u32> = FastMap::default();
        let mut skel_ids: Vec<u32> = Vec::new();
        let mut skel_payload = Vec::new();
        let mut skel_strings = Vec::new();
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
        for (ci, (col, row_ts)) in self.columns.iter().zip(&col_ts).enumerate() {
            values.clear();
            values.extend(
                col.spans
                    .iter()
                    .map(|&(a, b)| &self.arena[a as usize..b as usize]),
            );
            payload.clear();
            let mut enc = encode_column(&values, row_ts, &mut payload);
            let mut shared_place = None;
            if let (Some(sw), ColumnKind::Field, Encoding::Dict | Encoding::Plain) =
                (shared.as_deref_mut(), col.kind, enc.encoding)
            {
                let name = &self.col_names[ci];
                // Candidates: exact values from the part's dictionary, and
                // skeletons (values with digit runs cut out) from another.
                let mut best: Option<(Encoding, u32, usize)> = None;
                if let Some(d) = sw.column(name) {
                    let global: Vec<Option<u32>> =
                        enc.distinct.iter().map(|v| sw.resolve(d, v)).collect();
                    if global.iter().any(Option::is_some) {
                        index.clear();
                        strings.clear();
                        encode_shared(&enc.distinct, &enc.ids, &global, &mut index, &mut strings);
                        best = Some((Encoding::Shared, d, index.len() + strings.len()));
                    }
                }
                if enc.distinct.iter().any(|v| has_digit(v)) {
                    if let Some(d) = sw.skeleton_column(name) {
                        skel.clear();
                        skel_index.clear();
                        skel_ids.clear();
                        let mut per_distinct = Vec::with_capacity(enc.distinct.len());
                        let mut scratch_skel = Vec::new();
                        for v in &enc.distinct {
                            scratch_skel.clear();
                            digits::split(
                                v,
                                &mut scratch_skel,
                                &mut digits::DigitWriter::default(),
                            );
                            let next = skel_index.len() as u32;
                            let id = *skel_index.entry(scratch_skel.clone()).or_insert(next);
                            if id == next {
                                skel.push(scratch_skel.clone());
                            }
                            per_distinct.push(id);
                        }
                        let global: Vec<Option<u32>> =
                            skel.iter().map(|s| sw.resolve(d, s)).collect();
                        if global.iter().any(Option::is_some) {
                            let mut dw = digits::DigitWriter::default();
                            let mut sink = Vec::new();
                            for (&e, v) in enc.ids.iter().zip(&values) {
                                skel_ids.push(per_distinct[e as usize]);
                                sink.clear();
                                digits::split(v, &mut sink, &mut dw);
                            }
                            let packed = dw.finish();
                            skel_payload.clear();
                            skel_strings.clear();
                            let refs: Vec<&[u8]> = skel.iter().map(|s| s.as_slice()).collect();
                            encode_shared(
                                &refs,
                                &skel_ids,
                                &global,
                                &mut skel_payload,
                                &mut skel_strings,
                            );
                            put_uvarint(&mut skel_payload, packed.len() as u64);
                            skel_payload.extend_from_slice(&packed);
                            let size = skel_payload.len() + skel_strings.len();
                            if best.is_none_or(|(_, _, s)| size < s) {
                                std::mem::swap(&mut index, &mut skel_payload);
                                std::mem::swap(&mut strings, &mut skel_strings);
                                best = Some((Encoding::Skeleton, d, size));
                            }
                        }
                    }
                }
                // Shared entries are tested once per part and read without
                // decompressing: worth a little size.
                if let Some((encoding, d, size)) = best {
                    if size <= payload.len() + payload.len() / 8 {
                        std::mem::swap(&mut payload, &mut index);
                        enc.encoding = encoding;
                        let (frame, offset) = if strings.len() >= OWN_FRAME_MIN {
                            own.push(strings.clone());
                            (FIXED_FRAMES + own.len() - 1, 0)
                        } else {
                            small.extend_from_slice(&strings);
                            (FRAME_SMALL, small.len() - strings.len())
                        };
                        shared_place = Some(SharedPlace {
                            dict: d,
                            frame,
                            offset,
                            len: strings.len(),
                        });
                    }
                }
            }
            let scope = Scope::Column(ci as u32);
            let (tokens, grams) = (
                enc.encoding.tokens_in_bloom(),
                enc.encoding.grams_in_bloom(),
            );
            let mut token_facts = TokenFacts::default();
            let mut facts = VALUES_JSON_SCALARS | VALUES_UNESCAPED | VALUES_NOT_NULL_OR_ARRAY;
            let mut gk = Vec::new();
            let hex = enc.encoding == crate::block::Encoding::Hex;
            // Long numbers and hex ids keep no grams: their stride grams
            // let a rare id inside one of their tokens be ruled out.
            let stride = matches!(
                enc.encoding,
                crate::block::Encoding::Hex | crate::block::Encoding::Decimal
            );
            col_stride.push(stride);
            // Tokens too short for the bloom of a hex column add no key.
            let min_token = if hex { MIN_HEX_TOKEN } else { 0 };
            for v in &enc.distinct {
                // One pass over the value: its token facts, and each token
                // to the bloom.
                token_facts.scan(v, |t| {
                    if stride {
                        token_stride_gram_keys(scope, t, &mut stride_keys);
                    }
                    if tokens && t.len() >= min_token {
                        bloom.add_token(scope, t);
                    }
                    if grams {
                        token_gram_keys(scope, t, &mut gk);
                    }
                });
                facts &= value_facts(v);
            }
            let TokenFacts {
                longest,
                featured,
                classes,
                letters,
            } = token_facts;
            gk.sort_unstable();
            gk.dedup();
            col_grams.push(gk);
            let (frame, offset) = if payload.len() >= OWN_FRAME_MIN {
                own.push(payload.clone());
                (FIXED_FRAMES + own.len() - 1, 0)
            } else {
                small.extend_from_slice(&payload);
                (FRAME_SMALL, small.len() - payload.len())
            };
            heads.push((
                col.kind,
                enc.encoding,
                enc.prefix.to_vec(),
                longest.min(usize::from(TOKEN_LEN_UNKNOWN)) as u8,
                (
                    classes,
                    letters,
                    facts,
                    featured.map(|l| l.min(usize::from(TOKEN_LEN_UNKNOWN)) as u8),
                ),
                ColumnPlace {
                    values: values.len(),
                    frame,
                    offset,
                    len: payload.len(),
                    stats: enc.stats,
                },
                shared_place,
            ));
        }

        // Frames, then the header that describes them.
        let compressor = self.compressor.get_or_insert_with(|| {
            zstd::bulk::Compressor::new(level).unwrap_or_else(|_| zstd::bulk::Compressor::default())
        });
        let _ = compressor.set_compression_level(level);
        let mut body = Vec::with_capacity(dir.len() + small.len() + 64);
        let mut frames = Vec::with_capacity(FIXED_FRAMES + own.len());
        let mut scratch = Vec::new();
        for (i, raw) in [&dir, &texts, &meta, &small]
            .into_iter()
            .chain(own.iter())
            .enumerate()
        {
            // The small-columns frame is read by most queries and saves
            // little when compressed: it is stored as is.
            if i == FRAME_SMALL {
                frames.push(store_frame(raw, &mut body));
            } else {
                frames.push(write_frame(compressor, raw, &mut scratch, &mut body));
            }
        }
        // Grams: the cheapest columns first, within the budget.
        let mut budget = rows.max(1) * GRAM_BUDGET_PER_ROW;
        let mut order: Vec<usize> = (0..col_grams.len()).collect();
        order.sort_by_key(|&c| col_grams[c].len());
        let mut with_grams = vec![false; col_grams.len()];
        for c in order {
            let n = col_grams[c].len();
            if n == 0 || n > budget {
                continue;
            }
            budget -= n;
            bloom.add_gram_keys(&col_grams[c]);
            with_grams[c] = true;
        }
        stride_keys.sort_unstable();
        stride_keys.dedup();
        bloom.add_gram_keys(&stride_keys);
        let bloom_bytes = bloom.build();
        let mut columns: Vec<ColumnHead<'_>> = heads
            .iter()
            .zip(&self.col_names)
            .zip(&with_grams)
            .map(
                |(
                    (
                        (
                            kind,
                            encoding,
                            prefix,
                            max_token_len,
                            (classes, letters, facts, featured),
                            place,
                            shared,
                        ),
                        name,
                    ),
                    &g,
                )| {
                    ColumnHead {
                        kind: *kind,
                        encoding: *encoding,
                        name: std::borrow::Cow::Borrowed(&name[..]),
                        prefix: std::borrow::Cow::Borrowed(&prefix[..]),
                        max_token_len: *max_token_len,
                        classes: *classes,
                        feature_token_lens: *featured,
                        alphabet: *letters,
                        has_grams: g,
                        has_stride_grams: false,
                        facts: *facts,
                        place: Some(*place),
                        shared: *shared,
                    }
                },
            )
            .collect();
        for (c, &s) in columns.iter_mut().zip(&col_stride) {
            c.has_stride_grams = s;
        }
        let header = BlockHeader {
            version: VERSION,
            rows,
            min_ts,
            max_ts,
            line_bytes: self.line_bytes,
            has_grams: true,
            has_short_grams: true,
            boundaries,
            frames,
            templates,
            briefs: ColumnBrief::of_all(&columns),
            columns,
            bloom: 0..0,
            bloom_crc: None,
            body_start: 0,
        };
        header.encode(&bloom_bytes, dst);
        dst.extend_from_slice(&body);

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
        self.col_names.clear();
        self.col_index.clear();
        self.text_tpl_index.clear();
        self.text_col_index.clear();
        self.text_templates = 0;
        self.text_rows = 0;
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

/// The value facts (see `layout.rs`) that hold for `v`.
fn value_facts(v: &[u8]) -> u8 {
    let mut f = 0;
    let scalar = match v.first() {
        // A string's content may start with a digit too: it counts only
        // when it holds no quote (all the reader relies on).
        Some(b'0'..=b'9' | b'-') => !v.contains(&b'"'),
        Some(b'[') => !v.contains(&b'"'),
        _ => v == b"true" || v == b"false" || v == b"null",
    };
    if scalar {
        f |= VALUES_JSON_SCALARS;
    }
    if !v.contains(&b'\\') && memchr::memmem::find(v, "\u{FFFD}".as_bytes()).is_none() {
        f |= VALUES_UNESCAPED;
    }
    if v != b"null" && !v.starts_with(b"[") {
        f |= VALUES_NOT_NULL_OR_ARRAY;
    }
    f
}

/// The [`boundary_bit`]s of the template bytes right before and after each slot.
fn slot_boundaries(text: &[u8]) -> u16 {
    let mut m = 0u16;
    for (i, &b) in text.iter().enumerate() {
        if b != SLOT {
            continue;
        }
        if let Some(&p) = i.checked_sub(1).and_then(|j| text.get(j)) {
            if p != SLOT {
                m |= boundary_bit(p);
            }
        }
        if let Some(&n) = text.get(i + 1) {
            if n != SLOT {
                m |= boundary_bit(n);
            }
        }
    }
    m
}

/// Compresses `raw` into `body`, or stores it when zstd saves less than a
/// quarter of it or less than 64 bytes (reading a stored frame costs a
/// checksum and no decoding; every query reads small frames).
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
            if n + (raw.len() / 4).max(64) <= raw.len() {
                body.extend_from_slice(&scratch[..n]);
                return FrameInfo {
                    codec: CODEC_ZSTD,
                    stored_len: n,
                    raw_len: raw.len(),
                    crc: Some(crc32fast::hash(&scratch[..n])),
                };
            }
        }
    }
    store_frame(raw, body)
}

/// Stores `raw` in `body` as is.
fn store_frame(raw: &[u8], body: &mut Vec<u8>) -> FrameInfo {
    body.extend_from_slice(raw);
    FrameInfo {
        codec: CODEC_NONE,
        stored_len: raw.len(),
        raw_len: raw.len(),
        crc: Some(crc32fast::hash(raw)),
    }
}
